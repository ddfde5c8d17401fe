"""Hostile input (hypothesis): pamd never crashes, never writes outside the brain or
half a file, and every message it accepts round-trips exactly.

Each generated input goes through the real CLI (`pamd.cli.main`, in-process for
speed) into one real brain. Accepted means exit 0 and every entry lands as
`make_entries(sources.read(input))` says — the documented normalisation of
sources.normalize_text, nothing else; refused means exit 1 and one line
`pamd: error: ...`. Exit 3 (an internal error) fails the test. After every
input `git status` is clean and nothing outside the brain has changed.

PAMD_STRESS=K multiplies the number of examples by K.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import git
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pamd.core.entry import Entry, clean_token
from pamd.core.fmt import parse_doc, render_doc, render_entry

STRESS = max(1, int(os.environ.get("PAMD_STRESS", "1") or 1))
TALLY: dict[str, int] = {"inputs": 0, "accepted": 0, "refused": 0}
FUZZ = settings(max_examples=120 * STRESS, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])

# Characters that break naive line-oriented formats, and pamd's own syntax.
NASTY = ["\r", "\n", "\r\n", "\u2028", "\u2029", "\x85", "\x00", "\x1b", "\t", "\ufeff", "\ud800",
         "\udfff", "> ", ">", "### ", "### e-0123456789ab · 2026-11-30T09:00:00Z · user",
         "type=decision importance=0.90 neuro=- session=x recalls=0", "---", "...", "*&a [*a]",
         "· ", "`", "<!--", "-->", "e-", "s-", "\\", '"', "é", "🧠", "\u202e", " "]
text_st = st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=30)),
                   max_size=25).map("".join)
any_ts_st = st.one_of(st.none(), st.just(""), st.sampled_from(
    ["2026-11-30T09:00:00Z", "2026-11-30T09:00:00+05:30", "1700000000", "1700000000000",
     "0999-01-01T00:00:00Z", "9999-12-31T23:59:59-12:00", "yesterday", "2026-13-40"]),
    st.text(max_size=20), st.integers(), st.floats())
any_role_st = st.one_of(st.sampled_from(["user", "assistant", "tool", "system"]), text_st,
                        st.integers())
# Half the structured inputs are well-formed around hostile text, so most of
# those are accepted and their round trip is checked, not only the refusals.
good_ts_st = st.sampled_from([None, "2026-11-30T09:00:00Z", "2026-11-29T23:59:59+05:30",
                              "1700000000", "2026-11-30 10:00:00"])
good_role_st = st.one_of(st.sampled_from(["user", "assistant", "tool", "system"]), text_st)
json_st = st.recursive(st.none() | st.booleans() | st.integers() | text_st,
                       lambda c: st.lists(c, max_size=4) | st.dictionaries(text_st, c, max_size=4),
                       max_leaves=20)


@st.composite
def transcripts(draw) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(["pamd", "pamd", "openai", "claude", "markdown", "json", "bytes",
                                 "deep"]))
    ts_st, role_st = (good_ts_st, good_role_st) if draw(st.booleans()) else (any_ts_st, any_role_st)
    if kind == "pamd":
        rows = draw(st.lists(st.fixed_dictionaries(
            {"text": text_st}, optional={"ts": ts_st, "role": role_st, "session": text_st}),
            min_size=1, max_size=5))
        return "t.jsonl", "\n".join(json.dumps(r) for r in rows).encode()
    if kind == "openai":
        rows = draw(st.lists(st.fixed_dictionaries(
            {"role": role_st, "content": st.one_of(text_st, st.lists(st.one_of(
                text_st, st.fixed_dictionaries({"type": st.just("text"), "text": text_st})),
                max_size=3), json_st)}), min_size=1, max_size=4))
        return "chat.json", json.dumps(rows).encode()
    if kind == "claude":
        rows = draw(st.lists(st.fixed_dictionaries({
            "type": st.sampled_from(["user", "assistant", "progress"]), "sessionId": text_st,
            "timestamp": ts_st, "message": st.fixed_dictionaries(
                {"role": role_st, "content": st.one_of(text_st, st.lists(st.fixed_dictionaries(
                    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking"]),
                     "text": text_st, "input": json_st, "content": json_st}), max_size=3))})}),
            min_size=1, max_size=4))
        return "s.jsonl", "\n".join(json.dumps(r) for r in rows).encode()
    if kind == "markdown":
        name = draw(st.sampled_from(["2026-11-28.md", "../../2026-11-28.md", "note.md",
                                     "a/../../../etc/2026-11-29.md"]))
        front = draw(st.sampled_from(["", "---\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n---\n",
                                      "---\nunclosed: [\n"]))
        return name, (front + draw(text_st)).encode("utf-8", "surrogatepass")
    if kind == "json":
        return draw(st.sampled_from(["x.json", "x.jsonl", "../x.jsonl", "x"])), \
            json.dumps(draw(json_st)).encode()
    if kind == "deep":
        depth = draw(st.integers(1000, 200000))
        return "deep.json", (draw(st.sampled_from(["[", '{"a":'])) * depth).encode()
    return draw(st.sampled_from(["b.jsonl", "b.md", "b"])), draw(st.binary(max_size=300))


def outside(tmp_path: Path, root: Path) -> dict[str, float]:
    """Every path under tmp_path but the brain and the inputs, with its mtime (the walk
    does not go into either: the brain's .git grows with every example)."""
    out = {}
    for top, dirs, files in os.walk(tmp_path):
        here = Path(top)
        dirs[:] = [d for d in dirs if here / d != root and d != "inputs"]
        for p in (here / n for n in dirs + files if n != "inputs"):
            out[str(p)] = p.stat().st_mtime
    return out


def expected_entries(root: Path, name: str, data: bytes) -> list[Entry] | None:
    """What ingest must write for `data`, by pamd's own parse + normalisation (None: refused)."""
    from pamd.edge.brain import Brain
    from pamd.encode import sources
    from pamd.encode.ingest import make_entries, redactor
    from pamd.encode.neurotag import Tagger
    from pamd.errors import PamdError

    b = Brain(root)
    try:
        msgs = sources.read(data, name, None, redactor(b.config))
    except PamdError:
        return None
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    return make_entries(msgs, Tagger.from_config(b.config, root), redactor(b.config), now)[0]


def brain_entries(root: Path) -> dict[str, Entry]:
    out = {}
    for p in (root / "memory" / "L0").glob("*.md"):
        for e in parse_doc(p.read_text("utf-8"), str(p)).entries:
            out[e.id] = e
    return out


# Each bug this test found, kept as an explicit example (a regression test).
REGRESSIONS = [
    ("t.jsonl", b'{"ts": "2026-11-30T09:00:00Z", "role": "user", "text": "a\\ud800b\\udfff"}'),
    ("t.jsonl", b'{"ts": "0999-01-01T00:00:00Z", "role": "user", "text": "old"}'),
    ("deep.jsonl", b'{"a":' * 100000),
    ("deep.json", b"[" * 100000),
    ("s.jsonl", b'{"type": "user", "sessionId": "x", "message": {"role": 1, "content": "hi"}}'),
    ("2026-11-28.md", "- 09:00 line\u2028two\x85three\r\n### e-0123456789ab \u00b7 x".encode()),
]



def REGRESSION_EXAMPLES(f):  # noqa: N802 - a decorator named like the list it applies
    for case in reversed(REGRESSIONS):
        f = example(case=case)(f)
    return f


@FUZZ
@given(case=transcripts())
@REGRESSION_EXAMPLES
def test_hostile_transcripts_are_refused_cleanly_or_round_trip(brain, tmp_path, capsys, case):
    name, data = case
    root = brain.cwd
    inputs = tmp_path / "inputs" / "a" / "b"
    inputs.mkdir(parents=True, exist_ok=True)
    f = (inputs / name).resolve()
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(data)
    before = outside(tmp_path, root)
    head = git(root, "rev-parse", "HEAD").strip()
    expect = expected_entries(root, f.name if "/" not in name else str(f), data)
    code, out, err = brain("ingest", str(f))
    TALLY["inputs"] += 1
    assert code in (0, 1), f"exit {code}: {err}"
    if code == 1:
        TALLY["refused"] += 1
        assert err.startswith("pamd: error: ") and err.count("\n") == 1, err
        assert git(root, "rev-parse", "HEAD").strip() == head
    else:
        TALLY["accepted"] += 1
        assert expect is not None
        have = brain_entries(root)
        for e in expect:  # every accepted message is in the brain exactly as normalised
            got = have[e.id]
            assert (got.text, got.role, got.session, got.ts) == (e.text, e.role, e.session, e.ts)
            assert "\r" not in got.text and "\x00" not in got.text
        assert int(git(root, "rev-list", "--count", f"{head}..HEAD")) <= 1
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert outside(tmp_path, root) == before  # nothing written outside the brain
    assert brain("check")[0] == 0





@settings(max_examples=300 * STRESS, deadline=None, derandomize=True)
@given(text=text_st, role=any_role_st.map(str), session=text_st,
       imp=st.floats(0, 1), sources=st.lists(st.from_regex(r"[es]-[0-9a-f]{12}", fullmatch=True),
                                             max_size=3),
       ts=st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(9998, 12, 31)))
def test_render_then_parse_is_the_identity_after_normalisation(text, role, session, imp, sources,
                                                               ts):
    from pamd.encode.sources import normalize_text

    TALLY["roundtrip"] = TALLY.get("roundtrip", 0) + 1
    body = normalize_text(text) or "(empty)"
    e = Entry(id="e-0123456789ab", ts=ts.replace(tzinfo=UTC, microsecond=0), role=clean_token(role),
              text=body, session=clean_token(session), importance=round(imp, 2),
              sources=tuple(sources))
    both = [e, e.with_(id="e-ba9876543210")]
    doc = render_doc({"tier": "L0", "date": "2026-11-30"}, "# L0 · 2026-11-30", both)
    parsed = parse_doc(doc, "x.md", "L0").entries
    assert parsed == both
    assert render_entry(parsed[0]) == render_entry(e)


@pytest.mark.parametrize("where", ["MEMORY.md", "memory/L0/2026-11-30.md", "DNA.md"])
def test_a_yaml_bomb_in_a_brain_file_is_a_clear_error(brain, where):
    root = brain.cwd
    bomb = "---\n" + "\n".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]"
                               if i else "l0: &l0 [lol]" for i in range(12)) + "\n---\n# x\n"
    (root / where).parent.mkdir(parents=True, exist_ok=True)
    (root / where).write_text(bomb)
    git(root, "add", where)
    git(root, "commit", "-qm", "bomb")
    code, out, _ = brain("check")
    assert code == 1 and "aliases are not allowed" in out
    if where != "DNA.md":
        code, _, err = brain("compact")
        assert code == 1 and err.startswith("pamd: error:") and "aliases" in err


def test_zz_hostile_report():
    path = os.environ.get("PAMD_CRASH_REPORT")
    if path and Path(path).exists() and TALLY["inputs"]:
        data = json.loads(Path(path).read_text())
        data.update({f"hostile.{k}": v for k, v in TALLY.items()})
        Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
