"""What a week later cannot be re-derived: the settings and names a file written or edited
set, and what `git status` or a tracker's listing said was open. Unit checks of the
extractors, ingest of a real Claude Code session shape, and the summaries they reach."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from test_encode_facts import _call, _ingest, _one, _result, _session

from pamd.consolidate.summarizers import facts
from pamd.consolidate.summarizers.base import Group
from pamd.consolidate.summarizers.extractive import ExtractiveSummarizer
from pamd.core import toolcall
from pamd.core.entry import Entry

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _write(path: str, content: str, tool: str = "Write") -> str:
    key = "content" if tool == "Write" else "new_string"
    args = ({"file_path": path, key: content} if tool == "Write"
            else {"file_path": path, "old_string": "x", key: content})
    return f"[tool {tool}] {json.dumps(args)}"


def test_a_module_attribute_a_constant_an_env_default_and_a_route_are_settings():
    store = "defmodule S do\n  @moduledoc false\n  @impl true\n  @default_ttl_seconds 120\n  def f, do: 1\nend"
    assert facts.settings_facts(_write("/home/ann/app/lib/app/services/token_store.ex", store)) == [
        "services/token_store.ex: `@default_ttl_seconds 120`"]
    py = "MAX_RETRIES = 5\nTIMEOUT_S = 30  # seconds\nx = compute()\nport = int(os.getenv(\"APP_PORT\", \"8080\"))"
    assert facts.settings_facts(_write("/srv/app/worker.py", py, "Edit")) == [
        "app/worker.py: `MAX_RETRIES = 5`, `TIMEOUT_S = 30`, env `APP_PORT`"]
    sh = 'TOKEN="${APP_TOKEN:-}"\nPORT="${APP_PORT:-1100}"\ncurl -s "http://localhost:$PORT/x"'
    assert facts.settings_facts(_write("/p/scripts/start.sh", sh)) == [
        "scripts/start.sh: env `APP_TOKEN`, env `APP_PORT` (default 1100)"]
    routes = '    live "/projects/:id/review", ReviewLive\n    get "/review-context/:token", ContextController, :show'
    assert facts.settings_facts(_write("/p/lib/web/router.ex", routes, "Edit")) == [
        "web/router.ex: route `live /projects/:id/review` → ReviewLive, "
        "route `GET /review-context/:token` → ContextController"]
    assert facts.settings_facts(_write("/p/hooks/hooks.json", '{\n  "timeout": 15000\n}')) == [
        "hooks/hooks.json: `timeout: 15000`"]
    # a key set once for each item of a list names no one setting
    hooks = ('{"hooks": [\n  {"type": "command",\n   "timeout": 5000},\n  {"type": "command",\n   "timeout": 15000,'
             '\n   "matcher": "startup"\n  }\n]}')
    assert facts.settings_facts(_write("/p/hooks/hooks.json", hooks)) == ['hooks/hooks.json: `matcher: "startup"`']


def test_tests_styles_and_prose_set_no_settings():
    assert facts.settings_facts(_write("/p/test/app/store_test.exs", "@ttl 5\nMAX_RETRIES = 3")) == []
    assert facts.settings_facts(_write("/p/assets/app.css", "gap: 0;\nwidth: 10px;")) == []
    assert facts.settings_facts(_write("/p/docs/notes.md", "PORT = 8080")) == []
    # code that sets nothing: no statement
    assert facts.settings_facts(_write("/p/lib/a.ex", "def f(x), do: x + 1")) == []


def test_a_git_status_and_a_tracker_listing_are_one_statement_each():
    status = ("On branch feat-x\nChanges not staged for commit:\n  (use \"git add <file>...\")\n"
              "\tmodified:   lib/a.ex\n\nUntracked files:\n\tnotes/\n")
    assert facts.listing("git status", status) == "Uncommitted on feat-x: lib/a.ex (modified), notes/ (untracked)"
    assert facts.listing("git status", "On branch x\nnothing to commit, working tree clean") == ""
    assert facts.listing("git status -s", " M .mcp.json\n?? tmp/") == "Uncommitted: .mcp.json (M), tmp/ (untracked)"
    ready = ("📋 Ready work (3 issues with no blockers):\n\n"
             "1. [● P2] [epic] app-u4u: Add project filter chips to the dashboard\n"
             "2. [● P1] [task] app-obz.1: Filter tmux output by pane id (blocked by: app-obz)\n"
             "→ Fetching from origin/main...\n")
    assert facts.listing("bd sync && bd ready", "[tool result] $ bd sync && bd ready\n" + ready) == (
        "Listed by `bd ready`: app-obz.1 (P1) Filter tmux output by pane id, "
        "app-u4u (P2) Add project filter chips to the dashboard")
    gh = "12\tFix login redirect loop\tbug\tabout 1 day ago\n9\tAdd dark mode\t\tabout 3 days ago"
    assert facts.listing("gh issue list", gh) == \
        "Listed by `gh issue list`: #12 Fix login redirect loop, #9 Add dark mode"
    many = "\n".join(f"○ app-{i:03d} [● P2] [task] - A task with a fairly long title number {i}" for i in range(20))
    line = facts.listing("bd list --status=open", many)
    assert len(line) <= 260 and line.endswith("more") and facts.is_kept(line)


def test_listing_commands_are_their_own_kind():
    for cmd in ("git status", "git status --short", "bd ready", "bd list --status=open", "gh issue list",
                "glab mr list", "jira issue list"):
        assert toolcall.kind("Bash", {"command": cmd}) == toolcall.LISTING, cmd
    assert toolcall.kind("Bash", {"command": "git commit -m x && git status"}) == toolcall.COMMIT
    assert toolcall.kind("Bash", {"command": "ls -la"}) is None


def test_a_listing_is_kept_headed_by_its_command_and_not_trash(brain, tmp_path):
    es = _ingest(brain, tmp_path, _session([
        _call("t1", "Bash", {"command": "git status"}),
        _result("t1", "On branch main\nChanges not staged for commit:\n\tmodified:   .mcp.json\n"),
        _call("t2", "Bash", {"command": "ls -la"}),
        _result("t2", "total 0\ndrwx a\n"),
    ]))
    status = _one(es, "[tool result] $ git status")
    assert "modified:   .mcp.json" in status.text and status.importance >= 0.6
    assert _one(es, "[tool result] total 0").importance < 0.15


def _entry(i: int, role: str, text: str, importance: float = 0.5) -> Entry:
    return Entry(id=f"e-{i:012d}", ts=T0 + timedelta(minutes=i), role=role, text=text, importance=importance)


def test_an_l1_summary_states_the_settings_and_the_listing_and_l3_keeps_them():
    filler = [_entry(i, "assistant", f"The renderer module number {i} now formats output rows with padding "
                                     f"and colour for the dashboard view number {i}.") for i in range(12)]
    group = (*filler,
             _entry(20, "assistant", _write("/p/lib/app/services/token_store.ex",
                                            "defmodule S do\n  @default_ttl_seconds 120\nend")),
             _entry(21, "tool", "[tool result] File created successfully", 0.1),
             _entry(22, "tool", "[tool result] $ bd ready\n1. [● P1] [epic] app-obz: Fix terminal pane filter\n", 0.6))
    l1, _ = ExtractiveSummarizer().summarize([Group("g", "L1", group, 120)])
    assert "services/token_store.ex: `@default_ttl_seconds 120`" in l1[0]
    assert "Wrote " not in l1[0]  # the settings name the file and say more
    assert "Listed by `bd ready`: app-obz Fix terminal pane filter" in l1[0]
    summary = Entry(id="s-000000000001", ts=T0 + timedelta(hours=1), role="summary", tier="L2",
                    sources=("e-1",), text=l1[0])
    l3, _ = ExtractiveSummarizer().summarize([Group("g", "L3", (summary,), 60)])
    assert "services/token_store.ex: `@default_ttl_seconds 120`" in l3[0]
