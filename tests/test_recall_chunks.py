"""Chunks cut along Markdown structure point at the exact lines on disk."""

from __future__ import annotations

import json
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st
from recall_helpers import entries

from pamd.core.fmt import parse_doc, render_doc
from pamd.recall.chunks import chunk_file


def test_entry_chunks_span_header_to_blockquote_with_frontmatter_offset():
    es = entries()
    text = render_doc({"day": "2026-11-30", "note": "x"}, "# 30 Nov\n\nA preamble line.", es)
    lines = text.split("\n")
    chunks = chunk_file("memory/L0/d.md", text, "L0")
    entry_chunks = [c for c in chunks if c.ids]
    assert [c.ids[0] for c in entry_chunks] == [e.id for e in es]
    for c, e in zip(entry_chunks, es, strict=False):
        assert lines[c.start - 1].startswith(f"### {e.id} ")
        assert lines[c.end - 1] == "> " + e.text.split("\n")[-1]
        assert c.text == f"{e.role}: {e.text}"
        assert "importance=" not in c.text and c.ts == e.ts and c.tier == "L0"
    pre = chunks[0]
    assert not pre.ids and lines[pre.start - 1] == "# 30 Nov" and "preamble" in pre.text
    assert "day:" not in " ".join(c.text for c in chunks)  # frontmatter is not searchable


def test_html_comments_are_not_searched_and_a_new_brains_guidance_is_one():
    from conftest import REPO

    for name, tier in (("MEMORY.md", "L4"), ("DNA.md", "dna")):
        text = (REPO / "templates" / "brain" / name).read_text()
        assert chunk_file(name, text, tier) == [], name  # the template's guidance answers no query
    text = ("# Notes\n\nThe staging server is ferret.\n\n<!--\nguidance\n\nmore guidance\n-->\n\n"
            "Backups run at 02:00.\n\n<!-- a mark --> but words after it\n")
    lines = text.split("\n")
    chunks = chunk_file("MEMORY.md", text, "L4")
    assert "guidance" not in " ".join(c.text for c in chunks)
    ferret = next(c for c in chunks if "ferret" in c.text)
    backups = next(c for c in chunks if "Backups" in c.text)
    assert lines[ferret.end - 1] == "The staging server is ferret."  # the comment is the section's edge
    assert backups.text.startswith("Notes\n") and "but words after it" in backups.text  # text beside a comment stays


def test_plain_markdown_sections_and_long_lists_are_split():
    items = "\n".join(f"- item {i} about topic{i} with words to fill the line" for i in range(60))
    text = ("---\ntitle: notes\n---\n# Alpha\n\nFirst para.\n\n## Beta\n\n"
            f"{items}\n\n# Gamma\n\ntail\n")
    lines = text.split("\n")
    chunks = chunk_file("memory/daily/2026-11-01.md", text, "daily", max_chars=400)
    assert chunks[0].start == 4 and lines[chunks[0].start - 1] == "# Alpha"
    beta = [c for c in chunks if "Beta" in c.text]
    assert len(beta) > 3  # a long list becomes several chunks, each under a few lines
    for c in chunks:
        body = "\n".join(lines[c.start - 1 : c.end])
        last = c.text.split("\n")[-1]
        assert last in body, (c, body)
        assert c.end - c.start < 12
    covered = sorted(ln for c in beta for ln in range(c.start, c.end + 1))
    assert len(covered) == len(set(covered))  # no line in two chunks
    assert chunks[-1].text.startswith("# Gamma") and chunks[-1].end == len(lines) - 1


def test_malformed_entry_file_stays_searchable():
    text = "### e-0123456789ab · 2026-11-30T10:00:00Z · user\nbogus meta\n> hello there\n"
    chunks = chunk_file("memory/L0/x.md", text, "L0")
    assert len(chunks) == 1 and chunks[0].ids == ("e-0123456789ab",)
    assert "hello there" in chunks[0].text and (chunks[0].start, chunks[0].end) == (1, 3)


_chars = st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"))
_line = st.text(_chars, min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(_line, min_size=1, max_size=4).map("\n".join), min_size=1, max_size=6),
       st.booleans())
def test_entry_chunks_match_the_parser(texts, with_meta):
    es = entries([("user", t) for t in texts])
    text = render_doc({"a": 1} if with_meta else {}, "", es)
    parsed = parse_doc(text, "f.md", "L1").entries
    chunks = [c for c in chunk_file("f.md", text, "L1") if c.ids]
    assert [(c.ids[0], c.start, c.end) for c in chunks] == [
        (e.id, e.line_start, e.line_end) for e in parsed]


def test_a_bare_heading_is_not_a_chunk():
    from pamd.core.entry import Entry, parse_time
    from pamd.core.fmt import render_doc
    from pamd.recall.chunks import chunk_file

    e = Entry(id="e-0123456789ab", ts=parse_time("2026-11-30T09:00:00Z"), role="user", text="the OOM incident")
    text = render_doc({"tier": "L0", "date": "2026-11-30"}, "# L0 · 2026-11-30", [e])
    chunks = chunk_file("memory/L0/2026-11-30.md", text, "L0")
    assert [c.ids for c in chunks] == [("e-0123456789ab",)]
    notes = chunk_file("MEMORY.md", "# MEMORY\n\n## Empty section\n\n## Facts\n\nThe cat is named Pixel.\n", "L4")
    assert len(notes) == 1 and "Pixel" in notes[0].text


def test_for_embedding_with_context_only_changes_what_entries_embed():
    from pamd.recall.chunks import Chunk, for_embedding

    cs = [Chunk("f.md", 1, 2, "daily", "# Notes\nplain"), Chunk("f.md", 4, 6, "L0", "a: one", ("1",)),
          Chunk("f.md", 8, 10, "L1", "s: sum", ("2",)), Chunk("f.md", 8, 10, "L1", "a: leaf", ("2", "0")),
          Chunk("f.md", 8, 10, "L1", "b: leaf two", ("2", "9")),
          Chunk("f.md", 12, 14, "L0", "b: three", ("3",)), Chunk("f.md", 12, 14, "L0", "c: alone", ("3", "7"))]
    out = for_embedding(cs, 1)
    # entries with the entries around them; a summary's raw leaves with the leaves around
    # them (not with other summaries' leaves); plain sections and a lone leaf as they are
    assert [c.embed for c in out] == [None, "a: one\ns: sum", "a: one\ns: sum\nb: three",
                                      "a: leaf\nb: leaf two", "a: leaf\nb: leaf two",
                                      "s: sum\nb: three", None]
    assert [(c.text, c.hash, c.start, c.end) for c in out] == [(c.text, c.hash, c.start, c.end) for c in cs]
    assert out[1].vhash != cs[1].vhash and out[1].key != cs[1].key and cs[1].vhash == cs[1].hash
    assert for_embedding(cs, 0) == cs


def test_for_embedding_takes_a_summary_s_leaves_in_the_order_they_were_said():
    from datetime import UTC, datetime

    from pamd.recall.chunks import Chunk, for_embedding

    t = [datetime(2026, 11, 30, h, tzinfo=UTC) for h in (9, 10, 11)]
    # history may hand the leaves over in another order than they were said
    cs = [Chunk("f.md", 4, 6, "L1", "s: sum", ("s",)),
          Chunk("f.md", 4, 6, "L1", "b: second", ("s", "2"), t[1]),
          Chunk("f.md", 4, 6, "L1", "c: third", ("s", "3"), t[2]),
          Chunk("f.md", 4, 6, "L1", "a: first", ("s", "1"), t[0])]
    out = for_embedding(cs, 1)
    assert [c.embed for c in out[1:]] == ["a: first\nb: second\nc: third", "b: second\nc: third",
                                          "a: first\nb: second"]


def test_for_embedding_cuts_long_texts_and_long_neighbours_but_never_what_is_searched():
    from pamd.recall.chunks import ALONE_CHARS, CONTEXT_CHARS, EMBED_CHARS, Chunk, for_embedding

    assert CONTEXT_CHARS <= ALONE_CHARS <= EMBED_CHARS

    long = "tool: " + "".join(f"line {i} of a long tool output\n" for i in range(400))
    assert len(long) > 4 * EMBED_CHARS
    cs = [Chunk("f.md", 4, 6, "L0", "user: run the tests", ("1",)),
          Chunk("f.md", 8, 10, "L0", long, ("2",)),
          Chunk("f.md", 12, 14, "L0", "assistant: 3 failed", ("3",)),
          Chunk("MEMORY.md", 1, 9, "L4", "# Notes\n" + long)]
    alone = for_embedding(cs, 0)
    assert [c.embed for c in alone] == [None, long[:EMBED_CHARS], None, ("# Notes\n" + long)[:EMBED_CHARS]]
    ctx = for_embedding(cs, 1)
    assert ctx[0].embed == "user: run the tests\n" + long[:CONTEXT_CHARS]
    assert ctx[1].embed == long[:EMBED_CHARS] and ctx[1].own is None  # long enough to stand alone
    assert ctx[2].embed == long[:CONTEXT_CHARS] + "\nassistant: 3 failed"
    assert ctx[3].embed == ("# Notes\n" + long)[:EMBED_CHARS]
    # BM25, the hit's text and its lines still see everything
    assert [(c.text, c.start, c.end, c.hash) for c in ctx] == [(c.text, c.start, c.end, c.hash) for c in cs]


_ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["# Title", "## Part", "- an item", "a paragraph", ""]),
                          st.text("abcxyz ", min_size=1, max_size=12), _ENDINGS), max_size=25))
def test_chunk_lines_count_lf_only_whatever_the_line_endings(lines):
    # git, grep -n, sed -n and pamd's parser end a line at LF only; Markdown also at a bare CR.
    text = "".join(f"{kind} {words}".strip() + end if kind else end for kind, words, end in lines)
    on_disk = text.split("\n")
    for c in chunk_file("memory/daily/d.md", text, "daily", max_chars=60):
        assert 1 <= c.start <= c.end <= len(on_disk)
        cited = "\n".join(on_disk[c.start - 1:c.end])
        first, *rest = c.text.split("\n")
        assert first in cited or first in text  # a long section's later chunks start with its heading
        for ln in rest:
            assert ln in cited, (c, cited)
        assert "\r" not in c.text


def test_recall_hits_on_files_with_cr_line_endings_cite_lines_as_sed_and_expand_count(tmp_path, capsys):
    from recall_helpers import make_brain, recall_cli

    from pamd.cli import main

    es = entries()
    files = {
        # old Mac line endings: to git, grep and sed the whole note is line 1
        "memory/daily/2026-11-01.md":
            "# Notes\r\rThe walrus sleeps on the ice floe.\r\r# Other\r\rPenguins march in winter.\r",
        # mixed: CRLF, a bare CR inside an LF line, LF
        "memory/daily/2026-11-02.md": "---\ndate: 2026-11-02\n---\r\n# Mixed\r\nline one\r\n"
                                      "\rThe giraffe eats acacia leaves.\n\n# Tail\rzebra stripes pattern\n",
        # an entry file whose preamble a person edited on an old Mac
        "memory/L0/2026-11-30.md": render_doc({"day": "2026-11-30"},
                                              "# 30 Nov\rThe lighthouse keeper log.", es),
    }
    root = make_brain(tmp_path / "brain", files)
    assert main(["index", "--brain", str(root)]) == 0
    capsys.readouterr()

    def sed(rel: str, a: int, b: int) -> str:
        return subprocess.run(["sed", "-n", f"{a},{b}p", rel], cwd=root, capture_output=True,
                              check=True).stdout.decode()

    for query, rel, word in (
        ("walrus sleeping on ice", "memory/daily/2026-11-01.md", "walrus"),
        ("penguins marching", "memory/daily/2026-11-01.md", "Penguins"),
        ("giraffe acacia leaves", "memory/daily/2026-11-02.md", "giraffe"),
        ("zebra stripes", "memory/daily/2026-11-02.md", "zebra"),
        ("lighthouse keeper", "memory/L0/2026-11-30.md", "lighthouse"),
    ):
        hit = next(h for h in recall_cli(root, query, 3, capsys) if word in h["text"])
        a, b = hit["lines"]
        assert hit["path"] == rel and word in sed(rel, a, b), (query, hit)
        grep = subprocess.run(["grep", "-n", word, rel], cwd=root, capture_output=True, text=True)
        assert a <= int(grep.stdout.split(":")[0]) <= b, (query, hit, grep.stdout)
        assert b <= (root / rel).read_bytes().count(b"\n") + 1, (query, hit)
    day = "memory/L0/2026-11-30.md"
    on_disk = (root / day).read_bytes().decode("utf-8").split("\n")
    for e in es:  # entries below the CR-edited preamble: the hit, sed and `pamd expand` agree
        hit = next(h for h in recall_cli(root, e.text, 2, capsys) if e.id in h["ids"])
        a, b = hit["lines"]
        head = next(n for n, ln in enumerate(on_disk, 1) if ln.startswith(f"### {e.id} "))
        assert a <= head <= b and f"> {e.text}" in sed(day, a, b), (e, hit)
        assert on_disk[b - 1].startswith("> "), (e, hit)  # a hit ends with an entry's last line
        assert main(["expand", "--brain", str(root), "--json", f"{day}:{b}"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["id"] in hit["ids"]


def test_for_embedding_reads_tool_traffic_short_and_alone():
    from pamd.recall.chunks import CONTEXT_CHARS, TOOL_CHARS, TOOL_CONTEXT_CHARS, Chunk, for_embedding, is_tool_traffic

    assert TOOL_CONTEXT_CHARS <= TOOL_CHARS
    call = "assistant: [tool Bash] " + '{"command": "mix test --trace", "description": "' + "x" * 900 + '"}'
    result = "tool: [tool result] " + "".join(f"test {i} passed\n" for i in range(200))
    error = "tool: [tool error] Exit code 1\n" + "** (RuntimeError) secret_key_base is missing " * 30
    said = "assistant: 3 failed: the endpoint needs a secret_key_base in config/test.exs"
    cs = [Chunk("f.md", 1, 3, "L0", "user: run the tests", ("1",)),
          Chunk("f.md", 4, 6, "L0", call, ("2",)),
          Chunk("f.md", 7, 9, "L0", result, ("3",)),
          Chunk("f.md", 10, 12, "L0", error, ("4",)),
          Chunk("f.md", 13, 15, "L0", said, ("5",)),
          Chunk("f.md", 16, 18, "L0", "tool: [tool result] ok", ("6",))]
    assert [is_tool_traffic(c.text) for c in cs] == [False, True, True, True, False, True]
    assert not is_tool_traffic("Caroline: [D1:3] I ran [tool result] by Mel") and not is_tool_traffic("# a\nb: c")
    out = for_embedding(cs, 1)
    # tool traffic: its head, alone (a short one as it is)
    assert out[1].embed == call[:len("assistant: ") + TOOL_CHARS] and out[1].own is None
    assert out[2].embed == result[:len("tool: ") + TOOL_CHARS] and out[2].own is None
    assert out[3].embed == error[:len("tool: ") + TOOL_CHARS] and out[5].embed is None
    # a turn of dialogue reads tool traffic around it by its first characters only
    assert out[0].embed == "user: run the tests\n" + call[:TOOL_CONTEXT_CHARS]
    assert out[4].embed == error[:TOOL_CONTEXT_CHARS] + "\n" + said + "\n" + cs[5].text
    assert TOOL_CONTEXT_CHARS < CONTEXT_CHARS
    # BM25, the hit's text and its lines still see everything
    assert [(c.text, c.start, c.end, c.hash) for c in out] == [(c.text, c.start, c.end, c.hash) for c in cs]
