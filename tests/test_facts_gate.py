"""The fact gate: a line of L3 or MEMORY.md is a whole statement that names its subject.

Unit checks of the gate, then a brain built from a real-shaped Claude Code session (the
way the hooks and the daemon build it, aged eight days) whose L3 and MEMORY.md lines are
read one by one: markdown debris, lines whose subject no reader can resolve, a person's
orders and a push that names nothing never reach them; errors, commits, closes and the
fix that was made do.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from test_boot_quality import Session, _cli, age

from pamd.consolidate.summarizers import facts
from pamd.consolidate.summarizers.base import Group
from pamd.consolidate.summarizers.extractive import ExtractiveSummarizer
from pamd.core.entry import Entry

BAD = ["**gqc.6", "| Commit | Task | Description |. | `b9288c2` | spotter-fum.2 | Rebuilt panel |",
       "That line is already fixed", "The epic has 4 child tasks", "All 8 tests pass", "11 of 12 pass",
       "10 of 12 pass now", "Important: You must exit with code 0 for JSON output to be processed",
       "The auto-generated migration uses `ALTER TABLE", "It uses ETS, not a GenServer callback",
       "(Plan mode approval - implicit) spotter-fum.3:",
       "Template Structure (lines 477-712, inline in render/1) <!-- Debug anchor (if show_debug) -->",
       "Error panel (lines 519-534) Rework panel (lines 536-549) Template Structure (lines 185-292",
       "Terminal Selection (lines 145-158) Transcript Selection (lines 160-171) Save Annotation (lines 186-217)",
       "Would you like me to skip the hook for this commit, or fix the pre-existing issues first?",
       "spotter-fum.2 is now unblocked", "lib/spotter/services/tmux.ex", "Pushed to the remote",
       "gqc.6 done and pushed",
       "Task `spotter-dov.1` is done and unblocked `spotter-dov.2`"]
GOOD = ["Closed spotter-dov.2: Removed silent 5-line truncation",
        'Committed "test: add regression coverage for transcript rendering (spotter-fum.4)"',
        "fatal: The current branch spotter-gqc has no upstream branch",
        "Fixed by using `Sandbox.mode(Repo, {:shared, self()})` instead of just `Sandbox.checkout`",
        "All 12 LiveView tests pass", "services/review_token_store.ex: `@default_ttl_seconds 120`",
        "Uncommitted on main: .mcp.json (modified)", "Listed by `bd ready`: abc-a0y (P1) Fix the pane filter",
        "The `live/2` helper needs `Phoenix.ConnTest.get/2` imported",
        "Tmux errors are safe, so LiveView tests should work", "Pushed spotter-gqc to github.com:ann/spotter.git"]


@pytest.mark.parametrize("line", BAD)
def test_a_weak_line_is_not_kept(line):
    assert not facts.is_kept(line)


@pytest.mark.parametrize("line", GOOD)
def test_a_fact_naming_its_subject_is_kept(line):
    assert facts.is_kept(line)


def test_a_persons_order_is_told_from_a_preference():
    assert facts.is_user_order("Work on bead spotter-fum")
    assert facts.is_user_order("Start with the first ready task")
    assert not facts.is_user_order("Always use SQLite for the test database, never Postgres")
    assert not facts.is_user_order("The tests are slow on CI")


def test_a_long_sentence_is_cut_at_a_clause_never_inside_code():
    text = ("The migration adds `annotation_refs (id, session_id, message_id)` to the schema, "
            "and the resource gets a `belongs_to :session` relation with a cascade delete so "
            "removing a session removes its refs as well as the annotations they point at")
    cut = facts.cut_at_clause(text, 120)
    assert cut == ("The migration adds `annotation_refs (id, session_id, message_id)` to the schema")
    assert facts.cut_at_clause("x " * 300, 100) == ""


def test_same_fact_ignores_case_spaces_and_containment():
    assert facts.same_fact("Pushed  to the remote", "pushed to the Remote")
    assert facts.same_fact("Closed spotter-dov.2", "Closed spotter-dov.2: Removed silent truncation")
    assert not facts.same_fact("Closed spotter-dov.2", "Closed spotter-dov.3")


def test_push_output_and_test_command_name_their_subject():
    out = ("To github.com:ann/spotter.git\n   1a2b3c4..5d6e7f8  spotter-gqc -> spotter-gqc\n")
    assert facts.pushed(out) == "Pushed spotter-gqc to github.com:ann/spotter.git"
    call = '[tool Bash] {"command": "mix test test/spotter/transcript_test.exs 2>&1 | tail -5"}'
    assert facts.test_command(call) == "mix test test/spotter/transcript_test.exs"


# An end-of-task report: what most of a real session's text is, and what sizes its summary.
REPORT = " ".join(
    f"`Spotter.{m}` now renders {what} through `TranscriptRenderer.render/2` with the light theme, "
    f"and its {n} tests in test/spotter/{m.lower()}_test.exs cover the empty, threaded and debug cases."
    for m, what, n in [("SessionLive", "the transcript panel", 14), ("SubagentLive", "subagent threads", 9),
                       ("AnnotationLive", "saved annotations", 7), ("HooksController", "hook payloads", 6),
                       ("TranscriptParser", "JSONL records", 21), ("ThreadBuilder", "reply chains", 11),
                       ("DebugSidecar", "raw JSON", 5), ("ExpandControls", "collapsed tool output", 8)])


def spotter_day(start: datetime) -> Session:
    s = Session("s-spotter", start)
    s.user("Work on bead spotter-fum. Start with the first ready task.")
    for name in ("transcript", "session_live", "annotation", "renderer"):
        # what an agent reads is bulk: it sizes the summaries, none of it is a fact
        body = "\n".join(f"  def {name}_{i}(conn, params), do: render(conn, :{name}_{i}, params)" for i in range(60))
        s.tool("Read", {"file_path": f"/home/ann/spotter/lib/spotter/{name}.ex"}, body)
    s.say(REPORT)
    s.say("**gqc.6")
    s.say("| Commit | Task | Description |\n|---|---|---|\n| `b9288c2` | spotter-fum.2 | Rebuilt panel |")
    s.say("The epic has 4 child tasks.")
    s.say("Important: You must exit with code 0 for JSON output to be processed.")
    s.tool("Bash", {"command": "mix test test/spotter/transcript_test.exs 2>&1 | tail -20"},
           "  1) test renders threads (Spotter.TranscriptTest)\n     test/spotter/transcript_test.exs:40\n"
           "     ** (DBConnection.OwnershipError) cannot find ownership process for #PID<0.412.0>\n\n"
           "12 tests, 1 failure", error=True)
    s.say("Fixed by using `Sandbox.mode(Repo, {:shared, self()})` instead of just `Sandbox.checkout`.")
    s.tool("Bash", {"command": "mix test test/spotter/transcript_test.exs 2>&1 | tail -5"}, "12 tests, 0 failures")
    s.say("All 12 tests pass.")
    s.say("That line is already fixed.")
    s.tool("Bash", {"command": "git commit -m \"fix: share the sandbox with LiveView processes (spotter-fum.4)\""},
           "[spotter-gqc 5d6e7f8] fix: share the sandbox with LiveView processes (spotter-fum.4)")
    s.tool("Bash", {"command": "git push"}, "fatal: The current branch spotter-gqc has no upstream branch.",
           error=True)
    s.tool("Bash", {"command": "git push"},
           "To github.com:ann/spotter.git\n   1a2b3c4..5d6e7f8  spotter-gqc -> spotter-gqc")
    s.say("Pushed to the remote.")
    s.tool("Bash", {"command": "bd close spotter-dov.2 --reason \"Removed silent 5-line truncation\""},
           "✓ Closed spotter-dov.2")
    s.say("11 of 12 pass.")
    return s


@pytest.fixture(scope="module")
def spotter(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gate")
    root = tmp / "brain"
    assert _cli(tmp, "init", str(root), now="2026-03-01T00:00:00Z")[0] == 0
    t0 = datetime(2026, 3, 2, 9, 0)
    s = spotter_day(t0)
    end = s.write(tmp / f"{s.sid}.jsonl")
    assert _cli(root, "ingest", str(tmp / f"{s.sid}.jsonl"), now=end)[0] == 0
    age(root, t0 + timedelta(hours=12), t0 + timedelta(days=9))
    return root


def _facts(root) -> list[str]:
    """Each phrase of each L3 and MEMORY.md entry line."""
    out = []
    for path in [root / "MEMORY.md", *root.glob("memory/L3/*.md")]:
        for line in path.read_text().splitlines():
            if line.startswith("> "):
                body = re.sub(r"^> (?:[\w, ]+: )?", "", line)
                body = re.sub(r" \(\d{4}-\d{2}-\d{2}(?: – \d{4}-\d{2}-\d{2})?\)$", "", body)
                out.extend(p.strip() for p in body.split("; "))
    return out


def test_memory_and_l3_hold_facts_naming_their_subject_and_no_weak_line(spotter):
    lines = _facts(spotter)
    assert lines, "no L3/MEMORY.md entries"
    text = "\n".join(lines)
    for bad in ("Work on bead", "Start with the first ready task", "**gqc.6", "| Commit |",
                "The epic has", "Important: You must", "All 12 tests pass", "That line is",
                "11 of 12 pass", "Pushed to the remote"):
        assert bad not in text, (bad, lines)
    # the few facts a 50:1 tier has room for are the records of the work
    assert all(re.match(r"(?:Committed|Closed|Pushed spotter-gqc|fatal:|\*\* \(|Fixed by)", ln) for ln in lines), lines


T0 = datetime(2026, 2, 11, 21, 0, tzinfo=UTC)
# L2 lines of an agent's sessions as the tier below L3 holds them.
L2_LINES = [
    "assistant: Important: You must exit with code 0 for JSON output to be processed. **gqc.6. "
    "The epic has 4 child tasks. | Commit | Task | Description |. | `b9288c2` | spotter-fum.2 | Rebuilt |.",
    "user: Work on bead spotter-fum. Start with the first ready task.",
    "assistant: Closed spotter-dov.2: Removed silent 5-line truncation.",
    "assistant: All 8 tests pass. That line is already fixed. 11 of 12 pass.",
    "tool: fatal: The current branch spotter-gqc has no upstream branch.",
    "assistant: Fixed by using `Sandbox.mode(Repo, {:shared, self()})` instead of just `Sandbox.checkout`.",
    "assistant: Pushed to the remote.",
    "tool: Pushed spotter-gqc to github.com:ann/spotter.git.",
    "assistant: Committed \"test: add regression coverage for transcript rendering (spotter-fum.4)\".",
    "assistant: The auto-generated migration uses `ALTER TABLE annotations ADD COLUMN ref_id; "
    "CREATE INDEX annotations_ref_id` which SQLite runs in one transaction.",
    "assistant: Pushed to the remote.",
]


def test_an_l3_line_of_summaries_keeps_the_facts_and_drops_the_weak_lines():
    l2 = tuple(Entry(id=f"s-{i:012d}", ts=T0 + timedelta(minutes=i), role="summary", tier="L2",
                     sources=(f"e-{i}",), text=t) for i, t in enumerate(L2_LINES))
    text, _ = ExtractiveSummarizer().summarize([Group("g", "L3", l2, 200)])
    line = text[0]
    for bad in ("Important: You must", "**gqc.6", "The epic has", "| Commit |", "Work on bead",
                "Start with the first", "All 8 tests", "That line is", "11 of 12", "Pushed to the remote"):
        assert bad not in line, (bad, line)
    for good in ("Closed spotter-dov.2: Removed silent 5-line truncation",
                 "fatal: The current branch spotter-gqc has no upstream branch",
                 "Fixed by using `Sandbox.mode(Repo, {:shared, self()})` instead of just `Sandbox.checkout`",
                 "Pushed spotter-gqc to github.com:ann/spotter.git", "(spotter-fum.4)",
                 "`ALTER TABLE annotations ADD COLUMN ref_id; CREATE INDEX annotations_ref_id`"):
        assert good in line, (good, line)


def test_state_reads_work_done_and_todos_from_the_calls_that_name_them():
    """STATE reads finished work only from Bash calls and open items only from TodoWrite
    calls, and skips a message that names neither without reading its calls: a call written
    `[tool call NAME]`, after prose, is read all the same."""
    from pamd.myelin.snapshot import snapshot

    texts = ['Working on it.\n[tool TodoWrite] {"todos": [{"content": "Add the GBP rate", "status": '
             '"in_progress"}, {"content": "Ship it", "status": "completed"}]}',
             'Done.\n[tool call Bash] {"command": "git commit -m \\"fix: round GBP rates\\""}',
             '[tool Edit] {"file_path": "/srv/app/rates.ex", "old_string": "a", "new_string": "b"}']
    es = [Entry(id=f"e-{i:012d}", ts=T0 + timedelta(minutes=i), role="assistant", text=c) for i, c in enumerate(texts)]
    st = snapshot(es, T0 + timedelta(hours=1))
    assert st["done"] == ['Committed "fix: round GBP rates" (2026-02-11)'], st["done"]
    assert st["active_goals"] == ["Add the GBP rate (in progress)"], st["active_goals"]


def test_state_done_drops_a_push_naming_nothing_when_another_names_the_branch():
    from pamd.myelin.snapshot import snapshot

    calls = ['[tool Bash] {"command": "git push"}', '[tool Bash] {"command": "git push -u origin spotter-gqc"}',
             '[tool Bash] {"command": "bd close spotter-dov.2 --reason \\"Removed silent 5-line truncation\\""}']
    es = [Entry(id=f"e-{i:012d}", ts=T0 + timedelta(minutes=i), role="assistant", text=c) for i, c in enumerate(calls)]
    done = snapshot(es, T0 + timedelta(hours=1))["done"]
    plain = [re.sub(r" \(\d{4}-\d\d-\d\d\)$", "", d) for d in done]  # without the day each was done
    assert "Pushed origin spotter-gqc" in plain and "Pushed to the remote" not in plain, done
    assert any(d.startswith("Closed spotter-dov.2") for d in done), done


@pytest.mark.parametrize("sentence,expected", [
    ("**Input:** List of parsed message maps", "Input: List of parsed message maps"),
    ("**Input**: List of parsed message maps", "Input: List of parsed message maps"),
    ("- **Hook Selection:** Choose the highlighter hook", "Hook Selection: Choose the highlighter hook"),
    ("**Note** the cache is cold after a deploy", "Note the cache is cold after a deploy"),
    ("**Heading:**", "Heading"),
])
def test_a_bold_label_keeps_one_colon_and_a_bold_word_gets_none(sentence, expected):
    """A label in bold reads "Input: …" (not "Input:: …"); a word in bold that opens a
    sentence is a word, not a label."""
    assert facts.clean(sentence) == expected


def test_a_recap_of_the_session_keeps_its_events_not_its_reference_sections():
    """Claude Code's compaction summary: the concepts it lists and the files it shows with
    their code are reference (they made MEMORY.md lines such as "WCAG 2.2 AA contrast
    compliance"); what was asked, what broke and its fix, and what is pending stay."""
    recap = ("[compaction summary]\n1. Primary Request and Intent:\n"
             "   The user asked to unify the transcript views.\n\n"
             "2. Key Technical Concepts:\n   - WCAG 2.2 AA contrast compliance\n   - esbuild JS pipeline\n\n"
             "3. Files and Code Sections:\n   - **`lib/web/view.ex`** (NEW)\n"
             "     ```elixir\n     def render(x), do: x\n     ```\n\n"
             "4. Errors and fixes:\n   - **Unused import**: fixed by removing the alias.\n\n"
             "7. Pending Tasks:\n   - spotter-dov.4: debug sidecar")
    kept = facts.recap_events(recap)
    assert "WCAG" not in kept and "esbuild" not in kept and "view.ex" not in kept and "def render" not in kept
    for said in ("unify the transcript views", "fixed by removing the alias", "spotter-dov.4: debug sidecar"):
        assert said in kept
    assert "Errors and fixes" not in kept and "Pending Tasks" not in kept  # headings say nothing
    plain = "Closed spotter-dov.1: extracted the shared component.\n2. Key Technical Concepts: none"
    assert facts.recap_events(plain) == plain
    s = ExtractiveSummarizer().summarize([Group("g", "L1", (Entry(
        id="e-1", ts=datetime(2026, 2, 12, 20, 30, tzinfo=UTC), role="assistant", text=recap),), 200)])[0][0]
    assert "WCAG" not in s and "removing the alias" in s, s
