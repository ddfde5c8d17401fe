"""What an agent resuming after a week gets from pamd: a brain built from real Claude Code work.

    python benchmarks/agent_memory.py                      # build, age, measure (a temp folder)
    python benchmarks/agent_memory.py --workdir /tmp/am    # keep everything there
    python benchmarks/agent_memory.py --brain DIR          # a brain already there is measured, not rebuilt
    python benchmarks/agent_memory.py grade ANSWERS.json   # score a blind agent's answers

Workload: the three large sessions in ../shared/bench/data/claude-code (258c7280, 8463c716,
4d5611e5: two days of work on one project) and their subagents' transcripts. Questions and gold
answers: benchmarks/agent_questions.json, written from the transcripts alone (decisions and why,
errors and their fixes, concrete facts, open work at the end, the user's instructions, what
was done).

How the brain is built: as the Claude Code hooks and the daemon would build it. Each session's
transcript grows in a work folder as Claude Code wrote it, and is ingested (the library call
`pamd ingest -` makes, fed the transcript path) at each of the session's own Stop hook runs
(its `stop_hook_summary` records), before each of Claude Code's compactions (PreCompact),
with each subagent's transcript when that subagent finished (SubagentStop), and whole at the
end (SessionEnd); every ingest at the transcript's own time. `run-due` runs every 30 simulated
minutes from the first hook run on (compactions, and the nightly defrag at its slot), and the
brain is then aged 8 days the same way. The search index is built once at the end (run-due's
own refresh after each commit is left out: it changes nothing in the tree).

Written to the output folder (`--out`, default WORKDIR/out):
- boot.md: `pamd boot`; boot-9000.md: `pamd boot --chars 9000` when boot has that option
  (else a note says it was skipped); boot-8000t.md: `pamd boot --budget 8000`.
- questions.md: the questions without their answers, for a blind agent.
- checks.json: the automatic checks, also printed as a table:
  * boot tokens (pamd's own count);
  * chatter lines in boot: lines matching one of CHATTER (agent narration such as "Let me",
    "Now I'll", "Perfect", "Great", Russian "Давай", "Теперь", "Отлично"), line by line;
  * DNA.md lessons (the items of its `reflexes` and `learned_behaviors` lists, and bullets
    in its body) and how many of them name a concrete error AND a concrete fix: an error
    part (an exception-like name such as `DBConnection.OwnershipError` or `KeyError`, an exit
    code, a line starting `fatal:`/`error:`, or a quoted or backticked text holding an error
    word such as "failed", "cannot", "undefined", "not found") and a fix part (a fix word such
    as "fixed", "fix:", "use", "instead", "added", "run", "→" followed by something concrete: a
    quoted or backticked text, a path, an identifier with `.`, `_`, `/`, `::`, `(` or a flag);
  * key coverage: the share of questions all of whose `keys` occur in
    boot, in boot cut to its first 8,000 tokens, in `boot --budget 8000`, in boot-9000, and in
    MEMORY.md + DNA.md + STATE.md; per kind too. Two references beside them: every raw entry
    the brain's L0 ever held (from its git history: what recall/expand can reach at best, so
    a key missing there was cut at ingest), and the summaries Claude Code itself wrote when
    it compacted these sessions (written partway through them). And one automatic recall per
    question: the keys in the 10 hits `pamd recall QUESTION` shows (not logged as recalls), a
    floor for the with-recall test. A key matches
    case-insensitively as a whole word (`token` is not found in "tokens"); a key ending in
    `*` is a stem ("truncat*").
    Coverage says the answer is there to read, not that an agent finds it: the blind test
    below is the measure of that.

The blind test (the agent test of issue 19). Give an agent that did not write the questions
only the output folder's boot.md (or boot-9000.md, the context an agent integration delivers)
and questions.md, and a shell that can run, on the brain printed at the end,

    pamd --brain BRAIN recall "QUERY"      pamd --brain BRAIN expand ID|PATH:LINE

Rules: boot alone first (answer every question, "unknown" allowed); then at most five
recall/expand calls per question. Never the transcripts, the questions file's gold, or the
brain's git history (`git log`, `git show`). Its answers go into a JSON file,
`{"q01": "answer", ...}` (or `[{"id": "q01", "answer": "..."}, ...]`), one file per run
(boot-only, with-recall). Then

    python benchmarks/agent_memory.py grade answers-boot.json
    python benchmarks/agent_memory.py grade answers-recall.json

grades each answer against the gold keys: all keys present = correct (1), some = partial (½),
none = wrong (0), and prints the score per kind and overall. Key matching is a floor: a
grader (a person, or an agent shown the gold) may override a question by adding
`"grade": "correct" | "partial" | "wrong"` (and why, `"note"`) to that answer in the list
form, or a top-level `"overrides": {"q07": "correct"}` in the mapping form; the printout marks
overridden questions with `*`.

Takes a few minutes on 2 cores (most of it the 8 simulated days of run-due and the index);
prints the time of each phase.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workload import CLAUDE  # noqa: E402

from pamd.core.entry import count_tokens, parse_time  # noqa: E402

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "agent_questions.json"
SESSIONS = ("258c7280-ae70-4798-800f-63464d01a85d", "8463c716-a2ea-4c14-9efa-87158ebd9f20",
            "4d5611e5-241a-462a-8d15-5122611a9569")
AGE = timedelta(days=8)
STEP = timedelta(minutes=30)
CUT_TOKENS = 8000

# Narration: what an agent says while it works, never a fact worth keeping.
CHATTER = [re.compile(p, re.IGNORECASE) for p in (
    r"\blet me\b", r"\blet's\b", r"\bnow i'll\b", r"\bnow i will\b", r"\bnow let\b", r"\bi'll\b",
    r"\bperfect\b", r"\bgood!", r"^\W*good[.,:]", r"\bgreat\b", r"\bexcellent\b", r"\blooking at\b",
    r"\bokay\b", r"\balright\b", r"\bi need to\b", r"\bi have a clear picture\b",
    r"\bi have (?:full|all the|a complete) (?:context|information|picture)\b", r"\bstill compiling\b",
    r"давай", r"теперь", r"отлично", r"посмотрим", r"сейчас я\b", r"попробую", r"хорошо[,.!]",
)]

ERROR_NAME = re.compile(r"\b[A-Z][A-Za-z0-9_.]*(?:Error|Exception|Failure|Fault)\b")
EXIT_CODE = re.compile(r"\bexit(?:ed)?(?: code| status| with)? ?\d+\b", re.IGNORECASE)
ERROR_LINE = re.compile(r"(?:^|\s)(?:fatal|error|ERROR|FAILED|panic):")
QUOTED = re.compile(r"`[^`]{3,}`|\"[^\"]{3,}\"|'[^']{6,}'|«[^»]{3,}»|“[^”]{3,}”")
ERROR_WORD = re.compile(
    r"error|fail|cannot|can't|can never|undefined|not found|no such|denied|refused|invalid|missing|"
    r"unknown|timed? ?out|no upstream|not allowed|ошибк|не найден|не удалось", re.IGNORECASE)
FIX_WORD = re.compile(
    r"\b(?:fix(?:ed|es)?|resolved?|solved?|solution|workaround|use[ds]?|instead|add(?:ed|s)?|run|ran|"
    r"set|replaced?|changed?|import(?:ed)?|rewr(?:ote|ite)|by)\b|→|->|исправ|решени|вместо",
    re.IGNORECASE)
CONCRETE = re.compile(r"`[^`]+`|\"[^\"]+\"|[\w-]+/[\w./-]+|\b\w+[._:]\w[\w.:]*|\b\w+\(|--\w[\w-]*|"
                      r"\b[A-Z][a-z]+[A-Z]\w*")


# ---------------------------------------------------------------- the hook schedule

@dataclass
class Feed:
    """One hook run: at `ts`, these transcripts as they were then."""
    ts: datetime
    event: str
    files: list[tuple[Path, int]]  # (source transcript, how many of its lines exist)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _times(lines: list[bytes]) -> list[datetime | None]:
    out, last = [], None
    for raw in lines:
        try:
            ts = json.loads(raw).get("timestamp")
        except (ValueError, AttributeError):
            ts = None
        if isinstance(ts, str):
            last = parse_time(ts)
        out.append(last)
    return out


def schedule(root: Path) -> list[Feed]:
    """Every hook run the sessions would have caused, in time order."""
    feeds: list[Feed] = []
    for sid in SESSIONS:
        main = root / f"{sid}.jsonl"
        lines = _lines(main)
        times = _times(lines)
        for i, raw in enumerate(lines):
            rec = json.loads(raw)
            if rec.get("type") != "system" or times[i] is None:
                continue
            if rec.get("subtype") == "stop_hook_summary":
                feeds.append(Feed(times[i], "Stop", [(main, i + 1)]))
            elif rec.get("subtype") == "compact_boundary":
                feeds.append(Feed(times[i], "PreCompact", [(main, i)]))
        # Claude Code's compaction worker (agent-acompact-*) is no subagent: no SubagentStop.
        for sub in sorted((root / sid / "subagents").glob("*.jsonl")):
            if sub.name.startswith("agent-acompact"):
                continue
            sub_times = [t for t in _times(_lines(sub)) if t]
            if not sub_times:
                continue
            end = max(sub_times)
            upto = sum(1 for t in times if t is None or t <= end)
            feeds.append(Feed(end, "SubagentStop", [(main, upto), (sub, len(_lines(sub)))]))
        last = max(t for t in times if t)
        feeds.append(Feed(last + timedelta(seconds=1), "SessionEnd", [(main, len(lines))]))
    return sorted(feeds, key=lambda f: f.ts)


# ---------------------------------------------------------------- building the brain

def build(brain_dir: Path, work: Path, log: dict) -> datetime:
    from pamd.consolidate.schedule import run_due
    from pamd.encode.ingest import ingest
    from pamd.errors import PamdError
    from pamd.ops.layout import init_brain

    brain, _ = init_brain(brain_dir)
    feeds = schedule(CLAUDE)
    growing = work / "transcripts"
    start = feeds[0].ts.replace(minute=0 if feeds[0].ts.minute < 30 else 30, second=0, microsecond=0)
    end = feeds[-1].ts + AGE
    counts = {"ingest": 0, "ingest_commits": 0, "run_due": 0, "compact": 0, "defrag": 0}
    t0 = time.perf_counter()
    t_ingest = 0.0
    slot, k = start, 0
    while slot <= end:
        while k < len(feeds) and feeds[k].ts <= slot:
            f = feeds[k]
            inputs = []
            for src, n in f.files:
                dst = growing / src.relative_to(CLAUDE)
                dst.parent.mkdir(parents=True, exist_ok=True)
                data = b"".join(_lines(src)[:n])
                dst.write_bytes(data)
                inputs.append((str(dst), data))
            t = time.perf_counter()
            try:
                _, sha = ingest(brain, inputs, f.ts, None)
            except PamdError:  # nothing said yet in that prefix
                sha = None
            t_ingest += time.perf_counter() - t
            counts["ingest"] += 1
            counts["ingest_commits"] += bool(sha)
            k += 1
        for mode, sha, _ in run_due(brain, slot):
            counts[mode] += bool(sha)
        counts["run_due"] += 1
        slot += STEP
    log["build"] = {**counts, "hook_runs": len(feeds), "ingest_s": round(t_ingest, 1),
                    "total_s": round(time.perf_counter() - t0, 1),
                    "from": start.isoformat(), "to": (slot - STEP).isoformat()}
    return slot - STEP


def pamd(brain: Path, now: datetime | None, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pamd", "--brain", str(brain)]
    if now:
        cmd += ["--now", now.isoformat()]
    return subprocess.run(cmd + list(args), capture_output=True, text=True)


# ---------------------------------------------------------------- automatic checks

def chatter_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if any(p.search(ln) for p in CHATTER)]


def dna_lessons(text: str) -> list[str]:
    """DNA.md's lessons: the reflexes and learned behaviours, and bullets in its body."""
    import yaml

    meta, body = {}, text
    if text.startswith("---"):
        parts = text.split("\n---", 1)
        try:
            meta = yaml.safe_load(parts[0].lstrip("-\n")) or {}
        except yaml.YAMLError:
            meta = {}
        body = parts[1] if len(parts) > 1 else ""
    out = []
    for key in ("reflexes", "learned_behaviors"):
        for item in meta.get(key) or []:
            t = item.get("text") if isinstance(item, dict) else item
            if t:
                out.append(str(t))
    body = re.sub(r"<!--.*?-->", "", body, flags=re.S)
    out += [ln.strip()[2:] for ln in body.splitlines() if ln.strip().startswith(("- ", "* "))]
    return out


def names_error(text: str) -> bool:
    return bool(ERROR_NAME.search(text) or EXIT_CODE.search(text) or ERROR_LINE.search(text)
                or any(ERROR_WORD.search(q) for q in QUOTED.findall(text)))


def names_fix(text: str) -> bool:
    return any(CONCRETE.search(text[m.end():]) for m in FIX_WORD.finditer(text))


def concrete_lesson(text: str) -> bool:
    return names_error(text) and names_fix(text)


def key_pattern(key: str) -> re.Pattern:
    """A key as a whole word (so `token` is not found in `tokens`); `stem*` also as a word's start."""
    stem = key.endswith("*")
    key = key.rstrip("*")
    left = r"(?<!\w)" if re.match(r"\w", key) else ""
    right = r"(?!\w)" if re.search(r"\w$", key) and not stem else ""
    return re.compile(left + re.escape(key) + right, re.IGNORECASE)


def has_key(key: str, text: str) -> bool:
    return bool(key_pattern(key).search(text))


def covered(q: dict, text: str) -> bool:
    return all(has_key(k, text) for k in q["keys"])


def head_tokens(text: str, tokens: int) -> str:
    return text[: tokens * 4]  # pamd's count: ~4 characters a token


def coverage(questions: list[dict], texts: dict[str, str | None]) -> dict:
    return {name: None if text is None else _hits(questions, dict.fromkeys((q["id"] for q in questions), text))
            for name, text in texts.items()}


def measure(brain: Path, out: Path, now: datetime | None, log: dict, recall_on: bool = True) -> dict:
    questions = json.loads(QUESTIONS.read_text())["questions"]
    t = time.perf_counter()
    boot = pamd(brain, now, "boot")
    if boot.returncode:
        raise SystemExit(f"pamd boot failed: {boot.stderr}")
    log["boot_s"] = round(time.perf_counter() - t, 2)
    (out / "boot.md").write_text(boot.stdout)
    b8k = pamd(brain, now, "boot", "--budget", str(CUT_TOKENS))
    (out / "boot-8000t.md").write_text(b8k.stdout)
    chars_ok = "--chars" in pamd(brain, None, "boot", "--help").stdout
    b9k = None
    if chars_ok:
        r = pamd(brain, now, "boot", "--chars", "9000")
        b9k = r.stdout if r.returncode == 0 else None
        (out / "boot-9000.md").write_text(b9k or "")
    else:
        (out / "boot-9000.md.skipped").write_text("pamd boot has no --chars option in this version\n")
    files = {n: (brain / n).read_text() if (brain / n).exists() else "" for n in ("MEMORY.md", "DNA.md", "STATE.md")}
    lessons = dna_lessons(files["DNA.md"])
    chat = chatter_lines(boot.stdout)
    checks = {
        "boot_tokens": count_tokens(boot.stdout),
        "boot_lines": len(boot.stdout.splitlines()),
        "boot_chatter_lines": len(chat),
        "boot_chatter_examples": chat[:10],
        "boot_9000": "measured" if chars_ok else "skipped: pamd boot has no --chars option",
        "boot_9000_chatter_lines": len(chatter_lines(b9k)) if b9k is not None else None,
        "dna_lessons": len(lessons),
        "dna_lessons_concrete": sum(concrete_lesson(x) for x in lessons),
        "dna_lessons_not_concrete": [x for x in lessons if not concrete_lesson(x)][:10],
        "memory_tokens": count_tokens(files["MEMORY.md"]),
        "memory_chatter_lines": len(chatter_lines(files["MEMORY.md"])),
        "state_chatter_lines": len(chatter_lines(files["STATE.md"])),
        "questions": len(questions),
        "key_coverage": coverage(questions, {
            "boot": boot.stdout,
            f"boot_first_{CUT_TOKENS}_tokens": head_tokens(boot.stdout, CUT_TOKENS),
            f"boot_budget_{CUT_TOKENS}": b8k.stdout if b8k.returncode == 0 else None,
            "boot_9000_chars": b9k,
            "memory_dna_state": "\n".join(files.values()),
            "ingested_raw_L0_history": ingested_text(brain),
            "claude_code_own_compaction_summaries": claude_summaries(),
        }),
    }
    if recall_on:
        t = time.perf_counter()
        texts = recall_texts(brain, questions)
        log["recall_s"] = round(time.perf_counter() - t, 1)
        if texts is not None:
            checks["key_coverage"]["one_recall_of_the_question_k10"] = _hits(questions, texts)
    return checks


def _hits(questions: list[dict], texts: dict[str, str]) -> dict:
    """The questions whose keys are all in their text, overall and per kind."""
    hit = [q for q in questions if covered(q, texts[q["id"]])]
    kinds = sorted({q["kind"] for q in questions})
    return {"share": round(len(hit) / len(questions), 3), "n": len(hit),
            "per_kind": {k: f"{sum(q['kind'] == k for q in hit)}/{sum(q['kind'] == k for q in questions)}"
                         for k in kinds},
            "ids": [q["id"] for q in hit]}


def ingested_text(brain: Path) -> str:
    """Every raw entry the brain ever held (its L0 as each commit added it): what recall and
    expand can reach at best, so a key missing here was cut at ingest."""
    r = subprocess.run(["git", "-C", str(brain), "log", "--format=", "-p", "--", "memory/L0"],
                       capture_output=True, text=True)
    return "\n".join(ln[1:] for ln in r.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++"))


def claude_summaries() -> str:
    """The summaries Claude Code itself wrote when it compacted these sessions: a reference."""
    out = []
    for sid in SESSIONS:
        for raw in _lines(CLAUDE / f"{sid}.jsonl"):
            rec = json.loads(raw)
            if rec.get("isCompactSummary"):
                content = rec["message"]["content"]
                out.append(content if isinstance(content, str) else
                           "\n".join(b.get("text", "") for b in content if isinstance(b, dict)))
    return "\n".join(out)


def recall_texts(brain_dir: Path, questions: list[dict], k: int = 10) -> dict[str, str] | None:
    """What one `pamd recall QUESTION` (k hits) shows for each question: an automatic floor
    for the with-recall test, where an agent phrases its own queries. Not logged as recalls,
    so measuring does not myelinate anything."""
    try:
        from pamd.edge.brain import Brain
        from pamd.recall.api import close, recall
    except ImportError:
        return None
    brain = Brain.find(str(brain_dir))
    try:
        return {q["id"]: "\n".join(h.text for h in recall(brain, q["question"], k=k, log=False))
                for q in questions}
    finally:
        close(brain)


def write_questions(out: Path) -> None:
    qs = json.loads(QUESTIONS.read_text())["questions"]
    lines = ["# Questions about your past work", "",
             "Answer each from what pamd gives you (boot context, then `pamd recall` / `pamd expand`,",
             "at most five calls a question). Say \"unknown\" rather than guess. Answers as JSON:",
             '`{"q01": "...", ...}`.', ""]
    lines += [f"- **{q['id']}** ({q['kind']}) {q['question']}" for q in qs]
    (out / "questions.md").write_text("\n".join(lines) + "\n")


def table(checks: dict) -> str:
    rows = [("boot tokens", checks["boot_tokens"]), ("chatter lines in boot", checks["boot_chatter_lines"]),
            ("boot --chars 9000", checks["boot_9000"]),
            ("DNA lessons", checks["dna_lessons"]),
            ("  naming a concrete error and fix", checks["dna_lessons_concrete"]),
            ("MEMORY.md tokens", checks["memory_tokens"]),
            ("chatter lines in MEMORY.md / STATE.md",
             f"{checks['memory_chatter_lines']} / {checks['state_chatter_lines']}")]
    for name, c in checks["key_coverage"].items():
        rows.append((f"keys of all {checks['questions']} questions in {name}",
                     "n/a" if c is None else f"{c['n']} ({c['share']:.0%})  " +
                     " ".join(f"{k}={v}" for k, v in c["per_kind"].items())))
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)


# ---------------------------------------------------------------- grading

def _answers(data) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """(answer by id, (grade, note) by id for a grader's overrides)."""
    answers, overrides = {}, {}
    if isinstance(data, list):
        for a in data:
            answers[str(a["id"])] = str(a.get("answer", ""))
            if a.get("grade"):
                overrides[str(a["id"])] = (str(a["grade"]), str(a.get("note", "")))
    elif isinstance(data, dict):
        for k, v in data.items():
            if k == "overrides":
                overrides.update({str(i): (str(g), "") for i, g in v.items()})
            else:
                answers[str(k)] = v.get("answer", "") if isinstance(v, dict) else str(v)
                if isinstance(v, dict) and v.get("grade"):
                    overrides[str(k)] = (str(v["grade"]), str(v.get("note", "")))
    else:
        raise SystemExit("answers: a JSON object {id: answer} or a list of {id, answer}")
    return answers, overrides


POINTS = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}


def grade(path: Path) -> int:
    questions = json.loads(QUESTIONS.read_text())["questions"]
    answers, overrides = _answers(json.loads(path.read_text()))
    per_kind: dict[str, list[float]] = {}
    print(f"{'id':<5} {'kind':<10} grade    keys found")
    for q in questions:
        a = answers.get(q["id"], "")
        found = [k for k in q["keys"] if has_key(k, a)]
        g = "correct" if len(found) == len(q["keys"]) else "partial" if found else "wrong"
        mark = " "
        if q["id"] in overrides:
            g, mark = overrides[q["id"]][0], "*"
            if g not in POINTS:
                raise SystemExit(f"{q['id']}: grade must be one of {', '.join(POINTS)}")
        per_kind.setdefault(q["kind"], []).append(POINTS[g])
        print(f"{q['id']:<5} {q['kind']:<10} {g:<8}{mark} {len(found)}/{len(q['keys'])}")
    print()
    total = [p for ps in per_kind.values() for p in ps]
    for k, ps in sorted(per_kind.items()):
        print(f"{k:<10} {sum(ps):.1f}/{len(ps)}  {sum(ps) / len(ps):.0%}")
    full = sum(1 for p in total if p == 1.0)
    print(f"{'all':<10} {sum(total):.1f}/{len(total)}  {sum(total) / len(total):.0%}"
          f"  (fully correct {full}/{len(total)} = {full / len(total):.0%})")
    return 0


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["grade"]:
        if len(argv) != 2:
            raise SystemExit("usage: agent_memory.py grade ANSWERS.json")
        return grade(Path(argv[1]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path,
                    help="where the growing transcripts, brain and output go (default: a temp folder)")
    ap.add_argument("--brain", type=Path,
                    help="the brain (default WORKDIR/brain); one already there is measured, not rebuilt")
    ap.add_argument("--out", type=Path, help="output folder (default WORKDIR/out)")
    ap.add_argument("--no-index", action="store_true",
                    help="skip the search index at the end, and the recall check that needs it")
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="pamd-agent-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    brain = args.brain or work / "brain"
    out = args.out or work / "out"
    out.mkdir(parents=True, exist_ok=True)
    log: dict = {}
    t0 = time.perf_counter()
    now = None
    if (brain / "pamd.toml").exists():
        print(f"measuring the brain already at {brain} (not rebuilt)", flush=True)
    else:
        if brain.exists() and any(brain.iterdir()):
            raise SystemExit(f"{brain} is not empty and holds no brain")
        now = build(brain, work, log)
        b = log["build"]
        print(f"built: {b['hook_runs']} hook runs ({b['ingest_commits']} ingest commits), {b['run_due']} run-due "
              f"({b['compact']} compactions, {b['defrag']} defrags) from {b['from']} to {b['to']} "
              f"in {b['total_s']} s (ingest {b['ingest_s']} s)", flush=True)
    if not args.no_index:
        t = time.perf_counter()
        r = pamd(brain, now, "index")
        log["index_s"] = round(time.perf_counter() - t, 1)
        print(f"index: {log['index_s']} s {r.stdout.strip() or r.stderr.strip()}", flush=True)
    checks = measure(brain, out, now, log, not args.no_index)
    write_questions(out)
    log["total_s"] = round(time.perf_counter() - t0, 1)
    checks["timing"] = log
    checks["brain"] = str(brain)
    (out / "checks.json").write_text(json.dumps(checks, indent=1, ensure_ascii=False) + "\n")
    print()
    print(table(checks))
    print()
    print(f"total {log['total_s']} s; boot {log['boot_s']} s")
    print(f"brain: {brain}\noutput: {out} (boot.md, questions.md, checks.json)")
    print(f"blind test: pamd --brain {brain} recall QUERY / expand ID; then "
          f"python benchmarks/agent_memory.py grade ANSWERS.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
