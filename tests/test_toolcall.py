"""Tool calls inside entries: their words (prose), a call's gist, a text made readable."""

from __future__ import annotations

import pytest

from pamd.core.toolcall import gist, is_call, prose, readable


@pytest.mark.parametrize("call,expected", [
    ('[tool Bash] {"command": "git log --oneline -20", "description": "Recent commits"}',
     "[tool Bash] git log --oneline -20 (Recent commits)."),
    # A search shows what it looked for, a command what it ran.
    ('[tool Grep] {"pattern": "ConnCase|LiveViewTest", "path": "/home/USER/projects/spotter-worktrees/'
     'spotter-gqc", "output_mode": "files_with_matches"}',
     "[tool Grep] ConnCase|LiveViewTest in spotter-worktrees/spotter-gqc."),
    ('[tool Glob] {"pattern": "**/*_test.exs", "path": "/home/USER/projects/spotter"}',
     "[tool Glob] **/*_test.exs in projects/spotter."),
    ('[tool Bash] {"command": "mix test test/spotter_web/live/session_live_test.exs:42", '
     '"description": "Run tests"}',
     "[tool Bash] mix test test/spotter_web/live/session_live_test.exs:42 (Run tests)."),
    ('[tool Bash] {"command": "cd /home/u/app && mix ecto.migrate 2>&1 | tail -20", '
     '"description": "Run the state migration for the review annotations table"}',
     "[tool Bash] mix ecto.migrate (Run the state migration for the review annotations table)."),
    ('[tool Bash] {"command": "git commit -m \\"$(cat <<\'EOF\'\\nfeat: unified transcript visualization '
     'and debug parity across session and subagent views\\nEOF\\n)\\"", "description": "Commit it"}',
     '[tool Bash] Commit it: git commit -m feat: unified transcript visualization and debug…'),
    # Claude Code writes replace_all first: the file is what the call touched.
    ('[tool Edit] {"replace_all": false, "file_path": "/home/u/projects/spotter-worktrees/spotter-gqc/'
     'lib/spotter/transcripts/annotation.ex", "old_string": "defmodule',  # cut short at ingest
     "[tool Edit] …/projects/spotter-worktrees/spotter-gqc/lib/spotter/transcripts/annotation.ex."),
    ('[tool TodoWrite] {"todos": [{"content": "Fix the bug", "status": "pending"}]}',
     "[tool TodoWrite] Fix the bug."),
    ('[tool call get_weather] {"city": "Paris"}', "[tool get_weather] Paris."),
    ("[tool ExitPlanMode] {}", "[tool ExitPlanMode]"),
    ('[tool Bash] {"command": "echo \\"hi\\"\\nls"}', '[tool Bash] echo "hi" ls.'),
])
def test_a_call_is_its_gist(call, expected):
    assert gist(call) == expected


def test_tool_output_is_not_a_call():
    assert not is_call("[tool result] 3 tests, 0 failures")
    assert not is_call("[tool error] Exit code 1")
    assert readable("[tool result] {\"ok\": true}") == "[tool result] {\"ok\": true}"


def test_prose_is_what_comes_before_the_calls():
    assert prose('The build failed.\n[tool call run] {"cmd": "make"}') == "The build failed."
    assert prose('[tool Bash] {"command": "make"}') == ""
    assert prose("No calls here, [tool X] mid-line is words.") == "No calls here, [tool X] mid-line is words."


def test_readable_drops_the_cut_note_and_keeps_a_summarys_words():
    cut = '[tool Edit] {"file_path": "a.py", "old\n…[2065 more characters in the source transcript]'
    assert readable(cut) == "[tool Edit] a.py."
    line = ('assistant: [tool Bash] {"command": "git log", "description": "Recent commits"} '
            '[tool Bash] 30000} All green; "description": "Show commits"} The rates table has a GBP row.')
    assert readable(line, summary=True) == (
        "assistant: [tool Bash] git log (Recent commits). [tool Bash] Show commits. All green; The rates table "
        "has a GBP row.")
    # The fragment ends at its first end that words follow; the words
    # between it and more of its arguments stay, those arguments go to the gist.
    line = ('[tool Bash] {"command": "mix test 2>&1", 120000} All 19 tests pass. Now close the bead, '
            'commit and push. "description": "Close gqc.7 bead"}')
    assert readable(line, summary=True) == (
        "[tool Bash] mix test (Close gqc.7 bead). All 19 tests pass. Now close the bead, commit and push.")
    line = ('[tool Bash] {"command": "bd show x.1", "description": "Show the task"} Let me claim it. '
            '"description": "Claim x.1"} [tool Write] "file_path": "lib/a.ex"} Good. 30000}')
    assert readable(line, summary=True) == (
        "[tool Bash] bd show x.1 (Show the task). Let me claim it. [tool Write] lib/a.ex. Good.")
    # A gist already written stays as it is, words after it too.
    assert readable("assistant: [tool Bash] Recent commits. Good, now the tests.", summary=True) == \
        "assistant: [tool Bash] Recent commits. Good, now the tests."
