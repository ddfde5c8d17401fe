"""The time of a run: --now, else PAMD_NOW, else the real clock. The pure core takes `now`
as an argument; this is the one place that reads it."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from pamd.core.entry import parse_time
from pamd.errors import PamdError


def now_arg(value: str | None) -> datetime:
    """--now, else PAMD_NOW, else the real clock (aware UTC)."""
    # An empty PAMD_NOW is unset, as for any variable; an empty --now was typed and is a bad time.
    raw = value if value is not None else (os.environ.get("PAMD_NOW") or None)
    if raw is None:
        return datetime.now(UTC).replace(microsecond=0)
    try:
        return parse_time(raw)
    except ValueError:
        raise PamdError(f"bad time {raw!r} for --now/PAMD_NOW", "use ISO 8601, e.g. 2026-11-30T14:00:00Z") from None
