"""Issue 7: what each compression tier loses, on LoCoMo, with the extractive summarizer.

    python benchmarks/fidelity_locomo.py                  # all 10 conversations, e5-small, no reranking
    python benchmarks/fidelity_locomo.py --limit 2        # a quick look

Runs `pamd eval` (pamd.fidelity.evaluate) on ../shared/bench/data/locomo/locomo10.json
(read from there, never copied here), prints the per-age table and recall@10
per question category, and writes the plot to docs/fidelity-locomo.png.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PAMD_SHARED", ROOT.parent / "shared")) / "bench" / "data" / "locomo" / "locomo10.json"


def main() -> int:
    from pamd.errors import PamdError
    from pamd.fidelity import evaluate, qa

    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int)
    ap.add_argument("--plot", default=str(ROOT / "docs" / "fidelity-locomo.png"))
    ap.add_argument("--json", help="also write the full report here")
    ap.add_argument("--embedder", default="e5-small",
                    help="embedder of the scratch brains (default e5-small, as `auto`; ~3.5 min)")
    ap.add_argument("--rerank", type=int, default=0,
                    help="cross-encoder depth of the scratch brains (default 0, no reranking: with "
                         "the template's, its 9,216 recalls take ~15 min longer)")
    args = ap.parse_args()
    if not DATA.is_file():
        raise SystemExit(f"no LoCoMo data at {DATA}: set PAMD_SHARED")
    try:
        evaluate.check_plot(Path(args.plot))  # before minutes of work, not after
    except PamdError as exc:
        raise SystemExit(f"fidelity_locomo: {exc}") from None
    t = time.perf_counter()
    convs = qa.load_locomo(DATA, args.limit)
    report = evaluate.eval_conversations(convs, 10, source=DATA.name, embedder=args.embedder,
                                         rerank=args.rerank, progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(evaluate.table(report))
    for line in evaluate.summary_lines(report):
        print(line)
    cats = sorted(report.points[0].by_category)
    print("\nrecall@10 per category, tree / provenance:")
    print(f"{'age':<5}" + "".join(f"{c:>24}" for c in cats))
    for p in report.points:
        print(f"{p.age:<5}" + "".join(
            f"{p.by_category[c]['tree R@10']:>12.3f} / {p.by_category[c]['prov R@10']:<9.3f}" for c in cats))
    evaluate.plot(report, Path(args.plot))
    if args.json:
        Path(args.json).write_text(report.to_json())
    print(f"\n{time.perf_counter() - t:.0f} s; plot in {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
