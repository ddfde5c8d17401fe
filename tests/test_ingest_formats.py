"""Input shapes met in the wild: each is read whole, or refused in one line with nothing written."""

from __future__ import annotations

import pytest
from conftest import git, head_count

from pamd.core.fmt import parse_doc


def entries(root):
    out = []
    for p in sorted((root / "memory" / "L0").glob("*.md")):
        out += parse_doc(p.read_text(), str(p.relative_to(root))).entries
    return out


def refused(brain, *files, needle: str) -> None:
    n = head_count(brain.cwd)
    r = brain.proc("ingest", *map(str, files))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert err.startswith("pamd: error:") and needle in err and err.count("\n") == 1
    assert head_count(brain.cwd) == n
    assert git(brain.cwd, "status", "--porcelain") == ""


# Daily notes

@pytest.mark.parametrize("day", ["1850-05-01", "9999-01-01"])
def test_a_note_dated_out_of_range_is_refused(brain, tmp_path, day):
    note = tmp_path / f"{day}.md"
    note.write_text("- an old thing\n")
    refused(brain, note, needle=f"date {day}")
    assert brain("status")[0] == 0 and brain("check")[0] == 0
