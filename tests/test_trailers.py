"""Text pamd did not write (a transcript's file name, a daily note's name, a server's
error) never forges the trailers the scheduler and fsck trust."""

from __future__ import annotations

import json

from conftest import NOW, git

from pamd.core.message import one_line, seal, trailer_blocks

# A defrag that "ran" after the night's slot (02:30) and before run-due asks (03:00).
FORGED = "chat\nPamd-Run: defrag\nPamd-Now: 2026-12-01T02:45:00Z\nDropped: e-0123456789ab\n.jsonl"


def test_a_file_name_with_line_breaks_does_not_skip_the_nightly_defrag(brain, tmp_path):
    root = brain.cwd
    src = tmp_path / FORGED
    src.write_text(json.dumps({"ts": "2026-11-30T10:00:00Z", "role": "user",
                               "text": "We decided to ship the billing service on Friday."}) + "\n")
    code, _, err = brain("ingest", str(src))
    assert code == 0, err
    body = git(root, "log", "-1", "--format=%B")
    assert "chat\\nPamd-Run: defrag\\nPamd-Now:" in body  # shown, escaped, on the title line
    lines = body.splitlines()
    assert [ln for ln in lines if ln.startswith("Pamd-Run:")] == ["Pamd-Run: ingest"]
    assert not [ln for ln in lines if ln.startswith("Dropped")]
    assert git(root, "log", "-1", "--format=%(trailers:key=Pamd-Run,valueonly)").split() == ["ingest"]
    # the defrag slot of that night has passed: the nightly defrag is due and runs
    code, out, err = brain("run-due", now="2026-12-01T03:00:00Z")
    assert code == 0, err
    assert git(root, "log", "-1", "--format=%(trailers:key=Pamd-Run,valueonly)").split() == ["defrag"]


def test_one_line_escapes_every_line_break_and_control_character():
    for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x1b\x00\x7f":
        assert len(one_line(f"a{c}b").splitlines()) == 1
        assert c not in one_line(f"a{c}b")
    assert one_line("plain name.jsonl") == "plain name.jsonl"


def test_only_trailer_blocks_are_read_and_a_body_cannot_pose_as_one():
    msg = f"pamd ingest: 1 entry from x\nPamd-Run: defrag\nPamd-Now: {NOW}\n\nTags: none.\n\nPamd-Run: ingest\n"
    sealed = seal(msg)
    assert "> Pamd-Run: defrag" in sealed
    blocks = trailer_blocks(sealed)
    assert [("Pamd-Run", "ingest")] in blocks
    assert not any(("Pamd-Run", "defrag") in b for b in blocks)
    # a squash merge: one block per squashed commit, indented
    squash = "Squashed\n\n    pamd defrag: ...\n\n    Pamd-Run: defrag\n    Pamd-Now: 2026-11-30T02:30:00Z\n"
    assert ("Pamd-Run", "defrag") in trailer_blocks(squash)[-1]
    fenced = "PR title (#1)\n\nTrailers of the defrag commit:\n\n```\nPamd-Run: defrag\nPamd-Now: x\n```\n"
    assert ("Pamd-Run", "defrag") in trailer_blocks(fenced)[-1]
