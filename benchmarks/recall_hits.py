"""Dump recall's hits for a list of queries, exact scores included, to compare two versions of pamd.

A speed change must not move a hit. Run the same brain and queries under the old and
the new code and compare the files byte for byte:

    PYTHONPATH=/tmp/old-pamd python benchmarks/recall_hits.py BRAIN queries.json > old.json
    python benchmarks/recall_hits.py BRAIN queries.json > new.json
    cmp old.json new.json

queries.json is a JSON list of strings (e.g. LoCoMo questions). Each query is asked
with k = 3 and k = 10, every fifth one with a tier filter too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    from pamd.edge.brain import Brain
    from pamd.recall import api

    brain = Brain(Path(sys.argv[1]))
    queries = json.loads(Path(sys.argv[2]).read_text("utf-8"))
    tiers = [(), ("L2",), ("L0", "L1")]
    out = []
    for i, q in enumerate(queries):
        for k in (3, 10):
            hits = api.recall(brain, q, k=k, log=False, tiers=tiers[i % 3] if i % 5 == 0 else ())
            out.append([q, k, [h.as_json() | {"entries": h.entries, "raw": float(h.score).hex()}
                               for h in hits]])
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
