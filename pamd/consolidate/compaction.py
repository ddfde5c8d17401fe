"""The compaction and defrag runs: load → plan → summarise → one commit.

`run(brain, now, mode)` is the library entry the CLI, the daemon and the
hooks call. The plan is pure (consolidate.policy); this module only turns it
into file texts and a commit message with machine-readable trailers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pamd.consolidate import policy
from pamd.consolidate.summarizers import Group, Usage, backend_name, get_summarizer
from pamd.consolidate.summarizers.lesson import LESSON_TOKENS
from pamd.core.config import Settings, settings
from pamd.core.entry import TIERS, Entry, fmt_time
from pamd.core.fmt import Doc, FormatError, render_doc, split_frontmatter
from pamd.core.message import one_line
from pamd.core.paths import DNA, MEMORY, PRELOAD, STATE, tier_of, tier_path
from pamd.core.words import plural
from pamd.edge.brain import Brain
from pamd.errors import PamdError
from pamd.myelin import myelin, preload, recall_log, snapshot


@dataclass
class Outcome:
    plan: policy.Plan
    sha: str | None = None
    summaries: list[Entry] = field(default_factory=list)
    usage: Usage | None = None
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Deferred(Exception):  # noqa: N818 - not an error: control flow between run() and _run()
    """The plan needs a slow summarizer (an LLM): call it without the brain's lock, then plan again."""

    def __init__(self, summarizer: Any, groups: list[Group]) -> None:
        super().__init__(f"{len(groups)} groups to summarise")
        self.summarizer, self.groups = summarizer, groups


@dataclass
class Premade:
    """Texts summarised without the lock by an earlier attempt of this run, by what they summarise."""

    texts: dict[tuple, str] = field(default_factory=dict)
    usage: Usage | None = None
# What an LLM may write of STATE: a few open items and a focus (snapshot.OPEN_ITEMS bounds them).
STATE_TOKENS = 300


def _signature(g: Group) -> tuple:
    # Everything a summarizer sees of a group: a text made for it fits the same group only.
    return (g.tier, g.target_tokens, tuple((e.id, e.ts, e.role, e.text) for e in g.entries))


def _local(summarizer: Any) -> bool:
    """Fast and offline (no network, no model): summarised under the lock, as part of the run."""
    return bool(getattr(summarizer, "local", summarizer.name == "extractive"))


def summarize_plan(plan: policy.Plan, config: Settings | dict[str, Any],
                   lessons: list[dict[str, Any]] | None = None, premade: Premade | None = None,
                   defer: bool = False, state: dict[str, Any] | None = None) -> tuple[list[Entry], Usage]:
    """Summaries for every group of the plan, and texts for new lessons, in one batch.

    A lesson's text is "" where the summarizer found none in it (a backend may say so).
    `state` ({"entries": the last day's}) gets its "text": what an LLM says of the work
    open and the focus in them (snapshot.snapshot reads it; "" from the extractive backend).

    Texts in `premade` are reused for groups that are still the same. With `defer`, a
    summarizer that is not local raises Deferred for the groups left, so that run()
    can call it without holding the brain's lock."""
    config = settings(config)
    keys = sorted(plan.groups)
    groups = [Group(key=k, tier=plan.group_tier[k],
                    entries=tuple(sorted(plan.groups[k], key=lambda e: e.ts)),
                    target_tokens=policy.target_tokens(plan.groups[k], plan.group_tier[k], config))
              for k in keys]
    lessons = lessons or []
    extra = [Group(key=f"lesson|{i}", tier="lesson", entries=tuple(ls["entries"]),
                   target_tokens=LESSON_TOKENS)
             for i, ls in enumerate(lessons)]
    if state is not None and state["entries"]:
        extra.append(Group(key="state", tier="state", entries=tuple(state["entries"]), target_tokens=STATE_TOKENS))
    texts: list[str]
    if not (groups or extra):
        texts, usage = [], Usage(backend_name(config), "-")
    else:
        # Constructed only now: an LLM backend without its key (GEMINI_API_KEY) fails
        # here with its clear error, not in a run that only refreshes STATE or folds recalls.
        summarizer = get_summarizer(config)
        done = dict(premade.texts) if premade else {}
        missing = [g for g in groups + extra if _signature(g) not in done]
        if missing and defer and not _local(summarizer):
            raise Deferred(summarizer, missing)
        usage = Usage(summarizer.name, getattr(summarizer, "model", "-"))
        if premade and premade.usage:
            usage.add(premade.usage)
        if missing:
            texts, more = summarizer.summarize(missing)
            done.update(zip(map(_signature, missing), texts, strict=True))
            usage.add(more)
        texts = [done[_signature(g)] for g in groups + extra]
    for ls, text in zip(lessons, texts[len(groups):len(groups) + len(lessons)], strict=True):
        ls["text"] = f"{text.strip()} (lesson of {ls['day']})" if text.strip() else ""
        del ls["entries"], ls["day"]
    if state is not None:
        state["text"] = texts[len(groups) + len(lessons)] if state["entries"] else ""
    summaries = [policy.summary_entry(g.key, g.tier, list(g.entries), text.strip() or "(empty)")
                 for g, text in zip(groups, texts, strict=False)]
    return summaries, usage


def apply_plan(docs: dict[str, Doc], plan: policy.Plan, summaries: list[Entry]) -> dict[str, str | None]:
    """New text of every file the plan changes, None for one it empties (pure over the parsed docs)."""
    leaving = {d.entry.id for d in plan.decisions if d.action != "keep"}
    changed: dict[str, Doc] = {}
    for rel, doc in docs.items():
        if any(e.id in leaving for e in doc.entries):
            changed[rel] = Doc(doc.meta, doc.preamble, [e for e in doc.entries if e.id not in leaving], doc.body_line)
    for s in summaries:
        rel = MEMORY if s.tier == "L4" else tier_path(s.tier, s.ts.strftime("%Y-%m-%d"))
        target = changed.get(rel) or docs.get(rel)
        if target is None:
            day = s.ts.strftime("%Y-%m-%d")
            target = Doc({"tier": s.tier, "date": day}, f"# {s.tier} · {day}", [], 1)
        if all(e.id != s.id for e in target.entries):
            target = Doc(target.meta, target.preamble, sorted([*target.entries, s], key=lambda e: e.ts),
                         target.body_line)
        changed[rel] = target
    out: dict[str, str | None] = {}
    for rel, doc in changed.items():
        if not doc.entries and rel != MEMORY and only_pamds(rel, doc):
            out[rel] = None  # an emptied tier file goes away; its text stays in history
        else:
            out[rel] = render_doc(doc.meta, doc.preamble, doc.entries)
    return out


def refreshed_state(current: str | None, snap: dict[str, Any], last: str | None = None,
                    ever: set[str] | frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """STATE.md with the new snapshot (see snapshot.render_state; `last` is STATE.md as pamd
    last committed it), or `current` unchanged when the snapshot says nothing new:
    `updated:` alone moving would make a commit of nothing but a timestamp (a future-dated
    entry kept STATE "stale" and made every compaction commit). Also the commit's lines
    on what became of a person's edits."""
    new, notes = snapshot.render_state(current, snap, last, ever)
    if current is None or new == current:
        return new, notes
    try:
        old = split_frontmatter(current, STATE)[0].get("updated")
    except FormatError:
        return new, notes
    if old is not None and snapshot.render_state(current, {**snap, "updated": old}, last, ever)[0] == current:
        return current, []
    return new, notes


# How far back pamd's own versions of STATE.md count as pamd's: a person's revert of a
# compaction, or a squash-merged defrag, brings back items pamd wrote some runs ago.
STATE_LOOKBACK = 8


def pamds_state(brain: Brain, current: str | None, head: str | None) -> tuple[str | None, set[str]]:
    """STATE.md as pamd's last commit of it left it (None: no pamd commit wrote it), and
    every goal, hypothesis, focus and mood its last STATE_LOOKBACK commits of it held: what a person
    added since is theirs, and a value pamd once wrote (back after a revert, or from a squash-merged
    defrag whose commit message git indents) is not. One `git log -p`; history holds it,
    nothing else needs keeping. `head`: HEAD when the run took the lock (None: no commit yet)."""
    if current is None or not head:
        return None, set()
    out = brain.repo.log("-n", str(STATE_LOOKBACK), "--format=%x00", "-p", "--unified=100000",
                         "--no-color", "--no-renames", "--grep=^ *Pamd-Run: ", "--", STATE)
    versions = []
    for chunk in out.split("\x00")[1:]:
        lines = chunk.split("\n")
        start = next((i for i, ln in enumerate(lines) if ln.startswith("@@")), None)
        if start is None:  # the commit deleted STATE.md
            continue
        versions.append("\n".join(ln[1:] for ln in lines[start + 1:] if ln[:1] in (" ", "+")))
    ever = {item for text in dict.fromkeys(versions) for item in snapshot.pamds_values(text)}
    return (versions[0] if versions else None), ever


def only_pamds(rel: str, doc: Doc) -> bool:
    """Whether a tier file holds nothing but what pamd writes above its entries (the
    `tier`/`date` frontmatter and the `# L0 · DAY` heading). A file with a person's
    text in it is kept when its last entry leaves: pamd never deletes what it did not write."""
    day = rel.rsplit("/", 1)[-1].removesuffix(".md")
    heading = f"# {tier_of(rel) or doc.meta.get('tier', '')} · {day}"
    return set(doc.meta) <= {"tier", "date"} and doc.preamble.strip() in ("", heading)


def commit_message(mode: str, plan: policy.Plan, before: list[Entry], after: list[Entry],
                   summaries: list[Entry], usage: Usage, notes: list[str]) -> str:
    b, a = policy.tier_counts(before), policy.tier_counts(after)
    moved = plan.moving
    tokens_in = sum(d.entry.tokens for d in moved)
    tokens_out = sum(s.tokens for s in summaries)
    ratio = tokens_in / tokens_out if tokens_out else 0.0
    flows = Counter((d.entry.tier, d.target) for d in moved)
    title = f"pamd {mode}: {plural(len(moved), 'entry')} into {plural(len(summaries), 'summary')}"
    if plan.dropped:
        title += f", {len(plan.dropped)} dropped"
    lines = [title, ""]
    for (src, dst), n in sorted(flows.items()):
        lines.append(f"{src} -> {dst}: {plural(n, 'entry')}")
    if tokens_out:
        lines.append(f"Compressed {tokens_in:,} tokens into {tokens_out:,} ({ratio:.1f}:1) with {usage.backend}.")
    if plan.dropped:
        lines.append("Dropped as trash (raw text stays in history; `pamd expand ID`): "
                     + ", ".join(d.entry.id for d in plan.dropped))
    # A note's own line breaks are pamd's layout (a list of retired reflexes); each line of
    # it goes in whole, control characters escaped, and Repo.commit quotes any line of the
    # body that would pass for one of pamd's trailers.
    lines += [one_line(part) for n in notes + list(usage.notes) if n for part in n.split("\n")]
    lines.append("")
    lines.append(f"Pamd-Run: {mode}")
    lines.append(f"Pamd-Now: {fmt_time(plan.now)}")
    for t in TIERS:
        lines.append(f"Pamd-Tier-{t}: {b[t][0]} -> {a[t][0]} entries, {b[t][1]} -> {a[t][1]} tokens")
    lines += [
        f"Pamd-Moved: {len(moved)}",
        f"Pamd-Dropped: {len(plan.dropped)}",
        f"Pamd-Tokens-In: {tokens_in}",
        f"Pamd-Tokens-Out: {tokens_out}",
        f"Pamd-Compression: {ratio:.2f}",
        f"Pamd-Summarizer: {usage.backend}",
        f"Pamd-Model: {usage.model or '-'}",
        f"Pamd-LLM-Tokens: {usage.input_tokens} in, {usage.output_tokens} out",
        f"Pamd-Cost-USD: {usage.cost_usd:.6f}",
    ]
    if usage.fallbacks:
        lines.append(f"Pamd-Fallback: {usage.fallbacks} groups summarised by the fallback")
    return "\n".join(lines) + "\n"


def last_recall_fold(brain: Brain) -> str | None:
    """This machine's latest fold in HEAD's history, None if its log was never folded there.

    The newest commit with any fold marker may be another clone's (pulled or merged in):
    its offset is into that machine's log, so taking it would fold this log again from
    the top. The log's name is plain (`recall_log.log_id`), so it goes into the pattern as is."""
    log_id = recall_log.log_id(brain.state_dir)
    if log_id is None or not brain.repo.head():
        return None
    out = brain.repo.log("-1", f"--grep=^{recall_log.TRAILER}: {log_id}@", "--format=%B")
    return recall_log.marker(out, log_id)


# How often a run plans under the lock and calls a slow summarizer without it. If the
# plan's groups changed meanwhile (a person or another run committed), it plans again,
# reusing the texts of groups still the same; the last attempt summarises what is left
# under the lock, so a run always ends.
ATTEMPTS = 3


def run(brain: Brain, now: datetime, mode: str = "compact", dry_run: bool = False) -> Outcome:
    """One compaction (mode "compact") or nightly defrag (mode "defrag").

    An LLM summarizer can take minutes; it is never called while the brain's lock is
    held (except for what changed twice under it, and under `defrag --branch`, whose
    brain stays locked for the whole run), so `remember`, `ingest` and hooks are not
    kept waiting: the run plans under the lock, lets it go, summarises, then
    takes the lock again and plans afresh from what is committed by then, reusing
    texts for unchanged groups. One commit or nothing, as ever."""
    premade = Premade()
    for attempt in range(ATTEMPTS):
        try:
            return _run(brain, now, mode, dry_run, premade, defer=attempt < ATTEMPTS - 1)
        except Deferred as need:  # the lock is released: call the summarizer now
            texts, usage = need.summarizer.summarize(need.groups)
            premade.texts.update(zip(map(_signature, need.groups), texts, strict=True))
            premade.usage = usage if premade.usage is None else premade.usage.add(usage)
    raise AssertionError("unreachable: the last attempt never defers")


def _run(brain: Brain, now: datetime, mode: str, dry_run: bool, premade: Premade, defer: bool) -> Outcome:
    from pamd.consolidate import defrag as defrag_mod

    cfg = settings(brain.config)
    with brain.transaction() as tx:
        loaded = brain.load(committed=True)  # a person's uncommitted entries stay out of it
        docs = loaded.docs
        changes: dict[str, str | None] = {}
        notes: list[str] = []
        # Recalls logged since the last fold become part of this commit.
        pend = recall_log.pending(brain.state_dir, last_recall_fold(brain))
        docs, touched, n_folded = myelin.fold(docs, pend)
        if n_folded:
            notes.append(f"Folded {plural(n_folded, 'recall')} into the tree.")
        if mode == "defrag":
            docs, demoted_rels, n_demoted = myelin.demote(docs, cfg, now)
            touched |= demoted_rels
            if n_demoted:
                notes.append(f"Demoted {plural(n_demoted, 'memory')} not recalled for "
                             f"{cfg.myelin.demote_after_days} days.")
            pre = defrag_mod.prepare(brain, docs, now)
            docs, notes = pre.docs, notes + pre.notes
            changes.update(pre.changes)
            fresh = pre.fresh
        else:
            fresh = set()
        entries = [e for d in docs.values() for e in d.entries]
        # An entry must land raw in one commit before a summary may replace it,
        # or its provenance would point at text no commit ever held.
        plan = policy.plan_compaction([e for e in entries if e.id not in fresh], cfg, now, mode)
        out = Outcome(plan=plan)
        if dry_run:
            return out
        dna_text = brain.read(DNA) or ""
        new_lessons = myelin.lessons(entries, cfg, myelin.dna_sources(dna_text), myelin.lesson_texts(dna_text))
        # A failure met again whose lesson DNA.md has: learned from, not asked for again.
        repeats = [ls["from"] for ls in new_lessons if ls.get("repeat")]
        new_lessons = [ls for ls in new_lessons if not ls.get("repeat")]
        state_text = brain.read(STATE)
        stale_state = snapshot.is_stale(state_text, entries)
        # DNA.md over its budget is cut by the nightly defrag, also on a night with nothing else to do
        dna_over = mode == "defrag" and myelin.dna_over(dna_text, cfg)
        if (plan.empty and not changes and not touched and not new_lessons and not repeats and not stale_state
                and not dna_over):
            out.usage = premade.usage  # what an earlier attempt paid for, if anything
            return out
        # An LLM backend that summarises anyway also reads the last day for STATE's open work
        # and focus, in the same batch (a run with nothing to summarise asks it nothing)
        waiting = sorted(brain.repo.dirty([STATE, PRELOAD]))
        asks = backend_name(cfg) != "extractive" and bool(plan.groups or new_lessons)
        state_group: dict[str, Any] | None = (
            {"entries": snapshot.for_llm(entries, now)} if asks and STATE not in waiting else None)
        summaries, usage = summarize_plan(plan, cfg, new_lessons, premade, defer, state_group)
        # A lesson the summarizer found none in is remembered as tried (DNA.md's
        # learned_from), so the next run does not pay to ask for it again.
        declined = [ls["from"] for ls in new_lessons if not ls["text"]]
        new_lessons = [ls for ls in new_lessons if ls["text"]]
        changes.update(apply_plan(docs, plan, summaries))
        for rel in touched - set(changes):
            d = docs[rel]
            changes[rel] = render_doc(d.meta, d.preamble, d.entries)
        after_docs = {rel: d for rel, d in docs.items() if rel not in changes}
        for rel, text in changes.items():
            if text is not None and (rel == MEMORY or rel.startswith("memory/L")):
                after_docs[rel] = brain.parse(rel, text)
        after = [e for d in after_docs.values() for e in d.entries]
        kept = sorted(rel for rel, text in changes.items() if text is not None and rel != MEMORY
                      and tier_of(rel) and rel in docs and docs[rel].entries
                      and not after_docs[rel].entries)
        if kept:
            notes.append(f"Kept {plural(len(kept), 'tier file')} whose last entry left, for the text a person "
                         f"wrote in them: {', '.join(kept)}.")
        # Myelin, reflexes and the snapshot ride along in the same commit. STATE.md and
        # PRELOAD.md are made anew from the tree at every run: one a person is editing (even
        # half-way, unparsable) waits for a later run instead of stopping every compaction
        # until it is committed (DNA.md, which keeps what pamd learned once, still stops it).
        texts = _leaf_texts(brain, after, entries, cfg)
        if PRELOAD not in waiting:
            preload_text = brain.read(PRELOAD) or ""
            changes[PRELOAD] = new_preload = preload.render(preload_text, after, cfg, texts)
            notes += preload.changes(preload_text, new_preload, after)
        reflexes = myelin.recall_reflexes(after, cfg, texts) + new_lessons
        changes[DNA] = new_dna = myelin.merge_dna(dna_text, reflexes, after, tried=declined + repeats)
        notes += myelin.new_recall_reflexes(dna_text, new_dna)
        if mode == "defrag":
            changes[DNA], retired = myelin.bound_dna(new_dna, cfg, after)
            if retired:
                notes.append(myelin.retired_note(retired, cfg))
        if STATE not in waiting:
            snap = snapshot.snapshot(entries, now, snapshot.meta_of(state_text),
                                     int(cfg.myelin.settings_budget),
                                     told=str(state_group["text"]) if state_group else "")
            last, ever = pamds_state(brain, state_text, tx.start_head)
            changes[STATE], state_notes = refreshed_state(state_text, snap, last, ever)
            notes += state_notes
        if waiting:
            notes.append(f"Left {' and '.join(waiting)} as they are: uncommitted edits "
                         "(refreshed by a later run once they are committed).")
        if new_lessons:
            notes.append(f"Learned {plural(len(new_lessons), 'lesson')} from failures (DNA.md reflexes).")
        if declined:
            notes.append(f"The summarizer found no lesson in {plural(len(declined), 'failure')} "
                         f"({', '.join(ls[0] for ls in declined)}); DNA.md's learned_from keeps them, "
                         "so they are not asked for again.")
        merged = [d.entry.id for d in plan.moving if d.entry.tier == d.target == "L4"]
        if merged:
            budget = int(cfg.tiers.budgets["L4"])
            into = [s.id for s in summaries if s.tier == "L4" and set(s.sources) & set(merged)]
            notes.append(f"MEMORY.md was over its {budget:,}-token budget ([tiers.budgets] L4): merged "
                         f"{plural(len(merged), 'summary', 'summaries')} (lowest retention, oldest first; "
                         f"never a myelinated one) into {', '.join(into)}. Their raw messages stay "
                         f"findable (recall, `pamd expand ID`): {', '.join(merged)}")
        if mode == "defrag":
            notes += defrag_mod.reflection(plan, after, now)
        out.summaries, out.usage = summaries, usage
        out.message = commit_message(mode, plan, loaded.entries, after, summaries, usage, notes)
        if pend.marker:
            out.message += f"{recall_log.TRAILER}: {pend.marker}\n"
        # The leaves go into the cache before the commit: the brain's git hooks run inside it,
        # and a recall then (pamd-probe's, or an agent's) would otherwise read every new
        # summary's leaves from history, one git walk each. The cache is keyed by the summary's
        # id, a hash of its tier and sources, and the leaves follow from the sources: if the
        # commit is refused, the rows stay harmless and a later summary of the same sources
        # gets the same leaves.
        if summaries:
            _record_leaves(brain, summaries, entries)
        out.sha = tx.commit(changes, out.message)
        if out.sha and pend.marker:
            _carry_recalls(brain, myelin.unowned(loaded.docs, pend), now)
        return out


def summarizer_notes(out: Outcome) -> list[str]:
    """The summarizer's fallbacks to extractive in a run, and why. The commit body has them
    and every other note (trimmed answers, a model without a price); the terminal and the
    daemon's log say the fallbacks too, or an endpoint that is down goes unnoticed behind
    extractive summaries. The other notes would be said every run: cron mails any stderr."""
    return [n for n in out.usage.notes if "fell back" in n] if out.usage else []


def run_warnings(out: Outcome) -> list[str]:
    """What a person (or cron) is warned of after a run: the summarizer's fallbacks, and LLM
    work paid for in vain."""
    return [n for n in (*summarizer_notes(out), unrecorded_spend(out)) if n]


def unrecorded_spend(out: Outcome) -> str | None:
    """A line for LLM work a run paid for and then committed nothing with.

    The LLM is called without the lock; if a person or another run changed the brain
    meanwhile so that nothing is left to commit, no commit carries the Pamd-LLM-Tokens
    and Pamd-Cost-USD trailers that would otherwise say what was spent."""
    u = out.usage
    if out.sha is not None or u is None or not u.requests:
        return None
    cost = f", ${u.cost_usd:.4f}" if u.cost_usd else ""
    return (f"spent {u.input_tokens:,} LLM tokens in and {u.output_tokens:,} out"
            f" ({plural(u.requests, 'request')}{cost}) on summaries the brain no longer needed:"
            " it changed while the summarizer worked, and no commit records this")


def _carry_recalls(brain: Brain, unowned: Counter, now: datetime) -> None:
    """Recalls of entries that sit uncommitted in the work tree go back into the recall log,
    after the marker this commit wrote, so the fold after the person's commit counts them
    (the marker moved past their lines; without this they would be lost)."""
    if not unowned:
        return
    try:
        here = {e.id for e in brain.load().entries}  # the work tree, uncommitted entries included
    except PamdError:  # a person's broken file: `pamd check` names it; the commit stands
        return
    ids = [eid for eid, n in sorted(unowned.items()) if eid in here for _ in range(n)]
    recall_log.append(brain.state_dir, ids, "(carried: its entry was not committed yet)", now, "carry")


def _leaf_texts(brain: Brain, after: list[Entry], entries: list[Entry], cfg: Settings) -> dict[str, str]:
    """The words of the raw leaves PRELOAD and recalled reflexes show for myelinated summaries.

    A raw id is a hash of its words, so wherever the text is found it is the same: in this
    run's entries, in the deep-recall cache, else in git history (a fresh clone without
    .pamd/ reads it there, and makes the same PRELOAD.md), else in PRELOAD.md's line that
    already shows it (a shallow clone), and passed through the secret scanner, like every
    text that enters the tree."""
    want = {leaf for e in after if myelin.level(e.recalls, cfg) in (myelin.THICK, myelin.REFLEX)
            and (leaf := myelin.shown_leaf(e))}
    if not want:
        return {}
    texts = {e.id: e.text for e in entries if e.id in want and not e.sources}
    missing = want - set(texts)
    if missing:
        try:
            from pamd.recall.deep import texts_of

            texts.update(texts_of(brain.state_dir, missing))
        except Exception:  # noqa: BLE001 - a cache: history has every leaf
            pass
        missing -= set(texts)
    if missing:
        from pamd.consolidate.provenance import locate

        texts.update({eid: e.text for eid, (e, _) in locate(brain, missing).items() if not e.sources})
        missing -= set(texts)
    if missing:  # history lacks it (a shallow clone): PRELOAD.md's own line names it and holds its
        # words, as committed (a person's uncommitted edit of the file never reaches pamd's commit)
        committed = brain.repo.show("HEAD", PRELOAD) if brain.repo.head() else None
        texts.update({leaf: text for leaf, text in preload.shown_leaves(committed or "").items()
                      if leaf in missing})
    # Words from history come back into the tree: a secret a person redacted from the tree
    # since stays out of PRELOAD.md and DNA.md (and the pamd-secrets hook's way).
    from pamd.core.redact import Redactor

    r = Redactor.from_config(cfg)
    return {eid: r.redact(text)[0] for eid, text in texts.items()}


def _record_leaves(brain: Brain, summaries: list[Entry], entries: list[Entry]) -> None:
    """Cache what each new summary stands for, so the index can find its raw messages."""
    try:
        from pamd.recall.deep import record
    except ImportError:
        return
    try:
        record(brain.state_dir, summaries, {e.id: e for e in entries})
    except Exception:  # noqa: BLE001 - a cache: the next index refresh reads history instead
        pass


def plan_preview(plan: policy.Plan, config: Settings | dict[str, Any]) -> list[str]:
    """What the plan's summaries will say, written by the extractive summarizer (local and
    free; an LLM backend writes its own at the run): a heading per summary, its lines quoted."""
    from pamd.consolidate.summarizers.extractive import ExtractiveSummarizer

    config = settings(config)
    groups = [Group(key=k, tier=plan.group_tier[k], entries=tuple(sorted(plan.groups[k], key=lambda e: e.ts)),
                    target_tokens=policy.target_tokens(plan.groups[k], plan.group_tier[k], config))
              for k in sorted(plan.groups)]
    texts, _ = ExtractiveSummarizer().summarize(groups)
    rows = []
    for g, text in zip(groups, texts, strict=True):
        where = "MEMORY.md" if g.tier == "L4" else g.tier
        rows.append(f"{where} from {len(g.entries)} ({g.entries[0].ts:%Y-%m-%d %H:%M}–{g.entries[-1].ts:%H:%M}):")
        rows += [f"  > {line}" for line in text.splitlines()]
    return rows


def plan_report(brain: Brain, plan: policy.Plan, mode: str) -> list[str]:
    """`pamd compact --plan` and `defrag --plan`: each entry's retention and decision, the
    counts, the summaries the plan would write, and for a defrag the reflexes DNA.md's
    bound would set aside."""
    lines = plan_table(plan)
    lines.append(f"{len(plan.moving)} to compress, {len(plan.dropped)} to drop, "
                 f"{len(plan.decisions) - len(plan.moving) - len(plan.dropped)} stay")
    preview = plan_preview(plan, brain.config)
    if preview:  # what an import of old sessions turns into, before it does
        lines += ["", "The summaries this run would write (extractive; an LLM backend writes its own):", *preview]
    if mode == "defrag":
        _, retired = myelin.bound_dna(brain.read(DNA) or "", brain.config, [])
        if retired:  # the reflexes this night's lessons may add aside
            lines.append(myelin.retired_note(retired, brain.config))
    return lines


def result_line(out: Outcome, mode: str) -> str:
    """The run's one line: its commit's subject and sha, or that there was nothing to do."""
    return f"nothing to {mode}" if out.sha is None else out.message.split("\n", 1)[0] + f" ({out.sha[:8]})"


def plan_table(plan: policy.Plan) -> list[str]:
    rows = [f"{'id':<15}{'tier':<5}{'retention':>10}  {'decision':<9}{'to':<4} why"]
    for d in plan.decisions:
        rows.append(f"{d.entry.id:<15}{d.entry.tier:<5}{d.retention:>10.2f}  {d.action:<9}{d.target:<4} {d.why}")
    return rows
