"""Speed of ingest, compaction and boot; and an 8-day simulation for size.

    python benchmarks/pipeline_speed.py            # all
    python benchmarks/pipeline_speed.py --only sim

Targets (issues 2, 3, 5): ingest of 10,000 messages in one commit <= 5 s;
compacting 10,000 L0 entries <= 5 s; 8 simulated days at ~350 messages/day,
compact every 30 min and defrag nightly, <= 60 s with the tree >= 25:1 smaller
than the raw input; `pamd boot` on that brain <= 1 s whole process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workload import START, replay  # noqa: E402

from pamd.consolidate.compaction import run as run_compaction  # noqa: E402
from pamd.core.entry import TIERS, count_tokens  # noqa: E402
from pamd.edge.brain import Brain  # noqa: E402
from pamd.encode.ingest import ingest_entries, make_entries, redactor  # noqa: E402
from pamd.encode.neurotag import Tagger  # noqa: E402
from pamd.ops.layout import init_brain  # noqa: E402


def new_brain(tmp: Path, name: str) -> Brain:
    brain, _ = init_brain(tmp / name)
    return brain


def ingest(brain: Brain, msgs, now) -> float:
    t = time.perf_counter()
    entries, red = make_entries(msgs, Tagger.from_config(brain.config, brain.root), redactor(brain.config), now)
    ingest_entries(brain, entries, ["bench"], now, "ingest", red)
    return time.perf_counter() - t


def bench_ingest(tmp: Path) -> dict:
    brain = new_brain(tmp, "ingest")
    msgs = replay(10_000, START, 10_000)
    secs = ingest(brain, msgs, START + timedelta(days=1))
    commits = int(brain.repo.run("rev-list", "--count", "HEAD"))
    return {"ingest_10k_s": round(secs, 2), "commits": commits}


def bench_compact(tmp: Path) -> dict:
    brain = new_brain(tmp, "compact")
    msgs = replay(10_000, START, 10_000)
    ingest(brain, msgs, START + timedelta(days=1))
    t = time.perf_counter()
    out = run_compaction(brain, START + timedelta(days=1, hours=8), "compact")
    secs = time.perf_counter() - t
    return {"compact_10k_s": round(secs, 2), "moved": len(out.plan.moving), "dropped": len(out.plan.dropped),
            "summaries": len(out.summaries)}


def tree_tokens(brain: Brain) -> dict[str, int]:
    per = dict.fromkeys(TIERS, 0)
    for e in brain.load().entries:
        per[e.tier] += e.tokens
    return per


def bench_sim(tmp: Path, days: int = 8, per_day: int = 350) -> dict:
    brain = new_brain(tmp, "sim")
    msgs = replay(days * per_day, START, per_day)
    raw_tokens = sum(count_tokens(m.text) for m in msgs)
    t0 = time.perf_counter()
    before = int(brain.repo.run("rev-list", "--count", "HEAD"))
    runs = {"ingest": 0, "compact": 0, "defrag": 0}
    now = START
    # Through the 8th night: the last day's messages meet their nightly defrag.
    end = START + timedelta(days=days, hours=3)
    nightly = []
    ingested_tokens = 0
    i = 0
    step = timedelta(minutes=30)
    while now < end:
        now += step
        batch = []
        while i < len(msgs) and msgs[i].ts <= now:
            batch.append(msgs[i])
            i += 1
        if batch and now.minute == 0 and now.hour % 2 == 0 or (batch and i == len(msgs)):
            ingest(brain, batch, now)
            ingested_tokens += sum(count_tokens(m.text) for m in batch)
            runs["ingest"] += 1
        elif batch:  # keep them for the next two-hourly ingest
            i -= len(batch)
        if now.hour == 2 and now.minute == 30:
            run_compaction(brain, now, "defrag")
            runs["defrag"] += 1
            tree_now = sum(tree_tokens(brain).values())
            nightly.append((now.strftime("%m-%d"), ingested_tokens, tree_now,
                            round(ingested_tokens / max(tree_now, 1), 1)))
        if now == START + timedelta(days=days):
            day_end = sum(tree_tokens(brain).values())
        else:
            run_compaction(brain, now, "compact")
            runs["compact"] += 1
    secs = time.perf_counter() - t0
    per = tree_tokens(brain)
    tree = sum(per.values())
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pamd", "boot", "--brain", str(brain.root)], capture_output=True)
    boot_s = time.perf_counter() - t
    assert r.returncode == 0, r.stderr
    commits = int(brain.repo.run("rev-list", "--count", "HEAD")) - before
    return {"days": days, "messages": len(msgs), "sim_s": round(secs, 1), "runs": runs, "commits": commits,
            "raw_tokens": raw_tokens, "tree_tokens": tree, "ratio": round(raw_tokens / max(tree, 1), 1),
            "ratio_end_of_day_8": round(raw_tokens / max(day_end, 1), 1), "nightly": nightly,
            "per_tier_tokens": per, "boot_s": round(boot_s, 2), "boot_tokens": len(r.stdout) // 4,
            "brain": str(brain.root)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["ingest", "compact", "sim"])
    ap.add_argument("--keep", action="store_true", help="keep the brains (path printed)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pamd-bench-"))
    results = {}
    for name, fn in (("ingest", bench_ingest), ("compact", bench_compact), ("sim", bench_sim)):
        if args.only in (None, name):
            results[name] = fn(tmp)
            print(name, results[name], flush=True)
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
