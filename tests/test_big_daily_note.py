"""A committed daily note holding one item over 1 MiB (a build log pasted in) is archived
like any other: its item is cut in L0 as long tool output is, the archive keeps it whole,
and the nightly defrag goes on."""

from __future__ import annotations

from conftest import git


def test_a_daily_note_item_over_1_mib_does_not_stop_the_nightly_defrag(brain):
    root = brain.cwd
    (root / "memory").mkdir(exist_ok=True)
    big = "log line of a build. " * 60000  # 1.2 MiB in one item
    note = ("# 2026-11-22\n\n- 09:15 Anna owns the release checklist.\n"
            f"- 11:00 {big}\n- 12:00 The deploy failed with a data loss error.\n")
    (root / "memory" / "2026-11-22.md").write_text(note)
    git(root, "add", "memory")
    git(root, "commit", "-qm", "daily note")
    code, out, err = brain("defrag", now="2026-11-28T03:00:00Z")
    assert code == 0, err
    assert not (root / "memory" / "2026-11-22.md").exists()
    assert (root / "memory" / "daily" / "2026-11-22.md").read_text() == note  # whole, in the archive
    tree = git(root, "grep", "-l", "Anna owns the release checklist", "HEAD", "--", "memory/L0", "memory/L1",
               "memory/L2", "memory/L3", "MEMORY.md")
    assert tree.strip()
    l0 = "".join(p.read_text() for p in (root / "memory").rglob("L*/*.md"))
    assert len(l0.encode()) < 2 * 1024 * 1024
    assert brain("check")[0] == 0 and brain("fsck")[0] == 0
