"""A real agent workload: the Claude Code sessions in ../shared, replayed at a chosen rate.

The transcripts are read from the shared folder (never copied into the repo).
Messages are re-stamped onto a simulated clock so a week of work can be
replayed at the seed's rate (~350 messages a day).
"""

from __future__ import annotations

import glob
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pamd.encode import sources

SHARED = Path(os.environ.get("PAMD_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CLAUDE = SHARED / "bench" / "data" / "claude-code"


def real_messages() -> list[sources.Message]:
    files = sorted(glob.glob(str(CLAUDE / "*.jsonl")) + glob.glob(str(CLAUDE / "*/subagents/*.jsonl")))
    if not files:
        raise SystemExit(f"no transcripts under {CLAUDE}: set PAMD_SHARED to the shared folder")
    out: list[sources.Message] = []
    for f in files:
        out += sources.read(Path(f).read_bytes(), f, "claude-code")
    return out


def replay(n: int, start: datetime, per_day: int) -> list[sources.Message]:
    """n messages, cycling through the real ones, spread at per_day a day over working hours."""
    base = real_messages()
    gap = timedelta(hours=14) / per_day  # a 14-hour working day
    out = []
    for i in range(n):
        m = base[i % len(base)]
        day, k = divmod(i, per_day)
        ts = start + timedelta(days=day, hours=8) + gap * k
        loop = i // len(base)
        out.append(sources.Message(m.role, m.text if loop == 0 else f"{m.text} (rerun {loop})",
                                   ts, f"{m.session[:8]}-d{day}", i))
    return out


START = datetime(2026, 11, 1, tzinfo=UTC)
