"""Late interaction (MaxSim) over e5-small's token states: learned fusion's `maxsim` feature.

The dense pass already computes a hidden state per piece before mean-pooling it
into the vector. For a chunk, pamd keeps the states of the pieces of its own text
inside its contextual pass (`[index] dense_context`: the chunk read with its
neighbours), and of those only the content pieces (pieces of words that hold a
letter and are not stop words; all pieces when none is). Each state is
L2-normalised, centred on a fixed mean, projected on the top D principal
components of a fixed basis, normalised again and stored as int8 (`encode`).
The query's own pass gives its content pieces the same way.

MaxSim(query, chunk) = the mean over the query's tokens of the best dot product
with any of the chunk's tokens: every query word looks for its nearest word in
the chunk, in context — "did she adopt a pet" finds "we got a puppy".

The basis (pamd/data/maxsim-basis.npz) is fitted by benchmarks/maxsim_basis.py on
text pamd may ship (MIT-licensed Claude Code transcripts and pamd's own docs), not
on any benchmark: e5's token states all point one way (every cosine is high), and
centring and keeping the directions in which they differ is what makes the
maximum discriminate. It is unsupervised (no labels).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

import numpy as np

D = 128  # principal components kept: 128 bytes a token
BASIS = "maxsim-basis.npz"


@cache
def basis() -> tuple[np.ndarray, np.ndarray, str]:
    """(mean [H], components [D, H], identity): the shipped basis."""
    data = resources.files("pamd.data").joinpath(BASIS).read_bytes()
    import io

    with np.load(io.BytesIO(data)) as z:
        mu = z["mu"].astype(np.float32)
        vt = z["vt"][:D].astype(np.float32)
    return mu, vt, f"maxsim1-d{D}-{hashlib.blake2b(data, digest_size=4).hexdigest()}"


def encode(states: np.ndarray) -> np.ndarray:
    """L2-normalised token states [n, H] as the int8 tokens [n, D] that are stored.

    Each token's int8 row has its own scale (its largest value is ±127); the scale is
    not kept, because `decode` normalises every row again and that cancels it."""
    if not len(states):
        return np.zeros((0, D), np.int8)
    mu, vt, _ = basis()
    m = np.einsum("ij,kj->ik", np.asarray(states, np.float32) - mu, vt)  # not BLAS: see products
    m /= np.linalg.norm(m, axis=1, keepdims=True) + 1e-9
    s = np.abs(m).max(axis=1, keepdims=True) / 127 + 1e-12
    return np.rint(m / s).astype(np.int8)


def decode(tokens: np.ndarray) -> np.ndarray:
    """int8 tokens as float32 rows of unit length."""
    m = tokens.astype(np.float32)
    m /= np.sqrt(np.einsum("ij,ij->i", m, m))[:, None] + 1e-9
    return m


def scores(query: np.ndarray, chunks: list[np.ndarray | None]) -> np.ndarray:
    """MaxSim of the query's tokens against each chunk's (int8, `encode`); NaN for a chunk
    without tokens (an index that lacks them), 0 for one with none."""
    out = np.full(len(chunks), np.nan)
    have = [j for j, c in enumerate(chunks) if c is not None]
    if not have or not len(query):
        out[have] = 0.0
        return out
    q = decode(query)
    mats = [chunks[j] for j in have]
    seg = np.array([len(m) for m in mats])
    full = seg > 0
    vals = np.zeros(len(mats))
    if full.any():
        c = np.concatenate([m for m in mats if len(m)]).astype(np.float32)
        # each chunk row's length divides its products afterwards, not the rows themselves
        norms = np.sqrt(np.einsum("kj,kj->k", c, c)) + 1e-9
        sims = products(c, q) / norms[:, None]  # [all chunk tokens, query tokens]
        starts = np.concatenate([[0], np.cumsum(seg[full])[:-1]])
        vals[full] = np.maximum.reduceat(sims, starts, axis=0).mean(axis=1)
    out[have] = vals
    return out


def products(c: np.ndarray, q: np.ndarray) -> np.ndarray:
    """c @ q.T for float32 rows, on one thread.

    A few million products a recall: numpy's BLAS would spread them over threads that
    then wait between queries (on a busy machine, waking them costs more than the
    products), and einsum, on one thread, takes several times as long as a matrix kernel.
    onnxruntime's MatMul is one, on the thread that calls it (its pool is one thread);
    it is there whenever tokens are (they come from e5-small on onnxruntime)."""
    run = _matmul()
    if run is None:
        return np.einsum("kj,ij->ki", c, q)
    return run(None, {"c": c, "q": np.ascontiguousarray(q.T)})[0]


@cache
def _matmul():
    """A one-node onnxruntime graph, c [n, D] x q [D, m], or None without onnxruntime."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    from pamd.recall import onnxpb

    graph = onnxpb.model([onnxpb.node("MatMul", ["c", "q"], ["s"])], [],
                         [onnxpb.value("c", onnxpb.FLOAT, ["n", D]), onnxpb.value("q", onnxpb.FLOAT, [D, "m"])],
                         [onnxpb.value("s", onnxpb.FLOAT, ["n", "m"])], {"": 17}, "maxsim-products")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"]).run


def feature(s: np.ndarray) -> np.ndarray:
    """(s - best) / (best - worst) over the candidates: -1 .. 0, like fusion's `dense`; a
    candidate without tokens (NaN) counts as the worst."""
    out = np.full(len(s), -1.0)
    ok = ~np.isnan(s)
    if not ok.any():
        return out
    lo, hi = float(s[ok].min()), float(s[ok].max())
    out[ok] = (s[ok] - hi) / ((hi - lo) or 1.0)
    return out
