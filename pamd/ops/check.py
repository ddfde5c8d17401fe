"""`pamd check`: validate a brain's files against docs/format.md, reporting path:line."""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from typing import Any

from pamd.core import config as config_mod
from pamd.core.fmt import FormatError, Problem, conflict_marker, item_text, parse_doc, split_frontmatter
from pamd.core.paths import CONFIG, DNA, PRELOAD, STATE, TIER_DIRS, tier_of
from pamd.edge.brain import Brain
from pamd.myelin import preload

# Frontmatter fields a person may edit, and the shape each must have.
SHAPES: dict[str, dict[str, type | tuple[type, ...]]] = {
    DNA: {"learned_behaviors": list, "communication_patterns": list, "reflexes": list, "preferences": list,
          "learned_from": list},
    STATE: {"active_goals": list, "current_focus": (str, type(None)), "hypotheses": list,
            "pinned_goals": list, "pinned_hypotheses": list,
            "emotional_context": (str, type(None)), "done": list, "last_instruction": (str, type(None)),
            "user_said": list},
    PRELOAD: {},
}


def check_meta_file(rel: str, text: str) -> list[Problem]:
    try:
        meta, _, _ = split_frontmatter(text, rel)
    except FormatError as exc:
        return [exc.problem]
    problems = []
    lines = text.split("\n")
    for key, shape in SHAPES.get(rel, {}).items():
        if key in meta and not isinstance(meta[key], shape):
            line = next((i + 1 for i, ln in enumerate(lines) if ln.startswith(f"{key}:")), 1)
            want = shape.__name__ if isinstance(shape, type) else "text"
            problems.append(Problem(rel, line, f"{key} must be a {want}"))
        if isinstance(meta.get(key), list):
            for n, item in enumerate(meta[key]):
                if item_text(item) is None:  # boot would show the agent a Python repr
                    problems.append(Problem(rel, _item_line(lines, key, n),
                                            f"{key}: item is not one line of text (quote it)"))
    return problems


def _item_line(lines: list[str], key: str, n: int) -> int:
    """The line of item `n` of the block list `key:` in a frontmatter text (else the key's)."""
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"{key}:")), None)
    if start is None:
        return 1
    found = 0
    for i in range(start + 1, len(lines)):
        ln = lines[i]
        if ln.rstrip() == "---" or (ln.strip() and not ln.startswith((" ", "-"))):  # the next key
            break
        if ln.lstrip(" ").startswith("- ") or ln.strip() == "-":
            if len(ln) - len(ln.lstrip(" ")) == _indent(lines, start):
                if found == n:
                    return i + 1
                found += 1
    return start + 1


def _indent(lines: list[str], start: int) -> int:
    """The indentation of the first item of the block list whose key is at `start`."""
    for ln in lines[start + 1:]:
        if ln.lstrip(" ").startswith("-"):
            return len(ln) - len(ln.lstrip(" "))
    return 0


def check_text(rel: str, text: str) -> list[Problem]:
    """Problems of one brain file's text (pamd.toml, DNA/STATE/PRELOAD, an entry file)."""
    if not checked(rel):
        return []
    # a half-resolved merge first: what follows would misreport it as bad TOML or YAML
    if found := conflict_marker(rel, text):
        return [found]
    if rel == CONFIG:
        return config_problems(text)
    if rel == PRELOAD:
        return check_meta_file(rel, text) + [Problem(rel, n, msg) for n, msg in preload.problems(text)]
    if rel in SHAPES:
        return check_meta_file(rel, text)
    try:
        parse_doc(text, rel, tier_of(rel) or "L0")
    except FormatError as exc:
        return [exc.problem]
    return []


def key_line(toml_text: str, dotted: str) -> int:
    """The line that sets `dotted` (a.b.key) in a TOML text, else 1: under an [a.b] header,
    as a dotted key (`b.key = …` under [a]), or inside an inline table (`b = { key = … }`)."""
    want = dotted.split(".")
    here: list[str] = []
    for n, line in enumerate(toml_text.split("\n"), 1):
        s = line.strip()
        if s.startswith("[") and not s.startswith("[["):
            here = _key_parts(s.split("#")[0].strip().strip("[]"))
        elif "=" in s and not s.startswith("#"):
            lhs, rhs = s.split("=", 1)
            path = here + _key_parts(lhs)
            if path == want:
                return n
            if want[: len(path)] == path and rhs.lstrip().startswith("{") and _holds(rhs, want[len(path):]):
                return n
    return 1


def _holds(inline: str, path: list[str]) -> bool:
    """Whether the inline table `inline` sets the key `path` (a.b)."""
    try:
        value: Any = tomllib.loads("v = " + inline)["v"]
    except tomllib.TOMLDecodeError:
        return False
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def _key_parts(key: str) -> list[str]:
    return [p.strip().strip('"\'') for p in key.split(".")]


def config_problems(text: str) -> list[Problem]:
    """A pamd.toml text's TOML error, or each value the template's key would refuse, at its line."""
    try:
        own = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return [Problem(CONFIG, getattr(exc, "lineno", 1) or 1, str(exc).split(" (at")[0])]
    return [Problem(CONFIG, key_line(text, key), msg) for key, msg in config_mod.problems(own)]


def check_brain(brain: Brain, only: list[str] | None = None) -> list[Problem]:
    problems: list[Problem] = []
    cfg = brain.read(CONFIG)
    if cfg is not None and (only is None or CONFIG in only):
        problems += check_text(CONFIG, cfg)
    rels = list(SHAPES) + brain.entry_files()
    if only is not None:
        rels = [r for r in rels if r in set(only)] + [r for r in only if r not in rels and tier_of(r)]
    texts: dict[str, str] = {}
    for rel in dict.fromkeys(rels):
        try:
            text = brain.read(rel)
        except Exception as exc:  # unreadable: not UTF-8, too large
            problems.append(Problem(rel, 1, str(exc)))
            continue
        if text is None:
            if only is not None:  # asked for by name: a typo must not pass as "ok"
                problems.append(Problem(rel, 1, "no such file"))
            continue
        texts[rel] = text
    return problems + check_texts(texts)


def check_texts(texts: dict[str, str], only: Collection[str] | None = None) -> list[Problem]:
    """Problems of brain files given as {path: text}: each file's own (only for the paths in
    `only`, when given) and every entry id found a second time, reported at that copy.

    `pamd check` reads the work tree; the plain pre-commit hook passes what is staged.
    Files are taken in check order (pamd.toml, DNA/STATE/PRELOAD, MEMORY.md, L0..L3 by
    path), so the same duplicate is reported at the same copy whoever asks.
    """
    problems: list[Problem] = []
    seen: dict[str, tuple[str, int]] = {}
    for rel in sorted(texts, key=check_order):
        text = texts[rel]
        found = check_text(rel, text)
        if only is None or rel in only:
            problems += found
        if not found and tier_of(rel):
            for e in parse_doc(text, rel, tier_of(rel) or "L0").entries:
                if e.id in seen:
                    p, ln = seen[e.id]
                    problems.append(Problem(rel, e.line_start, f"duplicate id {e.id} (also at {p}:{ln})"))
                else:
                    seen[e.id] = (rel, e.line_start)
    return problems


def checked(rel: str) -> bool:
    """Whether `pamd check` reads this file: pamd.toml, DNA/STATE/PRELOAD, MEMORY.md, L0..L3."""
    return rel == CONFIG or rel in SHAPES or tier_of(rel) is not None


def check_order(rel: str) -> tuple[int, str]:
    """Sort key: pamd.toml, DNA/STATE/PRELOAD, MEMORY.md, then L0..L3 by path (as entry_files)."""
    if rel == CONFIG:
        return (0, "")
    if rel in SHAPES:
        return (1, str(list(SHAPES).index(rel)))
    tier = tier_of(rel)
    return (2 + ("L4", *TIER_DIRS).index(tier), rel) if tier else (9, rel)


def problems_json(problems: list[Problem]) -> list[dict[str, Any]]:
    return [{"path": p.path, "line": p.line, "message": p.message} for p in problems]
