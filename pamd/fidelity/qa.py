"""Question sets for fidelity: LoCoMo's format, and pamd's own JSONL for a user's brain.

LoCoMo (Maharana et al., 2024): a list of samples with `conversation`
(`speaker_a`, `speaker_b`, `session_N`, `session_N_date_time`) and `qa`
(`question`, `evidence` dialog ids like "D1:3", `category`). Each message is
ingested as "[D1:3] Speaker: text", so a cited line names its evidence.
pamd's JSONL: one `{"question": ..., "evidence_ids": ["e-…", ...]}` per line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from pamd.errors import PamdError

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TAG_RE = re.compile(r"\[(D\d+:\d+)\]")
ENTRY_ID = re.compile(r"[es]-[0-9a-f]{12}")


@dataclass
class Question:
    text: str
    evidence: list[str]
    category: str = "all"
    line: int = 0  # of a pamd JSONL question file, for its errors


@dataclass
class Conversation:
    name: str
    messages: list[tuple[str, str, str]] = field(default_factory=list)  # (dia_id, speaker, text)
    questions: list[Question] = field(default_factory=list)


def _norm_evidence(raw, known: set[str]) -> list[str]:
    out = []
    for item in raw or []:
        for piece in re.split(r"[;,\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):(\d+)\.?", piece.strip())
            if m:
                d = f"D{int(m.group(1))}:{int(m.group(2))}"
                if d in known and d not in out:
                    out.append(d)
    return out


def read(path: Path) -> str:
    """A question file as a person saved it: UTF-8, with or without a BOM (Windows editors
    write one, and json refuses it), its lines ending at LF or CRLF."""
    try:
        return Path(path).read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise PamdError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise PamdError(f"{path}: not valid UTF-8 at byte {exc.start}", "convert it to UTF-8 first") from None


def load_locomo(path: Path, limit: int | None = None, adversarial: bool = False) -> list[Conversation]:
    try:
        data = json.loads(read(path))
    except ValueError as exc:
        raise PamdError(f"{path}: cannot read a LoCoMo file ({exc})") from None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "conversation" not in data[0]:
        raise PamdError(f"{path}: not in LoCoMo's format (a list of samples with conversation and qa)")
    convs: list = []
    for i, sample in enumerate(data[: limit or None], 1):
        try:
            convs.append(_sample(sample, len(convs), adversarial))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PamdError(f"{path}: sample {i}: not in LoCoMo's format ({type(exc).__name__}: {exc})",
                            "each sample needs conversation.session_N turns with dia_id, and qa") from None
    if not any(c.questions for c in convs):
        raise PamdError(f"{path}: no question has evidence among the conversation's turns")
    return convs


def _sample(sample: dict, index: int, adversarial: bool) -> Conversation:
    """One LoCoMo sample; a wrong shape raises KeyError/TypeError/ValueError (load_locomo names it)."""
    conv = sample["conversation"]
    c = Conversation(str(sample.get("sample_id", f"conv-{index}")))
    nums = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    for n in nums:
        for turn in conv.get(f"session_{n}") or []:
            text = " ".join(str(turn.get("text", "")).split())
            if turn.get("blip_caption"):
                text += f" [shares {' '.join(str(turn['blip_caption']).split())}]"
            c.messages.append((str(turn["dia_id"]), str(turn.get("speaker", "?")), text))
    known = {m[0] for m in c.messages}
    for q in sample.get("qa", []):
        cat = int(q.get("category", 0))
        if cat == 5 and not adversarial:
            continue
        ev = _norm_evidence(q.get("evidence"), known)
        if ev:
            c.questions.append(Question(str(q["question"]), ev, CATEGORIES.get(cat, f"category-{cat}")))
    return c


def load_pamd(path: Path) -> list[Question]:
    from pamd.recall.lexical import searchable

    out = []
    # LF alone ends a line: splitlines() would also cut a question at a U+2028 that
    # json.dumps(ensure_ascii=False) leaves raw inside its string
    for i, line in enumerate(read(path).split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            ev = obj["evidence_ids"]
            if not isinstance(obj["question"], str) or not isinstance(ev, list) or not ev \
                    or not all(isinstance(x, str) for x in ev):
                raise TypeError  # a string would be split into characters; [] has nothing to find
        except (ValueError, KeyError, TypeError):
            raise PamdError(f"{path}:{i}: expected {{\"question\": text, "
                            f"\"evidence_ids\": [ids, at least one]}}") from None
        for x in ev:  # a typo would be scored as evidence never found, lowering recall unseen
            if not ENTRY_ID.fullmatch(x):
                raise PamdError(f"{path}:{i}: evidence {x!r} is not an entry id",
                                "ids look like e-0123456789ab, or s-… for a summary; pamd recall --json shows them")
        if not searchable(obj["question"]):  # recall refuses it: say which line, before any work
            raise PamdError(f"{path}:{i}: no word to search for in the question {obj['question']!r}",
                            "stop words and punctuation match anything")
        out.append(Question(obj["question"], list(ev), str(obj.get("category", "all")), i))
    if not out:
        raise PamdError(f"{path}: no questions")
    return out


def detect(path: Path) -> str:
    head = read(path)[:200].lstrip()
    return "locomo" if head.startswith("[") else "pamd"
