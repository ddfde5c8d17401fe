"""Recall speed: warm query p50 at N chunks, cold whole-process recall, incremental re-index,
embedding throughput (docs/benchmarks.md, "Recall").

    python benchmarks/recall_speed.py --chunks 100000 --incremental-base 50000 [--rerank 0] [--keep]

Big synthetic brains get their vectors pre-seeded in the vector cache (random unit
vectors under the embedder's identity) so that building a 100,000-chunk index does not
take hours of embedding on 2 cores; what is timed is then the index and the search.
With an embedder that has token states (e5-small, learned fusion's `maxsim`) each
chunk's tokens are seeded too: random int8 rows, as many as the content pieces of
its own text really are (the tokenizer runs, the encoder does not), so the index
and a query's MaxSim handle the real number of tokens.
The incremental step adds 100 entries of new text that IS embedded for real.
Targets (issue 4): warm p50 <= 15 ms at 100k, cold <= 1.5 s, +100 on 50k <= 2 s.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

WORDS = ("deploy release friday database migration timeout coffee tea board revenue report key "
         "vault cluster incident backup user agent memory budget design review test load api "
         "customer invoice schedule meeting anna boris server queue cache latency bug fix").split()


def synthetic_brain(root: Path, n: int, embedder, seed: int = 1, rerank: int | None = None) -> Path:
    """n user entries in files of 500, under the shipped [index] defaults (the packaged
    template) with only the embedder named; the vector cache holds a random vector for
    the text each chunk really embeds (with dense_context, the turn and its neighbours)."""
    from pamd.core.config import settings
    from pamd.core.entry import Entry, entry_id
    from pamd.core.fmt import render_doc
    from pamd.recall import maxsim
    from pamd.recall.chunks import chunk_file, for_embedding
    from pamd.recall.vcache import VectorCache

    rng = random.Random(seed)
    root.mkdir(parents=True)
    extra = "" if rerank is None else f"rerank = {rerank}\n"
    (root / "pamd.toml").write_text(f'[index]\nembedder = "{embedder.name}"\n{extra}')
    ix = settings(None).index
    max_chars, context = int(ix.max_chars), int(ix.dense_context)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    per_file = 500
    vecs, toks = {}, {}
    nrng = np.random.default_rng(seed)
    eng = getattr(getattr(embedder, "_m", None), "_e", None) if getattr(embedder, "tokens", False) else None
    for f in range(0, n, per_file):
        es = []
        for i in range(f, min(n, f + per_file)):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) + f" #{i}"
            e = Entry(id=entry_id("e", str(i)), ts=t0 + timedelta(minutes=i), role="user",
                      text=text)
            es.append(e)
        day = (t0 + timedelta(days=f // per_file)).strftime("%Y-%m-%d")
        rel = f"memory/L2/{day}.md"
        doc = render_doc({}, "", es)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(doc, "utf-8")
        for c in for_embedding(chunk_file(rel, doc, "L2", max_chars), context):
            v = nrng.standard_normal(embedder.dims).astype(np.float32)
            vecs[c.vhash] = v / np.linalg.norm(v)
            if eng is not None:
                m = eng.content(eng.pieces(c.text[:1500]))
                toks[c.tkey] = nrng.integers(-127, 128, (int(m.sum()) or len(m), maxsim.D), dtype=np.int8)
    cache = VectorCache(root / ".pamd/vectors.sqlite")
    cache.put(embedder.identity, vecs)
    if toks:
        cache.put_tokens(embedder.identity, toks)
    cache.close()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


class Timed:
    """The embedder, counting the time spent in passages() (the incremental step's split)."""

    def __init__(self, emb) -> None:
        self.emb, self.name, self.identity, self.dims = emb, emb.name, emb.identity, emb.dims
        self.spent, self.texts = 0.0, 0
        self.tokens = getattr(emb, "tokens", False)

    def passages(self, texts):
        t = time.perf_counter()
        try:
            return self.emb.passages(texts)
        finally:
            self.spent += time.perf_counter() - t
            self.texts += len(texts)

    def passages_tokens(self, texts, spans):
        t = time.perf_counter()
        try:
            return self.emb.passages_tokens(texts, spans)
        finally:
            self.spent += time.perf_counter() - t
            self.texts += len(texts)

    def query(self, text):
        return self.emb.query(text)

    def query_tokens(self, text):
        return self.emb.query_tokens(text)


class Plain:
    """The embedder without its token states: the same vectors and index, fusion's nine
    features (what the maxsim feature costs is the difference)."""

    tokens = False
    concurrent = True

    def __init__(self, emb) -> None:
        self.emb, self.name, self.identity, self.dims = emb, emb.name, emb.identity, emb.dims

    def passages(self, texts):
        return self.emb.passages(texts)

    def query(self, text):
        return self.emb.query(text)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--incremental-base", type=int, default=50_000)
    ap.add_argument("--embedder", default="e5-small")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--keep", action="store_true", help="keep the synthetic brains (else removed)")
    ap.add_argument("--rerank", type=int, default=None,
                    help="[index] rerank for the brains (default: the template's)")
    a = ap.parse_args()
    from pamd.edge.brain import Brain
    from pamd.recall import api
    from pamd.recall.embed import cores, load

    print(f"load average at start: {os.getloadavg()}")
    emb = load(a.embedder)
    print(f"embedder {emb.identity}, passage threads {cores()}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    tmp = Path(tempfile.mkdtemp(prefix="pamd-speed-"))
    try:
        # throughput on ~200-token and short texts
        rng = random.Random(7)
        long = [" ".join(rng.choice(WORDS) for _ in range(150)) for _ in range(32)]
        short = [" ".join(rng.choice(WORDS) for _ in range(15)) for _ in range(64)]
        turns = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 40))) for _ in range(66)]
        ctx = ["\n".join(f"user: {t}" for t in turns[i - 1 : i + 2]) for i in range(1, 65)]
        for name, texts in (("~200-token", long), ("~20-token", short), ("~120-token contextual", ctx)):
            t = time.perf_counter()
            emb.passages(texts)
            dt = time.perf_counter() - t
            print(f"throughput {emb.name} {name}: {len(texts) / dt:.1f} chunks/s")

        # warm query at N chunks
        root = synthetic_brain(tmp / "big", a.chunks, emb, rerank=a.rerank)
        brain = Brain(root)
        t = time.perf_counter()
        rep = api.index(brain, embedder=emb)
        print(f"build {a.chunks} chunks (vectors pre-seeded): {time.perf_counter() - t:.1f} s ({rep})")
        qs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(a.queries)]
        api.recall(brain, qs[0], embedder=emb, log=False)
        plain = Plain(emb) if getattr(emb, "tokens", False) else None
        lat, qlat, base = [], [], []
        for i, q in enumerate(qs):
            t = time.perf_counter()
            emb.query(q)
            qlat.append(time.perf_counter() - t)
            # with token states, the same recall without the maxsim feature, in turns with it
            # (the baseline in the same run, under the same load)
            for e, out in ((emb, lat), (plain, base)) if i % 2 else ((plain, base), (emb, lat)):
                if e is not None:
                    t = time.perf_counter()
                    api.recall(brain, q, k=10, embedder=e, log=False)
                    out.append(time.perf_counter() - t)
        print(f"warm recall at {a.chunks}: p50 {1000 * statistics.median(lat):.1f} ms, "
              f"p95 {1000 * sorted(lat)[int(0.95 * len(lat))]:.1f} ms "
              f"(of which query embedding p50 {1000 * statistics.median(qlat):.1f} ms)")
        if base:
            print(f"  without maxsim (alternating): p50 {1000 * statistics.median(base):.1f} ms, "
                  f"p95 {1000 * sorted(base)[int(0.95 * len(base))]:.1f} ms; "
                  f"ratio {statistics.median(lat) / statistics.median(base):.2f}")

        # cold whole process on the big brain and on a small one
        for label, r in (("big", root),):
            times = []
            for q in qs[:5]:
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "pamd", "recall", "--brain", str(r), "--no-log",
                                q], check=True, capture_output=True)
                times.append(time.perf_counter() - t)
            print(f"cold `pamd recall` whole process ({label}, {a.chunks} chunks): "
                  f"median {statistics.median(times):.2f} s")

        # incremental: +100 new (really embedded) chunks on a base index
        base = synthetic_brain(tmp / "base", a.incremental_base, emb, seed=2, rerank=a.rerank)
        b2 = Brain(base)
        api.index(b2, embedder=emb)
        from pamd.core.entry import Entry, entry_id
        from pamd.core.fmt import render_doc

        new = [Entry(id=entry_id("e", "new", str(i)), ts=datetime(2027, 1, 1, tzinfo=UTC)
                     + timedelta(minutes=i), role="assistant",
                     text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 40))) + f" new{i}")
               for i in range(100)]
        (base / "memory/L1").mkdir(parents=True, exist_ok=True)
        (base / "memory/L1/2027-01-01.md").write_text(render_doc({}, "", new), "utf-8")
        timed = Timed(emb)
        t = time.perf_counter()
        rep = api.index(b2, embedder=timed)
        dt = time.perf_counter() - t
        print(f"incremental +100 on {a.incremental_base}: {dt:.2f} s ({rep}); embedding "
              f"{timed.texts} texts {timed.spent:.2f} s, the rest {dt - timed.spent:.2f} s")
        size = sum(f.stat().st_size for f in (root / ".pamd/index").iterdir())
        print(f"index size at {a.chunks} chunks: {size / 2**20:.0f} MB")
        print(f"load average at end: {os.getloadavg()}")
    finally:  # two brains of 50,000 and 100,000 chunks: ~1.4 GB
        if a.keep:
            print(f"brains kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
