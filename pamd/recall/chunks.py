"""Chunks: the searchable units of a brain file, cut along its Markdown structure.

markdown-it-py gives every top-level block its line span. An entry (header,
metadata line, blockquote) becomes one chunk whose searchable text is the
speaker and the message; any other Markdown (preamble, MEMORY.md prose, daily
notes, synapse files) is cut into sections at headings, and long sections into
runs of whole blocks (list items count as blocks) of at most `max_chars`, so a
hit never makes the reader take a whole file. A block of HTML comments only
is not searched (a new brain's MEMORY.md and DNA.md keep their guidance in
one). Line numbers are 1-based and inclusive, counted in the file as it is on
disk (frontmatter included).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from datetime import datetime

from pamd.core import toolcall
from pamd.core.config import IndexSettings
from pamd.core.entry import parse_time
from pamd.core.fmt import HEADER_RE, FormatError, parse_doc, split_frontmatter

MAX_CHARS = IndexSettings.max_chars
COMMENT_RE = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Chunk:
    path: str
    start: int
    end: int
    tier: str
    text: str  # what is searched (no frontmatter, no metadata line)
    ids: tuple[str, ...] = ()
    ts: datetime | None = None
    importance: float | None = None
    embed: str | None = None  # what the embedder reads when not `text` ([index] dense_context)
    own: tuple[int, int] | None = None  # where `text` is in `embed` (characters); None: all of it
    # A raw leaf's neighbours in the file that last held it raw (recall.deep.Lookup.around):
    # the dense side reads it among them, as it read the raw entry, not among its fellow leaves.
    around: tuple[tuple[str, ...], tuple[str, ...]] | None = field(default=None, compare=False, repr=False)

    @property
    def hash(self) -> str:
        """Content hash of the searchable text."""
        return text_hash(self.text)

    @property
    def vhash(self) -> str:
        """Hash of the text actually embedded: the vector cache key (same text, same vector)."""
        return self.hash if self.embed is None else text_hash(self.embed)

    @property
    def key(self) -> str:
        """Identity in the index: content plus where it sits and what the index stores of it
        (its ids, time and importance: a summary merged into another at the same lines, over
        the same raw messages, is another chunk), plus its context, if embedded."""
        ts = self.ts.timestamp() if self.ts else ""
        key = f"{self.path}:{self.start}-{self.end}:{self.hash}:{','.join(self.ids)}@{ts}~{self.importance}"
        return key if self.embed is None else f"{key}:{self.vhash}"

    @property
    def tkey(self) -> str:
        """The token cache key: the text embedded and where the chunk's own words are in it
        (two chunks of a two-entry file embed the same text, each its own half)."""
        return self.vhash if self.own is None else f"{self.vhash}:{self.own[0]}-{self.own[1]}"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _markdown():
    from markdown_it import MarkdownIt  # ~30 ms; only when a file is (re)chunked

    # Chunks need the blocks' line spans only: parsing the inline Markdown inside them
    # (emphasis, links, code spans) would be half the time of chunking a long day.
    return MarkdownIt("commonmark").disable(["inline", "text_join"])


_MD = None


def chunk_file(path: str, text: str, tier: str, max_chars: int = MAX_CHARS, leaves=None) -> list[Chunk]:
    """All chunks of one brain file, in file order.

    `leaves(summary) -> [(raw id, time, role, text)]`, when given, adds a chunk per raw
    message behind each summary, citing the summary's lines (see recall.deep)."""
    global _MD
    if _MD is None:
        _MD = _markdown()
    try:
        meta, body, body_line = split_frontmatter(text, path)
    except FormatError:
        meta, body, body_line = {}, text.split("\n"), 1
    file_ts = _meta_time(meta)
    entries = {}
    try:
        entries = {e.line_start: e for e in parse_doc(text, path, tier).entries}
    except FormatError:
        pass  # a malformed file stays searchable, as plain sections
    # Markdown ends a line at CR, LF or CRLF; git, grep, sed and pamd's parser at LF only.
    # markdown-it reads `body` cut its way (no CR left), and `at` turns its line numbers
    # back into the file's: a chunk of a file saved with old Mac line endings (or a stray
    # CR) cites the LF line that holds it, as `sed -n`, `pamd expand` and `pamd check` count.
    body, nl = _markdown_lines(body)
    blocks = _blocks(_MD.parse("\n".join(body)))

    def at(i: int) -> int:
        """The file line (1-based) of Markdown body line i (0-based)."""
        return body_line + nl[min(i, len(nl) - 1)]

    chunks: list[Chunk] = []
    section: list[tuple[int, int]] = []  # blocks of the current plain section
    heading = ""

    def flush() -> None:
        chunks.extend(_pack(path, tier, body, at, section, heading, file_ts, max_chars))
        section.clear()

    i = 0
    while i < len(blocks):
        kind, a, b = blocks[i]
        line = body[a] if a < len(body) else ""
        if kind == "heading" and HEADER_RE.match(line):
            flush()
            heading = ""
            # the entry runs through its metadata paragraph and blockquote
            j = i + 1
            while j < len(blocks) and blocks[j][0] != "heading":
                j += 1
            end_b = blocks[j - 1][2]
            e = entries.get(at(a))
            if e is not None:
                chunks.append(Chunk(path, e.line_start, e.line_end, tier, f"{e.role}: {e.text}",
                                    (e.id,), e.ts, e.importance))
                if e.sources and leaves is not None:
                    seen = set()
                    around = getattr(leaves, "around", None)
                    for raw_id, ts, role, raw in leaves(e):
                        if raw not in seen:  # the same words twice cite the same lines once
                            seen.add(raw)
                            chunks.append(Chunk(path, e.line_start, e.line_end, tier, f"{role}: {raw}",
                                                (e.id, raw_id), _time(ts), e.importance,
                                                around=around(raw_id) if around and raw_id.startswith("e-")
                                                else None))
            else:
                m = HEADER_RE.match(line)
                rest = _strip_quote(body[a + 2:end_b]) if end_b > a + 2 else ""
                chunks.append(Chunk(path, at(a), at(end_b - 1), tier,
                                    f"{m.group(3)}: {rest}".strip(), (m.group(1),),
                                    _time(m.group(2))))
            i = j
            continue
        if kind == "comment":  # an edge of the section around it, never searched itself
            flush()
            i += 1
            continue
        if kind == "heading":
            flush()
            heading = line.lstrip("#").strip()
        section.append((a, b))
        i += 1
    flush()
    return chunks


# What the dense side reads of one chunk, at most: the head of a long message or a
# pasted file says what it is. The rest would cost embedding time and stays
# searchable through BM25.
EMBED_CHARS = 768
# Of each neighbour embedded with a chunk ([index] dense_context): what the turn answers.
CONTEXT_CHARS = 512
# A chunk this long says what it is about on its own (a long message, a pasted file): it
# is embedded alone. Context is for the short turns of a dialogue ("yes, do it"), and
# every turn of such a dialogue (LoCoMo's longest is under 500 characters) is read
# exactly as before.
ALONE_CHARS = 512
# Tool traffic (a call's arguments, a tool's output) is most of an agent's session and
# was three quarters of its embedding time: it is embedded alone, its head only, and is a
# short neighbour of the turns around it. Its head says what ran and what came back;
# BM25 still reads all of it.
TOOL_CHARS = 384
TOOL_CONTEXT_CHARS = 64


def for_embedding(chunks: list[Chunk], n: int) -> list[Chunk]:
    """What each chunk's vector is made of: its text, cut to EMBED_CHARS (TOOL_CHARS for
    tool traffic), and, when n > 0 and the chunk is a turn of dialogue shorter than
    ALONE_CHARS, the entries up to n before and after it in the file, each cut to
    CONTEXT_CHARS (TOOL_CONTEXT_CHARS for tool traffic).

    Dialogue turns answer each other: "what did X do?" is often answered by a reply
    whose own words never name X. Only the dense side reads this (`embed`); BM25,
    the searchable text and the lines stay the chunk's own. The raw leaves of a
    summary (recall.deep) are embedded with the neighbours they had in the file that
    last held them raw (`around`), so their vectors come from the cache; a leaf whose
    neighbours are not known, with the leaves next to it, in the order they were said.
    Plain sections keep their own text.
    """
    out = []
    for c in chunks:
        cut = _tool_head(c.text, TOOL_CHARS) if is_tool_traffic(c.text) else c.text[:EMBED_CHARS]
        out.append(c if cut == c.text else replace(c, embed=cut))
    if n <= 0:
        return out
    runs: list[list[int]] = [[i for i, c in enumerate(chunks) if len(c.ids) == 1]]
    for i, c in enumerate(chunks):
        if len(c.ids) == 2:  # (summary, raw leaf): one run per summary
            if i == 0 or len(chunks[i - 1].ids) != 2 or chunks[i - 1].ids[0] != c.ids[0]:
                runs.append([])
            runs[-1].append(i)
    for run in runs[1:]:  # leaves in the order they were said (as store.columns.link_neighbours)
        run.sort(key=lambda i: (chunks[i].ts is None, chunks[i].ts.timestamp() if chunks[i].ts else 0.0, i))
    for run in runs[1:]:  # a leaf whose raw neighbours are known is read among them instead
        for i in [i for i in run if chunks[i].around is not None]:
            run.remove(i)
            before, after = chunks[i].around
            got = _in_context(chunks[i].text, list(before[max(0, len(before) - n):]), list(after[:n]))
            if got:
                out[i] = replace(chunks[i], embed=got[0], own=got[1])
    for run in runs:
        texts = [chunks[t].text for t in run]
        for j, i in enumerate(run):
            got = _in_context(texts[j], texts[max(0, j - n):j], texts[j + 1:j + 1 + n])
            if got:
                out[i] = replace(chunks[i], embed=got[0], own=got[1])
    return out


def is_tool_traffic(text: str) -> bool:
    """Whether an entry's chunk text (`role: message`) is a tool call or a tool's output."""
    role, sep, said = text.partition(": ")
    return bool(sep) and "\n" not in role and (said.startswith(("[tool result]", "[tool error]"))
                                               or toolcall.is_call(said))


def _tool_head(text: str, n: int) -> str:
    """Tool traffic's `role: ` and the first n characters of what follows."""
    role, _, said = text.partition(": ")
    return f"{role}: {said[:n]}"


def _in_context(text: str, before: list[str], after: list[str]) -> tuple[str, tuple[int, int]] | None:
    """(what is embedded, where the chunk's own words are in it) for a chunk read among its
    neighbours; None when it is embedded alone (no neighbour, long enough to stand alone,
    or tool traffic)."""
    if len(text) >= ALONE_CHARS or not (before or after) or is_tool_traffic(text):
        return None

    def near(t: str) -> str:
        return t[:TOOL_CONTEXT_CHARS if is_tool_traffic(t) else CONTEXT_CHARS]

    ctx = [near(t) for t in before] + [text[:EMBED_CHARS]] + [near(t) for t in after]
    at = sum(len(x) + 1 for x in ctx[:len(before)])
    return "\n".join(ctx), (at, at + len(ctx[len(before)]))


def _blocks(tokens) -> list[tuple[str, int, int]]:
    """Top-level blocks as (kind, first, end) body lines (end exclusive); lists as items."""
    out = []
    for t in tokens:
        if t.map is None or t.nesting == -1:
            continue
        if t.level == 0 and t.type == "heading_open":
            out.append(("heading", *t.map))
        elif t.level == 1 and t.type == "list_item_open":
            out.append(("item", *t.map))
        elif t.level == 0 and t.type == "html_block" and not COMMENT_RE.sub("", t.content).strip():
            # a reader of the rendered file never sees it: a template's guidance, pamd's own marks
            out.append(("comment", *t.map))
        elif t.level == 0 and t.type not in ("bullet_list_open", "ordered_list_open"):
            out.append(("block", *t.map))
    return out


def _pack(path, tier, body, at, blocks, heading, ts, max_chars) -> list[Chunk]:
    """Runs of consecutive blocks up to max_chars; the section heading is context for each."""
    out: list[Chunk] = []
    run: list[tuple[int, int]] = []
    size = 0

    def emit() -> None:
        a, b = run[0][0], run[-1][1]
        text = "\n".join(body[a:b]).strip()
        if all(ln.startswith("#") for ln in text.split("\n") if ln.strip()):
            return  # a heading with nothing under it (a tier file's title) answers no question
        if heading and not text.lstrip("#").strip().startswith(heading):
            text = f"{heading}\n{text}"
        if text:
            out.append(Chunk(path, at(a), at(b - 1), tier, text, (), ts))

    for a, b in blocks:
        n = sum(len(x) + 1 for x in body[a:b])
        if run and size + n > max_chars:
            emit()
            run, size = [], 0
        run.append((a, b))
        size += n
    if run:
        emit()
    return out


def _markdown_lines(lines: list[str]) -> tuple[list[str], list[int]]:
    """`lines` (cut at LF) cut again as Markdown cuts them (at a CR too, a CRLF once), and
    for each resulting line the index of the LF line it came from."""
    out: list[str] = []
    nl: list[int] = []
    for i, line in enumerate(lines):
        if "\r" not in line:
            out.append(line)
            nl.append(i)
            continue
        # a CR right before the LF is half of a CRLF: the LF already ends this line
        parts = (line[:-1] if line.endswith("\r") else line).split("\r")
        out += parts
        nl += [i] * len(parts)
    return out, nl


def _strip_quote(lines: list[str]) -> str:
    return "\n".join(ln[2:] if ln.startswith("> ") else ln.lstrip(">") for ln in lines
                     if ln.startswith(">"))


def _time(raw: str) -> datetime | None:
    try:
        return parse_time(raw)
    except (ValueError, TypeError):
        return None


def _meta_time(meta: dict) -> datetime | None:
    for key in ("date", "ts", "created"):
        if key in meta:
            return _time(meta[key].isoformat() if hasattr(meta[key], "isoformat") else meta[key])
    return None
