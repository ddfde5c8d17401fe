"""Keep an existing index fresh after a pipeline commit (compact, defrag, run-due, daemon).

Only when the brain already has an index (the first `pamd recall` or `pamd
index` builds it) and the search stack is installed; a failure is reported,
never raised: the index is a cache and the next recall refreshes it anyway.
"""

from __future__ import annotations

import importlib.util

from pamd.core.config import settings


def after_commit(brain) -> str | None:
    if not (brain.state_dir / "index" / "index.sqlite").is_file():
        return None
    if not settings(brain.config).index.refresh_after_pipeline:
        return None
    if importlib.util.find_spec("hnswlib") is None:
        return None
    try:
        from pamd.recall import api

        return f"index: {api.index(brain)}"
    except Exception as exc:  # noqa: BLE001 - a cache must not fail the run that committed
        return f"index refresh failed ({type(exc).__name__}: {exc}); the next recall retries"
