"""Fit the basis of the `maxsim` feature (pamd.recall.maxsim): pamd/data/maxsim-basis.npz.

    PAMD_THREADS=2 python benchmarks/maxsim_basis.py [--out pamd/data/maxsim-basis.npz]

The mean and principal components of e5-small's content-token states (what
pamd.recall.maxsim centres and projects on) are fitted on text pamd may ship and
that is not a benchmark: the user and assistant messages of the Claude Code
transcripts in ../shared/bench/data/claude-code (MIT, see its LICENSE) and
pamd's own docs, README and sample week. No labels, no LoCoMo (CC BY-NC, and the
test set). Each text is embedded alone as a passage, exactly as a chunk's tokens
are taken (its content pieces, each state L2-normalised). The file holds the
mean (float32, 384) and the first 128 components (float32, 128 x 384): ~200 KB.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neurotag_speed import messages  # noqa: E402  (the transcripts' text blocks, read once)

REPO = Path(__file__).resolve().parent.parent
TRANSCRIPTS = REPO.parent / "shared" / "bench" / "data" / "claude-code"
MAX_CHARS = 800  # a chunk's size for plain Markdown ([index] max_chars)
KEEP = 128


def transcript_texts(folder: Path) -> list[str]:
    """User and assistant text blocks (no tool calls or results: those are mostly code)."""
    return [t.strip()[:MAX_CHARS] for role, t in messages(folder) if role != "tool" and len(t.strip()) >= 40]


def own_texts() -> list[str]:
    out = []
    for path in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]:
        for para in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            para = para.strip()
            if len(para) >= 80 and not para.startswith("|"):
                out.append(para[:MAX_CHARS])
    for line in (REPO / "pamd" / "data" / "sample-week.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line)["text"][:MAX_CHARS])
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="maxsim_basis.py")
    ap.add_argument("--out", default=str(REPO / "pamd" / "data" / "maxsim-basis.npz"))
    ap.add_argument("--max-transcript-texts", type=int, default=2500,
                    help="a random sample of this many transcript texts (seed 1)")
    args = ap.parse_args(argv)
    from pamd.recall.e5onnx import Engine
    from pamd.recall.embed import cores

    tr = sorted(set(transcript_texts(TRANSCRIPTS)))
    random.Random(1).shuffle(tr)
    tr = tr[:args.max_transcript_texts]
    own = own_texts()
    texts = tr + own
    print(f"{len(tr)} transcript texts, {len(own)} of pamd's own docs and sample week", flush=True)
    eng = Engine(cores())
    t0 = time.perf_counter()
    states = []
    for i in range(0, len(texts), 64):
        part = texts[i:i + 64]
        states += eng.embed_tokens(part, "passage: ", [None] * len(part))[1]
    h = np.concatenate(states).astype(np.float64)
    print(f"{h.shape[0]} content tokens in {time.perf_counter() - t0:.0f} s", flush=True)
    mu = h.mean(axis=0)
    _u, s, vt = np.linalg.svd(h - mu, full_matrices=False)
    share = float((s[:KEEP] ** 2).sum() / (s ** 2).sum())
    print(f"the first {KEEP} components hold {share:.1%} of the variance", flush=True)
    with open(args.out, "wb") as f:
        np.savez(f, mu=mu.astype(np.float32), vt=vt[:KEEP].astype(np.float32))
    print(f"wrote {args.out} ({Path(args.out).stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
