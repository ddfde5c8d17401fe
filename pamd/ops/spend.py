"""What the summarizer costs: which backend pamd.toml names, and the cost a day at the rate
the usage trailers of recent pamd commits show."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from pamd.core.config import settings
from pamd.core.entry import parse_time
from pamd.edge.brain import Brain

WINDOW = timedelta(days=7)
SEP, END = "\x1f", "\x1e"
FORMAT = (f"--format=%cI{SEP}%(trailers:key=Pamd-Now,valueonly,separator=)"
          f"{SEP}%(trailers:key=Pamd-Summarizer,valueonly,separator=)"
          f"{SEP}%(trailers:key=Pamd-Cost-USD,valueonly,separator=)"
          f"{SEP}%(trailers:key=Pamd-LLM-Tokens,valueonly,separator=){END}")


@dataclass(frozen=True)
class Run:
    when: datetime
    backend: str
    cost_usd: float
    tokens_in: int
    tokens_out: int


def parse_runs(log: str) -> list[Run]:
    """The runs a `git log --format=FORMAT` shows that record a summarizer."""
    runs = []
    for record in log.split(END):
        parts = record.strip("\n").split(SEP)
        if len(parts) != 5 or not parts[2].strip():
            continue
        date, now, backend, cost, tokens = (p.strip() for p in parts)
        try:
            when = parse_time(now or date)
            usd = float(cost or 0)
            words = tokens.replace(",", " ").split()  # "123 in, 45 out"
            t_in, t_out = (int(words[0]), int(words[2])) if len(words) >= 4 else (0, 0)
        except (ValueError, IndexError):
            continue
        runs.append(Run(when, backend, usd, t_in, t_out))
    return runs


def daily_rate(runs: list[Run], now: datetime) -> dict[str, Any]:
    """Cost and tokens a day over the last WINDOW of runs (at least a day's span, so one run
    an hour ago is not taken for a day's worth)."""
    recent = [r for r in runs if now - WINDOW <= r.when <= now]
    if not recent:
        return {"runs": 0, "days": 0.0, "cost_usd_per_day": 0.0, "tokens_in_per_day": 0,
                "tokens_out_per_day": 0, "cost_usd": 0.0}
    days = min(WINDOW, max(timedelta(days=1), now - min(r.when for r in recent))) / timedelta(days=1)
    cost = sum(r.cost_usd for r in recent)
    return {"runs": len(recent), "days": round(days, 2), "cost_usd": cost,
            "cost_usd_per_day": cost / days,
            "tokens_in_per_day": round(sum(r.tokens_in for r in recent) / days),
            "tokens_out_per_day": round(sum(r.tokens_out for r in recent) / days)}


def summarizer_spend(brain: Brain, now: datetime) -> dict[str, Any]:
    """The configured backend and model, and the rate of recent runs (any backend)."""
    from pamd.consolidate.summarizers import backend_name
    from pamd.errors import PamdError

    s = settings(brain.config).summarizer
    try:
        backend = backend_name(brain.config)
    except PamdError as exc:
        backend = f"invalid ({exc.message})"
    log = brain.repo.log("-500", FORMAT, "--grep=^pamd ") if brain.repo.head() else ""
    runs = parse_runs(log)
    return {"backend": backend, "model": str(s.model), **daily_rate(runs, now),
            "last": asdict(runs[0]) | {"when": runs[0].when.isoformat()} if runs else None}
