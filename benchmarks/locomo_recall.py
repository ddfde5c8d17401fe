"""LoCoMo evidence retrieval through pamd recall (see docs/benchmarks.md, "Recall").

The LoCoMo data (CC BY-NC 4.0) stays in ../shared/bench; nothing of it is
written into this repository. The harness (`locomo_retrieval.py`) writes each
conversation as Markdown session files; `PamdRecall.index` reads those back
into messages and writes them into a fresh pamd brain through `pamd ingest`
(pamd JSONL: one entry per message, speaker as role, the `[D1:3]` dia tag kept
inside the text so the harness finds it in the cited lines), indexes it, and
`search` answers with `pamd.recall.api.recall`. Hits are brain file paths and
line ranges, scored by the harness from the files on disk.

One command runs pamd and the same-run baselines and prints the comparison:

    python benchmarks/locomo_recall.py all --out-dir /tmp/pamd-locomo-results

or a single retriever through the harness:

    PAMD_LOCOMO_EMBEDDER=use python ../shared/bench/locomo_retrieval.py run \\
        --retriever py:benchmarks/locomo_recall.py:PamdRecall --name pamd-use

Environment: PAMD_LOCOMO_EMBEDDER (e5-small | use | sentence-transformers),
PAMD_LOCOMO_INDEX (extra `[index]` TOML lines, e.g. "dense_weight = 0.5"),
PAMD_LOCOMO_WORK (where brains are kept, so a rerun reuses cached vectors).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = Path(os.environ.get("PAMD_LOCOMO_HARNESS",
                              ROOT.parent / "shared" / "bench" / "locomo_retrieval.py"))
if not HARNESS.is_file():
    HARNESS = Path("/work/shared/bench/locomo_retrieval.py")
# The [index] values proposed as defaults (docs/benchmarks.md): measured on conv-26 first.
PROPOSED = ("fusion = \"learned\"\nfusion_k = 10\ndense_weight = 0.7\nneighbour_weight = 0.6\nfile_weight = 0.3\n"
            "hit_lines = 4\nrole_boost = 0.5\ndense_context = 1\nrerank = 0")
LINE = re.compile(r"^- \[(D\d+:\d+)\] (.*)$")
DATE = re.compile(r"^date: (.+)$", re.M)


def read_sessions(md_dir: Path) -> list[tuple[datetime, list[tuple[str, str, str]]]]:
    """(session time, [(dia_id, speaker, text)]) per harness session file, in order."""
    out = []
    for f in sorted(md_dir.glob("session_*.md")):
        text = f.read_text("utf-8")
        m = DATE.search(text)
        try:
            when = datetime.fromisoformat(m.group(1).strip()).replace(tzinfo=UTC)
        except (AttributeError, ValueError):
            when = datetime(2023, 1, 1, tzinfo=UTC) + timedelta(days=len(out))
        msgs = []
        for line in text.split("\n"):
            lm = LINE.match(line)
            if lm:
                speaker, _, said = lm.group(2).partition(": ")
                msgs.append((lm.group(1), speaker, said))
        out.append((when, msgs))
    return out


def build_brain(md_dir: Path, root: Path, embedder: str, extra: str = "") -> Path:
    """A pamd brain holding the conversation in md_dir, written by `pamd ingest`.

    The messages go in as pamd JSONL (`{"ts", "role", "text", "session"}`), the
    speaker as role, the `[D1:3]` tag kept at the start of the text, 30 s apart
    from the session's date-time; ingest tags, scores and commits them (one L0
    file per day). Re-ingesting into a kept brain adds nothing (entry ids are
    content hashes), so a rerun reuses the brain and its cached vectors.
    """
    from pamd.core.entry import fmt_time
    from pamd.edge.brain import Brain
    from pamd.encode.ingest import ingest

    conv = md_dir.name
    rows, last = [], datetime(2023, 1, 1, tzinfo=UTC)
    for when, msgs in read_sessions(md_dir):
        for i, (dia, speaker, said) in enumerate(msgs):
            last = when + timedelta(seconds=30 * i)
            rows.append(json.dumps({"ts": fmt_time(last), "role": speaker, "text": f"[{dia}] {said}",
                                    "session": f"{conv}-{dia.split(':')[0]}"}))
    root.mkdir(parents=True, exist_ok=True)
    (root / "pamd.toml").write_text(f'[index]\nembedder = "{embedder}"\n{extra}\n', "utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@b"}
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    (root / ".gitignore").write_text(".pamd/\n", "utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "locomo brain", "--allow-empty"], cwd=root, check=True,
                   env=env)
    ingest(Brain(root), [(f"{conv}.jsonl", "\n".join(rows).encode())], now=last, fmt="pamd")
    return root


class PamdRecall:
    """Harness retriever: a pamd brain per conversation, answered by pamd recall."""

    name = "pamd"

    def __init__(self) -> None:
        self.embedder_name = os.environ.get("PAMD_LOCOMO_EMBEDDER", "e5-small")
        self.extra = os.environ.get("PAMD_LOCOMO_INDEX", PROPOSED).replace("\\n", "\n")
        tag = re.sub(r"\W+", "_", f"ingest-{self.embedder_name}")
        self.work = Path(os.environ.get("PAMD_LOCOMO_WORK", "/tmp/pamd-locomo-brains")) / tag
        self.brain = None
        self.embedder = None

    def describe(self) -> dict:
        return {"name": self.name, "embedder": self.embedder_name, "index": self.extra}

    def index(self, md_dir) -> None:
        from pamd.edge.brain import Brain
        from pamd.recall import api

        root = build_brain(Path(md_dir), self.work / Path(md_dir).name, self.embedder_name,
                           self.extra)
        self.brain = Brain(root)
        if self.embedder is None:
            self.embedder = api.embedder_for(self.brain.config)
        api.index(self.brain, embedder=self.embedder)

    def search(self, query: str, k: int):
        from pamd.errors import PamdError
        from pamd.recall import api

        try:
            hits = api.recall(self.brain, query, k=k, embedder=self.embedder, log=False)
        except PamdError:
            return []
        return [(str(self.brain.root / h.path), h.start, h.end) for h in hits]


class DenseLines:
    """Baseline: plain dense cosine over Markdown lines with a pamd embedder (no BM25)."""

    name = "dense-lines"

    def __init__(self) -> None:
        from pamd.recall.embed import load

        self.emb = load(os.environ.get("PAMD_LOCOMO_EMBEDDER", "e5-small"))

    def index(self, md_dir) -> None:
        import numpy as np

        self.rows, texts = [], []
        for f in sorted(Path(md_dir).glob("session_*.md")):
            for i, line in enumerate(f.read_text("utf-8").split("\n"), 1):
                if LINE.match(line):
                    self.rows.append((str(f), i))
                    texts.append(line)
        # vectors cached by text under PAMD_LOCOMO_WORK, like a brain's: a rerun embeds nothing
        from pamd.recall.chunks import text_hash
        from pamd.recall.vcache import VectorCache

        work = Path(os.environ.get("PAMD_LOCOMO_WORK", "/tmp/pamd-locomo-brains"))
        cache = VectorCache(work / "dense-lines.sqlite")
        try:
            keys = [text_hash(t) for t in texts]
            got = cache.get(self.emb.identity, keys)
            todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in got}.items())
            for i in range(0, len(todo), 32):
                part = todo[i:i + 32]
                vecs = self.emb.passages([t for _, t in part])
                new = {k: v for (k, _), v in zip(part, vecs, strict=True)}
                cache.put(self.emb.identity, new)
                got.update(new)
        finally:
            cache.close()
        self.m = np.stack([got[k] for k in keys]) if keys else np.zeros((0, self.emb.dims), np.float32)

    def search(self, query: str, k: int):
        import numpy as np

        s = self.m @ self.emb.query(query)
        top = np.argsort(-s, kind="stable")[:k]
        return [(self.rows[i][0], self.rows[i][1], self.rows[i][1]) for i in top]


def _harness(*args: str, env: dict | None = None) -> None:
    cmd = [sys.executable, str(HARNESS), *args]
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, env={**os.environ, **(env or {})}, cwd=ROOT)


def main(argv: list[str]) -> int:
    """`all [--out-dir D] [--quick]`: baselines and pamd runs, then the comparison table."""
    import argparse

    p = argparse.ArgumentParser(prog="locomo_recall.py")
    p.add_argument("what", choices=["all"])
    p.add_argument("--out-dir", default="/tmp/pamd-locomo-results")
    p.add_argument("--embedders", default="e5-small,use")
    p.add_argument("--limit-qa", default="")
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    me = f"py:{Path(__file__).resolve()}"
    lim = ["--limit-qa", args.limit_qa] if args.limit_qa else []
    results = []
    t0 = time.time()
    _harness("run", "--retriever", "numpy-bm25", "--out", str(out / "numpy-bm25.json"), *lim)
    results.append(out / "numpy-bm25.json")
    for emb in args.embedders.split(","):
        env = {"PAMD_LOCOMO_EMBEDDER": emb, "PAMD_THREADS": os.environ.get("PAMD_THREADS", "2")}
        r = out / f"dense-lines-{emb}.json"
        _harness("run", "--retriever", f"{me}:DenseLines", "--name", f"dense-lines-{emb}",
                 "--out", str(r), *lim, env=env)
        results.append(r)
        r = out / f"pamd-{emb}.json"
        _harness("run", "--retriever", f"{me}:PamdRecall", "--name", f"pamd-{emb}",
                 "--out", str(r), *lim, env=env)
        results.append(r)
    _harness("compare", *map(str, results))
    print(f"total {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
