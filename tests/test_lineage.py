"""pamd.edge.lineage: what history knows about every entry, read in one pass."""

from __future__ import annotations

import json
import re

from conftest import git

NOW = "2026-11-30T12:00:00Z"


def _summary(sid: str, sources: str, text: str, ts: str = "2026-11-30T09:05:00Z") -> str:
    return (f"### {sid} · {ts} · summary\n"
            f"type=context importance=0.50 neuro=- session=s recalls=0 from={sources}\n> {text}\n")


def _file(tier: str, *entries: str) -> str:
    return f"---\ntier: {tier}\ndate: '2026-11-30'\n---\n# {tier} · 2026-11-30\n\n" + "\n".join(entries)


def test_a_summary_whose_words_the_diff_shows_as_context_still_has_its_sources(brain, tmp_path):
    """A summary that takes the place of another with the same words: `git log -p` shows its
    text line as unchanged context, the hunk ends after its metadata line. Its `from=` was not
    read, so once it left the tree fsck called every message below it lost."""
    root = brain.cwd
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps({"ts": f"2026-11-30T09:0{i}:00Z", "role": "user", "session": "s",
                                     "text": f"We decided to ship release {i} on Friday."}) + "\n" for i in (1, 2)))
    assert brain("ingest", str(f), now=NOW)[0] == 0
    l0 = root / "memory/L0/2026-11-30.md"
    e1, e2 = re.findall(r"^### (e-[0-9a-f]{12}) ", l0.read_text(), re.M)
    l1, l2 = root / "memory/L1/2026-11-30.md", root / "memory/L2/2026-11-30.md"
    l1.parent.mkdir(parents=True, exist_ok=True)
    l2.parent.mkdir(parents=True, exist_ok=True)
    a, b, c = "s-aaaaaaaaaaaa", "s-bbbbbbbbbbbb", "s-cccccccccccc"
    words = "Release plans were decided for Friday."
    l0.unlink()
    l1.write_text(_file("L1", _summary(a, e1, words), _summary("s-dddddddddddd", e2, "Release two ships Friday.")))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "compact")
    l1.write_text(_file("L1", _summary(b, f"{a},s-dddddddddddd", words)))
    git(root, "commit", "-qam", "compact again, the same words")
    l1.unlink()
    l2.write_text(_file("L2", _summary(c, b, "Release plans.")))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "down a tier")
    assert "+### s-bbbbbbbbbbbb" in git(root, "log", "-p", "--unified=0", "-1", "HEAD~1")
    assert "+> Release plans were decided" not in git(root, "log", "-p", "--unified=0", "-1", "HEAD~1")
    from pamd.edge import lineage
    from pamd.edge.brain import Brain

    assert lineage.scan(Brain(root)).sources[b] == (a, "s-dddddddddddd")
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 0, out
