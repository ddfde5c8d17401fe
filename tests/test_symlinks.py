"""Symbolic links in a brain: one inside the brain is written through, atomically, at its
target and stays a link; one that leads out of the brain is never read or written."""

from __future__ import annotations

import json
import os

from conftest import git

MEMORY_TEXT = "# Memory\n\nLong-term knowledge.\n"


def feed(brain, tmp_path, days: int = 1) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"ts": f"2026-11-2{d}T10:0{i}:00Z", "role": "user",
                                       "text": f"We decided the release {d}.{i} ships from the main branch."})
                           + "\n" for d in range(days) for i in range(4)))
    assert brain("ingest", str(src), now="2026-11-21T12:00:00Z")[0] == 0


def test_a_symlinked_memory_md_inside_the_brain_stays_a_link(brain, tmp_path):
    root = brain.cwd
    notes = root / "notes"
    notes.mkdir()
    os.replace(root / "MEMORY.md", notes / "MEMORY.md")
    (root / "MEMORY.md").symlink_to("notes/MEMORY.md")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "MEMORY.md lives in notes/")
    feed(brain, tmp_path, days=3)
    before = (notes / "MEMORY.md").read_text()
    code, out, err = brain("defrag", now="2026-12-09T03:00:00Z")
    assert code == 0, err
    assert (root / "MEMORY.md").is_symlink()
    assert os.readlink(root / "MEMORY.md") == "notes/MEMORY.md"
    after = (notes / "MEMORY.md").read_text()
    assert after != before  # defrag wrote L3 into MEMORY.md, through the link
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "show", "HEAD:notes/MEMORY.md") == after
    assert git(root, "ls-tree", "HEAD", "MEMORY.md").split()[0] == "120000"
    assert brain("check")[0] == 0


def test_a_link_out_of_the_brain_fails_check_and_is_never_read(brain, tmp_path):
    root = brain.cwd
    secret = tmp_path / "outside.md"
    secret.write_text("### e-0123456789ab · 2026-11-30T10:00:00Z · user\n"
                      "type=decision importance=0.90 neuro= session=s recalls=0\n> outside text\n")
    (root / "memory" / "L3").mkdir(parents=True, exist_ok=True)
    (root / "memory" / "L3" / "x.md").symlink_to(secret)
    (root / "memory" / "L3" / "h.md").symlink_to("/etc/hostname")
    code, out, err = brain("check")
    assert code != 0
    assert "memory/L3/h.md" in out + err and "outside the brain" in out + err
    assert "memory/L3/x.md" in out + err
    code, out, err = brain("recall", "outside text")
    assert "outside text" not in out
    code, out, err = brain("boot")
    assert "outside text" not in out


def test_a_symlinked_memory_md_out_of_the_brain_is_refused_and_left_a_link(brain, tmp_path):
    root = brain.cwd
    notes = tmp_path / "notes"
    notes.mkdir()
    os.replace(root / "MEMORY.md", notes / "MEMORY.md")
    (root / "MEMORY.md").symlink_to(notes / "MEMORY.md")
    code, out, err = brain("remember", "The deploy key rotates monthly.")
    assert code == 1
    assert err.count("\n") == 1 and "MEMORY.md" in err and "outside the brain" in err
    assert (root / "MEMORY.md").is_symlink()


def test_an_uncommitted_edit_at_a_links_target_is_never_committed(brain, tmp_path):
    root = brain.cwd
    notes = root / "notes"
    notes.mkdir()
    os.replace(root / "MEMORY.md", notes / "MEMORY.md")
    (root / "MEMORY.md").symlink_to("notes/MEMORY.md")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "MEMORY.md lives in notes/")
    feed(brain, tmp_path, days=3)
    with (notes / "MEMORY.md").open("a") as f:
        f.write("\nA person's uncommitted line.\n")
    code, out, err = brain("defrag", now="2026-12-09T03:00:00Z")
    assert code in (0, 1), err
    assert code == 0 or ("uncommitted edits in notes/MEMORY.md" in err and err.count("\n") == 1), err
    assert "A person's uncommitted line." in (notes / "MEMORY.md").read_text()
    assert git(root, "log", "--format=%H", "-S", "A person's uncommitted line.") == ""
    assert (root / "MEMORY.md").is_symlink()
