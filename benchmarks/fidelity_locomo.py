"""Issue 7: what each compression tier loses, on LoCoMo, with the extractive summarizer.

    python benchmarks/fidelity_locomo.py                  # all 10 conversations, e5-small, no reranking
    python benchmarks/fidelity_locomo.py --limit 2        # a quick look
    python benchmarks/fidelity_locomo.py --set tiers.ratios.L3=25 --set tiers.ratios.L4=25 --plot /tmp/f.png
                                                          # the tiers' ratios changed, e.g. to spend a 25:1 budget

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
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=N",
                    help="a config value of the scratch brains, e.g. tiers.ratios.L3=25 (repeatable)")
    args = ap.parse_args()
    settings: dict[str, dict[str, int | str]] = {}
    for item in args.set:
        name, eq, value = item.partition("=")
        section, dot, key = name.rpartition(".")
        if not (eq and dot and section and key and value):
            raise SystemExit(f"fidelity_locomo: --set {item!r}: write SECTION.KEY=VALUE, e.g. tiers.ratios.L3=25")
        settings.setdefault(section, {})[key] = int(value) if value.lstrip("-").isdigit() else value
    if not DATA.is_file():
        raise SystemExit(f"no LoCoMo data at {DATA}: set PAMD_SHARED")
    try:
        evaluate.check_plot(Path(args.plot))  # before minutes of work, not after
    except PamdError as exc:
        raise SystemExit(f"fidelity_locomo: {exc}") from None
    t = time.perf_counter()
    convs = qa.load_locomo(DATA, args.limit)
    report = evaluate.eval_conversations(convs, 10, source=DATA.name, embedder=args.embedder,
                                         rerank=args.rerank, settings=settings,
                                         progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(evaluate.table(report))
    for line in evaluate.summary_lines(report):
        print(line)
    cats = sorted(report.points[0].by_category)
    print("\nrecall@10 per category, tree / provenance (in tree: the evidence the tree still holds):")
    print(f"{'age':<5}" + "".join(f"{c:>32}" for c in cats))
    for p in report.points:
        cells = (p.by_category[c] for c in cats)
        print(f"{p.age:<5}" + "".join(
            f"{c['tree R@10']:>12.3f} / {c['prov R@10']:.3f} ({c['in tree']:.3f})" for c in cells))
    evaluate.plot(report, Path(args.plot))
    if args.json:
        Path(args.json).write_text(report.to_json())
    print(f"\n{time.perf_counter() - t:.0f} s; plot in {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
