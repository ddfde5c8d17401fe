"""The union of two clones' entry files by id, as a pure function of the three versions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pamd.core.entry import Entry
from pamd.core.fmt import parse_doc, render_doc
from pamd.ops.union import merge_entry, merge_files

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
L0, L1 = "memory/L0/2026-11-30.md", "memory/L1/2026-11-30.md"


def raw(n: int, **kw) -> Entry:
    return Entry(id=f"e-{n:012x}", ts=T0 + timedelta(minutes=n), role="user", text=f"message {n}", **kw)


def summary(n: int, sources: list[Entry], tier: str = "L1", **kw) -> Entry:
    return Entry(id=f"s-{n:012x}", ts=max(e.ts for e in sources), role="summary", text=f"summary {n}",
                 tier=tier, sources=tuple(e.id for e in sources), **kw)


def doc(path: str, entries: list[Entry]) -> str:
    tier = "L1" if "/L1/" in path else "L0"
    return render_doc({"tier": tier, "date": "2026-11-30"}, f"# {tier} · 2026-11-30", entries)


def ids(text: str | None, path: str) -> list[str]:
    return [] if text is None else [e.id for e in parse_doc(text, path, "L1" if "/L1/" in path else "L0").entries]


def no_text3(b, o, t):
    return None


def nothing(found):
    return {}


def test_recalls_both_sides_folded_add_up_and_a_redaction_wins():
    b = raw(1, recalls=1)
    o = b.with_(recalls=3, text="the key is [REDACTED:api-key]")
    t = b.with_(recalls=2, seen="2026-12-01")
    m = merge_entry(b, o, t)
    assert (m.recalls, m.seen, m.text) == (4, "2026-12-01", "the key is [REDACTED:api-key]")
    assert merge_entry(b, t.with_(text="other words"), o).text == "the key is [REDACTED:api-key]"


def test_what_one_side_compacted_is_the_summarys_and_its_recall_goes_with_it():
    e1, e2, e3 = raw(1), raw(2), raw(3)
    s = summary(9, [e1, e2])
    base = {L0: doc(L0, [e1, e2, e3])}
    ours = {L0: doc(L0, [e3]), L1: doc(L1, [s])}
    theirs = {L0: doc(L0, [e1.with_(recalls=1), e2, e3, raw(4)])}
    m = merge_files((base, ours, theirs), {}, (set(), set()), no_text3, nothing)
    assert ids(m.files[L0], L0) == [e3.id, raw(4).id] and ids(m.files[L1], L1) == [s.id]
    assert m.folded == [e1.id, e2.id] and m.recalls == 1 and m.entries[s.id].recalls == 1


def test_two_summaries_of_the_same_messages_keep_one_and_give_back_the_rest():
    e1, e2, e3, e4 = raw(1), raw(2), raw(3), raw(4)
    mine, other = summary(8, [e1, e2, e3]), summary(9, [e2, e4])
    base = {L0: doc(L0, [e1, e2, e3])}
    ours = {L1: doc(L1, [mine])}
    theirs = {L1: doc(L1, [other])}  # e4 was ingested and compacted on that side alone
    asked = []

    def lookup(want):
        asked.append(set(want))
        return {e4.id: e4.with_(path=L0)} if e4.id in want else {}

    m = merge_files((base, ours, theirs), {}, (set(), set()), no_text3, lookup)
    assert ids(m.files[L1], L1) == [mine.id] and ids(m.files.get(L0), L0) == [e4.id]
    assert m.set_aside == [other.id] and m.restored == [e4.id] and asked == [{e4.id}]
    stands = [i for e in m.entries.values() for i in (e.id, *e.sources)]
    assert sorted(stands) == sorted({*stands})  # each message once


def test_a_drop_said_in_a_commit_is_kept_and_an_unsaid_deletion_is_undone():
    e1, e2 = raw(1), raw(2)
    base = {L0: doc(L0, [e1, e2])}
    ours = {L0: doc(L0, [e1, e2, raw(3)])}
    theirs = {L0: doc(L0, [])}
    m = merge_files((base, ours, theirs), {}, (set(), {e1.id}), no_text3, nothing)
    assert ids(m.files[L0], L0) == [e2.id, raw(3).id] and m.dropped == [e1.id]


def test_notes_both_sides_changed_are_a_conflict_unless_they_merge_as_text():
    e1 = raw(1)
    base = {"MEMORY.md": render_doc({}, "# MEMORY\n\nlead: anna", [e1])}
    ours = {"MEMORY.md": render_doc({}, "# MEMORY\n\nlead: bob", [e1])}
    theirs = {"MEMORY.md": render_doc({}, "# MEMORY\n\nlead: carol", [e1, raw(2)])}
    m = merge_files((base, ours, theirs), {}, (set(), set()), no_text3, nothing)
    assert m.conflicts == ["MEMORY.md"] and "MEMORY.md" not in m.files
    m = merge_files((base, ours, theirs), {}, (set(), set()), lambda b, o, t: "# MEMORY\n\nlead: bob and carol",
                    nothing)
    assert m.conflicts == [] and "lead: bob and carol" in m.files["MEMORY.md"]
    assert [e.id for e in parse_doc(m.files["MEMORY.md"], "MEMORY.md", "L4").entries] == [e1.id, raw(2).id]


def test_frontmatter_keys_each_side_changed_merge_key_by_key():
    e1 = raw(1)
    base = {L0: render_doc({"tier": "L0", "date": "2026-11-30"}, "# L0 · 2026-11-30", [e1])}
    ours = {L0: render_doc({"tier": "L0", "date": "2026-11-30", "owner": "anna"}, "# L0 · 2026-11-30", [e1])}
    theirs = {L0: render_doc({"tier": "L0", "date": "2026-11-30", "topic": "billing"}, "# L0 · 2026-11-30",
                             [e1, raw(2)])}
    m = merge_files((base, ours, theirs), {}, (set(), set()), no_text3, nothing)
    assert m.conflicts == []
    merged = parse_doc(m.files[L0], L0, "L0")
    assert merged.meta == {"tier": "L0", "date": "2026-11-30", "owner": "anna", "topic": "billing"}
    assert [e.id for e in merged.entries] == [e1.id, raw(2).id]
    ours = {L0: render_doc({"tier": "L0", "date": "2026-11-30", "topic": "sales"}, "# L0 · 2026-11-30", [e1])}
    assert merge_files((base, ours, theirs), {}, (set(), set()), no_text3, nothing).conflicts == [L0]


# ---------------------------------------------------------------- property
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pamd.core.entry import entry_id  # noqa: E402

OPS = st.lists(st.tuples(st.sampled_from(["add", "shared", "compact", "drop", "recall"]),
                         st.lists(st.integers(0, 30), min_size=1, max_size=4)), max_size=8)


def _live(start: dict[str, Entry], ops, side: str, made: dict[str, Entry], dropped: set[str]) -> dict[str, Entry]:
    """One clone's entries after `ops` from `start`; every entry it ever made goes into `made`."""
    tree = dict(start)
    for k, (op, picks) in enumerate(ops):
        top = sorted(tree)
        if op in ("add", "shared"):  # its own message, or one of a transcript both sides take in
            n = 100 + picks[0] if op == "shared" else 200 + 40 * (side == "b") + k
            e = raw(n).with_(path=L0)
            tree[e.id] = made.setdefault(e.id, e)
        elif op == "compact" and top:
            srcs = sorted({top[p % len(top)] for p in picks})
            parts = [tree[s] for s in srcs]
            tier = "L2" if any(p.tier != "L0" for p in parts) else "L1"
            s = Entry(id=entry_id("s", tier, *srcs), ts=max(p.ts for p in parts), role="summary",
                      text=f"summary of {len(srcs)}", tier=tier, sources=tuple(srcs),
                      path=f"memory/{tier}/2026-11-30.md")
            for src in srcs:
                del tree[src]
            tree[s.id] = made.setdefault(s.id, s)
        elif op == "drop" and top:
            victim = top[picks[0] % len(top)]
            if victim.startswith("e-"):
                del tree[victim]
                dropped.add(victim)
        elif op == "recall" and top:
            eid = top[picks[0] % len(top)]
            tree[eid] = tree[eid].with_(recalls=tree[eid].recalls + 1)
    return tree


def _texts(tree: dict[str, Entry]) -> dict[str, str]:
    by: dict[str, list[Entry]] = {}
    for e in tree.values():
        by.setdefault(e.path, []).append(e)
    out = {}
    for path, es in by.items():
        tier = path.split("/")[1]
        out[path] = render_doc({"tier": tier, "date": "2026-11-30"}, f"# {tier} · 2026-11-30",
                               sorted(es, key=lambda e: (e.ts, e.id)))
    return out


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 6), ours_ops=OPS, theirs_ops=OPS)
def test_any_two_lives_of_one_brain_merge_with_every_message_once(n, ours_ops, theirs_ops):
    """Both clones start from one brain and then each adds messages (some of a transcript both
    take in), compacts any entries into summaries (at any depth), drops messages saying so and
    folds recalls. The union holds every message exactly once, or not at all where a side
    dropped it and no summary holds it, with no conflict."""
    base = {e.id: e for e in (raw(i).with_(path=L0) for i in range(n))}
    made: dict[str, Entry] = dict(base)
    drops = (set(), set())
    ours = _live(base, ours_ops, "a", made, drops[0])
    theirs = _live(base, theirs_ops, "b", made, drops[1])
    sources = {e.id: e.sources for e in made.values() if e.sources}
    m = merge_files((_texts(base), _texts(ours), _texts(theirs)), sources, drops, no_text3,
                    lambda want: {i: made[i] for i in want if i in made})
    assert m.conflicts == []
    count: dict[str, int] = {}
    for e in m.entries.values():
        seen, stack = {e.id}, [e.id]
        while stack:
            for s in sources.get(stack.pop(), ()):
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        for i in seen:
            count[i] = count.get(i, 0) + 1
    for eid in (i for i in made if i.startswith("e-")):
        if eid in drops[0] | drops[1]:
            assert count.get(eid, 0) <= 1, eid
        else:
            assert count.get(eid, 0) == 1, (eid, count.get(eid, 0))
    written = [e.id for path, text in m.files.items() if text for e in parse_doc(text, path, path.split("/")[1]
                                                                                   if "/" in path else "L4").entries]
    assert sorted(written) == sorted(m.entries)


def test_sync_takes_every_key_pamd_remakes_in_state_whole_from_the_newer_side():
    """A STATE.md key pamd writes but sync did not know (a string like last_instruction)
    was taken for a person's text, and every sync after two compactions stopped on it."""
    from datetime import UTC, datetime

    from pamd.myelin.snapshot import SNAPSHOT_KEYS, snapshot
    from pamd.ops.fmmerge import merge_doc

    assert set(snapshot([], datetime(2026, 12, 1, tzinfo=UTC))) == set(SNAPSHOT_KEYS)
    base = "---\nlast_instruction: a\ndone: []\nupdated: '2026-12-01T10:00:00Z'\n---\n"
    ours = "---\nlast_instruction: b\ndone:\n- Closed x\nupdated: '2026-12-01T11:00:00Z'\n---\n"
    theirs = "---\nlast_instruction: c\ndone:\n- Closed y\nupdated: '2026-12-01T12:00:00Z'\n---\n"
    merged = merge_doc("STATE.md", base, ours, theirs, lambda b, o, t: o)
    assert merged is not None and "last_instruction: c" in merged and "Closed y" in merged and "Closed x" not in merged
