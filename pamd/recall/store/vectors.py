"""A refresh's new chunks' vectors: from the vector cache by content hash, the rest embedded."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pamd.recall import maxsim
from pamd.recall.chunks import Chunk
from pamd.recall.embed import Embedder, has_tokens
from pamd.recall.store.report import Report
from pamd.recall.vcache import VectorCache

EMBED_BATCH = 32


def for_chunks(state_dir: Path, embedder: Embedder, chunks: list[Chunk], rep: Report,
             progress) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """The chunks' vectors and, for an embedder with token states, their token matrices
    (else None): from the vector cache, the rest embedded (vector and tokens in one pass)."""
    tok_on = has_tokens(embedder)
    if not chunks:
        return np.zeros((0, embedder.dims), np.float32), [] if tok_on else None
    cache = VectorCache(state_dir / "vectors.sqlite")
    try:
        hashes = [c.vhash for c in chunks]
        have = cache.get(embedder.identity, sorted(set(hashes)))
        toks = cache.get_tokens(embedder.identity, sorted({c.tkey for c in chunks}), maxsim.D) \
            if tok_on else {}
        todo: dict[str, tuple[str, str, tuple[int, int] | None]] = {}  # key: (vhash, text, own)
        for c in chunks:
            if c.vhash not in have or (tok_on and c.tkey not in toks):
                todo.setdefault(c.tkey if tok_on else c.vhash,
                                (c.vhash, c.text if c.embed is None else c.embed, c.own))
        items = list(todo.items())
        # equal batches (100 texts: 4 x 25, not 3 x 32 + 4): the embedder spreads each over cores
        size = -(-len(items) // -(-len(items) // EMBED_BATCH)) if items else 1
        for i in range(0, len(items), size):
            part = items[i : i + size]
            texts = [t for _, (_, t, _) in part]
            if tok_on:
                vecs, tk = embedder.passages_tokens(texts, [own for _, (_, _, own) in part])
                got = {k: t for (k, _), t in zip(part, tk, strict=True)}
                cache.put_tokens(embedder.identity, got)
                toks.update(got)
            else:
                vecs = embedder.passages(texts)
            fresh = {vh: v for (_, (vh, _, _)), v in zip(part, vecs, strict=False)}
            cache.put(embedder.identity, fresh)
            have.update(fresh)
            rep.embedded += len(part)
            if progress:
                progress(rep.embedded, len(items))
        vectors = np.stack([have[h] for h in hashes]).astype(np.float32)
        return vectors, [toks[c.tkey] for c in chunks] if tok_on else None
    finally:
        cache.close()
