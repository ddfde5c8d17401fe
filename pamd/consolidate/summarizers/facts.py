"""Facts in an agent's transcript: what a careful engineer would copy into their notes.

Pure functions over text. An agent's narration ("Let me check…", "Now I'll…",
"Perfect!") and fragments (list markers, a number alone, a lead-in ending with a colon)
are no facts; a commit message, a task closed with its reason, a push, a file written,
an error line in tool output and a test run's result are, and each is turned into one
statement that names its subject ("Committed: feat: …", "Closed spotter-gqc.4: …").
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter

from pamd.core import toolcall

# What an agent says it is about to do or think, at the start of a sentence, after
# optional connectives ("Now, let me…", "OK so I'll…", "Теперь посмотрю…").
_LEAD = (r"^(?:(?:now|next|first|then|so|ok(?:ay)?|good|great|perfect|excellent|alright|right|"
         r"also|finally|actually|hmm+|wait|а|и|теперь|сначала|потом|итак|так|хорошо|отлично)"
         r"[,.!:]?\s+)*")
_NARRATION = re.compile(
    _LEAD
    + r"(?:let me|let's|let us|i'll|i will|i'm going to|i am going to|i'm gonna|i need to|"
    r"(?:also\s+)?needs?(?: to)?|i should|i want to|i'd like to|i can see|i see|i notice|i understand|i have|i've got|"
    r"i'm now|i am now|i think i|we need to|we'll|we should|now i|time to|looking at|"
    r"checking|reading|running|searching|exploring|waiting|continuing|moving on|proceeding|working on|"
    r"i've (?:already |now |just )?(?:done|read|looked|checked|explored|reviewed|seen|got|gathered)|"
    r"давай(?:те)?|попробую|проверю|посмотрю|сейчас|запущу|прочитаю|открою|мне нужно|нужно (?:сначала|теперь))\b",
    re.IGNORECASE,
)
# "Now add the API route:", "Next, update the test" -- a step announced, not done.
_STEP = re.compile(
    r"^(?:now|next|then|first|finally|теперь|далее|потом)[,]?\s+(?:\w+\s+){0,1}"
    r"(?:add|update|run|check|verify|commit|close|create|write|fix|implement|read|look|make|"
    r"remove|move|edit|stage|push|test|build|rebuild|install|register|wire|mark|claim|try|"
    r"start|see|go|do|handle|replace|refactor|extract|wait|review|explore|find|search|open|"
    r"the|i|we|that|this|it|let)\b",
    re.IGNORECASE,
)
# Exclamations and acknowledgements an agent says between steps.
_CHEER = re.compile(
    r"^(?:perfect|excellent|great|good|nice|awesome|done|ok(?:ay)?|right|alright|got it|"
    r"all good|looks good|good catch|interesting|hmm+|sure|understood|yes|no|cool|"
    r"отлично|супер|хорошо|готово|понятно|ясно|ок|ага|так)(?: news| progress| job| work| now)?"
    r"[\s!.,…)(:;—-]*$",
    re.IGNORECASE,
)
_LETTERS = re.compile(r"[^\W\d_]{2,}")
_MARKUP_ONLY = re.compile(r"^[\s>#*\-+|`~=_.:;,()\[\]\d]*$")
_LIST_HEAD = re.compile(r"^\s*(?:[>#]+\s*|[-*+]\s+|\d+[.)]\s+)+")
_CODE_LINE = re.compile(r"\s=\s|[{};]\s*$|^\w+\.\w+\(|^[A-Za-z_]\w*=\S")
_IDENT = re.compile(r"\d|[\w-]+[._/][\w/.-]+|`[^`]+`|\w+-\w+")
# The head of a file's settings as `settings_facts` writes them: "dir/file.ext: `…`", "…: route …".
SETTINGS_FACT = r"^[\w.~/-]+\.\w+: (?:`|route `|env `)"


# What only an agent says of its own work: used where a line's speaker is not known.
_AGENT_ONLY = re.compile(_LEAD + r"(?:let me|let's|let us|now i|i need to|i'm going to|"
                         r"давай(?:те)?|попробую|проверю|посмотрю)\b", re.IGNORECASE)


# An agent's note to itself in the imperative: "Close gqc.5, commit, and continue".
_IMPERATIVE = re.compile(
    r"^(?:add|update|run|re-?run|check|verify|commit|close|create|write|fix|implement|read|look|"
    r"make|remove|move|edit|stage|push|test|build|rebuild|install|register|wire|mark|claim|try|"
    r"start|replace|refactor|extract|wait|review|explore|find|search|open|continue|use|call|set|"
    r"change|delete|rename|import|merge|deploy|restart|launch|spawn|dispatch|clean|sync|proceed|"
    r"investigate|examine|inspect|confirm|ensure|skip|keep|go|let|see|move on)\b",
    re.IGNORECASE)
_NOW = re.compile(r"^(?:now|next|then|теперь|далее)\b", re.IGNORECASE)
_CHEER_LEAD = re.compile(r"^(?:perfect|excellent|great|good|nice|awesome|ok(?:ay)?|alright|right|"
                         r"interesting|отлично|хорошо|супер)[,.!:—-]+\s*", re.IGNORECASE)


def clauses_said(sentence: str) -> str:
    """An agent's sentence without its narrating clauses ("Expected — I'll use that alias
    next" -> "Expected"); "" when nothing but narration is left."""
    parts: list[str] = []
    for part in re.split(r"(\s+[—–]\s+|;\s+)", sentence):
        # a separator inside a `code span` separates nothing
        if parts and (parts[-1].count("`") % 2 or re.fullmatch(r"\s+[—–]\s+|;\s+", part)):
            parts[-1] += part
        else:
            parts.append(part)
    parts = [re.sub(r"(?:\s+[—–]|;)\s*$", "", p) for p in parts]
    kept = [p for p in parts if not is_narration(p)]
    return " — ".join(kept) if len(kept) < len(parts) else sentence


def is_narration(sentence: str, agent: bool = True) -> bool:
    """True if an agent's sentence narrates its own work instead of stating a fact.
    `agent=False`: the speaker is not known, only what no person says of their day counts
    ("Let me check…", "Now add the route:"), not "I'll…", which a person's plans are."""
    s = _LIST_HEAD.sub("", sentence.strip()).strip("*_ ")
    if not agent:
        return bool(_AGENT_ONLY.match(s) or (_STEP.match(s) and s.endswith(":")))
    if _NOW.match(s) and len(_LETTERS.findall(s)) < 5:
        return True  # "Now gqc.6", "Next: the tests"
    cheer = _CHEER_LEAD.match(s)
    if cheer and len(_LETTERS.findall(s[cheer.end():])) < 6:
        return True
    return bool(_CHEER.match(s) or _NARRATION.match(s) or _STEP.match(s) or _IMPERATIVE.match(s))


# The sections of an agent host's recap of its session (Claude Code's compaction summary,
# "[compaction summary]" at ingest) that are reference, not events: the concepts it names and
# the files it shows with their code. What was asked, what broke and how it was fixed, what
# the person said, what is pending and being done are what the recap adds.
_RECAP_SECTION = re.compile(r"^\s*\d{1,2}\.\s+(?:\*\*)?([A-Za-z][A-Za-z /&-]{2,40}?)(?:\*\*)?:\s*$")
_RECAP_REFERENCE = ("key technical concepts", "files and code sections")


def recap_events(text: str) -> str:
    """A recap's text without its reference sections (`_RECAP_REFERENCE`) and without its
    sections' headings ("4. Errors and fixes:" names no error); other text as it is."""
    out: list[str] = []
    skip = False
    for line in text.split("\n"):
        m = _RECAP_SECTION.match(line)
        if m:
            skip = m.group(1).strip().casefold() in _RECAP_REFERENCE
        elif not skip:
            out.append(line)
    return "\n".join(out)


def is_fragment(sentence: str) -> bool:
    """True if the text is no statement: markup or numbers alone, a heading or list marker
    with a word or two, or a short lead-in that ends with a colon. A file's settings
    (`settings_facts`) are a statement, whatever code they quote."""
    s = sentence.strip()
    if re.match(SETTINGS_FACT, s):
        return False
    if _MARKUP_ONLY.match(s) or len(_LETTERS.findall(s)) < 1 or s.startswith("#"):
        return True
    body = _LIST_HEAD.sub("", s).strip("*_ ")
    letters = _LETTERS.findall(body)
    if len(_LETTERS.findall(re.sub(r"`[^`]*`", "", body))) < 2 and body.count("`") >= 2:
        return True  # a name in backticks with nothing said of it
    if (s.endswith(":") and len(letters) < 12) or _title(body) or _CODE_LINE.search(body):
        return True
    return len(letters) < 3 and not _IDENT.search(body)


def _title(text: str) -> bool:
    """A heading without its marks: a few words, most capitalised, no full stop
    ("Acceptance Tests", "JSON Format for Injecting Context")."""
    words = [w for w in re.split(r"\s+", text.strip("`*_ ")) if w]
    if not words or len(words) > 10 or text.rstrip()[-1:] in ".!?…":
        return False
    caps = sum(1 for w in words if w[:1].isupper() or w[:1] in "`")
    return caps >= max(2, 0.6 * len(words)) or (len(words) <= 2 and caps == len(words))


_HOME = re.compile(r"(?<![\w/])/(?:home|Users)/[^/\s]+/")


def clean(sentence: str) -> str:
    """A sentence without its Markdown list marker, heading marks, a dangling colon or a
    home directory's prefix in its paths (`/home/ann/x` -> `~/x`)."""
    s = _LIST_HEAD.sub("", sentence.strip())
    s = _BOLD_HEAD.sub(_bold_head, s)
    return _HOME.sub("~/", s.rstrip(" :"))


# "**Input:** maps" and "**Input**: maps" are a label ("Input: maps"); "**Note** the cache"
# is a word in bold ("Note the cache").
_BOLD_HEAD = re.compile(r"^\*\*([^*]{1,80})\*\*(:?)\s*")


def _bold_head(m: re.Match) -> str:
    head = m.group(1).strip()
    return head.rstrip(":").rstrip() + ": " if head.endswith(":") or m.group(2) else head + " "


# ------------------------------------------------------------------ tool calls

_COMMIT_MSG = re.compile(
    r"""git\b[^|;&]*?\bcommit\b[^|;&]*?(?:-m|--message)[ =]?\s*"""
    r"""(?:"\$\(cat <<'?(\w+)'?\s*\n(.*?)(?:\n\s*\1|$)|"((?:[^"\\]|\\.)*)"|'([^']*)')""",
    re.DOTALL)
_CLOSE = re.compile(r"\b(?:bd|beads|br)\s+close\s+([^|;&]*)")
_GH = re.compile(r"\bgh\s+(pr|issue)\s+(create|close|merge)\b([^|;&]*)")
_PUSH = re.compile(r"\bgit\s+push\b([^|;&\n]*)")
_REDIRECT = re.compile(r"^\d*[<>]|^&\d")
_FILE_TOOLS = {"Write": "Wrote", "Edit": "Edited", "MultiEdit": "Edited", "NotebookEdit": "Edited"}


def _args(call: str) -> tuple[str, dict]:
    """(tool name, its arguments) of a `[tool NAME] {json}` call; arguments cut short by
    ingest are read as far as they go."""
    m = toolcall.CALL.match(call)
    if not m:
        return "", {}
    name, raw = m.group(1).strip(), call[m.end():].strip()
    try:
        value = json.loads(raw)
        if isinstance(value, dict):
            return name, value
    except ValueError:
        pass
    out = {}
    for key, val in re.findall(r'"(\w+)":\s*"((?:[^"\\]|\\.)*)', raw):
        try:
            out[key] = json.loads(f'"{val}"')
        except ValueError:
            out[key] = val
    return name, out


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _flag(words: list[str], *names: str) -> str:
    for i, w in enumerate(words):
        for n in names:
            if w == n and i + 1 < len(words):
                return words[i + 1]
            if w.startswith(n + "="):
                return w[len(n) + 1:]
    return ""


def call_facts(call: str) -> list[str]:
    """The facts a tool call records: a commit and its message, a task closed and why, a
    pull request or issue, a push, a file written or edited (statements, no JSON)."""
    name, args = _args(call)
    if name in _FILE_TOOLS:
        path = str(args.get("file_path") or args.get("notebook_path") or "")
        return [f"{_FILE_TOOLS[name]} {_HOME.sub('~/', path)}"] if path else []
    if name != "Bash":
        return []
    cmd = str(args.get("command") or "")
    out = []
    for m in _COMMIT_MSG.finditer(cmd):
        msg = (m.group(2) or m.group(3) or m.group(4) or "").replace('\\"', '"').strip()
        lines = [ln.strip() for ln in msg.splitlines() if ln.strip() and not ln.startswith("Co-Authored-By")]
        if lines:
            body = _first_sentence(" ".join(lines[1:4]))
            out.append(f"Committed \"{lines[0]}\"" + (f": {body}" if body else ""))
    for m in _CLOSE.finditer(cmd):
        words = _words(m.group(1))
        ids = [w for w in words if not w.startswith("-") and not _REDIRECT.match(w) and "=" not in w]
        reason = _flag(words, "--reason", "-r")
        ids = [i for i in ids if i != reason]
        if ids:
            out.append(f"Closed {', '.join(ids)}" + (f": {reason}" if reason else ""))
    for m in _GH.finditer(cmd):
        words = _words(m.group(3))
        title = _flag(words, "--title", "-t")
        what = {"create": "Opened", "close": "Closed", "merge": "Merged"}[m.group(2)]
        ref = title or " ".join(w for w in words if not w.startswith("-"))[:80]
        out.append(f"{what} {'pull request' if m.group(1) == 'pr' else 'issue'} {ref}".rstrip())
    for m in _PUSH.finditer(cmd):
        words = [w for w in _words(m.group(1)) if not w.startswith("-") and not _REDIRECT.match(w)]
        out.append(f"Pushed {' '.join(words[-2:]) or 'to the remote'}".rstrip())
    return out


# ------------------------------------------------------------------ tool output

# The first line of an error as a tool printed it.
_ERROR_LINE = re.compile(
    r"^\s*(?:\*\* \(\w[\w.]*(?:Error|Exception)\)|(?:[\w.]+)?(?:Error|Exception)\b[:\s]|error(?:\[\w+\])?:|"
    r"ERROR\b|FAIL(?:ED)?\b|fatal:|panic:|Traceback \(most recent call last\)|"
    r"[\w/.-]+:\d+(?::\d+)?:\s*(?:error|warning: [\w ]*(?:undefined|unused))|"
    r"==\s*Compilation error|E\s{2,}\w|npm ERR!|\s*\d+\) test .* \(|Exit code [1-9]\d*)",
)
_TESTS = re.compile(
    r"\b(\d+) (?:tests?|examples?|specs?)(?:, (\d+) (?:doctests?|properties))?, (\d+) failures?\b|"
    r"\b(\d+) (?:passed|failed)(?:, \d+ (?:passed|failed|skipped|warnings?))*\b",
    re.IGNORECASE,
)


def _first_sentence(text: str, limit: int = 200) -> str:
    """The first sentence of `text` ("" when it was cut off before a sentence ended)."""
    m = re.search(r"(?<=[.!?])\s", text + " ")
    first = text[: m.start()] if m else ""
    return first if len(first) <= limit else ""


_TEST_HEAD = re.compile(r"^\d+\) test (.+?)(?: \(([\w.]+)\))?$")
_WHY = re.compile(r"^\s*(?:\*\* \(|Assertion |error:|\w*Error\b|expected|assert )")
_RAISED = re.compile(r"^[\w.]*(?:Error|Exception|Exit|Interrupt)\b")
_OUTPUT_HEAD = re.compile(r"^\[tool (?:result|error)\] ?", re.MULTILINE)


def error_line(output: str) -> str:
    """The first line of `output` that reads as an error a tool printed ("" if none); a
    traceback header or an `Exit code N` line gives the next line that says more."""
    lines = _OUTPUT_HEAD.sub("", output).splitlines()
    for i, line in enumerate(lines):
        if not _ERROR_LINE.match(line):
            continue
        text = line.strip()
        test = _TEST_HEAD.match(text)
        if test:
            # An ExUnit/pytest-style numbered failure: the test's name and the error under it.
            why = next((ln.strip() for ln in lines[i + 1:i + 16] if _WHY.match(ln)), "")
            return _one(f"{why} ({test.group(2) + ' ' if test.group(2) else ''}test failed)" if why else "")
        if text.startswith("Traceback"):
            raised = next((ln.strip() for ln in lines[i + 1:] if _RAISED.match(ln)), "")
            if raised:
                return _one(raised)
        if text.startswith("Exit code"):
            # The code alone says nothing: the error line the command printed after it does.
            more = error_line("\n".join(lines[i + 1:i + 40]))
            return _one(more) if more else ""
        if text.startswith(("Traceback", "== Compilation error")) or len(_LETTERS.findall(text)) < 3:
            for nxt in lines[i + 1:i + 8]:
                nxt = nxt.strip()
                if len(_LETTERS.findall(nxt)) >= 3 and not nxt.startswith(("File \"", "│", "└", "at ")):
                    return _one(nxt)
        return _one(text)
    return ""


_PUSHED = re.compile(r"^\s*[+*]?\s*(?:[0-9a-f]{6,}\.\.\.?[0-9a-f]{6,}|\[new branch\])\s+(\S+)\s+->\s+(\S+)",
                     re.MULTILINE)
_PUSH_TO = re.compile(r"^To (\S+)", re.MULTILINE)
_TEST_CMD = re.compile(r"\b((?:mix|npm|yarn|pnpm|cargo|go|bun)\s+test|pytest|python3? -m pytest|rspec|jest|vitest)\b"
                       r"([^|;&\n]*)")


def pushed(output: str) -> str:
    """What a `git push` printed it pushed ("Pushed spotter-gqc to github.com:a/b.git"; "")."""
    m = _PUSHED.search(output)
    if not m:
        return ""
    to = _PUSH_TO.search(output)
    ref = m.group(1) if m.group(1) == m.group(2) else f"{m.group(1)} to {m.group(2)}"
    return f"Pushed {ref}" + (f" to {to.group(1)}" if to else "")


# Claude Code's answer to an AskUserQuestion call: `User has answered your questions: "Q"="A",
# "Q2"="A2". You can now continue…` (each question and answer JSON-quoted).
_ANSWERED = re.compile(r'User has answered your questions?: ((?:"(?:[^"\\]|\\.)*"="(?:[^"\\]|\\.)*"(?:, )?)+)')
_QA = re.compile(r'"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"')
# Claude Code's tool result when the person refused a tool call.
REJECTED = "The user doesn't want to proceed with this tool use"


def answers(output: str) -> list[tuple[str, str]]:
    """(question, the person's answer) of an AskUserQuestion result."""
    m = _ANSWERED.search(output)
    if not m:
        return []
    pairs = [tuple(" ".join(x.replace('\\"', '"').split()) for x in qa) for qa in _QA.findall(m.group(1))]
    return [(q, a) for q, a in pairs if a]


def answered(output: str) -> list[str]:
    """The person's choices in an AskUserQuestion result, each with its question:
    'Asked "How should we proceed?": the user answered "fix the issues"'."""
    return [f'Asked "{_one(q, 160)}": the user answered "{_one(a, 200)}"' for q, a in answers(output)]


def offered(call: str) -> dict[str, list[str]]:
    """{question: the labels of its options} of an AskUserQuestion call."""
    name, args = _args(call)
    if name != "AskUserQuestion" or not isinstance(args.get("questions"), list):
        return {}
    out = {}
    for q in args["questions"]:
        if isinstance(q, dict) and isinstance(q.get("question"), str):
            labels = [str(o.get("label")) for o in q.get("options") or [] if isinstance(o, dict) and o.get("label")]
            out[" ".join(q["question"].split())] = labels
    return out


# What `git commit` prints first: `[main 3bb8701] subject` (`[main (root-commit) 3bb8701] …`).
_COMMIT_MADE = re.compile(r"^(?:\[tool result\] )?\[([^\]\s]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$",
                          re.MULTILINE)


def commit_made(output: str) -> tuple[str, str] | None:
    """(short hash, subject) of the commit a `git commit`'s output reports, or None."""
    m = _COMMIT_MADE.search(output)
    return (m.group(2)[:7], m.group(3).strip()) if m else None


def commit_subject(command: str) -> str:
    """The subject of the commit message a shell command's `git commit -m` gives ("")."""
    m = _COMMIT_MSG.search(command)
    msg = (m.group(2) or m.group(3) or m.group(4) or "").replace('\\"', '"').strip() if m else ""
    return next((ln.strip() for ln in msg.splitlines() if ln.strip()), "")


def failed_commit(fact: str, subject: str) -> str:
    """A `Committed "subject"…` fact of a commit that failed, said as what it was; any other
    fact as it is."""
    if not subject or not fact.startswith(f'Committed "{subject[:30]}'):
        return fact
    return f'Commit "{_one(subject, 120)}" failed'


def with_hash(fact: str, made: tuple[str, str]) -> str:
    """A `Committed "subject"…` fact with the hash git reported for that subject
    (`Committed 3bb8701 "subject"…`); any other fact as it is."""
    sha, subject = made
    head = f'Committed "{subject[:30]}'  # a one-line summary may have cut the subject
    return f"Committed {sha} " + fact[len("Committed "):] if fact.startswith(head) else fact


def test_command(call: str) -> str:
    """The test command a Bash call runs, with its arguments (`mix test test/a_test.exs`; "")."""
    name, args = _args(call)
    if name != "Bash":
        return ""
    m = _TEST_CMD.search(str(args.get("command") or ""))
    if not m:
        return ""
    words = [w for w in _words(m.group(2)) if not _REDIRECT.match(w) and w not in ("2>&1",)]
    return " ".join([m.group(1), *words]).strip()


def test_result(output: str) -> str:
    """A test run's tally in tool output ("76 tests, 0 failures"; "" if none)."""
    m = _TESTS.search(output)
    return m.group(0) if m else ""


def _one(text: str, limit: int = 220) -> str:
    text = " ".join(text.split()).removeprefix("[tool error] ").removeprefix("[tool result] ")
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


# ------------------------------------------------------------------ the fact gate

# A line that names what it is about: a path or dotted name, a ticket id, a code span,
# quoted text, a CamelCase or snake_case name, an acronym.
_ANCHOR = re.compile(
    r"`[^`]+`|\"[^\"]{2,}\"|“[^”]{2,}”|'[^'\s][^']+'|"
    r"\b[\w-]*[A-Za-z][\w-]*[./][\w/.-]*\w|"  # path, module.fun, file.ext, gqc.6
    r"\b[a-z][a-z0-9]*-[a-z0-9]*\d[\w.]*|"  # ticket ids: spotter-fum, abc-12
    r"\b[a-z][a-z0-9]*-[a-z0-9]{3,}\b(?=[.:]\d|\s|$)|"
    r"\b[A-Z][a-z0-9]+[A-Z]\w*|\b[a-z]+_[a-z_0-9]+\b|\b[A-Z]{2,}[A-Z0-9]*\b|--?[a-z][\w-]+")
# A subject no one can resolve out of its sentence: a pronoun, or "the/that/all N …" with
# no name in the line ("That line is already fixed", "The epic has 4 child tasks").
_VAGUE_SUBJECT = re.compile(
    r"^(?:it|its|it's|they|them|this|that|these|those|there|here|he|she|everything|"
    r"all|both|each|the|then|which|what|also)\b|^(?:all\s+)?\d+(?:\s+of\s+\d+)?\b",
    re.IGNORECASE)
_PRONOUN = re.compile(r"^(?:it|it's|they|this|that|these|those|he|she)\s+"
                      r"(?:is|was|are|were|has|had|does|did|will|would|can|could|should|"
                      r"uses?|needs?|works?|returns?|fails?|passes|looks?|seems?|means?|"
                      r"only|already|now|just|still)\b", re.IGNORECASE)
# Markdown that is no statement: a table row, a bold or code mark cut open, a heading or
# list numbering left alone.
_TABLE = re.compile(r"^\|.*\||\|\s*:?-{3,}|(?:\s\|\s.*){2,}")
_USER_ORDER = re.compile(
    r"^(?:please\s+)?(?:work on|start(?: with)?|begin|pick|continue(?: with)?|go on|go ahead|do|"
    r"implement|fix|add|run|check|commit|push|close|create|make|use|try|write|update|remove|"
    r"proceed|finish|resume|look at|take)\b", re.IGNORECASE)
# What a person decides or prefers is kept even when said as an order ("always use…").
_PREFERENCE = re.compile(r"\b(?:always|never|don't|do not|instead|prefer|rather|must not|"
                         r"from now on|only|avoid|всегда|никогда|вместо)\b|, not\b", re.IGNORECASE)
# What a person states of their project or team, not asked of the agent: "we use X", "our API
# runs on Y", "I prefer Z", "the staging DB is W" ("мы используем X").
_PROJECT_FACT = re.compile(
    r"^(?:(?:so|also|btw|fyi|note|ok(?:ay)?|and|but)[,:]?\s+|[^,.;:?!]{1,30}[,:]\s+)*"
    r"(?:(?:we|our team|i)(?:[’']re| are|[’']ve| have)?\s+(?:always\s+|never\s+|usually\s+|already\s+)?"
    r"(?:use|using|run|running|deploy|deploying|host|target|support|ship|prefer|like|keep|store|build|"
    r"moved|switched|migrated|pin|rely|standardi[sz]ed|don[’']t|do not|never|always)\b"
    r"|our\s+[\w./-]+(?:\s+[\w./-]+)?\s+(?:is|are|runs?|uses?|lives?|sits?|needs?|has|must|should)\b"
    r"|i(?:[’']d| would) rather\b"
    r"|(?:мы|у нас)\s+(?:используем|держим|деплоим|храним|предпочитаем|не используем)\b)",
    re.IGNORECASE)
_DECISION = re.compile(r"\b(?:decided|chose|chosen|switched to|instead of|because|due to|"
                       r"fixed by|root cause|resolved by|решили|потому что)\b", re.IGNORECASE)
_RECORD = re.compile(r"^(?:Committed|Closed|Opened|Merged|Pushed (?!to the remote)\S|Test run \S"
                     r"|Uncommitted(?: on \S+)?: \S|Listed by `)|" + SETTINGS_FACT)
# A status with nothing said of the work: "spotter-fum.2 is now unblocked", "gqc.6 done and
# pushed", "Task abc.1 is done and unblocked abc.2" (the close or the push says it with more).
_STATUS_ONLY = re.compile(
    r"^(?:(?:task|bead|issue|ticket|story|epic|step|pr|phase)\s+)?`?[\w.#/-]+`?\s+(?:is\s+|are\s+)?(?:now\s+|also\s+)?"
    r"(?:done|unblocked|ready|complete|completed|closed|finished|merged|in progress|blocked|pushed|committed|green)"
    r"(?:\s*(?:,|and)\s+(?:done|unblocked|ready|complete|completed|closed|finished|merged|pushed|committed)"
    r"(?:\s+`?[\w.#/-]+`?)?)*[.!]?$", re.IGNORECASE)
_ADDRESSED = re.compile(r"^(?:(?:important|note|warning|tip|nb)\s*:\s*)?you\b", re.IGNORECASE)


def is_record(line: str) -> bool:
    """A record of work or of what was found: a commit, a close, a push, a test run, a
    file's settings, what was uncommitted or listed as open."""
    return bool(_RECORD.match(line))


def is_kept(line: str) -> bool:
    """True if a candidate line of a one-line summary is a fact worth a reader's time."""
    s = " ".join(line.split()).strip()
    if not s:
        return False
    if _markup(s):
        return False
    if error_line(s) or _RECORD.match(s) or _DECISION.search(s):
        return True  # an error, a record of work or a decision is never dropped
    if _STATUS_ONLY.match(s) or s.rstrip(".") == "Pushed to the remote" or _PATH_ONLY.match(s):
        return False  # a status, or a push naming nothing: the record of it says more
    if is_debris(s):
        return False
    if s.endswith("?") or _ADDRESSED.match(s):
        return False  # a question, or a quoted line addressed to "you"
    return not vague(s)


_PATH_ONLY = re.compile(r"^`?~?[\w.-]*(?:/[\w.-]+)+/?`?\.?$")  # a path with nothing said of it
_OUTLINE = re.compile(r"\(lines? \d+[-–]\d+(?:,\s*\d+[-–]\d+)+\)")  # "(lines 2-3, 14-40)"


def _markup(s: str) -> bool:
    """A table row, an HTML comment, a heading or a file's outline by line ranges: never
    an error or a record, whatever words it holds ("Error panel (lines 519-534) …")."""
    return bool(_TABLE.search(s) or "<!--" in s or s.startswith("#") or _OUTLINE.search(s)
                or len(re.findall(r"\(lines? \d+[-–]\d+", s)) >= 2)


def is_debris(s: str) -> bool:
    """Markdown cut apart: a table row, an unclosed `code` or **bold** mark, a heading, a
    lead-in left without what it led to, an HTML comment, a file's outline by line ranges."""
    return bool(
        _TABLE.search(s) or s.count("`") % 2 or s.count("**") % 2 or s.startswith("#")
        or re.match(r"^\d+[.)]?$", s) or s.endswith(":") or "<!--" in s
        or len(re.findall(r"\(lines? \d+[-–]\d+", s)) >= 2)  # a lead-in, markup, a file's outline


def vague(s: str) -> bool:
    """True if the line's subject cannot be resolved out of it ("All 8 tests pass")."""
    body = _LIST_HEAD.sub("", s).strip("*_ ")
    if _PRONOUN.match(body):
        return True
    return bool(_VAGUE_SUBJECT.match(body)) and not _ANCHOR.search(body)


def is_user_order(sentence: str) -> bool:
    """A person's instruction to the agent ("Work on bead spotter-fum"): it belongs to
    STATE's last instruction, not to memory, unless it states a preference or decision."""
    s = _LIST_HEAD.sub("", sentence.strip()).strip("*_ ")
    return bool(_USER_ORDER.match(s)) and not (_PREFERENCE.search(s) or _DECISION.search(s))


def is_user_statement(sentence: str) -> bool:
    """A person's decision, preference or fact about their project ("we use X", "I prefer Y",
    "don't do Z", "we decided…"): worth keeping up the tiers; never a question."""
    s = _LIST_HEAD.sub("", sentence.strip()).strip("*_ ")
    if not s or s.endswith("?") or len(_LETTERS.findall(s)) < 3:
        return False
    if _PROJECT_FACT.match(s) or _DECISION.search(s):
        return True
    return bool(_PREFERENCE.search(s)) and not _NARRATION.match(s)


def same_fact(a: str, b: str) -> bool:
    """True if one line says what the other says (case and spaces aside, or contained)."""
    x, y = (" ".join(re.sub(r"[^\w\s]", " ", t.lower()).split()) for t in (a, b))
    if not x or not y:
        return x == y
    small, big = (x, y) if len(x) <= len(y) else (y, x)
    return small == big or (len(small) >= 12 and f" {small} " in f" {big} ")


def cut_at_clause(text: str, limit: int) -> str:
    """`text` no longer than `limit`, cut at the last clause boundary outside a code span;
    whole when no boundary leaves a statement ("" when it is far too long for that)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    best = -1
    for m in re.finditer(r"[,;:]\s|\s[—–-]\s|\s\(", text[: limit + 1]):
        if text[: m.start()].count("`") % 2 == 0 and m.start() >= limit // 3:
            best = m.start()
    if best > 0:
        return text[:best].rstrip(" ,;:—–-")
    return text if len(text) <= 2 * limit else ""


# ------------------------------------------------------------------ settings and names

# Files whose lines are no settings of the project: tests and their fixtures, styles and
# markup, prose, lock files.
_NOT_SETTINGS = re.compile(
    r"(?:^|/)(?:tests?|spec|__tests__|fixtures?)/|(?:_test|_spec|\.test|\.spec)\.\w+$|(?:^|/)test_[^/]*$"
    r"|(?:^|/)conftest\.py$|\.(?:css|scss|sass|less|html?|svg|md|markdown|rst|txt|lock|csv|log)$"
    r"|(?:^|/)(?:package-lock|yarn\.lock|pnpm-lock)[^/]*$", re.IGNORECASE)
# Files that are configuration as a whole: any `key = value` / `key: value` line is a setting.
_CONFIG_FILE = re.compile(
    r"\.(?:toml|ya?ml|ini|cfg|conf|env|properties|json)$|(?:^|/)\.env[^/]*$|(?:^|/)config/[^/]+\.\w+$"
    r"|(?:^|/)(?:settings|config)\.\w+$|(?:^|/)Dockerfile$|(?:^|/)[\w.-]*compose[\w.-]*\.ya?ml$", re.IGNORECASE)
# A literal value: a number (with units or separators: 90_000, 1.5, 30s, 15 * 1000), a short
# quoted string, an atom or symbol, a boolean; or a call whose last argument is a number
# (a setting read from the environment with its default).
_NUMBER = r"-?\d[\d_.,]*(?:\s*[*x]\s*\d[\d_.]*)*\s*(?:ms|s|m|h|d|kb|mb|gb|%)?"
_LITERAL = (rf"(?:{_NUMBER}|\"[^\"\n]{{1,80}}\"|'[^'\n]{{1,80}}'|:[a-z_]\w*|true|false|True|False"
            rf"|[\w.:]+\([^()\n]{{0,80}},\s*\"?{_NUMBER}\"?\))")
_ATTR_SKIP = frozenset({"doc", "moduledoc", "typedoc", "impl", "spec", "type", "typep", "opaque", "callback",
                        "macrocallback", "behaviour", "derive", "enforce_keys", "external_resource", "compile",
                        "dialyzer", "before_compile", "after_compile", "on_load", "vsn", "deprecated", "since",
                        "endpoint", "tag", "moduletag", "describetag", "optional_callbacks", "file"})
_SETTING_LINES = (
    # a module attribute: `@default_ttl_seconds 120`
    re.compile(rf"^@([a-z]\w+)\s+({_LITERAL})\s*(?:#.*)?$"),
    # a named constant: `MAX_RETRIES = 5`, `export const TTL_MS = 90_000;`, `const PORT: u16 = 8080;`
    re.compile(rf"^(?:export\s+)?(?:(?:pub|private|public|protected|static|final|readonly|const|let|var|val)\s+)*"
               rf"(?:[\w<>\[\]]+\s+)?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{{3,}}[0-9]*)\s*(?::\s*[\w<>\[\]&' ]+)?"
               rf"\s*:?=\s*({_LITERAL})\s*[;,]?\s*(?:(?://|#).*)?$"),
)
# A line of a configuration file: `port = 8080`, `timeout: 15000`, `"timeout": 15000,`
_KEY_SET = re.compile(r"""^\s*\{?\s*["']?([A-Za-z_][\w.-]*)["']?\s*[:=]""", re.MULTILINE)
_CONFIG_LINE = re.compile(rf"^[\"']?([A-Za-z_][\w.-]*)[\"']?\s*[:=]\s*({_LITERAL})\s*,?\s*(?:#.*)?$")
# An environment variable's default in a shell script: `PORT="${SPOTTER_PORT:-1100}"`
_ENV_DEFAULT = re.compile(r"\$\{([A-Z][A-Z0-9_]{2,}):?-([^}\s]{0,40})\}")
# An environment variable read or set by code: `System.get_env("X")`, `os.environ["X"]`,
# `process.env.X`, `ENV.fetch("X")`, `env::var("X")`, `-e X=1`.
_ENV_READ = re.compile(r"(?:get_?env|environ(?:\.get)?|process\.env|\bENV(?:\.fetch)?|env::var|Getenv)\W{1,3}"
                       r"([A-Z][A-Z0-9_]{2,})\b")
_ENV_SET = re.compile(r"(?<![\w$])([A-Z][A-Z0-9]*_[A-Z0-9_]+)=(?![=\s])")
# A route of a web framework: `get "/api/x/:id", XController, :show`, `live "/projects/:id/review",
# ReviewLive`, `app.get('/x', …)`, `@app.route("/x")`, `router.post("/x", …)`.
_ROUTE = re.compile(r"^(?:@?\w+\.)?(get|post|put|patch|delete|live|route|forward|head|options)\b\s*\(?\s*"
                    r"[\"'](/[^\"'\s]*)[\"'](?:\s*,\s*([A-Z][\w.]*))?", re.IGNORECASE)
_MAX_SETTINGS = 5


def _tail_path(path: str) -> str:
    """The last two parts of a path (`services/review_token_store.ex`)."""
    parts = [p for p in _HOME.sub("~/", path).split("/") if p]
    return "/".join(parts[-2:])


def _written(name: str, args: dict) -> list[tuple[str, str]]:
    """(path, text written) of a Write, Edit, MultiEdit or apply_patch call."""
    path = str(args.get("file_path") or args.get("path") or args.get("notebook_path") or "")
    if name in ("Write", "create_file", "write_file"):
        return [(path, str(args.get("content") or ""))]
    if name in ("Edit", "str_replace_editor", "edit_file"):
        return [(path, str(args.get("new_string") or ""))]
    if name == "MultiEdit" and isinstance(args.get("edits"), list):
        return [(path, "\n".join(str(e.get("new_string") or "") for e in args["edits"] if isinstance(e, dict)))]
    if name == "apply_patch":
        patch = str(args.get("input") or args.get("patch") or "")
        out: list[tuple[str, str]] = []
        for m in re.finditer(r"^\*\*\* (?:Add|Update) File: (.+)$((?:\n(?!\*\*\* ).*)*)", patch, re.MULTILINE):
            added = [ln[1:] for ln in m.group(2).split("\n") if ln.startswith("+")]
            out.append((m.group(1).strip(), "\n".join(added)))
        return out
    return []


def settings(path: str, text: str) -> list[str]:
    """The settings and names a file's new text sets, each as it would be noted
    (`@default_ttl_seconds 120`, `SPOTTER_PORT` default 1100, route `GET /x` → XController)."""
    if not path or _NOT_SETTINGS.search(path):
        return []
    config = bool(_CONFIG_FILE.search(path))
    out: list[str] = []
    # a key set more than once in the file (`timeout` of each hook in a list) names no one setting
    keys = Counter(_KEY_SET.findall(text) if config else ())

    def add(item: str) -> None:
        if item not in out and len(out) < _MAX_SETTINGS:
            out.append(item)

    for raw in text.split("\n"):
        line = raw.strip()
        if not line or len(line) > 160 or line.startswith(("#", "//", "--", "*", "/*")):
            continue
        defaults = list(_ENV_DEFAULT.finditer(line))
        for m in defaults:
            default = m.group(2).strip("\"'")
            add(f"env `{m.group(1)}`" + (f" (default {default})" if default else ""))
        if defaults:
            continue
        route = _ROUTE.match(line)
        if route:
            verb = route.group(1).lower()
            verb = verb if verb in ("live", "forward", "route") else verb.upper()
            add(f"route `{verb} {route.group(2)}`" + (f" → {route.group(3)}" if route.group(3) else ""))
            continue
        matched = False
        for pattern in _SETTING_LINES:
            found = pattern.match(line)
            if found and not (pattern is _SETTING_LINES[0] and found.group(1) in _ATTR_SKIP):
                if pattern is _SETTING_LINES[0]:
                    add(f"`@{found.group(1)} {_value(found.group(2))}`")
                else:
                    add(f"`{found.group(1)} = {_value(found.group(2))}`")
                matched = True
                break
        if not matched and config:
            key = _CONFIG_LINE.match(line)
            if key and re.search(r"[A-Za-z]{2}", key.group(1)) and keys[key.group(1)] == 1:
                add(f"`{key.group(1)}: {_value(key.group(2))}`")
                matched = True
        if not matched:
            for m in _ENV_READ.finditer(line):
                add(f"env `{m.group(1)}`")
            for m in _ENV_SET.finditer(line):
                add(f"env `{m.group(1)}`")
    return out


def _value(text: str) -> str:
    return " ".join(text.split()).rstrip(",;")


def settings_facts(call: str) -> list[str]:
    """"path: `setting value`, …" for each file a Write/Edit call gave settings or names."""
    name, args = _args(call)
    out = []
    for path, text in _written(name, args):
        found = settings(path, text)
        if found:
            out.append(f"{_tail_path(path)}: {', '.join(found)}")
    return out


# ------------------------------------------------------------------ what was open then

_GIT_STATUS_FILE = re.compile(r"^\t(?:(modified|new file|deleted|renamed|typechange):\s+)?(\S.*)$")
_GIT_SHORT = re.compile(r"^([ MADRCU?!]{2}) (\S.*)$")
_BRANCH = re.compile(r"^On branch (\S+)", re.MULTILINE)
# An item of a tracker's listing: its id at the start of a line, after list marks, glyphs and
# [bracketed] labels (`1. [● P2] [epic] abc-u4u: Title`, `○ abc-obz.1 [● P1] - Title`,
# `123<TAB>Title<TAB>…`, `ENG-42  Title`).
_ITEM = re.compile(r"^[^\w\[#]*(?:\d+[.)]\s+)?(?:\[[^\]\n]*\]\s*)*#?([A-Za-z][A-Za-z0-9]*-[A-Za-z0-9]+(?:\.\d+)*"
                   r"|\d+(?=\t))(?=[\s:])(.*)$")
_PRIORITY = re.compile(r"\bP([0-4])\b")
_LISTING_ITEMS = 6  # files of a `git status` named
_LISTING_CHARS = 230  # a listing's statement: within what a one-line summary keeps whole
_TITLE_CHARS = 60


def git_status(output: str) -> str:
    """What `git status` said was uncommitted ("" for a clean tree or no status)."""
    branch = _BRANCH.search(output)
    files: list[str] = []
    section = ""
    for line in output.split("\n"):
        if line.startswith(("Changes to be committed", "Changes not staged")):
            section = "changed"
        elif line.startswith("Untracked files"):
            section = "new"
        m = _GIT_STATUS_FILE.match(line)
        if m and section:
            what = m.group(1) or ("untracked" if section == "new" else "changed")
            files.append(f"{m.group(2).strip()} ({what})")
            continue
        m = _GIT_SHORT.match(line)
        if m and not branch:
            code = m.group(1).strip()
            files.append(f"{m.group(2).strip()} ({'untracked' if code == '??' else code})")
    if not files:
        return ""
    more = f" and {len(files) - _LISTING_ITEMS} more" if len(files) > _LISTING_ITEMS else ""
    where = f" on {branch.group(1)}" if branch else ""
    return f"Uncommitted{where}: {', '.join(files[:_LISTING_ITEMS])}{more}"


def listing(command: str, output: str) -> str:
    """What a `git status` or a tracker's listing printed, as one statement ("" if nothing)."""
    output = _OUTPUT_HEAD.sub("", output, count=1)
    if output.startswith(toolcall.LISTING_HEAD):  # the command ingest put at its head
        output = output.partition("\n")[2]
    if re.search(r"\bgit\s+status\b", command):
        found = git_status(output)
        if found:
            return found
    items: dict[str, tuple[int, str]] = {}
    for line in output.split("\n"):
        m = _ITEM.match(line.strip("\r"))
        if not m or m.group(1) in items:
            continue
        rest = m.group(2)
        prio = _PRIORITY.search(line)
        title = rest.split("\t")[1] if "\t" in rest and rest.startswith("\t") else rest
        title = re.sub(r"^(?:\s*\[[^\]\n]*\]|\s*[:–—-]\s)+", "", title)
        title = re.sub(r"\s*\((?:blocked|blocks|parent|deps?)\b[^)]*\)?\s*$", "", title).strip(" :-–—")
        if len(_LETTERS.findall(title)) < 2:
            continue
        if len(title) > _TITLE_CHARS:
            title = title[:_TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"
        items[m.group(1)] = (int(prio.group(1)) if prio else 9, title)
    if not items:
        return ""
    ranked = sorted(items.items(), key=lambda kv: kv[1][0])  # by priority, then as listed
    mixed = len({p for p, _ in items.values()}) > 1  # a priority shown only where they differ
    head = f"Listed by {_listing_name(command)}: "
    shown: list[str] = []
    room = _LISTING_CHARS - len(head)
    for i, (p, t) in ranked:
        item = f"{'#' if i.isdigit() else ''}{i}{f' (P{p})' if mixed and p < 9 else ''} {t}"
        if shown and room - len(item) - 2 < 0:
            break
        shown.append(item)
        room -= len(item) + 2
    more = f", and {len(items) - len(shown)} more" if len(items) > len(shown) else ""
    return f"{head}{', '.join(shown)}{more}"


_LISTING_CMD = re.compile(r"(?:\b(?:bd|beads|br)\s+(?:ready|list|blocked)|\bgh\s+(?:issue|pr)\s+(?:list|status)"
                          r"|\bglab\s+(?:issue|mr)\s+list|\bjira\s+(?:issue\s+)?list|\blinear\s+issue\s+list)"
                          r"(?:\s+--?[\w=-]+)*")


def _listing_name(command: str) -> str:
    names = list(dict.fromkeys(m.group(0) for m in _LISTING_CMD.finditer(command)))
    return ", ".join(f"`{n}`" for n in names[:3]) or f"`{command.split('|')[0].strip()[:40]}`"


# ------------------------------------------------------------------ what a tracker item is called

# An item's line as a tracker shows or lists it: its id, then a separator, then its title
# (`○ abc-4 · Add the export   [● P2 · OPEN]`, `abc-4: Add the export`, `1. [● P2] [task] abc-4: …`,
# `○ abc-4 [● P1] - Add the export`, `123<TAB>Add the export`). "abc-4 is now unblocked" has none.
_TITLED = re.compile(r"^[^\w\[#]*(?:\d+[.)]\s+)?(?:\[[^\]\n]*\]\s*)*#?"
                     r"([A-Za-z][A-Za-z0-9]*-[A-Za-z0-9]+(?:\.\d+)*|\d+(?=\t))"
                     r"(?:\s*\[[^\]\n]*\])*(?:\s*[·:|–—]\s*|\s+-\s+|\t)(.+)$")
# ... and what a tracker prints after a title: `[● P2 · OPEN]`, `(blocked by: x)`, `● P2` (a child's)
_STATUS_TAIL = re.compile(r"\s*(?:\[[^\]\n]*\]|\((?:blocked|blocks|parent|deps?)\b[^)]*\)?|[●○◐✓]\s*P[0-4])\s*$")


def item_titles(output: str) -> dict[str, str]:
    """{id: title} of the items a tracker's `show` or listing printed (the first line of each id)."""
    out: dict[str, str] = {}
    for line in _OUTPUT_HEAD.sub("", output).split("\n")[:400]:
        m = _TITLED.match(line.strip("\r"))
        if not m or m.group(1) in out:
            continue
        title = m.group(2).split("\t")[0].strip()
        while _STATUS_TAIL.search(title):
            title = _STATUS_TAIL.sub("", title).strip()
        title = re.sub(r"^(?:\[[^\]\n]*\]\s*)+", "", title).strip(" :-–—·")
        if len(_LETTERS.findall(title)) >= 2 and not _NARRATION.match(title):
            out[m.group(1)] = title if len(title) <= 120 else title[:119].rsplit(" ", 1)[0] + "…"
    return out


def listed_titles(line: str) -> dict[str, str]:
    """{id: title} of a summary's "Listed by `…`: abc-1 Title, abc-2 (P1) Title" statement."""
    m = re.match(r"^Listed by [^:]*`: (.+?)(?:, and \d+ more)?$", line.strip())
    if not m:
        return {}
    out = {}
    for item in re.split(r", (?=#?[A-Za-z0-9][\w.-]*[ ])", m.group(1)):
        parts = re.match(r"^#?([A-Za-z0-9][\w.-]*)(?: \(P\d\))? (.+)$", item.strip())
        if parts and not parts.group(2).endswith("…"):
            out[parts.group(1)] = parts.group(2)
    return out
