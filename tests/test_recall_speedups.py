"""The faster paths of recall give exactly what the plain ones gave (docs/benchmarks.md, "Speed")."""

from __future__ import annotations

import os

import numpy as np
import pytest
from recall_helpers import entries, make_brain

from pamd.core.fmt import render_doc
from pamd.edge.brain import Brain
from pamd.recall import api
from pamd.recall.lexical import bm25, file_rank
from pamd.recall.search import _context, _file_prior, neighbour_plan
from pamd.recall.sources import source_files, tier_for


def _rglob_sources(root):
    """source_files as it was written with Path.rglob: the reference."""
    out = []
    for name in ("MEMORY.md", "DNA.md"):
        if (root / name).is_file():
            out.append((name, tier_for(name)))
    for top in ("memory", "synapse"):
        base = root / top
        if base.is_dir():
            for p in base.rglob("*.md"):
                rel = p.relative_to(root).as_posix()
                tier = tier_for(rel)
                if tier and p.is_file() and not any(part.startswith(".") for part in p.parts):
                    out.append((rel, tier))
    return sorted(out)


def test_source_files_match_a_recursive_glob(tmp_path):
    root = tmp_path / "brain"
    for rel in ("MEMORY.md", "memory/L1/a.md", "memory/L1/sub/b.md", "memory/.hidden/c.md",
                "memory/L1/.d.md", "memory/L1/e.txt", "memory/daily/2026-11-30.md",
                "synapse/bob/x.md", "memory/L3/.md", "memory/other.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    (root / "memory/L2/dir.md").mkdir(parents=True)
    os.symlink(root / "memory/L1", root / "memory/L1/sub/loop")  # a directory link is not entered
    os.symlink(root / "memory/L1/a.md", root / "memory/L1/link.md")  # a file link counts
    os.symlink(root / "nowhere.md", root / "memory/L1/broken.md")
    got = source_files(root)
    assert got == _rglob_sources(root)
    assert ("memory/L1/link.md", "L1") in got and not any("loop" in r for r, _ in got)


def _file_prior_reference(fused, lex, cols, w, fk):
    pos = np.flatnonzero(lex > 0)
    if pos.shape[0] == 0:
        return
    files, inv = np.unique(cols["fileid"][pos], return_inverse=True)
    total = np.bincount(inv, weights=lex[pos])
    rank = np.empty(files.shape[0], np.int64)
    rank[np.lexsort((files, -total))] = np.arange(files.shape[0])
    frank = dict(zip(files.tolist(), rank.tolist(), strict=True))
    for lb in fused:
        r = frank.get(int(cols["fileid"][lb]))
        if r is not None:
            fused[lb] += w / (fk + r + 1)


@pytest.mark.parametrize("share", [0.02, 0.3, 0.99])  # few labels score, or most (summed whole)
def test_file_prior_gives_the_same_scores_as_np_unique_over_the_positives(share):
    rng = np.random.default_rng(3)
    for n, nfiles in ((50, 3), (2000, 40), (20000, 7)):
        cols = {"fileid": rng.integers(1, 2**55, nfiles)[rng.integers(0, nfiles, n)]}
        lex = np.where(rng.random(n) < share, rng.random(n), 0).astype(np.float32)
        lex[cols["fileid"] == cols["fileid"][0]] = 0  # a file with no BM25 positive at all
        fused = {int(lb): float(rng.random()) for lb in rng.choice(n, min(n, 200), replace=False)}
        want, got = dict(fused), dict(fused)
        _file_prior_reference(want, lex, cols, 0.3, 10.0)
        files = np.unique(cols["fileid"], return_inverse=True)
        _file_prior(got, file_rank(lex, files), files, 0.3, 10.0)
        assert got == want


def test_bm25_with_a_memo_scores_exactly_as_without():
    rng = np.random.default_rng(5)
    n = 5000
    doc_len = rng.integers(1, 40, n).astype(np.float32)
    alive = rng.random(n) < 0.9
    posts = []
    for df in (3, 200, 4000):  # rare, middling, common (kept as a full row)
        docs = np.sort(rng.choice(n, df, replace=False)).astype(np.int64)
        posts.append((docs, rng.integers(1, 4, df).astype(np.float32)))
    weights = [1.0, 2.0, 3.0]
    want = bm25(posts, doc_len, alive, weights)
    memo: dict = {}
    keys = [("a", 1.0), ("b", 2.0), ("c", 3.0)]
    for _ in range(2):  # the second time from the memo
        assert np.array_equal(bm25(posts, doc_len, alive, weights, memo, keys), want)


def test_a_warm_index_sees_what_a_refresh_added(tmp_path):
    brain = Brain(make_brain(tmp_path / "brain"))
    api.recall(brain, "espresso machine broken", log=False)  # warm: index and memo kept in api._OPEN
    new = entries([("user", "The espresso machine in the kitchen is broken again.")],
                  start=entries()[-1].ts.replace(hour=15))
    (brain.root / "memory/L0/2026-12-01.md").write_text(render_doc({}, "", new), "utf-8")
    hits = api.recall(brain, "espresso machine broken", log=False)
    assert hits[0].ids == [new[0].id]
    for idx in api._OPEN.values():
        idx.close()
    api._OPEN.clear()


def _context_reference(lex, cols, w):
    hit = np.flatnonzero(lex > 0)
    out = lex.copy()
    for side in ("prev", "next"):
        nb = cols[side][hit]
        ok = nb >= 0
        np.add.at(out, nb[ok], w * lex[hit[ok]])
    return out


def test_context_adds_the_neighbours_share_exactly_as_one_by_one():
    rng = np.random.default_rng(7)
    n = 3000
    # places in file order; some places are summaries whose raw leaves share their neighbours
    labels = rng.permutation(n)
    places, i = [], 0
    while i < n:
        size = 1 if rng.random() < 0.8 else int(rng.integers(2, 6))
        places.append(labels[i : i + size])
        i += size
    cols = {"prev": np.full(n, -1, np.int64), "next": np.full(n, -1, np.int64)}
    for j, place in enumerate(places):
        if j % 50:  # a new file every 50 places
            cols["prev"][place] = places[j - 1][0]
        if (j + 1) % 50 and j + 1 < len(places):
            cols["next"][place] = places[j + 1][0]
    lex = np.where(rng.random(n) < 0.4, rng.random(n) * 9, 0).astype(np.float32)
    assert np.array_equal(_context(lex, cols, 0.6), _context_reference(lex, cols, 0.6))
    assert np.array_equal(_context(lex, cols, 0.6, neighbour_plan(cols)), _context_reference(lex, cols, 0.6))


def _top_reference(scores, n, skey):
    pos = np.flatnonzero(scores > 0)
    return sorted(pos.tolist(), key=lambda lb: (-scores[lb], skey[lb]))[:n]


@pytest.mark.parametrize("share", [0.0, 0.01, 0.5, 0.8, 1.0])  # most labels scoring: the whole row is cut
def test_top_is_the_best_n_scoring_labels_ties_by_stable_key(share):
    from pamd.recall.search import _top

    rng = np.random.default_rng(7)
    for size in (40, 3000):
        skey = rng.integers(0, 2**60, size)
        for decimals in (None, 1):  # many ties at the cut on a coarse score
            scores = (rng.random(size) * (rng.random(size) < share)).astype(np.float32)
            if decimals is not None:
                scores = np.round(scores, decimals).astype(np.float32)
            for n in (1, 10, 100):
                assert _top(scores, n, skey) == _top_reference(scores, n, skey)


@pytest.mark.parametrize("layout", ["random", "coarse", "best_in_one_block", "best_on_the_sample"])
def test_top_of_a_large_row_cut_from_a_sample_is_the_exact_top(layout):
    """Most of 50,000 labels scoring: the cut found from a strided sample still gives exactly
    the n best, ties by stable key, however the best lie (one block of labels, or only on the
    labels the sample reads, where its estimate leaves too few and the whole row is cut)."""
    from pamd.recall import search
    from pamd.recall.search import _top

    rng = np.random.default_rng(11)
    size = 50_000
    skey = rng.integers(0, 2**60, size)
    scores = (rng.random(size) * 5 + 0.01).astype(np.float32)
    if layout == "coarse":
        scores = np.round(scores, 1).astype(np.float32) + np.float32(0.1)
    elif layout == "best_in_one_block":
        scores[20_000:20_400] += 10
    elif layout == "best_on_the_sample":
        scores[::search._SAMPLE_STEP] += 10
    scores[rng.random(size) < 0.1] = 0
    for n in (1, 10, 100, 500):
        assert _top(scores, n, skey) == _top_reference(scores, n, skey)


def test_background_work_reuses_a_waiting_thread_and_a_forked_child_gets_its_own():
    """A recall's query embedding used to start a thread of its own each time (the
    caller waits until it runs): a waiting thread takes it now. Jobs at once still run
    side by side, and a child made by fork, which has none of its parent's threads,
    starts its own."""
    import threading

    from pamd.recall.embed import Background

    def kept() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name.startswith("pamd-bg")}

    Background(lambda: None).result()
    before = kept()
    ran = {Background(threading.current_thread).result() for _ in range(5)}
    assert ran <= before and kept() == before  # run by threads that waited; none started
    gate = threading.Event()
    held = Background(gate.wait, 10)  # busy until the next job has run beside it
    assert Background(gate.set).result() is None and held.result() is True
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a job must run (and not wait forever for a thread that is not there)
        try:
            os.write(w, b"1" if Background(lambda: 1).result() == 1 else b"0")
        finally:
            os._exit(0)
    import select
    import signal

    os.close(w)
    ready = select.select([r], [], [], 30)[0]
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert ready and os.read(r, 1) == b"1", "the forked child's job never ran"
    os.close(r)


def test_a_kept_thread_blocks_the_signals_sent_to_the_process():
    """The daemon holds SIGTERM back during a run by blocking it on the main thread
    (schedule.held_signals); a kept Background thread that did not block it would take the
    signal, which then meets the run's SIG_IGN and is lost. Faults stay the thread's own."""
    import signal
    import threading
    from pathlib import Path

    from pamd.recall.embed import Background

    tid = Background(threading.get_native_id).result()
    status = Path(f"/proc/self/task/{tid}/status")
    if not status.exists():
        pytest.skip("reads a thread's signal mask from Linux's /proc")
    line = next(ln for ln in status.read_text().splitlines() if ln.startswith("SigBlk:"))
    blocked = int(line.split()[1], 16)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        assert blocked >> (sig - 1) & 1, (sig, line)
    for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE):
        assert not blocked >> (sig - 1) & 1, (sig, line)
