"""Time a fresh clone's deep lookup (every summary's raw leaves read from history) and dump it.

A clone (a second machine, CI, `rm -rf .pamd`) has no .pamd/deep.sqlite, so its first
`pamd index` reads each summary's leaves back from git history. This clones BRAIN into a
temporary folder, times that lookup for every summary of the tree, and with OUT writes the
leaves, the `made` texts and `expand_ids` of some summaries, to compare two versions:

    PYTHONPATH=/tmp/old-pamd python benchmarks/deep_clone.py BRAIN old.json
    python benchmarks/deep_clone.py BRAIN new.json
    cmp old.json new.json
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    from pamd.consolidate.provenance import expand_ids
    from pamd.edge.brain import Brain
    from pamd.errors import PamdError
    from pamd.recall.deep import Lookup

    tmp = Path(tempfile.mkdtemp(prefix="pamd-deep-clone-"))
    try:
        subprocess.run(["git", "clone", "-q", sys.argv[1], str(tmp / "c")], check=True)
        brain = Brain(tmp / "c")
        brain.state_dir.mkdir(exist_ok=True)
        summaries = [e for e in brain.load().entries if e.sources]
        commits = brain.repo.run("rev-list", "--count", "HEAD")
        lookup = Lookup(brain.root, brain.state_dir)
        t = time.perf_counter()
        leaves = {s.id: lookup(s) for s in summaries}
        wall = time.perf_counter() - t
        made = dict(lookup.db.execute("SELECT summary, text FROM made").fetchall())
        lookup.close()
        print(f"commits={commits} summaries={len(summaries)} leaves={sum(map(len, leaves.values()))}"
              f" deep lookup {wall:.1f} s", flush=True)
        expanded: dict[str, object] = {}
        t = time.perf_counter()
        for s in summaries[:: max(1, len(summaries) // 8)]:  # `pamd expand`, one History each
            try:
                expanded[s.id] = [(f.entry.id, f.rev, f.depth, f.made, f.entry.text) for f in expand_ids(brain, [s.id])]
            except PamdError as exc:
                expanded[s.id] = str(exc)
        print(f"expand of {len(expanded)} summaries {time.perf_counter() - t:.1f} s", flush=True)
        if len(sys.argv) > 2:
            Path(sys.argv[2]).write_text(json.dumps({"leaves": leaves, "made": made, "expand": expanded},
                                                    indent=0, sort_keys=True))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
