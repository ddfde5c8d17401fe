"""neurotag: pattern rules give a message neurotransmitter tags, a type and an importance.

No model and no network: rules are regular expressions kept in TOML data
(`rules/neurotag.toml`, extended by a brain's own rules file). docs/neurotag.md
describes the rule format and the importance formula.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from operator import itemgetter
from pathlib import Path
from typing import Any

from pamd.core import chatter, toolcall
from pamd.core.config import Settings, settings
from pamd.core.entry import NEURO, TYPES
from pamd.encode.literals import WORD_END, prefixes
from pamd.errors import PamdError

ROLES = ("user", "assistant", "system", "tool")
# Ties between types go to the first in this order: a decision stated in a
# request is still a decision; a request wrapped around a log is still a request.
TYPE_PRIORITY = ("decision", "user_intent", "tool_result", "ephemeral", "context")
_ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "agent": "assistant",
    "tool_result": "tool",
    "function": "tool",
    "ipython": "tool",
    "developer": "system",
}
_SCORING_DEFAULTS: dict[str, float] = {
    "tag_threshold": 0.5,
    "tool_tag_threshold": 1.0,
    "neuro_cap": 0.30,
    "short_chars": 20,
    "short_delta": -0.05,
    "long_chars": 280,
    "long_delta": 0.05,
    "bulk_chars": 4000,
    "bulk_delta": -0.05,
    "quiet_tool_delta": -0.20,
    "scan_head": 4000,
    "scan_tail": 1000,
    "tool_scan_head": 1500,
    "tool_scan_tail": 500,
    "narration": 1,  # 0: an assistant message of narration alone is not made ephemeral
}
# Combining patterns into one alternation renumbers groups, so references to
# them would silently point elsewhere.
_BACKREF = re.compile(r"\\[1-9]|\(\?P=|\(\?P<")
_RULE_KEYS = {"name", "tag", "type", "weight", "lang", "roles", "patterns", "floor"}
# What ingest knows a message carries beyond its words (sources.FACTS), and the least
# importance each gives; [facts] in a rules file overrides these.
_FACT_DEFAULTS: dict[str, float] = {"commit": 0.85, "close": 0.85, "spec": 0.7, "failure": 0.6,
                                    "report": 0.8, "compaction": 0.95, "listing": 0.6,
                                    "answer": 0.9}


@dataclass(frozen=True)
class Tagging:
    neuro: tuple[str, ...]
    importance: float
    type: str


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str  # a tag from NEURO or a type from TYPES
    weight: float
    patterns: tuple[str, ...]
    lang: tuple[str, ...] = ("any",)
    roles: tuple[str, ...] = ROLES
    floor: float = 0.0  # a message this rule matches has at least this importance

    @property
    def is_tag(self) -> bool:
        return self.kind in NEURO


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    scoring: Mapping[str, float]
    boost: Mapping[str, float]
    facts: Mapping[str, float] = field(default_factory=dict)


def normalize_role(role: str) -> str:
    """Map a role or speaker name to user/assistant/system/tool; unknown speakers are users."""
    r = (role or "").strip().lower()
    if r in ROLES:
        return r
    return _ROLE_ALIASES.get(r, "user")


# ---------------------------------------------------------------- loading rules


def _fail(source: str, problem: str) -> PamdError:
    return PamdError(f"{source}: {problem}", "fix the rule or see docs/neurotag.md")


def _str_list(value: Any, source: str, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(source, f"{what} must be a list of strings")
    return tuple(value)


def _check_pattern(pattern: str, source: str, name: str) -> None:
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise _fail(source, f"rule {name!r}: bad regex {pattern!r}: {exc}") from None
    if _BACKREF.search(pattern):
        raise _fail(source, f"rule {name!r}: named groups and backreferences are not "
                            f"supported in {pattern!r}")
    # A pattern that matches nothing inside ordinary text would fire on every
    # message (and make the scan crawl); an empty `patterns` list says that plainly.
    m = compiled.search("zq zq")
    if m is not None and m.end() == m.start():
        raise _fail(source, f"rule {name!r}: {pattern!r} matches the empty string; "
                            "use `patterns = []` for a rule that always fires")


def parse_rules(data: Mapping[str, Any], source: str) -> RuleSet:
    """Validate one rules document (built-in or a user's) into a RuleSet."""
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise _fail(source, "`rules` must be an array of tables ([[rules]])")
    rules: list[Rule] = []
    for i, raw in enumerate(raw_rules):
        if not isinstance(raw, dict):
            raise _fail(source, f"rules[{i}] must be a table")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise _fail(source, f"rules[{i}] needs a `name`")
        unknown = set(raw) - _RULE_KEYS
        if unknown:
            raise _fail(source, f"rule {name!r}: unknown key(s) {', '.join(sorted(unknown))}")
        tag, typ = raw.get("tag"), raw.get("type")
        if (tag is None) == (typ is None):
            raise _fail(source, f"rule {name!r}: give exactly one of `tag` or `type`")
        kind = tag if tag is not None else typ
        assert kind is not None  # exactly one of the two is given (checked above)
        if tag is not None and tag not in NEURO:
            raise _fail(source, f"rule {name!r}: unknown tag {tag!r} (one of {', '.join(NEURO)})")
        if typ is not None and typ not in TYPES:
            raise _fail(source, f"rule {name!r}: unknown type {typ!r} (one of {', '.join(TYPES)})")
        weight = raw.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            raise _fail(source, f"rule {name!r}: `weight` must be a number >= 0")
        patterns = _str_list(raw.get("patterns", []), source, f"rule {name!r}: `patterns`")
        for p in patterns:
            _check_pattern(p, source, name)
        roles = _str_list(raw.get("roles", list(ROLES)), source, f"rule {name!r}: `roles`")
        bad = [r for r in roles if r not in ROLES]
        if bad:
            raise _fail(source, f"rule {name!r}: unknown role(s) {bad} (one of {', '.join(ROLES)})")
        lang = _str_list(raw.get("lang", ["any"]), source, f"rule {name!r}: `lang`")
        floor = raw.get("floor", 0.0)
        if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 1:
            raise _fail(source, f"rule {name!r}: `floor` must be a number in [0, 1]")
        rules.append(Rule(name, kind, float(weight), patterns, lang, roles, float(floor)))

    scoring = data.get("scoring", {})
    boost = data.get("boost", {})
    facts = data.get("facts", {})
    for key, table, allowed in (("scoring", scoring, _SCORING_DEFAULTS), ("boost", boost, NEURO),
                                ("facts", facts, _FACT_DEFAULTS)):
        if not isinstance(table, dict):
            raise _fail(source, f"[{key}] must be a table")
        for k, v in table.items():
            if k not in allowed:
                raise _fail(source, f"[{key}] unknown key {k!r}")
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise _fail(source, f"[{key}] {k} must be a number")
    return RuleSet(tuple(rules), dict(scoring), dict(boost), dict(facts))


def load_rules_text(text: str, source: str) -> RuleSet:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(source, f"not valid TOML: {exc}") from None
    return parse_rules(data, source)


def builtin_rules() -> RuleSet:
    text = resources.files("pamd.encode").joinpath("rules/neurotag.toml").read_text("utf-8")
    return load_rules_text(text, "pamd/encode/rules/neurotag.toml")


def merge_rules(base: RuleSet, extra: RuleSet) -> RuleSet:
    """User rules replace built-ins of the same name and append the rest."""
    by_name = {r.name: r for r in base.rules}
    order = [r.name for r in base.rules]
    for r in extra.rules:
        if r.name not in by_name:
            order.append(r.name)
        by_name[r.name] = r
    return RuleSet(
        tuple(by_name[n] for n in order),
        {**base.scoring, **extra.scoring},
        {**base.boost, **extra.boost},
        {**base.facts, **extra.facts},
    )


# ---------------------------------------------------------------- the tagger


_WORD = re.compile(r"\w+")
_KEY = re.compile(r"\w*")
_NON_WORD = str.maketrans(dict.fromkeys(
    (c for c in map(chr, range(128)) if not (c.isalnum() or c == "_")), " "))
_START = itemgetter(slice(0, 3))  # _START(word) == word[:3]
# Words that start with a non-ASCII letter: (first three letters, next letter or "").
_OTHER = re.compile(r"([^\W\x00-\x7f](?<!\w.)\w{0,2})(\w?)")

# Where to look (`needle`, a literal head) and the (rule, pattern)s to try there.
_Group = tuple[str, tuple[tuple[int, re.Pattern[str]], ...]]


@dataclass(frozen=True)
class _Plan:
    """Every active rule for one role, arranged so a message is read about once.

    A pattern that starts (after \\b) with a literal is tried only where that
    literal occurs, and only when the message has a word that begins with it
    (`starts`: its first three letters) or is it (`words`: "we", "done"): one
    tokenization and two set intersections instead of one regex pass per
    pattern. Patterns whose literal head may sit inside a word are in
    `free` (looked for in every message; non-ASCII ones only in non-ASCII
    text); patterns anchored at the start are tried once; patterns with no
    literal head are searched in full (slower, still correct).
    """

    by_key: Mapping[str, tuple[_Group, ...]]
    words: frozenset[str]  # ASCII keys that are whole words ("we" in "we decided")
    starts: frozenset[str]  # ASCII keys that are the first three letters of a word
    words_other: frozenset[str]  # the same for words that start with a non-ASCII letter
    starts_other: frozenset[str]
    free_ascii: tuple[_Group, ...]
    free_other: tuple[_Group, ...]
    anchored: tuple[tuple[int, re.Pattern[str]], ...]
    scan: tuple[tuple[int, re.Pattern[str]], ...]
    always: tuple[int, ...]  # rules with no patterns: fire on every message of this role


# A plan follows from the rules alone and is never changed: each Tagger of the same rules
# (one per ingest) shares it rather than reading every pattern again.
@functools.lru_cache(maxsize=32)
def _plan(rules: tuple[Rule, ...], role: str) -> _Plan:
    by_needle: dict[str, dict[str, list[tuple[int, re.Pattern[str]]]]] = {}  # key -> needle ->
    keys: dict[str, set[str]] = {k: set() for k in ("words", "starts", "words_other",
                                                     "starts_other")}
    free: dict[str, list[tuple[int, re.Pattern[str]]]] = {}
    anchored: list[tuple[int, re.Pattern[str]]] = []
    scan: list[tuple[int, re.Pattern[str]]] = []
    always: list[int] = []
    for i, rule in enumerate(rules):
        if rule.weight <= 0 or role not in rule.roles:
            continue
        if not rule.patterns:
            always.append(i)
        for pattern in rule.patterns:
            # Text is lowercased once per message; IGNORECASE keeps patterns
            # written with capitals (ASAP, TODO) matching it.
            compiled = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
            pre = prefixes(pattern)
            if pre is None:
                scan.append((i, compiled))
                continue
            if pre.anchored:
                anchored.append((i, compiled))
                continue
            for head in pre.heads:
                needle = head.rstrip(WORD_END)
                m = _KEY.match(needle)
                assert m is not None  # \w* matches at the start of any string, if only emptily
                key = m.group()
                whole = head != key  # the word ends inside the literal
                if not pre.boundary or not key or (not whole and len(key) < 3):
                    free.setdefault(needle, []).append((i, compiled))
                    continue
                if key.isascii():
                    kind = "words" if whole else "starts"
                elif not key[0].isascii():
                    # Non-ASCII words are seen by their first three letters only.
                    kind = "words_other" if whole and len(key) <= 3 else "starts_other"
                else:  # "caé": neither tokenization sees it whole; look for it directly
                    free.setdefault(needle, []).append((i, compiled))
                    continue
                if kind.startswith("starts"):
                    key = key[:3]
                keys[kind].add(key)
                by_needle.setdefault(key, {}).setdefault(needle, []).append((i, compiled))
    return _Plan(
        {k: tuple((n, tuple(v)) for n, v in d.items()) for k, d in by_needle.items()},
        frozenset(keys["words"]),
        frozenset(keys["starts"]),
        frozenset(keys["words_other"]),
        frozenset(keys["starts_other"]),
        tuple((n, tuple(v)) for n, v in free.items() if n.isascii()),
        tuple((n, tuple(v)) for n, v in free.items() if not n.isascii()),
        tuple(anchored),
        tuple(scan),
        tuple(always),
    )


class Tagger:
    """Tags, types and scores messages; build once, call `tag` per message."""

    def __init__(
        self,
        rules: RuleSet,
        base_importance: Mapping[str, float] | None = None,
        languages: Iterable[str] = (),
    ) -> None:
        s = {**_SCORING_DEFAULTS, **rules.scoring}
        self._threshold = float(s["tag_threshold"])
        self._tool_threshold = float(s["tool_tag_threshold"])
        self._cap = float(s["neuro_cap"])
        self._short = int(s["short_chars"])
        self._short_d = float(s["short_delta"])
        self._long = int(s["long_chars"])
        self._long_d = float(s["long_delta"])
        self._bulk = int(s["bulk_chars"])
        self._bulk_d = float(s["bulk_delta"])
        self._quiet_d = float(s["quiet_tool_delta"])
        # (head, tail) per role: tool output is bulk, so less of it is read.
        window = (max(1, int(s["scan_head"])), max(0, int(s["scan_tail"])))
        tool_window = (max(1, int(s["tool_scan_head"])), max(0, int(s["tool_scan_tail"])))
        self._window = {r: tool_window if r == "tool" else window for r in ROLES}
        self._boost = {t: float(rules.boost.get(t, 0.0)) for t in NEURO}
        # each type's importance: the brain's [hippocampus.types], else the default's
        types = settings(None).hippocampus.types
        base = {t: types[t].importance for t in TYPES} | dict(base_importance or {})
        self._base = {t: float(base[t]) for t in TYPES}
        langs = set(languages)
        self.rules = tuple(r for r in rules.rules
                           if not langs or "any" in r.lang or langs.intersection(r.lang))
        self._kind = tuple(r.kind for r in self.rules)
        self._weight = tuple(r.weight for r in self.rules)
        self._floor = tuple(r.floor for r in self.rules)
        self._facts = {**_FACT_DEFAULTS, **rules.facts}
        self._narration = bool(s["narration"])
        self._plans = {role: _plan(self.rules, role) for role in ROLES}

    @classmethod
    def from_config(cls, config: Settings | Mapping[str, Any], brain_root: Path | None = None) -> Tagger:
        """Built-in rules, merged with the brain's `[neurotag] rules_file` if it names one."""
        s = settings(config)
        rules = builtin_rules()
        rules_file = s.neurotag.rules_file
        if rules_file:
            path = Path(rules_file)
            if not path.is_absolute() and brain_root is not None:
                path = Path(brain_root) / path
            try:
                text = path.read_text("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise PamdError(f"{path}: cannot read neurotag rules file: {exc}",
                                "fix [neurotag] rules_file in pamd.toml") from None
            rules = merge_rules(rules, load_rules_text(text, str(path)))
        base = {t: float(row.importance) for t, row in s.hippocampus.types.items()}
        return cls(rules, base, s.neurotag.languages or ())

    def matches(self, text: str, role: str = "user") -> set[int]:
        """Indexes (into `self.rules`) of the rules that match the message."""
        role = normalize_role(role)
        plan = self._plans[role]
        head, tail = self._window[role]
        n = len(text)
        if n > head + tail:
            # A 100 KB log says what it is in its head and its tail; the
            # blank line keeps a pattern from matching across the cut.
            text = text[:head] + "\n\n" + text[n - tail:]
        low = text.lower()
        hit: set[int] = set(plan.always)
        for i, pattern in plan.anchored:
            if i not in hit and pattern.match(low):
                hit.add(i)
        for i, pattern in plan.scan:
            if i not in hit and pattern.search(low):
                hit.add(i)
        ascii_only = low.isascii()
        # translate+split on ASCII gives exactly the \w+ words, several times
        # faster than a regex. Non-ASCII characters become "?" (a separator):
        # that can only add ASCII words, never lose one, and a pattern is
        # still matched in full wherever its literal is.
        flat = low if ascii_only else low.encode("ascii", "replace").decode("ascii")
        words = set(flat.translate(_NON_WORD).split())
        by_key = plan.by_key
        groups: list[_Group] = list(plan.free_ascii)
        for key in plan.words.intersection(words):
            groups.extend(by_key[key])
        for key in plan.starts.intersection(map(_START, words)):
            groups.extend(by_key[key])
        if not ascii_only:
            groups.extend(plan.free_other)
            if plan.words_other or plan.starts_other:
                found = _OTHER.findall(low)
                for key in plan.words_other.intersection(p for p, more in found if not more):
                    groups.extend(by_key[key])
                for key in plan.starts_other.intersection(p for p, _ in found):
                    groups.extend(by_key[key])
        for needle, candidates in groups:
            if len(candidates) == 1:  # most needles serve one pattern: no bookkeeping
                i, pattern = candidates[0]
                if i in hit:
                    continue
                where = flat if needle.isascii() else low
                pos = where.find(needle)
                while pos >= 0:
                    if pattern.match(low, pos):
                        hit.add(i)
                        break
                    pos = where.find(needle, pos + 1)
                continue
            todo = [c for c in candidates if c[0] not in hit]
            if not todo:
                continue
            # `flat` has the same positions as `low`, one byte per character:
            # find() runs faster there, and an ASCII needle is in one iff in the other.
            where = flat if needle.isascii() else low
            pos = where.find(needle)
            while pos >= 0:
                for c in todo:
                    if c[0] not in hit and c[1].match(low, pos):
                        hit.add(c[0])
                if all(c[0] in hit for c in todo):
                    break
                pos = where.find(needle, pos + 1)
        return hit

    def tag(self, text: str, role: str = "user", fact: str | None = None) -> Tagging:
        """Tags, type and importance of one message; `fact` is what ingest knows it carries
        (a commit message, a report: `[facts]`), which sets a least importance."""
        text = text if isinstance(text, str) else str(text)
        role = normalize_role(role)
        said = toolcall.prose(text) if role == "assistant" and "[tool " in text else text
        hit = self.matches(text, role)
        if said != text:
            # A tool call's arguments are what the agent passed to a tool, not what
            # happened: `mix compile --warnings-as-errors` is no failure. Tags come from
            # the words around the calls only; the type still reads the whole message.
            tags = self.matches(said, role) if said.strip() else set()
            hit = {i for i in hit if self._kind[i] not in NEURO} | {
                i for i in tags if self._kind[i] in NEURO}
        tag_score = dict.fromkeys(NEURO, 0.0)
        type_score = dict.fromkeys(TYPE_PRIORITY, 0.0)
        for i in hit:
            kind = self._kind[i]
            if kind in tag_score:
                tag_score[kind] += self._weight[i]
            else:  # types: the strongest single rule decides
                type_score[kind] = max(type_score[kind], self._weight[i])

        # Tool output (a file read, a log) says "error" or "bug" in passing: there
        # a weak rule alone gives no tag, it needs a second rule of the same tag.
        bar = self._tool_threshold if role == "tool" else self._threshold
        neuro = tuple(t for t in NEURO if tag_score[t] >= bar)
        lift = sum(self._boost[t] * min(1.0, tag_score[t]) for t in neuro)
        best, best_w = "context", 0.0
        for t in TYPE_PRIORITY:  # ties keep the earlier type
            if type_score[t] > best_w:
                best, best_w = t, type_score[t]

        # (A message whose words come before tool calls of its own, OpenAI's shape, holds
        # those calls too: never chatter.)
        if (best == "context" and role == "assistant" and self._narration and fact != "compaction"
                and said == text and chatter.narration_only(said)):
            # The agent narrating its next step ("Let me check…", "Perfect!", "Теперь…"):
            # chatter, whatever words it uses, so no tags (no lesson from "let me see why it
            # failed") and the importance of an ephemeral message.
            size = len(text.strip())
            base = self._base["ephemeral"] + (self._short_d if size < self._short else 0.0)
            return Tagging((), round(min(1.0, max(0.0, base)), 2), "ephemeral")

        importance = self._base[best] + min(self._cap, lift)
        n = len(text)
        size = len(text.strip()) if n < 4 * self._long else n
        if size < self._short and best != "decision":
            importance += self._short_d
        if best == "tool_result":
            if size >= self._bulk:
                importance += self._bulk_d
            if not neuro:
                importance += self._quiet_d
        elif best in ("decision", "user_intent", "context") and size >= self._long:
            importance += self._long_d
        # What carries a fact has at least its floor: a rule's (a standing instruction), or
        # what ingest knows of the message (a commit message, a ticket, a report).
        floor = max((self._floor[i] for i in hit), default=0.0)
        if fact:
            floor = max(floor, float(self._facts.get(fact, 0.0)))
        importance = max(importance, floor)
        return Tagging(neuro, round(min(1.0, max(0.0, importance)), 2), best)
