"""A long-lived recall (`pamd mcp`) skips stat-ing the brain's files while inotify reports no
change, and sees every change the walk would: an edit in place, a new folder, a removed file,
an edit through a file's other name."""

from __future__ import annotations

import os

import pytest
from recall_helpers import entries, make_brain

from pamd.core.fmt import render_doc
from pamd.edge.brain import Brain
from pamd.edge.watch import Watch, filesystem
from pamd.recall import api
from pamd.recall.store import changes

DAY = "memory/L0/2026-11-30.md"


def _watchable(path) -> None:
    w = Watch.start(path)
    if w is None:
        pytest.skip(f"no inotify watch here (filesystem {filesystem(path)!r}, or not Linux): "
                    "every recall walks the tree")
    w.close()


@pytest.fixture
def walks(monkeypatch):
    """How many times a refresh walked the tree."""
    count = [0]
    real = changes.source_files

    def counted(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(changes, "source_files", counted)
    yield count
    for idx in api._OPEN.values():
        idx.close()
    api._OPEN.clear()


def _warm(brain: Brain) -> None:
    for _ in range(3):  # the first recall of a process walks; the second arms the watch
        api.recall(brain, "database migration", log=False)


def _texts(brain: Brain, query: str) -> str:
    return "\n".join(h.text for h in api.recall(brain, query, k=5, log=False))


def _append(path, text: str, minute: int, tier: str = "L0") -> None:
    """The file written again in place (same inode: through any of its names) with one more entry."""
    old = entries(tier=tier) if tier == "L0" else entries([("user", "Plain note.")], tier=tier)
    new = entries([("user", text)], start=old[-1].ts.replace(minute=minute), tier=tier)
    with open(path, "r+", encoding="utf-8") as f:
        f.truncate(0)
        f.write(render_doc({}, "", old + new))


def test_the_watch_reports_changes_in_its_folders_only(tmp_path):
    _watchable(tmp_path)
    sub = tmp_path / "sub"
    sub.mkdir()
    w = Watch.start(tmp_path)
    try:
        assert w.add(str(tmp_path))
        assert not w.changed()
        (tmp_path / "a.md").write_text("x")
        assert w.changed() and not w.changed()  # emptied by the call
        (sub / "b.md").write_text("x")  # a folder not added
        assert not w.changed()
        assert w.add(str(sub))
        with open(sub / "b.md", "a") as f:  # an edit in place
            f.write("y")
        assert w.changed()
        sub.rename(tmp_path / "old")  # renamed, and another folder made at its path
        sub.mkdir()
        assert w.changed()
        assert w.add(str(sub))  # the new folder is watched, not only the old one under its name
        (sub / "c.md").write_text("x")
        assert w.changed()
        assert not w.add(str(tmp_path / "gone")) and w.fd >= 0  # a folder gone meanwhile: left
    finally:
        w.close()
    assert w.changed()  # a closed watch knows nothing: the caller walks


def test_a_warm_recall_walks_only_after_a_change(tmp_path, walks):
    _watchable(tmp_path)
    brain = Brain(make_brain(tmp_path / "brain"))
    _warm(brain)
    before = walks[0]
    api.recall(brain, "green tea", log=False)
    assert walks[0] == before  # nothing changed: no file looked at
    _append(brain.root / DAY, "The flamingo sculpture arrives crated on Tuesday.", 30)
    assert "flamingo" in _texts(brain, "flamingo sculpture crated")
    assert walks[0] == before + 1
    api.recall(brain, "green tea", log=False)
    assert walks[0] == before + 1


def test_a_warm_recall_sees_a_new_folder_and_a_removed_file(tmp_path, walks):
    _watchable(tmp_path)
    brain = Brain(make_brain(tmp_path / "brain"))
    _warm(brain)
    deep = brain.root / "memory/L1/2026/12"
    deep.mkdir(parents=True)
    e = entries([("user", "The harpsichord tuner comes on the first Monday.")], tier="L1")
    (deep / "notes.md").write_text(render_doc({}, "", e), "utf-8")
    assert "harpsichord" in _texts(brain, "harpsichord tuner")
    more = entries([("user", "The oboe reed order was cancelled.")], start=e[0].ts.replace(minute=40), tier="L1")
    with open(deep / "notes.md", "r+", encoding="utf-8") as f:  # the new folder is watched too
        f.truncate(0)
        f.write(render_doc({}, "", e + more))
    assert "oboe" in _texts(brain, "oboe reed order cancelled")
    (deep / "notes.md").unlink()
    assert "harpsichord" not in _texts(brain, "harpsichord tuner")
    # a tier folder moved away and made again: the new folder's files are seen
    (brain.root / "memory/L1").rename(brain.root / "old-L1")
    (deep).mkdir(parents=True)
    assert "oboe" not in _texts(brain, "oboe reed order cancelled")
    (deep / "again.md").write_text(render_doc({}, "", more), "utf-8")
    assert "oboe" in _texts(brain, "oboe reed order cancelled")
    with open(deep / "again.md", "r+", encoding="utf-8") as f:
        f.truncate(0)
        f.write(render_doc({}, "", e))
    assert "oboe" not in _texts(brain, "oboe reed order cancelled")


def test_a_file_with_another_name_is_walked_at_every_recall(tmp_path, walks):
    _watchable(tmp_path)
    brain = Brain(make_brain(tmp_path / "brain"))
    outside = tmp_path / "copy.md"  # a hard link: its edits reach no watched folder
    os.link(brain.root / DAY, outside)
    _warm(brain)
    before = walks[0]
    _append(outside, "The narwhal exhibit closes for repairs in March.", 31)
    assert "narwhal" in _texts(brain, "narwhal exhibit repairs")
    assert walks[0] == before + 1


def test_a_linked_file_is_walked_at_every_recall(tmp_path, walks):
    _watchable(tmp_path)
    root = make_brain(tmp_path / "brain")
    (root / "notes").mkdir()
    (root / "notes/L1.md").write_text(render_doc({}, "", entries([("user", "Plain note.")], tier="L1")), "utf-8")
    (root / "memory/L1").mkdir(parents=True)
    os.symlink(root / "notes/L1.md", root / "memory/L1/linked.md")  # edits land in notes/
    brain = Brain(root)
    _warm(brain)
    _append(root / "notes/L1.md", "The zeppelin hangar lease renews in April.", 32, tier="L1")
    assert "zeppelin" in _texts(brain, "zeppelin hangar lease")


def test_a_brain_on_a_network_filesystem_is_walked_at_every_recall(tmp_path, walks, monkeypatch):
    from pamd.edge import watch

    # another machine's writes to an NFS or FUSE mount raise no event here
    monkeypatch.setattr(watch, "filesystem", lambda path: "nfs4")
    brain = Brain(make_brain(tmp_path / "brain"))
    _warm(brain)
    before = walks[0]
    api.recall(brain, "green tea", log=False)
    assert walks[0] == before + 1


def test_filesystem_names_the_mount_a_path_is_on(tmp_path):
    if not os.path.exists("/proc/self/mountinfo"):
        pytest.skip("no /proc/self/mountinfo (not Linux)")
    assert filesystem(tmp_path) == filesystem(tmp_path / "not-yet-made") is not None
    assert filesystem(tmp_path) in {line.split(" - ")[1].split()[0]
                                    for line in open("/proc/self/mountinfo", encoding="utf-8") if " - " in line}
