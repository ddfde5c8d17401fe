"""How long the index takes on real agent sessions: the first index, and the refresh after a compaction.

    python benchmarks/index_speed.py                       # the shared Claude Code sessions
    python benchmarks/index_speed.py --data DIR --keep /tmp/b

A new brain (`pamd init`) ingests the three long Claude Code sessions of
../shared/bench/data/claude-code and their subagents' transcripts (about 1,400
messages); then, each as its own `python -m pamd` process, as a person runs them:

1. `pamd index` on the fresh brain: the first index, nothing in the vector cache;
2. `pamd compact --now <a day later>` with `[index] refresh_after_pipeline = false`
   (the compaction alone), then `pamd index`: the refresh after a compaction — the
   summaries are new text, the raw messages behind them (recall.deep) were embedded
   as entries a moment ago;
3. `pamd index` once more: a refresh with nothing to do.

Every figure is wall time with the load average of the machine beside it (a shared
machine: compare runs made in the same hour), and the CPU time of the pamd process
(user + sys, less moved by other work). PYTHONPATH chooses the pamd measured, so a
checkout of another commit gives its baseline:
`git archive main | tar -x -C /tmp/base && PYTHONPATH=/tmp/base python benchmarks/index_speed.py`.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "data" / "claude-code"
SESSIONS = ("258c7280-ae70-4798-800f-63464d01a85d", "4d5611e5-241a-462a-8d15-5122611a9569",
            "8463c716-a2ea-4c14-9efa-87158ebd9f20")


def run(brain: Path, *args: str, env: dict) -> tuple[str, str]:
    """(wall and CPU time, output) of one pamd process; CPU is user + sys of it and of the
    git commands it waited for, less moved by other work on the machine than wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pamd", *args], cwd=brain, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise SystemExit(f"pamd {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return f"{took:.1f} s, CPU {cpu:.1f} s", (p.stdout + p.stderr).strip()


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="index_speed.py", description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the claude-code data folder (default: %(default)s)")
    ap.add_argument("--keep", type=Path, help="build the brain here and keep it (default: a temporary folder)")
    ap.add_argument("--now", default="2026-02-12T12:00:00Z",
                    help="the time of the compaction (default %(default)s: a day after the sessions)")
    args = ap.parse_args(argv)
    files = []
    for s in SESSIONS:
        files.append(args.data / f"{s}.jsonl")
        files += sorted((args.data / s / "subagents").glob("*.jsonl"))
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"missing {missing[0]}: pass --data")
    tmp = None
    if args.keep:
        shutil.rmtree(args.keep, ignore_errors=True)
        root = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix="pamd-index-speed-")
        root = Path(tmp) / "brain"
    env = {k: v for k, v in os.environ.items() if k != "PAMD_NOW"}
    env.update(GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="bench@example.org")
    try:
        import pamd

        print(f"pamd from {Path(pamd.__file__).parent}; PAMD_THREADS={os.environ.get('PAMD_THREADS', '(default)')}")
        subprocess.run([sys.executable, "-m", "pamd", "init", str(root)], env=env, check=True,
                       capture_output=True)
        took, out = run(root, "ingest", *map(str, files), env=env)
        print(f"ingest {len(files)} transcripts: {took}  (load {load()})  {out.splitlines()[-1]}")
        took, out = run(root, "index", env=env)
        print(f"first index: {took}  (load {load()})  {out.splitlines()[-1]}")
        cfg = root / "pamd.toml"
        text = cfg.read_text("utf-8")
        text2 = re.sub(r"(?m)^refresh_after_pipeline\s*=\s*true\b", "refresh_after_pipeline = false", text)
        if text2 == text:
            raise SystemExit("pamd.toml has no `refresh_after_pipeline = true` to turn off")
        cfg.write_text(text2, "utf-8")
        subprocess.run(["git", "commit", "-qam", "bench: no refresh after the pipeline"], cwd=root, env=env,
                       check=True)
        took, out = run(root, "compact", "--now", args.now, env=env)
        print(f"compact (without its refresh): {took}  (load {load()})  {out.splitlines()[-1]}")
        took, out = run(root, "index", env=env)
        print(f"refresh after the compaction: {took}  (load {load()})  {out.splitlines()[-1]}")
        took, out = run(root, "index", env=env)
        print(f"refresh, nothing changed: {took}  (load {load()})  {out.splitlines()[-1]}")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
