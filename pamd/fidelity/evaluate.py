"""`pamd eval`: what each compression tier loses, measured.

A question set is ingested into scratch brains, aged with the clock through
every tier (raw, then after 1 h, 6 h, 1 d, 4 d, 8 d; each age is one defrag,
which does everything a compaction does), and at each age pamd measures:
tokens per tier, the compression ratio against the raw input, and evidence
recall@k of `pamd recall` — from the working tree alone (the evidence tags in
the lines a hit cites) and through provenance (a summary hit counts for the
raw entries it came from).

A person's brain (`--brain`) is aged in a clone; if it was compacted before,
its raw input is counted from history (`raw_input`) and its first row is
`now`, the brain as it is, not `raw`.

LoCoMo's conversations span months; to age them tier by tier, each one's
messages are laid on a one-hour window before the start of the clock, in
their order, one session per pamd session.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Set
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pamd.core.entry import TIERS
from pamd.core.words import plural
from pamd.edge.files import read_text
from pamd.errors import PamdError
from pamd.fidelity.qa import TAG_RE, Conversation, Question

AGES: list[tuple[str, float]] = [("raw", 0), ("1h", 1), ("6h", 6), ("1d", 24), ("4d", 96), ("8d", 192)]
KS = (1, 5, 10)  # recall is also reported at these depths when k is deeper
T0 = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)


@dataclass
class Point:
    age: str
    tokens: dict[str, int]
    tree_tokens: int
    ratio: float
    lines_at_k: float = 0.0
    raw_behind_k: float = 0.0  # raw entries behind the top k through provenance: the cost of expanding
    tree: dict[str, float] = field(default_factory=dict)  # "R@10" -> recall from the tree alone (R@k of cutoffs(k))
    prov: dict[str, float] = field(default_factory=dict)  # through provenance
    # share of the evidence still in the tree at all: the most any ranking of the tree alone could find
    in_tree: float = 0.0
    by_category: dict[str, dict[str, float]] = field(default_factory=dict)
    questions: int = 0


@dataclass
class Report:
    source: str
    conversations: int
    raw_tokens: int
    k: int = 10  # hits per question: lines_at_k and raw_behind_k count them; R@k is the headline
    brain: bool = False  # a person's brain (source is its folder), not LoCoMo's conversations
    points: list[Point] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


class _Acc:
    """Sums of per-question recalls, overall and per category."""

    def __init__(self) -> None:
        self.n: dict[str, int] = defaultdict(int)
        self.sums: dict[tuple[str, str], float] = defaultdict(float)
        self.lines = 0
        self.raw_behind = 0

    def add(self, cat: str, key: str, value: float) -> None:
        for c in {"all", cat}:  # a question without a category is "all" once, not twice
            self.sums[(c, key)] += value

    def count(self, cat: str) -> None:
        for c in {"all", cat}:
            self.n[c] += 1

    def mean(self, cat: str, key: str) -> float:
        return round(self.sums[(cat, key)] / self.n[cat], 4) if self.n[cat] else 0.0


def cutoffs(k: int) -> tuple[int, ...]:
    """The depths recall is reported at for `k` hits a question: k itself, and 1, 5, 10 below it."""
    return tuple(sorted({j for j in KS if j < k} | {k}))


def _descend(eid: str, graph: dict[str, tuple[str, ...]], depth: int = 0) -> list[str]:
    if eid not in graph or depth > 8:
        return [eid]
    out = []
    for s in graph[eid]:
        out += _descend(s, graph, depth + 1)
    return out


def _below(eid: str, graph: dict[str, tuple[str, ...]]) -> set[str]:
    """`eid` and every id its provenance reaches: the summaries on the way, not only the leaves."""
    out, todo = {eid}, [eid]
    while todo:
        for src in graph.get(todo.pop(), ()):
            if src not in out:
                out.add(src)
                todo.append(src)
    return out


def _on_path(top: str, leaf: str, graph: dict[str, tuple[str, ...]]) -> set[str]:
    """Every id on a path of provenance from `top` down to `leaf`, both included (empty if none)."""
    memo: dict[str, bool] = {}

    def reaches(eid: str) -> bool:
        if eid not in memo:
            memo[eid] = False  # a cycle in a damaged history does not recurse forever
            memo[eid] = eid == leaf or any(reaches(s) for s in graph.get(eid, ()))
        return memo[eid]

    reaches(top)
    return {eid for eid, ok in memo.items() if ok}


def _cited_units(root: Path, hit, cache: dict[str, list[str]]) -> set[str]:
    if hit.path not in cache:
        p = root / hit.path
        # the file's own LF lines, as hits count them (read_text would also end lines at a CR)
        cache[hit.path] = read_text(p).split("\n") if p.is_file() else []
    lines = cache[hit.path][max(0, hit.start - 1): hit.end]
    return {m for ln in lines for m in TAG_RE.findall(ln)}


def measure(brain, questions: list[Question], unit_of: dict[str, str], graph: dict[str, tuple[str, ...]],
            now: datetime, k: int, acc: _Acc, recall_fn: Callable, present: Set[str] = frozenset()) -> None:
    """Adds each question's recall to `acc`; `present` is the evidence the tree holds at all
    (LoCoMo's dialog tags in its entries, or a brain's entry ids), whatever recall ranks."""
    cache: dict[str, list[str]] = {}
    depths = cutoffs(k)
    for q in questions:
        hits = recall_fn(brain, q.text, k=k, now=now, log=False)
        ev = set(q.evidence)
        acc.count(q.category)
        acc.add(q.category, "in tree", len(ev & present) / len(ev))
        seen_tree: set[str] = set()
        seen_prov: set[str] = set()
        lines = 0
        behind: set[str] = set()
        for rank, h in enumerate(hits, 1):
            lines += h.end - h.start + 1
            # A hit on a summary's raw leaf (recall.deep) names the leaf: it stands for that
            # entry alone. A hit on a summary's own words stands for everything it came from.
            entries = h.entries or h.ids
            leaves = [i for i in h.ids if i not in entries]
            named = [e for e in entries if not (leaves and e.startswith("s-"))] + leaves
            for eid in named:
                behind.update(_descend(eid, graph))
            if unit_of:  # LoCoMo: evidence is dialog ids, cited in the lines
                seen_tree |= _cited_units(brain.root, h, cache) & ev
                for eid in named:
                    seen_prov |= {unit_of.get(r, "") for r in _descend(eid, graph)} & ev
            else:  # a user's brain: evidence is entry ids, raw or summaries (what its tree shows)
                seen_tree |= set(entries) & ev  # the entries in the tree a hit covers
                for eid in named:
                    # every id on the way counts, as for pamd probe: a summary given as evidence
                    # is still found when a summary of it is hit, or a raw leaf it came from
                    if eid in leaves:
                        on_way = set().union(*(_on_path(top, eid, graph) for top in entries)) or {eid}
                    else:
                        on_way = _below(eid, graph)
                    seen_prov |= on_way & ev
            seen_prov |= seen_tree
            if rank in depths:
                acc.add(q.category, f"tree R@{rank}", len(seen_tree) / len(ev))
                acc.add(q.category, f"prov R@{rank}", len(seen_prov) / len(ev))
        for kk in depths:  # fewer hits than k: the recall stays what it reached
            if len(hits) < kk:
                acc.add(q.category, f"tree R@{kk}", len(seen_tree) / len(ev))
                acc.add(q.category, f"prov R@{kk}", len(seen_prov) / len(ev))
        acc.lines += lines
        acc.raw_behind += len(behind)


def point_from(age: str, tokens: dict[str, int], raw_tokens: int, acc: _Acc, k: int) -> Point:
    tree = sum(tokens.values())
    p = Point(age=age, tokens=tokens, tree_tokens=tree, ratio=round(raw_tokens / max(tree, 1), 2),
              lines_at_k=round(acc.lines / max(acc.n["all"], 1), 1), questions=acc.n["all"],
              raw_behind_k=round(acc.raw_behind / max(acc.n["all"], 1), 1), in_tree=acc.mean("all", "in tree"))
    for kk in cutoffs(k):
        p.tree[f"R@{kk}"] = acc.mean("all", f"tree R@{kk}")
        p.prov[f"R@{kk}"] = acc.mean("all", f"prov R@{kk}")
    for cat in sorted(c for c in acc.n if c != "all"):
        p.by_category[cat] = {"n": acc.n[cat], f"tree R@{k}": acc.mean(cat, f"tree R@{k}"),
                              f"prov R@{k}": acc.mean(cat, f"prov R@{k}"), "in tree": acc.mean(cat, "in tree")}
    return p


def _set_index(brain, embedder: str | None, rerank: int | None, summarizer: str | None = None) -> None:
    """Scratch brains may search and summarise another way than their config says: another
    embedder (USE, for a fast benchmark), another cross-encoder depth (0: no reranking), or
    another summarizer (a person's brain set to an LLM, measured without calling it)."""
    wanted: dict[str, dict[str, str | int]] = {
        "index": {k: v for k, v in (("embedder", embedder), ("rerank", rerank)) if v is not None},
        "summarizer": {} if summarizer is None else {"backend": summarizer}}
    wanted = {name: values for name, values in wanted.items() if values}
    if wanted:
        _set_config(brain, wanted)


def _set_config(brain, settings: dict[str, dict[str, str | int]]) -> None:
    """Set plain `key = value` lines of the scratch brain's config, section by section
    (`{"tiers.ratios": {"L3": 25}}`), keeping everything else as it is; one commit."""
    import tomllib

    from pamd.core.paths import CONFIG

    text = brain.read(CONFIG) or ""
    for name, values in settings.items():
        quoted = r"[ \t]*\.[ \t]*".join(rf'"?{re.escape(part)}"?' for part in name.split("."))
        header = re.compile(rf'(?m)^[ \t]*\[[ \t]*{quoted}[ \t]*\][ \t]*(#.*)?$')
        if not header.search(text):
            text = text.rstrip("\n") + f"\n\n[{name}]\n"
        for key, value in values.items():
            shown = f'"{value}"' if isinstance(value, str) else str(int(value))
            head = header.search(text)
            assert head is not None  # the section's header was found or added above
            nxt = re.search(r"(?m)^[ \t]*\[", text[head.end():])
            end = head.end() + (nxt.start() if nxt else len(text) - head.end())
            section = text[head.end():end]
            line = re.compile(rf"(?m)^[ \t]*{re.escape(key)}[ \t]*=.*$")
            if line.search(section):
                section = line.sub(lambda _m, k=key, v=shown: f"{k} = {v}", section, count=1)
            else:
                section = f"\n{key} = {shown}" + section
            text = text[:head.end()] + section + text[end:]

    def got(name: str) -> dict:
        table = tomllib.loads(text)
        for part in name.split("."):
            table = table.get(part, {})
        return table

    try:
        ok = all({k: got(name).get(k) for k in values} == values for name, values in settings.items())
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        raise PamdError(f"cannot set {', '.join(k for v in settings.values() for k in v)} in the scratch "
                        f"brain's {CONFIG}", "drop --embedder/--rerank/--summarizer, or write [index] "
                        "and [summarizer] in the plain key = value form")
    said = ", ".join(f"{k} = {v}" for values in settings.values() for k, v in values.items())
    with brain.transaction() as tx:
        tx.commit({CONFIG: text}, f"pamd eval: scratch brain runs with {said}\n")
    brain._config = None


def scratch_folder(workdir: Path, index: int, name: str) -> Path:
    """The scratch brain of the conversation `name` (a LoCoMo sample_id, any text): one
    plain folder right inside `workdir`, never a path — `x/../../victim` must not make
    a person's repository beside it a brain."""
    plain = re.sub(r"[^\w.-]+", "-", name).strip(".-")[:60] or "conv"
    folder = workdir / f"{index:02d}-{plain}"
    if folder.resolve().parent != workdir.resolve():
        raise PamdError(f"sample {index + 1}: sample_id {name!r} is not a plain name")
    return folder


@contextmanager
def scratch(workdir: Path | str | None) -> Iterator[Path]:
    """Where the scratch brains go: `workdir`, kept; else a temporary folder, removed at
    the end whatever happens (it holds a clone of a person's brain, or LoCoMo's text)."""
    if workdir is not None:
        # from the cwd, as a person typed it: git clone runs in the brain, where a relative
        # path would put the clone inside the person's brain
        yield Path(workdir).absolute()
        return
    tmp = Path(tempfile.mkdtemp(prefix="pamd-eval-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def eval_conversations(convs: list[Conversation], k: int = 10, ages=AGES, workdir: Path | None = None,
                       progress: Callable[[str], None] = lambda s: None, source: str = "",
                       embedder: str | None = None, rerank: int | None = None,
                       summarizer: str | None = None,
                       settings: dict[str, dict[str, str | int]] | None = None) -> Report:
    """`settings` changes the scratch brains' config beyond the search (`{"tiers.ratios": {"L3": 25}}`)."""
    with scratch(workdir) as folder:
        return _eval_conversations(convs, k, ages, folder, progress, source, embedder, rerank, summarizer,
                                   settings or {})


def _eval_conversations(convs: list[Conversation], k: int, ages, workdir: Path,
                        progress: Callable[[str], None], source: str,
                        embedder: str | None, rerank: int | None,
                        summarizer: str | None = None,
                        settings: dict[str, dict[str, str | int]] | None = None) -> Report:
    from pamd.consolidate.compaction import run as compaction
    from pamd.encode.ingest import ingest_entries, make_entries
    from pamd.encode.neurotag import Tagger
    from pamd.encode.sources import Message
    from pamd.ops.layout import init_brain
    from pamd.recall import api

    accs = {age: _Acc() for age, _ in ages}
    tokens = {age: dict.fromkeys(TIERS, 0) for age, _ in ages}
    raw_tokens = 0
    for ci, conv in enumerate(convs):
        brain, _ = init_brain(scratch_folder(workdir, ci, conv.name))
        _set_index(brain, embedder, rerank, summarizer)
        if settings:
            _set_config(brain, settings)
        gap = timedelta(hours=1) / max(len(conv.messages), 1)
        start = T0 - timedelta(hours=1)
        msgs = [Message(speaker, f"[{dia}] {speaker}: {text}", start + gap * i,
                        f"{conv.name}-s{dia.split(':')[0][1:]}", i)
                for i, (dia, speaker, text) in enumerate(conv.messages)]
        entries, _ = make_entries(msgs, Tagger.from_config(brain.config, brain.root), None, T0)
        ingest_entries(brain, entries, [conv.name], T0)
        raw_tokens += sum(e.tokens for e in entries)
        unit_of = {e.id: m[1] if (m := TAG_RE.search(e.text)) else "" for e in entries}
        graph: dict[str, tuple[str, ...]] = {}
        for age, hours in ages:
            now = T0 + timedelta(hours=hours)
            if hours:
                out = compaction(brain, now, "defrag")
                graph.update({s.id: s.sources for s in out.summaries})
            present: set[str] = set()
            for e in brain.load().entries:
                tokens[age][e.tier] += e.tokens
                present.update(TAG_RE.findall(e.text))
            api.index(brain)
            measure(brain, conv.questions, unit_of, graph, now, k, accs[age], api.recall, present)
            progress(f"{conv.name} {age}: {plural(len(conv.questions), 'question')}")
    report = Report(source=source, conversations=len(convs), raw_tokens=raw_tokens, k=k)
    for age, _ in ages:
        report.points.append(point_from(age, tokens[age], raw_tokens, accs[age], k))
    return report


def table(report: Report) -> str:
    raw = next((p for p in report.points if p.age == "raw"), report.points[0])
    r, k = f"R@{report.k}", report.k
    head = (f"{'age':<5}" + "".join(f"{t:>8}" for t in TIERS) + f"{'tree':>9}{'ratio':>8}"
            f"{'in tree':>8}{'tree ' + r:>11}{'prov ' + r:>11}{'% ' + raw.age:>7}{f'lines@{k}':>10}{f'raw@{k}':>8}")
    rows = [head]
    for p in report.points:
        pct = p.prov[r] / raw.prov[r] * 100 if raw.prov[r] else 0
        rows.append(f"{p.age:<5}" + "".join(f"{p.tokens[t]:>8,}" for t in TIERS) + f"{p.tree_tokens:>9,}"
                    f"{p.ratio:>7.1f}:1{p.in_tree:>8.3f}{p.tree[r]:>11.3f}{p.prov[r]:>11.3f}{pct:>6.0f}%{p.lines_at_k:>10.1f}{p.raw_behind_k:>8.1f}")
    return "\n".join(rows)


def check_plot(out: Path) -> None:
    """Refuse a plot file that cannot be written before minutes of evaluation, not after."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise PamdError("--plot needs matplotlib", "pip install 'pamd[plot]'") from None
    if out.is_dir():
        raise PamdError(f"--plot: {out} is a directory", "name a file, e.g. fidelity.png")
    kinds = FigureCanvasBase.get_supported_filetypes()
    suffix = out.suffix[1:].lower()
    if suffix not in kinds:
        raise PamdError(f"--plot: {out}: cannot write a {'.' + suffix if suffix else 'suffix-less'} file",
                        "end its name in " + ", ".join("." + k for k in sorted(kinds)))
    if not out.parent.is_dir():
        raise PamdError(f"--plot: {out.parent} is not a folder", "make it first, or pick another path")


def plot_title(report: Report) -> str:
    if report.brain:
        questions = report.points[0].questions if report.points else 0
        return f"pamd fidelity: the brain {Path(report.source).name} ({plural(questions, 'question')})"
    return f"pamd fidelity: {report.source} ({plural(report.conversations, 'conversation')})"


def plot(report: Report, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    xs = [p.ratio for p in report.points]
    r, k = f"R@{report.k}", report.k
    ax.plot(xs, [p.prov[r] for p in report.points], "o-", label=f"recall@{k} through provenance")
    ax.plot(xs, [p.tree[r] for p in report.points], "s--", label=f"recall@{k} from the working tree")
    ax.plot(xs, [p.in_tree for p in report.points], ":", color="grey",
            label="evidence still in the tree (the tree's ceiling)")
    labels: dict[tuple[float, float], list[str]] = {}
    for p in report.points:  # ages at the same point share one label ("raw, 1h")
        labels.setdefault((p.ratio, p.tree[r]), []).append(p.age)
    for (x, y), ages in labels.items():
        # below its point, but above one near 0, where it would cover the x axis' numbers
        ax.annotate(", ".join(ages), (x, y), textcoords="offset points", xytext=(4, 6 if y < 0.1 else -12),
                    fontsize=8)
    ax.set_xscale("log")
    # ratios as a brain's owner reads them ("20:1"), not as powers of ten ("2×10^1"); the
    # log scale's own formatters still choose which ticks get a label
    from matplotlib.ticker import LogFormatterSciNotation

    class Ratio(LogFormatterSciNotation):
        def __call__(self, x, pos=None):
            return f"{x:g}:1" if super().__call__(x, pos) else ""

    ax.xaxis.set_major_formatter(Ratio())
    ax.xaxis.set_minor_formatter(Ratio(labelOnlyBase=False))
    ax.set_xlabel("compression (raw tokens : tree tokens, log scale)")
    ax.set_ylabel(f"evidence recall@{k}")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="center right", fontsize=8)  # the tree falls to the lower left, provenance stays on top
    ax.set_title(plot_title(report))
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def eval_brain(brain, questions: list[Question], k: int = 10, ages=AGES, workdir: Path | None = None,
               progress: Callable[[str], None] = lambda s: None, embedder: str | None = None,
               rerank: int | None = None, questions_file: str = "questions",
               summarizer: str | None = None) -> Report:
    """A user's brain: cloned into a scratch folder and aged there; the original is not touched."""
    with scratch(workdir) as folder:
        return _eval_brain(brain, questions, k, ages, folder, progress, embedder, rerank, questions_file,
                           summarizer)


def _eval_brain(brain, questions: list[Question], k: int, ages, workdir: Path,
                progress: Callable[[str], None], embedder: str | None, rerank: int | None,
                questions_file: str, summarizer: str | None = None) -> Report:
    from pamd.consolidate.compaction import run as compaction
    from pamd.edge.brain import Brain
    from pamd.recall import api

    clone = workdir / "brain"
    brain.repo.run("clone", "-q", str(brain.root), str(clone))
    scratch = Brain(clone)
    _set_index(scratch, embedder, rerank, summarizer)
    entries = scratch.load().entries
    raw_tokens, graph, compacted, known = raw_input(scratch, entries)
    for q in questions:  # an id the brain never had would be scored as evidence lost
        for x in q.evidence:
            if x not in known and brain.repo.is_shallow():  # history stops short: no typo told
                raise PamdError(f"{questions_file}:{q.line}: evidence {x} is not in this brain's tree, and its "
                                "history is shallow (cloned with --depth): the raw input cannot be measured",
                                f"run `git -C {brain.root} fetch --unshallow`, then pamd eval again")
            if x not in known:
                raise PamdError(f"{questions_file}:{q.line}: evidence {x} is not an entry of this brain "
                                "(not in its tree or history)",
                                "check the id with pamd recall --json, and that --brain names the right brain")
    base = max((e.ts for e in entries), default=T0)
    report = Report(source=str(brain.root), conversations=1, raw_tokens=raw_tokens, k=k, brain=True)
    for age, hours in ages:
        if not hours and compacted:
            age = "now"  # the brain as it is, already compressed: not a raw baseline
        now = base + timedelta(hours=hours)
        if hours:
            out = compaction(scratch, now, "defrag")
            graph.update({s.id: s.sources for s in out.summaries})
        toks = dict.fromkeys(TIERS, 0)
        here = scratch.load().entries
        for e in here:
            toks[e.tier] += e.tokens
        acc = _Acc()
        api.index(scratch)
        measure(scratch, questions, {}, graph, now, k, acc, api.recall, {e.id for e in here})
        report.points.append(point_from(age, toks, raw_tokens, acc, k))
        progress(f"{age}: {plural(len(questions), 'question')}")
    return report


def raw_input(brain, entries) -> tuple[int, dict[str, tuple[str, ...]], bool, set[str]]:
    """Tokens of every raw entry the brain was given, the provenance graph through history,
    whether the brain was compressed already (raw text has left its tree), and every id
    the brain ever had (in its tree, or a raw entry or summary of its history).

    A brain compacted before it is measured holds summaries, not its input: the raw
    entries behind them, and the trash dropped on the way, are counted from history
    (every raw entry a commit of HEAD ever added, pamd.edge.lineage), so the ratio is
    raw input : tree as it is for a fresh brain. The graph also reaches through
    summaries that have left the tree, so a hit counts for the raw entries it stands for.
    """
    from pamd.edge.lineage import scan

    lin = scan(brain)
    here = {e.id: e for e in entries}
    raw = dict(lin.raw_tokens)
    raw.update({e.id: e.tokens for e in entries if not e.sources})
    graph = dict(lin.sources)
    graph.update({e.id: e.sources for e in entries if e.sources})
    compacted = any(eid not in here for eid in lin.raw_tokens) or any(e.sources for e in entries)
    known = set(here) | set(raw) | set(graph) | {s for srcs in graph.values() for s in srcs}
    return sum(raw.values()), graph, compacted, known


def summary_lines(report: Report) -> list[str]:
    first = report.points[0]
    last = report.points[-1]
    what = f"the brain {report.source}" if report.brain else plural(report.conversations, "conversation")
    out = [f"{what}, {plural(first.questions, 'question')}, raw {report.raw_tokens:,} tokens"]
    if first.age != "raw":
        out.append(f"the brain was compressed already: row {first.age!r} is the brain as it is "
                   f"({first.tree_tokens:,} tokens, {first.ratio:.1f}:1 against its raw input, "
                   "counted from history); recall is compared with that row, not with raw")
    r = f"R@{report.k}"
    if first.prov[r]:
        out.append(f"at {last.age}: {last.ratio:.1f}:1, recall@{report.k} through provenance "
                   f"{last.prov[r] / first.prov[r]:.0%} of {first.age}, from the tree alone "
                   f"{last.tree[r] / first.prov[r]:.0%} of {first.age}")
    return out

