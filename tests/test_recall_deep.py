"""Deep recall: a fact compressed out of a summary's words is still found, citing the summary."""

from __future__ import annotations

import json
import shutil

from conftest import git

from pamd.core.fmt import parse_doc


def ingest_mixed_facts(brain, tmp_path):
    """Six messages, three of them facts worth keeping; ingested raw. Returns the rows."""
    rows = [{"ts": f"2026-11-30T08:{i:02d}:00Z", "role": "assistant", "session": "s",
             "text": t} for i, t in enumerate([
                 "The staging database listens on port 5433 since the migration.",
                 "Reviewed the dashboard colours with Anna; she prefers the darker theme.",
                 "The nightly backup job writes to the bucket named pamd-archive-eu.",
                 "Lunch order placed for the team offsite on Thursday.",
                 "The export runs in a single pod limited to 512 MB of memory.",
                 "We talked about the weather in Lisbon and the new coffee machine.",
             ])]
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert brain("ingest", str(f), now="2026-11-30T09:00:00Z")[0] == 0
    return rows


def _brain_with_a_compressed_fact(brain, tmp_path):
    ingest_mixed_facts(brain, tmp_path)
    assert brain("compact", now="2026-11-30T15:00:00Z")[0] == 0


def test_a_fact_compressed_out_of_the_summary_is_found_and_cites_the_summary(brain, tmp_path):
    _brain_with_a_compressed_fact(brain, tmp_path)
    summary = next(p for p in (brain.cwd / "memory" / "L1").glob("*.md")).read_text()
    assert "pamd-archive-eu" not in summary  # the 3:1 summary dropped those words
    code, out, err = brain("recall", "which bucket does the nightly backup write to", "--json", "-k", "3")
    assert code == 0, err
    hits = json.loads(out)
    top = hits[0]
    assert top["path"].startswith("memory/L1/") and top["ids"][0].startswith("s-")
    lines = (brain.cwd / top["path"]).read_text().split("\n")[top["lines"][0] - 1: top["lines"][1]]
    assert lines[0].startswith(f"### {top['ids'][0]} ")  # the lines of the summary, as on disk
    raw = top["ids"][1]
    code, out, _ = brain("expand", raw, "--json")
    assert "pamd-archive-eu" in json.loads(out)[0]["text"]



def test_recall_expand_puts_the_matched_leaf_first_marked_then_time_order_and_caps(
        brain, tmp_path, monkeypatch):
    """--expand printed every raw message behind the summary in provenance
    order, the matched one somewhere among them and unmarked, with no cap."""
    from pamd.commands import recall as cmd

    _brain_with_a_compressed_fact(brain, tmp_path)
    q = "which bucket does the nightly backup write to"
    top = json.loads(brain("recall", q, "--json", "--expand", "-k", "1", "--no-log")[1])[0]
    raw = top["ids"][1]
    assert top["expanded_matched"] == [raw]
    first, *rest = top["expanded"]
    assert first.startswith(raw + " ") and "pamd-archive-eu" in first
    times = [line.split()[1] for line in rest]
    assert rest and times == sorted(times)
    code, out, _ = brain("recall", q, "--expand", "-k", "1", "--no-log")
    lines = out.splitlines()
    lines = lines[:1] + [ln for ln in lines if ln.startswith(("    * ", "      "))]  # after the snippet
    assert code == 0 and lines[1].startswith(f"    * {raw} ")
    assert all(ln.startswith("      e-") for ln in lines[2:])
    monkeypatch.setattr(cmd, "EXPAND_LINES", 2)
    lines = brain("recall", q, "--expand", "-k", "1", "--no-log")[1].splitlines()
    lines = lines[:1] + [ln for ln in lines if ln.startswith(("    * ", "      "))]
    summaries = [i for i in top["ids"] if i.startswith("s-")]
    assert len(lines) == 4 and lines[1].startswith(f"    * {raw} ")
    from datetime import datetime

    def at(line: str) -> float:
        return datetime.fromisoformat(line.split()[1].replace("Z", "+00:00")).timestamp()

    nearest = min(rest, key=lambda ln: (abs(at(ln) - at(first)), rest.index(ln)))
    assert lines[2] == "      " + nearest  # the context said nearest the matched message
    assert nearest != rest[0], rest  # else this would not tell nearest from first
    assert lines[3] == f"      … {len(top['expanded']) - 2} more (pamd expand {' '.join(summaries)})"


def test_a_fresh_clone_rebuilds_the_deep_index_from_history(brain, tmp_path):
    _brain_with_a_compressed_fact(brain, tmp_path)
    q = "which bucket does the nightly backup write to"
    first = json.loads(brain("recall", q, "--json", "-k", "3")[1])
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(brain.cwd), str(clone))
    brain.cwd = clone
    assert brain("index")[0] == 0
    again = json.loads(brain("recall", q, "--json", "-k", "3")[1])
    assert [(h["path"], h["lines"], h["ids"]) for h in again] == [(h["path"], h["lines"], h["ids"]) for h in first]
    shutil.rmtree(clone / ".pamd")
    assert json.loads(brain("recall", q, "--json", "-k", "3")[1])[0]["ids"] == first[0]["ids"]


def test_a_corrupt_deep_cache_is_rebuilt_from_history(brain, tmp_path):
    _brain_with_a_compressed_fact(brain, tmp_path)
    q = "which bucket does the nightly backup write to"
    first = json.loads(brain("recall", q, "--json", "-k", "3")[1])
    deep = brain.cwd / ".pamd" / "deep.sqlite"
    deep.write_text("garbage\n")
    code, out, err = brain("recall", q, "--json", "-k", "3")
    assert code == 0, err
    assert json.loads(out)[0]["ids"] == first[0]["ids"]
    deep.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)  # a header, then nonsense
    for f in (brain.cwd / ".pamd").glob("index*"):  # no index either: every leaf comes from history
        shutil.rmtree(f) if f.is_dir() else f.unlink()
    code, out, err = brain("index")
    assert code == 0, err
    assert json.loads(brain("recall", q, "--json", "-k", "3")[1])[0]["ids"] == first[0]["ids"]


def _clone_with_a_duplicate_id(brain, tmp_path):
    """Day 1 compacted, day 2 raw, its entry pasted twice and
    committed by hand; then cloned (no .pamd/: every summary's leaves come from history)."""
    _brain_with_a_compressed_fact(brain, tmp_path)
    (tmp_path / "e.jsonl").write_text(json.dumps({"ts": "2026-12-01T08:00:00Z", "role": "user",
                                                  "session": "t", "text": "Lunch is at noon."}) + "\n")
    assert brain("ingest", str(tmp_path / "e.jsonl"), now="2026-12-01T09:00:00Z")[0] == 0
    day = brain.cwd / "memory" / "L0" / "2026-12-01.md"
    text = day.read_text()
    day.write_text(text + text[text.rfind("\n### ") + 1:])
    git(brain.cwd, "commit", "-qam", "a merge resolved by keeping both")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(brain.cwd), str(clone))
    brain.cwd = clone


def test_a_duplicate_id_in_a_clone_leaves_the_deep_lookup_uncached_until_fixed(brain, tmp_path):
    """It cached "no leaves" for every summary, silently, for good: fixing the duplicate and
    `pamd index --rebuild` never brought the raw messages back (only rm .pamd/deep.sqlite)."""
    q = "which bucket does the nightly backup write to"
    _clone_with_a_duplicate_id(brain, tmp_path)
    code, _, err = brain("index")
    assert code == 0 and "duplicate id" in err and "`pamd index`" in err, err
    hit = json.loads(brain("recall", q, "--json", "-k", "1", "--no-log")[1])[0]
    assert len(hit["ids"]) == 1 and hit["ids"][0].startswith("s-")  # the summary itself, still found
    git(brain.cwd, "revert", "--no-edit", "HEAD")
    code, _, err = brain("index", "--rebuild")
    assert code == 0 and "warning" not in err, err
    hit = json.loads(brain("recall", q, "--json", "-k", "1", "--no-log")[1])[0]
    assert hit["ids"][1].startswith("e-") and "pamd-archive-eu" in hit["text"]


def test_a_plain_index_brings_the_leaves_back_once_the_duplicate_id_is_fixed(brain, tmp_path):
    """After the duplicate id was fixed, `pamd index` (and recall) left the
    summaries without their raw leaves until `pamd index --rebuild`: only changed files are
    chunked again, and the summaries' files had not changed."""
    q = "which bucket does the nightly backup write to"
    _clone_with_a_duplicate_id(brain, tmp_path)
    code, _, err = brain("index")
    assert code == 0 and "duplicate id" in err and "`pamd index`" in err, err
    code, _, err = brain("index")  # nothing changed: nothing asked again, no second warning
    assert code == 0 and "warning" not in err, err
    git(brain.cwd, "revert", "--no-edit", "HEAD")
    code, out, err = brain("index")
    assert code == 0 and "warning" not in err and "rebuilt" not in out, (out, err)
    hit = json.loads(brain("recall", q, "--json", "-k", "1", "--no-log")[1])[0]
    assert hit["ids"][1].startswith("e-") and "pamd-archive-eu" in hit["text"]
    # and the index is the one a rebuild makes
    before = brain("recall", q, "--json", "-k", "5", "--no-log")[1]
    assert brain("index", "--rebuild")[0] == 0
    assert brain("recall", q, "--json", "-k", "5", "--no-log")[1] == before


def test_a_summary_re_added_after_its_leaves_still_stands_for_its_place():
    """Neighbours name a place by its first chunk in label order. A
    summary whose embedded context changed (dense_context: an entry next to it edited) is
    added again with a new label while its raw leaves keep theirs, so a refreshed index
    named a leaf as the place's neighbour (the leaf's words, not the summary's, counted for
    the chunks around it) where a rebuilt one named the summary: on a real brain, a hit
    with other ids and text after a person moved an entry, until `pamd index --rebuild`."""
    import sqlite3

    import numpy as np

    from pamd.recall.store import columns

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE chunks(label INTEGER PRIMARY KEY, key TEXT, path TEXT, start INT, end INT,"
               " tier TEXT, ts REAL, importance REAL, ids TEXT, hash TEXT, text TEXT, alive INT)")
    rows = [(0, 1, 3, "e-a"), (1, 5, 7, "s-b,e-x"), (2, 5, 7, "s-b,e-y"), (3, 9, 11, "e-c"),
            (4, 5, 7, "s-b")]  # label 4: the summary, added again after its leaves 1 and 2
    db.executemany("INSERT INTO chunks VALUES (?, '', 'f.md', ?, ?, 'L1', ?, NULL, ?, '', '', 1)",
                   [(lb, a, b, float(lb), ids) for lb, a, b, ids in rows])
    cols = {c: np.full(5, -1, np.int64) for c in ("prev", "next", "cprev", "cnext")}
    columns.link_neighbours(db, cols, {"f.md"})
    assert cols["next"][0] == 4 and cols["prev"][3] == 4  # the summary, as in a rebuild
    assert cols["prev"][4] == cols["prev"][1] == 0 and cols["next"][2] == 3


def test_index_rebuild_asks_history_again_for_a_cached_no_leaves_answer(brain, tmp_path):
    """A cache an older pamd filled with "no leaves" (the duplicate id above) outlived
    `pamd index --rebuild`; a rebuild asks history again (leaves it read stay)."""
    import sqlite3

    q = "which bucket does the nightly backup write to"
    _brain_with_a_compressed_fact(brain, tmp_path)
    sid = json.loads(brain("recall", q, "--json", "-k", "1", "--no-log")[1])[0]["ids"][0]
    with sqlite3.connect(brain.cwd / ".pamd" / "deep.sqlite") as db:
        db.execute("DELETE FROM leaves WHERE summary=?", (sid,))
        db.execute("INSERT INTO leaves VALUES (?, -1, '', '', '', '')", (sid,))
    db.close()
    assert brain("index", "--rebuild")[0] == 0
    hit = json.loads(brain("recall", q, "--json", "-k", "1", "--no-log")[1])[0]
    assert hit["ids"][0] == sid and hit["ids"][1].startswith("e-") and "pamd-archive-eu" in hit["text"]


def test_the_no_leaves_marker_is_no_leaf(tmp_path):
    """deep._get read the pos=-1 marker row back as a leaf: hits showed an empty ": " leaf."""
    from pamd.recall import deep

    db = deep._connect(tmp_path)
    with db:
        deep._put(db, "s-000000000001", [])
        deep._put(db, "s-000000000002", [("e-000000000003", "2026-12-01T08:00:00Z", "user", "hi")])
    assert deep._get(db, "s-000000000001") == []
    assert deep._get(db, "s-000000000002") == [("e-000000000003", "2026-12-01T08:00:00Z", "user", "hi")]
    assert deep._get(db, "s-000000000004") is None
    db.close()


def test_the_text_output_says_a_hit_matched_words_behind_a_summary(brain, tmp_path):
    _brain_with_a_compressed_fact(brain, tmp_path)
    code, out, _ = brain("recall", "which bucket does the nightly backup write to", "-k", "1")
    assert code == 0 and out.startswith("memory/L1/") and "[via e-" in out and "behind the summary]" in out


def test_a_summary_s_leaves_count_the_words_of_the_leaves_said_around_them(brain, tmp_path):
    """Raw leaves keep their conversation: BM25 context (cprev/cnext) runs from leaf to leaf in
    the order they were said, while hit shaping still sees places (prev/next)."""
    from pamd.recall.store.index import Index

    _brain_with_a_compressed_fact(brain, tmp_path)
    assert brain("index")[0] == 0
    idx = Index(brain.cwd / ".pamd")
    idx.open()
    try:
        assert idx.load_state()
        rows = idx.db.execute("SELECT label, start, ids, ts FROM chunks WHERE alive=1").fetchall()
        leaves = sorted((ts, label) for label, _, ids, ts in rows if ids.count(",") == 1)
        assert len(leaves) >= 2
        by_place: dict[int, list[int]] = {}
        for label, start, _ids, _ in rows:
            by_place.setdefault(start, []).append(label)
        c = idx.cols
        linked = 0
        for (_, a), (_, b) in zip(leaves, leaves[1:], strict=False):
            place_a = next(s for s, ls in by_place.items() if a in ls)
            if b in by_place[place_a]:  # the next leaf of the same summary, in time order
                assert c["cnext"][a] == b and c["cprev"][b] == a
                linked += 1
        assert linked >= 1
        for _, lb in leaves:  # shaping still sees the summary's neighbouring places
            place = next(s for s, ls in by_place.items() if lb in ls)
            entry = min(by_place[place])
            assert c["prev"][lb] == c["prev"][entry] and c["next"][lb] == c["next"][entry]
    finally:
        idx.close()


def _deep_rows(root):
    import sqlite3

    db = sqlite3.connect(root / ".pamd" / "deep.sqlite")
    try:
        return sorted(db.execute("SELECT summary, pos, raw, ts, role, text FROM leaves").fetchall())
    finally:
        db.close()


def test_a_compaction_caches_its_summaries_leaves_before_the_commit_hooks_run(brain, tmp_path):
    """A recall while the brain's git hooks run (pamd-probe's, an agent's) finds the new summaries'
    leaves in .pamd/deep.sqlite instead of walking history once per summary; a refused commit
    leaves rows that equal what the later, committed summaries of the same sources need."""
    import sys

    seen = tmp_path / "seen.txt"
    hook = brain.cwd / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        f"#!/bin/sh\n{sys.executable} -c \"import sqlite3; print('\\\\n'.join(r[0] for r in sqlite3.connect("
        f"'.pamd/deep.sqlite').execute('SELECT DISTINCT summary FROM leaves')))\" > {seen}\n"
        "exit ${REFUSE:-0}\n")
    hook.chmod(0o755)
    rows = [{"ts": f"2026-11-30T08:{i:02d}:00Z", "role": "assistant", "session": "s",
             "text": f"Fact number {i}: the service on port {5000 + i} answers health checks."} for i in range(6)]
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert brain("ingest", str(f), now="2026-11-30T09:00:00Z")[0] == 0
    r = brain.proc("compact", now="2026-11-30T15:00:00Z", env={"REFUSE": "1"})
    assert r.returncode == 1 and b"nothing was committed" in r.stderr
    refused = set(seen.read_text().split())
    assert refused and all(s.startswith("s-") for s in refused)  # cached before the hook ran
    assert not list((brain.cwd / "memory" / "L1").glob("*.md"))  # and rolled back
    seen.unlink()
    assert brain("compact", now="2026-11-30T15:00:00Z")[0] == 0
    made = {ln.split()[1] for p in (brain.cwd / "memory" / "L1").glob("*.md")
            for ln in p.read_text().split("\n") if ln.startswith("### s-")}
    assert made and made <= set(seen.read_text().split())  # the hook saw every new summary cached
    assert made == refused  # same sources, same ids
    cached = _deep_rows(brain.cwd)
    (brain.cwd / ".pamd" / "deep.sqlite").unlink()
    assert brain("index")[0] == 0  # every leaf read back from history
    assert _deep_rows(brain.cwd) == cached


def test_a_summary_made_again_after_a_revert_reads_the_sources_it_was_made_from(brain, tmp_path):
    """Revert a compaction, correct a raw entry, compact again: the summary (same id) stands for
    the corrected text, in `expand`, in this brain's recall and in a fresh clone's."""
    _brain_with_a_compressed_fact(brain, tmp_path)
    root = brain.cwd
    git(root, "revert", "--no-edit", "HEAD")
    l0 = next((root / "memory" / "L0").glob("*.md"))
    old = "The nightly backup job writes to the bucket named pamd-archive-eu."
    eid = next(e.id for e in parse_doc(l0.read_text(), "x", "L0").entries if e.text == old)
    l0.write_text(l0.read_text().replace(old, "The nightly backup job writes to the bucket named zorblax-vault."))
    git(root, "commit", "-qam", "fix the bucket name")
    assert brain("compact", now="2026-11-30T15:00:00Z")[0] == 0
    summary = next(e for p in (root / "memory" / "L1").glob("*.md")
                   for e in parse_doc(p.read_text(), "x", "L1").entries if eid in e.sources)

    def leaves(found):
        return " ".join(f["text"] for f in found if f["id"].startswith("e-"))

    code, out, err = brain("expand", summary.id, "--json")
    assert code == 0, err
    assert "zorblax-vault" in leaves(json.loads(out)) and "pamd-archive-eu" not in leaves(json.loads(out))

    q = "which bucket does the nightly backup write to"
    here = json.loads(brain("recall", q, "--json", "-k", "3")[1])
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    brain.cwd = clone
    there = json.loads(brain("recall", q, "--json", "-k", "3")[1])
    assert [(h["path"], h["ids"], h["text"]) for h in there] == [(h["path"], h["ids"], h["text"]) for h in here]
    assert "zorblax-vault" in there[0]["text"]
    assert not any("pamd-archive-eu" in h["text"] for h in there)


def _compress_l1(brain, tmp_path, fix=None):
    """The L1 summary of the compressed fact, optionally corrected by hand, compressed into L2."""
    _brain_with_a_compressed_fact(brain, tmp_path)
    l1 = next((brain.cwd / "memory" / "L1").glob("*.md"))
    sid = next(e.id for e in parse_doc(l1.read_text(), "x", "L1").entries)
    if fix:
        assert fix[0] in l1.read_text()
        l1.write_text(l1.read_text().replace(*fix))
        git(brain.cwd, "commit", "-qam", "correct the summary")
    assert brain("defrag", now="2026-12-01T06:00:00Z")[0] == 0
    assert f"### {sid} " not in "".join(p.read_text() for p in (brain.cwd / "memory").glob("L*/*.md"))
    return sid


def test_a_summary_corrected_by_hand_stays_findable_after_it_is_compressed(brain, tmp_path):
    sid = _compress_l1(brain, tmp_path, ("limited to 512 MB of memory", "limited to 768 MB of memory (Ann)"))
    q = "export pod limited to 768 MB memory Ann"
    for where in ("this brain", "a fresh clone"):
        if where == "a fresh clone":
            git(tmp_path, "clone", "-q", str(brain.cwd), str(tmp_path / "clone"))
            brain.cwd = tmp_path / "clone"
        hits = json.loads(brain("recall", "--log", q, "--json", "-k", "1")[1])
        assert hits[0]["path"].startswith("memory/L2/"), where
        assert sid in hits[0]["ids"] and "768 MB of memory (Ann)" in hits[0]["text"], where
    # the uncorrected raw message stays behind the summary as well (its words were never edited):
    # its place is the hit, and the raw message is behind it (learned fusion's maxsim counts
    # words, not numbers, so the corrected text, which says all but "512", may be the chunk
    # that ranks the place)
    hits = json.loads(brain("recall", "--log", "export single pod 512 MB memory", "--json", "--expand", "-k", "1")[1])
    assert sid in hits[0]["ids"] and any("512 MB" in line for line in hits[0]["expanded"])
    # The logged recall of the corrected text counts for the summary, but its leaf is no raw
    # message: it stays out of via= (which names raw ids), so the fold cannot break a run.
    code, _, err = brain("compact", now="2026-12-01T07:00:00Z")
    assert code == 0, err
    assert brain("check")[0] == 0 and "via=s-" not in "".join(
        p.read_text() for p in (brain.cwd / "memory").glob("L*/*.md"))


def test_a_summary_nobody_edited_adds_no_leaf_of_its_own(brain, tmp_path):
    from pamd.recall.store.index import Index

    _compress_l1(brain, tmp_path)
    for clone in (None, brain.cwd.parent / "clone"):  # leaves recorded by compaction, then read from history
        if clone:
            git(clone.parent, "clone", "-q", str(brain.cwd), str(clone))
            brain.cwd = clone
        assert brain("index")[0] == 0
        idx = Index(brain.cwd / ".pamd")
        idx.open()
        try:
            ids = [r[0].split(",") for r in idx.db.execute("SELECT ids FROM chunks WHERE alive=1")]
        finally:
            idx.close()
        assert any(len(i) == 2 for i in ids) and not any(i[1].startswith("s-") for i in ids if len(i) == 2)


def test_a_probe_worktree_starts_from_the_brains_leaf_and_vector_caches(brain, tmp_path):
    """`pamd probe --against HEAD` (the pamd-probe hook) indexes a throw-away worktree of HEAD:
    without the brain's deep.sqlite it read every summary's leaves from history again."""
    import sqlite3

    from pamd.edge.brain import Brain
    from pamd.edge.worktrees import checkout_of

    _brain_with_a_compressed_fact(brain, tmp_path)
    assert brain("index")[0] == 0
    b = Brain(brain.cwd)

    def rows(path):
        with sqlite3.connect(path) as db:
            return sorted(db.execute("SELECT summary, pos, raw FROM leaves").fetchall())

    mine = rows(b.state_dir / "deep.sqlite")
    assert mine
    with checkout_of(b.repo, "HEAD", b.state_dir) as wt:
        assert rows(wt / ".pamd" / "deep.sqlite") == mine
        assert (wt / ".pamd" / "vectors.sqlite").is_file()


def test_a_fresh_clone_reads_every_summarys_leaves_in_one_pass_over_history(brain, tmp_path, monkeypatch):
    """A clone (a second machine, CI) has no .pamd/deep.sqlite: its first index read each summary's
    leaves with a `git log -S` walk per id, summaries x history (minutes for a brain months old).
    Now one `git log` serves them all, and the leaves equal those compaction recorded."""
    from pamd.edge.git import Repo

    for day in range(3):  # a summary per day and kind, compressed again at the next defrag
        rows = [{"ts": f"2026-11-{10 + day}T08:{i:02d}:00Z", "role": "assistant", "session": f"s{day}",
                 "text": f"Day {day} fact {i}: the service on port {5000 + 10 * day + i} answers health checks."}
                for i in range(6)]
        f = tmp_path / f"s{day}.jsonl"
        f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        assert brain("ingest", str(f), now=f"2026-11-{10 + day}T09:00:00Z")[0] == 0
        assert brain("compact", now=f"2026-11-{10 + day}T15:00:00Z")[0] == 0
    assert brain("defrag", now="2026-12-20T06:00:00Z")[0] == 0
    assert brain("index")[0] == 0
    cached = _deep_rows(brain.cwd)
    assert len({r[0] for r in cached}) >= 4
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(brain.cwd), str(clone))
    brain.cwd = clone
    logs = []
    real = Repo._exec

    def counting(self, args, **kw):
        logs.extend(a for a in args[:3] if a == "log")
        return real(self, args, **kw)

    monkeypatch.setattr(Repo, "_exec", counting)
    assert brain("index")[0] == 0
    got = _deep_rows(clone)
    tree = {ln.split()[1] for p in [clone / "MEMORY.md", *(clone / "memory").glob("L*/*.md")]
            for ln in p.read_text().split("\n") if ln.startswith("### s-")}
    assert {r[0] for r in got} == tree and len(tree) >= 2
    assert got == [r for r in cached if r[0] in tree]
    assert len(logs) == 1
