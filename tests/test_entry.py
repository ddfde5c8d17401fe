"""Entry helpers: role and session tokens keep any script's letters and stay one token."""

from __future__ import annotations

import unicodedata

from conftest import git

from pamd.core.entry import clean_token
from pamd.core.fmt import parse_doc


def test_clean_token_keeps_letters_of_any_script_and_nothing_that_splits_a_line():
    assert clean_token("проект-альфа") == "проект-альфа"
    assert clean_token("東京_1") == "東京_1"
    assert clean_token(unicodedata.normalize("NFD", "café йогурт")) == "café-йогурт"  # a macOS file name
    assert clean_token("сессия 1 (копия)") == "сессия-1-копия"
    assert clean_token("a=b,c\u2028d\u3000e·f") == "a-b-c-d-e-f"  # separators of the metadata line and header
    assert clean_token("  ") == "-" and clean_token("user@host:1+x.y") == "user@host:1+x.y"


def test_sessions_named_in_cyrillic_stay_apart_through_compaction(brain):
    root = brain.cwd
    for name in ("альфа", "бета"):
        for i in range(3):
            code, _, err = brain("remember", "--session", f"проект-{name}", "--role", "Мария",
                                 f"The проект-{name} build {i} uses the cache on host {name}-{i}.",
                                 now=f"2026-11-30T08:0{i}:00Z")
            assert code == 0, err
    (day,) = (root / "memory" / "L0").glob("*.md")
    entries = parse_doc(day.read_text(), "memory/L0/x.md", "L0").entries
    assert sorted({(e.role, e.session) for e in entries}) == [("Мария", "проект-альфа"), ("Мария", "проект-бета")]
    assert brain("compact", now="2026-11-30T20:00:00Z")[0] == 0
    summaries = [e for p in (root / "memory" / "L1").glob("*.md")
                 for e in parse_doc(p.read_text(), "memory/L1/x.md", "L1").entries]
    assert sorted(e.session for e in summaries) == ["проект-альфа", "проект-бета"]
    assert brain("check")[0] == 0 and git(root, "status", "--porcelain") == ""


def test_a_byte_order_mark_does_not_hide_a_files_frontmatter(brain):
    """A MEMORY.md saved by an editor that writes a UTF-8 BOM keeps its frontmatter: it is
    read as such, and recall never offers it as a hit."""
    from pamd.core.fmt import split_frontmatter
    from pamd.recall.chunks import chunk_file

    text = "\ufeff---\nkind: memory\ntier: L4\n---\n# MEMORY\n\nShip the release on Fridays.\n"
    meta, _, body_line = split_frontmatter(text, "MEMORY.md")
    assert meta == {"kind": "memory", "tier": "L4"} and body_line == 5
    chunks = chunk_file("MEMORY.md", text, "L4")
    assert chunks and all("kind:" not in c.text for c in chunks)
    assert [(c.start, c.end) for c in chunks if "Fridays" in c.text] == [(5, 7)]
    mem = brain.cwd / "MEMORY.md"
    mem.write_text("\ufeff" + mem.read_text(), encoding="utf-8")
    code, _, err = brain("check", "MEMORY.md")
    assert code == 0, err


def test_an_entry_only_a_bare_cr_puts_on_a_line_is_refused_not_hidden(brain):
    """Saved with classic Mac line ends, a day's entries are one line to git and pamd:
    check and every run say so at path:line instead of passing a file whose entries
    nothing can see; a bare CR elsewhere (a note's preamble) stays allowed."""
    root = brain.cwd
    assert brain("remember", "We decided to ship the billing export on Friday.")[0] == 0
    (day,) = (root / "memory" / "L0").glob("*.md")
    rel = day.relative_to(root).as_posix()
    lf = day.read_text()
    day.write_bytes(lf.replace("\n", "\r").encode())
    git(root, "commit", "-qam", "saved on an old Mac")
    code, out, _ = brain("check")
    assert code == 1 and out.startswith(f"{rel}:1: entry header after a bare CR line end"), out
    before = day.read_bytes()
    code, _, err = brain("compact", now="2026-12-09T00:00:00Z")
    assert code != 0 and f"{rel}:1: entry header after a bare CR" in err
    assert day.read_bytes() == before and git(root, "status", "--porcelain") == ""
    # a CR in the preamble hides no entry: allowed, as before
    head, sep, rest = lf.partition("### ")
    day.write_text(head.rstrip("\n") + "\rnote from an old Mac\n\n" + sep + rest)
    assert brain("check")[0] == 0
    assert len(parse_doc(day.read_bytes().decode(), rel, "L0").entries) == 1


def test_a_crlf_file_pamd_rewrites_comes_back_lf_throughout(brain):
    """docs/format.md: pamd writes LF only. A day file a Windows editor saved with CRLF came
    back from a rewrite LF in the frontmatter and CRLF in the heading, the note and the
    entries (whose texts carried the CR); now the whole file is LF, the note kept."""
    root = brain.cwd
    assert brain("remember", "We decided to ship the billing export on Friday.", now="2026-11-30T09:00:00Z")[0] == 0
    (day,) = (root / "memory" / "L0").glob("*.md")
    rel = day.relative_to(root).as_posix()
    (e,) = parse_doc(day.read_text(), rel, "L0").entries
    lf = day.read_text().replace("\n### ", "\nMy note.\n\n### ", 1)
    day.write_bytes(lf.replace("\n", "\r\n").encode())
    git(root, "commit", "-qam", "saved on Windows")
    assert brain("check")[0] == 0
    assert parse_doc(day.read_bytes().decode(), rel, "L0").entries[0].text == e.text
    assert brain("touch", e.id, now="2026-11-30T09:10:00Z")[0] == 0
    assert brain("compact", now="2026-11-30T09:20:00Z")[0] == 0  # folds the recall: a rewrite
    data = day.read_bytes()
    assert b"\r" not in data and data.decode() == lf.replace("recalls=0", "recalls=1 seen=2026-11-30"), data


def test_via_on_a_metadata_line_round_trips_and_a_bad_one_is_named_by_check(brain):
    """`via=` (the raw leaves recall reached a summary through, with counts) is parsed,
    rendered back byte for byte, and a malformed one is a path:line error."""
    from pamd.core.fmt import render_entries

    root = brain.cwd
    assert brain("remember", "We decided to ship the billing export on Friday.")[0] == 0
    (day,) = (root / "memory" / "L0").glob("*.md")
    rel = day.relative_to(root).as_posix()
    text = day.read_text()
    good = text.replace(" recalls=0", " recalls=7 via=e-0123456789ab:4,e-ba9876543210:2")
    (e,) = parse_doc(good, rel, "L0").entries
    assert e.via == (("e-0123456789ab", 4), ("e-ba9876543210", 2))
    assert render_entries([e]) in good
    for bad in ("via=", "via=e-0123456789ab", "via=e-0123456789ab:0", "via=s-0123456789ab:1",
                "via=e-0123456789ab:1,e-0123456789ab:2"):
        day.write_text(text.replace(" recalls=0", f" recalls=7 {bad}"))
        code, out, _ = brain("check")
        meta_line = next(i for i, ln in enumerate(day.read_text().split("\n"), 1) if ln.startswith("type="))
        assert code == 1 and out.startswith(f"{rel}:{meta_line}: via "), (bad, out)


def test_via_counts_raw_leaves_only():
    """A recall.log line written before search stopped logging a corrected summary's id as
    a leaf must not put an `s-` id into via=, which the parser refuses (every run would stop)."""
    from pamd.core.entry import add_via

    assert add_via((("e-000000000001", 2),), {"s-000000000002": 3, "e-000000000003": 1}) == (
        ("e-000000000001", 2), ("e-000000000003", 1))



def test_a_negative_zero_importance_is_written_as_zero_by_every_path(brain):
    """Only `remember` wrote 0.00 for a negative zero; fmt wrote importance=-0.00 for any
    other (a hand edit read back, a rounding -0.004)."""
    import re
    from dataclasses import replace

    from pamd.core.fmt import render_entries

    assert brain("remember", "We decided to ship the billing export on Friday.")[0] == 0
    (day,) = (brain.cwd / "memory" / "L0").glob("*.md")
    edited = re.sub(r"importance=[\d.]+", "importance=-0.00", day.read_text(), count=1)
    (e,) = parse_doc(edited, "memory/L0/x.md", "L0").entries
    assert str(e.importance) == "0.0"
    for entry in (e, replace(e, importance=-0.0), replace(e, importance=-0.004)):
        out = render_entries([entry])
        assert "importance=0.00 " in out and "-0.00" not in out


def test_frontmatter_read_twice_is_parsed_anew_for_each_caller():
    """Parsed frontmatter is remembered by its text: a caller that changes what it got
    must not change what the next reader of the same text gets."""
    from pamd.core.fmt import split_frontmatter

    text = ("---\nkind: state\nactive_goals:\n- ship it\ntags: {a: [1, 2]}\npairs: !!omap [x: [1]]\n"
            "seen: !!set {p}\n---\n# STATE\n")
    first, _, _ = split_frontmatter(text, "STATE.md")
    first["active_goals"].append("a person's goal")
    first["tags"]["a"].append(3)
    first["pairs"][0][1].append(2)
    first["seen"].add("q")
    first["kind"] = "changed"
    second, _, _ = split_frontmatter(text, "STATE.md")
    assert second == {"kind": "state", "active_goals": ["ship it"], "tags": {"a": [1, 2]},
                      "pairs": [("x", [1])], "seen": {"p"}}
    assert second is not first and second["active_goals"] is not first["active_goals"]
