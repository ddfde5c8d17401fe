"""Recall through `pamd mcp`: p50 of a `recall` tool call made by the official MCP client over
stdio (JSON-RPC both ways, the server's warm index and model), against the same query's
in-process `api.recall` in the same run (docs/benchmarks.md, "Agents").

    python benchmarks/mcp_recall_speed.py --chunks 100000 [--queries 200] [--keep | --brain DIR]

The brain is recall_speed's synthetic one (vectors pre-seeded in the vector cache). Also
times the Claude Code SessionStart hook (`pamd-hook claude`, a whole process) on it.
Target (issue 20): recall through MCP <= 15 ms p50 at 100,000 chunks; the hooks < 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall_speed import WORDS, synthetic_brain  # noqa: E402


def pct(xs: list[float], p: float) -> float:
    return 1000 * sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]


async def through_mcp(root: Path, qs: list[str]) -> tuple[list[float], float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "pamd", "mcp", "--brain", str(root)],
                                   env=dict(os.environ))
    lat = []
    t = time.perf_counter()
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        first = await s.call_tool("recall", {"query": qs[0], "k": 10})  # loads the index and model
        start = time.perf_counter() - t
        assert not first.is_error, first.content
        for q in qs:
            t = time.perf_counter()
            res = await s.call_tool("recall", {"query": q, "k": 10})
            lat.append(time.perf_counter() - t)
            assert not res.is_error, res.content
    return lat, start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--embedder", default="e5-small")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--keep", action="store_true", help="keep the synthetic brain (else removed)")
    ap.add_argument("--brain", type=Path, help="time this brain (one --keep left) instead of building one")
    a = ap.parse_args()
    from pamd.edge.brain import Brain
    from pamd.recall import api
    from pamd.recall.embed import load

    print(f"load average at start: {os.getloadavg()}")
    emb = load(a.embedder)
    tmp = Path(tempfile.mkdtemp(prefix="pamd-mcp-speed-"))
    try:
        if a.brain:
            root = a.brain.resolve()
            brain = Brain(root)
            n = api.index(brain, embedder=emb).chunks
            print(f"brain {root}: {n} chunks")
        else:
            root = synthetic_brain(tmp / "big", a.chunks, emb)
            brain = Brain(root)
            t = time.perf_counter()
            api.index(brain, embedder=emb)
            print(f"build {a.chunks} chunks (vectors pre-seeded): {time.perf_counter() - t:.1f} s")
            n = a.chunks
        rng = random.Random(11)
        qs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(a.queries)]
        api.recall(brain, qs[0], embedder=emb, log=False)
        base = []
        for q in qs:
            t = time.perf_counter()
            api.recall(brain, q, k=10, embedder=emb, log=False)
            base.append(time.perf_counter() - t)
        api.close(brain)
        lat, start = asyncio.run(through_mcp(root, qs))
        print(f"server start + first recall: {start:.2f} s")
        print(f"recall through MCP at {n}: p50 {1000 * statistics.median(lat):.1f} ms, "
              f"p95 {pct(lat, 0.95):.1f} ms; in-process api.recall p50 {1000 * statistics.median(base):.1f} ms, "
              f"p95 {pct(base, 0.95):.1f} ms; ratio {statistics.median(lat) / statistics.median(base):.2f}")
        hook = [sys.executable, "-c", "import sys; from pamd.hooks import main; sys.exit(main())", "claude",
                "--brain", str(root)]
        inp = json.dumps({"session_id": "s", "transcript_path": str(tmp / "t.jsonl"), "cwd": str(tmp),
                          "permission_mode": "default", "hook_event_name": "SessionStart",
                          "source": "startup"}).encode()
        from pamd.agent.claude_code import PARTIAL_NOTE, cached

        (root / ".pamd" / "brief.json").unlink(missing_ok=True)  # as in a new clone
        times, texts = [], []
        for i in range(5):
            t = time.perf_counter()
            r = subprocess.run(hook, input=inp, capture_output=True)
            times.append(time.perf_counter() - t)
            assert r.returncode == 0, r.stderr
            texts.append(json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"])
            deadline = time.monotonic() + 600
            while i == 0 and cached(root) is None:  # the whole brief, built behind the first answer
                assert time.monotonic() < deadline, (root / ".pamd" / "hooks.log").read_text()
                time.sleep(0.1)
        first = ("its own files, the rest built behind" if PARTIAL_NOTE.strip() in texts[0]
                 else "built while it waits")
        print(f"SessionStart hook (whole process) at {n}: first (no kept brief: {first}) {times[0]:.2f} s, "
              f"{len(texts[0])} chars; then from the kept brief median {statistics.median(times[1:]):.2f} s, "
              f"max {max(times[1:]):.2f} s, {len(texts[-1])} chars")
        transcript = tmp / "t.jsonl"
        transcript.write_text(json.dumps({"type": "user", "sessionId": "s", "timestamp": "2026-11-30T10:00:00Z",
                                          "uuid": "u1", "message": {"role": "user", "content": "hello"}}) + "\n")
        stop = json.dumps({**json.loads(inp), "hook_event_name": "Stop", "stop_hook_active": False}).encode()
        times = []
        for _ in range(5):
            t = time.perf_counter()
            r = subprocess.run(hook, input=stop, capture_output=True)
            times.append(time.perf_counter() - t)
            assert r.returncode == 0 and r.stderr == b"", r.stderr
        print(f"Stop hook (returns once the ingest is started) at {n}: median "
              f"{statistics.median(times):.2f} s, max {max(times):.2f} s")
        time.sleep(5)  # let the background ingests finish before the brain is removed
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
