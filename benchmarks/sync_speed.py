"""`pamd sync` of two clones that each lived on their own, and `pamd fsck` after it.

    python benchmarks/sync_speed.py              # a week on each side, 40 messages a day
    python benchmarks/sync_speed.py --days 14 --per-day 80

A bare origin and two clones of one brain. Each clone, on its own clock (five hours
apart), takes in a day of messages each morning, compacts twice and defrags each
night; the first pushes, then the second runs `pamd sync` (one merge of both weeks)
and `pamd fsck`. Prints the wall time of each and what the merge held; the brain
must come out whole (every message once, fsck passing), else the run fails.
Temporary folders only; nothing is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2026, 11, 20, 9, tzinfo=UTC)
TEXTS = ["Anna asked for the Q{q} revenue report with {n} rows.",
         "The export job failed with error code {n} on staging.", "ok",
         "We decided to keep invoices for {q} years in cold storage.",
         "Deployed v{q}.{n} to production, thanks!",
         "Maybe the slow part is the currency conversion of batch {n}."]


def iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--per-day", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pamd-sync-bench-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "HOME": tmp, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "bench",
               "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench",
               "GIT_COMMITTER_EMAIL": "bench@localhost"}
        for k in ("PAMD_BRAIN", "PAMD_NOW", "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
            env.pop(k, None)

        def run(*cmd: str, cwd: Path = root) -> str:
            r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
            if r.returncode:
                raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr or r.stdout}")
            return r.stdout

        pamd = [sys.executable, "-m", "pamd"]
        run("git", "config", "--global", "init.defaultBranch", "main")
        run(*pamd, "init", "seed", "--now", iso(START))
        run("git", "clone", "-q", "--bare", "seed", "origin.git")
        for side in "ab":
            run("git", "clone", "-q", "origin.git", side)
        for side, offset in (("a", 0), ("b", 5)):
            for day in range(args.days):
                f = root / f"{side}{day}.jsonl"
                f.write_text("".join(json.dumps({
                    "ts": iso(START + timedelta(days=day, hours=offset, minutes=13 * i)),
                    "role": "user" if i % 2 else "assistant", "session": f"{side}{day}",
                    "text": f"{side}: " + TEXTS[i % len(TEXTS)].format(q=day % 4 + 1, n=100 + 7 * i + day)}) + "\n"
                    for i in range(args.per_day)))
                base = START + timedelta(days=day, hours=offset)
                for cmd, at in ((("ingest", str(f)), 10), (("compact",), 11), (("compact",), 19), (("defrag",), 20)):
                    run(*pamd, *cmd, "--now", iso(base + timedelta(hours=at)), cwd=root / side)
            if side == "a":
                run("git", "push", "-q", "origin", "main", cwd=root / "a")
        t = time.perf_counter()
        said = run(*pamd, "sync", "--now", iso(START + timedelta(days=args.days + 1)), cwd=root / "b").strip()
        sync_s = time.perf_counter() - t
        t = time.perf_counter()
        fsck = run(*pamd, "fsck", "--skip", "index", cwd=root / "b").strip().splitlines()[-1]
        fsck_s = time.perf_counter() - t
        print(f"two clones x {args.days} days x {args.per_day} messages: {said}")
        print(f"pamd sync {sync_s:.2f} s; pamd fsck {fsck_s:.2f} s ({fsck})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
