"""Parse and render brain files: frontmatter plus line-oriented entries.

An entry is three or more lines (see docs/format.md):

    ### e-7f3a9c2b1d04 · 2026-11-30T14:03:12Z · user
    type=decision importance=0.90 neuro=dopamine,acetylcholine session=abc recalls=0
    > We decided to ship v2 on Friday.

The text is a blockquote, so a message that imitates a header can never be
mistaken for one. Pure functions: text in, text or entries out.
"""

from __future__ import annotations

import copy
import datetime
import functools
import re
from dataclasses import dataclass
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from pamd.core.entry import NEURO, TYPES, Entry, clean_token, fmt_time, parse_time

SEP = " · "
HEADER_RE = re.compile(r"^### ([es]-[0-9a-f]{12}) · (\S+) · (\S+)\s*$")
# A line that looks like an attempt at a header; used to report malformed ones.
HEADER_LIKE_RE = re.compile(r"^### [es]-")
# git's outer conflict markers; a lone "=======" is also a Markdown heading
# underline, so it alone does not count (a real conflict has all three).
CONFLICT_RE = re.compile(r"^(<{7}|>{7})( |$)")
MIDDLE_RE = re.compile(r"^={7}( |$)")
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CONFLICT_MESSAGE = "conflict marker left in the file"
META_KEYS = ("type", "importance", "neuro", "session", "recalls", "seen", "via", "from")
VIA_ITEM_RE = re.compile(r"(e-[0-9a-f]{12}):([1-9][0-9]*)")
MAX_FRONTMATTER = 64 * 1024


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class Doc:
    """A parsed brain file: frontmatter, the free text before the entries, the entries."""

    meta: dict[str, Any]
    preamble: str
    entries: list[Entry]
    body_line: int  # 1-based line number where the body (after frontmatter) starts


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors/aliases: no YAML bombs in frontmatter."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases are not allowed in pamd frontmatter", event.start_mark
            )
        return super().compose_node(parent, index)


def _outside_fences(lines: list[str]):
    """(1-based line, line) of the lines outside fenced code blocks (``` or ~~~): a note
    that shows git's markers in a code block documents a conflict, it does not hold one."""
    fence = ""
    for n, line in enumerate(lines, 1):
        found = FENCE_RE.match(line)
        if fence:
            if found and found.group(1)[0] == fence[0] and len(found.group(1)) >= len(fence) \
                    and not line[found.end():].strip():
                fence = ""
            continue
        if found and not (found.group(1)[0] == "`" and "`" in line[found.end():]):
            fence = found.group(1)
            continue
        yield n, line


def conflict_marker(path: str, text: str) -> Problem | None:
    """The first line of `text` that git left as a merge-conflict marker, as a problem
    (`pamd check`, the hooks and fsck report it; a fenced code block's lines do not count)."""
    if "<<<<<<<" not in text and ">>>>>>>" not in text:
        return None
    for n, line in _outside_fences(text.split("\n")):
        if CONFLICT_RE.match(line):
            return Problem(path, n, CONFLICT_MESSAGE)
    return None


def conflict_region(path: str, text: str) -> Problem | None:
    """A conflict git left whole: a "<<<<<<< " line outside a fenced code block, then a
    "=======" and a ">>>>>>> " line (inside the region fences are not followed: one side
    may open one). Such a file holds both sides, doubled: the index and boot leave it out.
    A stray marker alone is reported by `conflict_marker`, and the file stays searchable."""
    if "<<<<<<<" not in text or ">>>>>>>" not in text:
        return None
    lines = text.split("\n")
    for n, line in _outside_fences(lines):
        if line.startswith("<<<<<<<") and CONFLICT_RE.match(line):
            rest = lines[n:]
            mid = next((i for i, ln in enumerate(rest) if MIDDLE_RE.match(ln)), None)
            if mid is not None and any(
                ln.startswith(">>>>>>>") and CONFLICT_RE.match(ln) for ln in rest[mid + 1:]
            ):
                return Problem(path, n, CONFLICT_MESSAGE)
            return None  # the first start outside a fence decides: git writes them in order
    return None


# python-frontmatter's YAML handler loads and writes the frontmatter (with a loader that
# refuses aliases, and keys in the order they came). The split is pamd's own, below:
# frontmatter.parse() strips the text around the body, and every hit, check and expand
# must name the lines as they are on disk.
_YAML = YAMLHandler()


def load_yaml(text: str) -> Any:
    # Each result is a fresh copy: a caller may change what it gets.
    return _fresh(_load_yaml(text))


# The same frontmatter is read again and again (STATE.md's, at every run and in each of
# its versions in history): the pure-Python parser is slow, and a text's YAML never changes.
@functools.lru_cache(maxsize=256)
def _load_yaml(text: str) -> Any:
    return _YAML.load(text, Loader=_NoAliasLoader)


_IMMUTABLE = (str, int, float, bool, type(None), bytes, datetime.date, datetime.datetime)


def _fresh(value: Any) -> Any:
    """A deep copy of what YAML loaded (mappings and lists, the rest is immutable), faster
    than copy.deepcopy."""
    kind = type(value)
    if kind is dict:
        return {k: _fresh(v) for k, v in value.items()}
    if kind is list:
        return [_fresh(v) for v in value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)  # a set, !!omap's pairs


def dump_yaml(data: dict[str, Any]) -> str:
    return _YAML.export(data, sort_keys=False) + "\n"


def item_text(item: Any) -> str | None:
    """A frontmatter list item (a goal, a reflex) as one line of text, or None if it has none.

    pamd writes `{text: …, …}`; a person's `- Ann: finish the review` is, to YAML, a
    one-key mapping, shown as written; a date or number as YAML wrote it (2026-12-15).
    A list or a larger mapping has no one-line text: `pamd check` names it."""
    if isinstance(item, dict):
        if "text" in item:
            return item_text(item["text"])
        if len(item) != 1:
            return None
        ((key, value),) = item.items()
        if isinstance(value, dict | list):
            return None
        return f"{item_text(key)}: {item_text(value)}".rstrip()
    if item is None:
        return ""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, str | int | float | datetime.date):  # datetime.datetime is a date
        return str(item)
    return None


def conflicts_first(parse):
    """A parse that fails on a text holding git's conflict markers says so, not what the
    markers broke ("text between entries", "broken frontmatter"): the fix is to finish the merge."""

    @functools.wraps(parse)
    def wrapper(text: str, path: str = "", *args, **kwargs):
        try:
            return parse(text, path, *args, **kwargs)
        except FormatError as exc:
            if exc.problem.message != CONFLICT_MESSAGE and (found := conflict_marker(path, text)):
                raise FormatError(found) from None
            raise

    return wrapper


@conflicts_first
def split_frontmatter(text: str, path: str = "") -> tuple[dict[str, Any], list[str], int]:
    """Return (frontmatter, body lines, 1-based line of the first body line).

    A line's CR of a CRLF ending (a Windows editor's) goes: pamd writes LF only, so a
    file it rewrites comes back LF throughout, not LF where pamd wrote and CRLF elsewhere."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    # an editor's byte-order mark (Windows Notepad) must not hide the frontmatter
    if not lines or lines[0].removeprefix("\ufeff").rstrip() != "---":
        return {}, lines, 1
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            raw = "\n".join(lines[1:i])
            if len(raw) > MAX_FRONTMATTER:
                raise FormatError(Problem(path, 1, "frontmatter is larger than 64 KiB"))
            try:
                meta = load_yaml(raw) if raw.strip() else {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                # YAML also ends a line at a bare CR, NEL, U+2028/9; a file's lines end at LF
                line = 2 + (raw.count("\n", 0, mark.index) if mark else 0)
                reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
                raise FormatError(Problem(path, line, f"broken frontmatter: {reason}")) from None
            if meta is None:
                meta = {}
            if not isinstance(meta, dict):
                raise FormatError(Problem(path, 2, "frontmatter must be a mapping"))
            return meta, lines[i + 1 :], i + 2
    raise FormatError(Problem(path, 1, "frontmatter opened with --- is never closed"))


class FormatError(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def render_meta(e: Entry) -> str:
    parts = [
        f"type={e.type}",
        f"importance={round(e.importance, 2) + 0.0:.2f}",  # a negative zero is 0.00, never -0.00
        f"neuro={','.join(e.neuro) if e.neuro else '-'}",
        f"session={clean_token(e.session)}",
        f"recalls={e.recalls}",
    ]
    if e.seen:
        parts.append(f"seen={e.seen}")
    if e.via:
        parts.append("via=" + ",".join(f"{leaf}:{n}" for leaf, n in e.via))
    if e.sources:
        parts.append(f"from={','.join(e.sources)}")
    return " ".join(parts)


def render_entry(e: Entry) -> str:
    head = f"### {e.id}{SEP}{fmt_time(e.ts)}{SEP}{clean_token(e.role)}"
    body = "\n".join(("> " + ln) if ln else ">" for ln in e.text.split("\n"))
    return f"{head}\n{render_meta(e)}\n{body}\n"


def render_entries(entries: list[Entry]) -> str:
    return "\n".join(render_entry(e) for e in entries)


def render_doc(meta: dict[str, Any], preamble: str, entries: list[Entry]) -> str:
    out = []
    if meta:
        out.append("---\n" + dump_yaml(meta) + "---\n")
    pre = preamble.strip("\n")
    if pre:
        out.append(pre + "\n")
    if entries:
        if pre or meta:
            out.append("\n")
        out.append(render_entries(entries))
    return "".join(out)


def _parse_meta(line: str, path: str, lineno: int) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for part in line.split():
        key, eq, value = part.partition("=")
        if not eq or key not in META_KEYS:
            raise FormatError(Problem(path, lineno, f"unknown metadata field {part!r}"))
        if key in fields:
            raise FormatError(Problem(path, lineno, f"metadata field {key!r} given twice"))
        fields[key] = value
    for key in ("type", "importance"):
        if key not in fields:
            raise FormatError(Problem(path, lineno, f"metadata line lacks {key}="))
    if fields["type"] not in TYPES:
        raise FormatError(Problem(path, lineno, f"unknown type {fields['type']!r}"))
    try:
        imp = float(fields["importance"]) + 0.0  # -0.00 (a hand edit) reads as 0
        recalls = int(fields.get("recalls", "0"))
    except ValueError:
        raise FormatError(Problem(path, lineno, "importance/recalls must be numbers")) from None
    if not 0.0 <= imp <= 1.0:
        raise FormatError(Problem(path, lineno, "importance must be within 0..1"))
    if recalls < 0:
        raise FormatError(Problem(path, lineno, "recalls must not be negative"))
    neuro = tuple(t for t in fields.get("neuro", "-").split(",") if t and t != "-")
    for tag in neuro:
        if tag not in NEURO:
            raise FormatError(Problem(path, lineno, f"unknown neuro tag {tag!r}"))
    sources = tuple(s for s in fields.get("from", "").split(",") if s)
    seen = fields.get("seen", "")
    if seen and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", seen):
        raise FormatError(Problem(path, lineno, "seen must be a date YYYY-MM-DD"))
    via = []
    for item in fields.get("via", "").split(",") if "via" in fields else ():
        m = VIA_ITEM_RE.fullmatch(item)
        if not m:
            raise FormatError(Problem(path, lineno, "via must list raw ids with counts, e-ID:N,"
                                                    f" comma-separated (found {item!r})"))
        via.append((m.group(1), int(m.group(2))))
    if len({leaf for leaf, _ in via}) != len(via):
        raise FormatError(Problem(path, lineno, "via names a raw id twice"))
    return {
        "seen": seen,
        "via": tuple(via),
        "type": fields["type"],
        "importance": imp,
        "neuro": neuro,
        "session": fields.get("session", "-"),
        "recalls": recalls,
        "sources": sources,
    }


def _no_entry_after_bare_cr(lines: list[str], path: str, body_line: int) -> None:
    """Refuse an entry header that only a bare CR (a classic Mac line end) puts on a line.

    Git, `grep -n` and pamd cut lines at LF only (a CRLF is an LF line that ends in
    CR), so such an entry would be invisible: never recalled, compacted or checked.
    A bare CR anywhere else is left alone; pamd writes none (ingest turns them into LF).
    """
    for i, line in enumerate(lines):
        core = line[:-1] if line.endswith("\r") else line
        if "\r" in core and any(HEADER_LIKE_RE.match(p) for p in core.split("\r")[1:]):
            raise FormatError(Problem(
                path, body_line + i,
                "entry header after a bare CR line end (classic Mac): git and pamd cut lines"
                " at LF only, so the entry is invisible; save the file with LF line endings",
            ))


@conflicts_first
def parse_doc(text: str, path: str = "", tier: str = "L0") -> Doc:
    """Parse a brain file; raise FormatError naming path:line on the first problem."""
    meta, lines, body_line = split_frontmatter(text, path)
    if "\r" in text:
        _no_entry_after_bare_cr(lines, path, body_line)
    entries: list[Entry] = []
    first = None
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("### ") and HEADER_LIKE_RE.match(line):
            if first is None:
                first = i
            lineno = body_line + i
            m = HEADER_RE.match(line)
            if not m:
                raise FormatError(Problem(path, lineno, "malformed entry header"))
            eid, ts_raw, role = m.groups()
            try:
                ts = parse_time(ts_raw)
            except ValueError:
                raise FormatError(Problem(path, lineno, f"bad timestamp {ts_raw!r}")) from None
            if i + 1 >= n:
                raise FormatError(Problem(path, lineno + 1, "entry lacks its metadata line"))
            fields = _parse_meta(lines[i + 1], path, lineno + 1)
            j = i + 2
            text_lines = []
            while j < n and lines[j].startswith(">"):
                ln = lines[j]
                text_lines.append(ln[2:] if ln.startswith("> ") else ln[1:])
                j += 1
            if not text_lines:
                raise FormatError(Problem(path, lineno + 2, "entry has no text (lines start '> ')"))
            entries.append(
                Entry(
                    id=eid, ts=ts, role=role, text="\n".join(text_lines), tier=tier,
                    path=path, line_start=lineno, line_end=body_line + j - 1, **fields,
                )
            )
            i = j
            continue
        if first is not None and line.strip():
            raise FormatError(
                Problem(path, body_line + i, "text between entries: keep notes above the first entry")
            )
        i += 1
    preamble = "\n".join(lines[:first] if first is not None else lines)
    return Doc(meta=meta, preamble=preamble, entries=entries, body_line=body_line)
