"""The Claude Code plugin: its hooks run as Claude Code runs them (`sh -c COMMAND` in the
project folder, the hook's JSON on stdin), and the real `claude` CLI validates the plugin and
connects to `pamd mcp`.

Hook input shapes follow Claude Code's hooks reference (https://code.claude.com/docs/en/hooks,
"Hook input"): every event has session_id, transcript_path, cwd, permission_mode and
hook_event_name; SessionStart adds source (startup | resume | clear | compact) and model;
PreCompact adds trigger (manual | auto) and custom_instructions; SubagentStop adds agent_id,
agent_type and agent_transcript_path; SessionEnd adds reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import pytest
from conftest import NOW, REPO, git, head_count

PLUGIN = REPO / "integrations" / "claude-code"
HOOKS = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]


def env_with_pamd(**more: str) -> dict[str, str]:
    # The hook finds pamd-hook on PATH, as in a person's shell; this interpreter's bin is first.
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PAMD_NOW": NOW, **more}


def command(event: str) -> str:
    (entry,) = HOOKS[event]
    (hook,) = entry["hooks"]
    return hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN))


def start(event: str, payload: dict, cwd: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(["sh", "-c", command(event)], cwd=cwd, env=env or env_with_pamd(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_hook(event: str, payload: dict, cwd: Path, env: dict | None = None) -> tuple[int, str, str]:
    p = start(event, payload, cwd, env)
    out, err = p.communicate(json.dumps(payload).encode(), timeout=120)
    return p.returncode, out.decode(), err.decode()


def payload(event: str, project: Path, transcript: Path, **more) -> dict:
    return {"session_id": "3f2a9c1e-0b7d-4c55-9e1a-aa0000000001", "transcript_path": str(transcript),
            "cwd": str(project), "permission_mode": "default", "hook_event_name": event, **more}


@pytest.fixture
def project(brain, tmp_path) -> Path:
    """A project folder whose .pamd-brain names a brain holding a week of memories."""
    week = resources.files("pamd.data").joinpath("sample-week.jsonl")
    assert brain("ingest", str(week))[0] == 0
    facts = tmp_path / "facts.jsonl"  # a brain whose boot is far over what a hook may print
    facts.write_text("".join(json.dumps({"ts": f"2026-11-29T{i // 60:02d}:{i % 60:02d}:00Z", "role": "user",
                                         "text": f"Fact {i}: the staging host stg-{i} runs nginx {i}.{i}"
                                                 f" and Debian {i % 12}"}) + "\n" for i in range(150)))
    assert brain("ingest", str(facts))[0] == 0
    p = tmp_path / "app"
    p.mkdir()
    (p / ".pamd-brain").write_text(str(brain.cwd) + "\n")
    return p


def test_session_start_prints_the_brief_within_claude_codes_limit(brain, project):
    assert len(brain("boot")[1]) > 20_000
    for source in ("startup", "resume", "clear", "compact"):
        code, out, err = run_hook("SessionStart", payload("SessionStart", project, project / "t.jsonl",
                                                          source=source, model="claude-sonnet-4-5"), project)
        assert code == 0 and err == "", err
        reply = json.loads(out)
        assert set(reply) == {"hookSpecificOutput"}
        assert reply["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        context = reply["hookSpecificOutput"]["additionalContext"]
        assert 6000 < len(context) <= 9000
        assert context.startswith("# Boot context: ") and "\n## Hot memory" in context
        assert "\n## Left out to fit " in context  # the whole boot is over 20,000 characters
        assert context.rstrip().endswith("or anything the person asks you to keep.")
        assert "call the `recall` tool" in context.split("\n\n")[-1]


def test_stop_ingests_the_transcript_in_the_background(brain, project, tmp_path):
    transcript = tmp_path / "sessions" / "s1.jsonl"
    transcript.parent.mkdir()
    transcript.write_text("".join(json.dumps({
        "type": role, "sessionId": "s1", "cwd": str(project), "isSidechain": False,
        "timestamp": f"2026-11-30T10:0{i}:00Z", "uuid": f"s1-{i}",
        "message": {"role": role, "content": [{"type": "text", "text": text}]}}) + "\n"
        for i, (role, text) in enumerate([("user", "Why did the zircon migration fail?"),
                                          ("assistant", "The zircon migration timed out on the orders table")])))
    before = head_count(brain.cwd)
    for event, more in (("Stop", {"stop_hook_active": False}), ("PreCompact", {"trigger": "auto",
                                                                               "custom_instructions": ""})):
        code, out, err = run_hook(event, payload(event, project, transcript, **more), project)
        assert (code, out, err) == (0, "", "")
        deadline = time.monotonic() + 120
        while head_count(brain.cwd) == before and time.monotonic() < deadline:
            time.sleep(0.2)
        log = (brain.cwd / ".pamd" / "hooks.log").read_text()
        if event == "Stop":
            assert head_count(brain.cwd) == before + 1, log
            assert "zircon migration timed out" in git(brain.cwd, "show", "HEAD")
            wait_for_the_brief(brain.cwd)  # and the brief for the agent's next start is built after it
        else:  # the same transcript again: nothing new, no commit
            deadline = time.monotonic() + 120
            while "nothing new" not in (brain.cwd / ".pamd" / "hooks.log").read_text():
                assert time.monotonic() < deadline, log
                time.sleep(0.2)
            assert head_count(brain.cwd) == before + 1


def wait_for_the_brief(root: Path) -> dict:
    from pamd.agent.claude_code import cached, signature

    deadline = time.monotonic() + 120
    while (kept := cached(root)) is None or kept["signature"] != signature(root):
        assert time.monotonic() < deadline, (root / ".pamd" / "hooks.log").read_text()
        time.sleep(0.2)
    return kept


def test_session_start_answers_from_the_kept_brief_and_renews_it_behind(brain, tmp_path):
    """A brief takes seconds on a large brain and the hook must answer in under one: it
    prints the brief kept in .pamd/brief.json, and builds the next one in the background
    when the brain changed since."""
    week = resources.files("pamd.data").joinpath("sample-week.jsonl")
    assert brain("ingest", str(week))[0] == 0
    project = tmp_path / "app"
    project.mkdir()
    (project / ".pamd-brain").write_text(str(brain.cwd) + "\n")

    def context() -> str:
        code, out, err = run_hook("SessionStart", payload("SessionStart", project, project / "t.jsonl",
                                                          source="startup"), project)
        assert code == 0 and err == "", err
        return json.loads(out)["hookSpecificOutput"]["additionalContext"]

    first = context()
    assert wait_for_the_brief(brain.cwd)["text"] == first
    (brain.cwd / ".pamd" / "brief.json").write_text(json.dumps({"signature": "x", "text": "kept brief"}))
    assert context() == "kept brief"  # stale: printed, and renewed behind
    assert wait_for_the_brief(brain.cwd)["text"] == first
    assert brain("remember", "The quokka service moved to port 7443")[0] == 0
    assert context() == first  # the brain changed: the kept brief now, the new one next time
    renewed = wait_for_the_brief(brain.cwd)["text"]
    assert "quokka service moved to port 7443" in renewed and context() == renewed


def test_a_large_brain_with_no_kept_brief_starts_from_its_own_files(brain, monkeypatch):
    """With no brief kept (a new clone), SessionStart built the whole brief while it waited:
    seconds on a large brain, where the hook must answer in under one. Past
    INLINE_TIER_BYTES of tier files it prints a brief of STATE.md, DNA.md and MEMORY.md that
    says what it lacks, and the whole brief is built in the background for next time."""
    from pamd.agent import claude_code

    week = resources.files("pamd.data").joinpath("sample-week.jsonl")
    assert brain("ingest", str(week))[0] == 0
    root = brain.cwd
    (root / "DNA.md").write_text((root / "DNA.md").read_text() + "\nRun every export with --dry-run first.\n")
    git(root, "commit", "-qam", "a person's note")
    whole = claude_code.brief(root)
    recent_line = "Deployed billing-export v1.0 to production"
    assert recent_line in whole  # an L0 message: recent detail, in the tiers' day files
    assert claude_code.tier_bytes(root) > 1000
    monkeypatch.setattr(claude_code, "INLINE_TIER_BYTES", 1000)
    first = claude_code.session_brief(root)
    assert "Run every export with --dry-run first." in first and recent_line not in first
    assert claude_code.PARTIAL_NOTE.strip() in first and first.rstrip().endswith(
        claude_code.usage_note("agent").strip().rsplit("\n", 1)[-1])
    assert wait_for_the_brief(root)["text"] == whole  # built behind, for the next session
    assert claude_code.session_brief(root) == whole


def test_every_hook_fails_open(brain, project, tmp_path):
    elsewhere = tmp_path / "no-brain"
    elsewhere.mkdir()
    # no brain set for the project: a note, exit 0, nothing on stdout
    code, out, err = run_hook("SessionStart", payload("SessionStart", elsewhere, elsewhere / "t.jsonl",
                                                      source="startup"), elsewhere)
    assert (code, out) == (0, "") and err.startswith("pamd: note: memory not used: no brain set for")
    # a project that turned memory off: silence
    (elsewhere / ".pamd-brain").write_text("off\n")
    assert run_hook("Stop", payload("Stop", elsewhere, elsewhere / "t.jsonl"), elsewhere) == (0, "", "")
    # not JSON
    p = start("Stop", {}, project)
    out, err = p.communicate(b"not json", timeout=60)
    assert p.returncode == 0 and out == b"" and b"not JSON" in err
    # pamd-hook missing from PATH
    code, out, err = run_hook("SessionStart", payload("SessionStart", project, project / "t.jsonl", source="startup"),
                              project, env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert (code, out) == (0, "") and "pamd-hook is not on PATH" in err


def test_a_headless_claude_run_by_pamds_summarizer_is_left_alone(brain, project, tmp_path):
    """pamd's claude-cli summarizer runs `claude -p` with PAMD_SUMMARIZING=1: its session is pamd's
    prompt, so the hooks neither ingest it nor hand it a brief."""
    transcript = tmp_path / "s2.jsonl"
    transcript.write_text(json.dumps({
        "type": "user", "sessionId": "s2", "cwd": str(project), "isSidechain": False,
        "timestamp": "2026-11-30T10:00:00Z", "uuid": "s2-0",
        "message": {"role": "user", "content": [{"type": "text", "text": "Summarise these entries as facts"}]}}) + "\n")
    before = head_count(brain.cwd)
    env = env_with_pamd(PAMD_SUMMARIZING="1")
    for event, more in (("SessionStart", {"source": "startup"}), ("Stop", {"stop_hook_active": False})):
        assert run_hook(event, payload(event, project, transcript, **more), project, env) == (0, "", "")
    time.sleep(2)  # a detached ingest, had one been started, would have logged by now
    assert head_count(brain.cwd) == before
    assert not (brain.cwd / ".pamd" / "hooks.log").exists()


def test_a_hook_whose_stdin_never_closes_still_answers(project):
    """On a resumed session Claude Code may leave the hook's stdin open."""
    p = start("SessionStart", {}, project)
    assert p.stdin is not None
    p.stdin.write(json.dumps(payload("SessionStart", project, project / "t.jsonl", source="resume")).encode())
    p.stdin.flush()  # and never closed
    try:
        assert p.wait(timeout=60) == 0
        reply = json.loads(p.stdout.read())
    finally:
        p.stdin.close()
        p.kill()
    assert reply["hookSpecificOutput"]["additionalContext"].startswith("# Boot context")


def test_which_brain_a_project_uses(tmp_path, monkeypatch):
    from pamd.agent.brainpick import pick
    from pamd.errors import PamdError

    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    for d in (a, b, c):
        d.mkdir()
    project = tmp_path / "proj" / "sub" / "dir"
    project.mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home")}
    with pytest.raises(PamdError, match="no brain set for"):
        pick(None, project, env)
    cfg = tmp_path / "home" / ".config" / "pamd"
    cfg.mkdir(parents=True)
    (cfg / "brain").write_text(f"# every project\n{c}\n")
    assert pick(None, project, env) == c
    (tmp_path / "proj" / ".pamd-brain").write_text("../b\n")
    assert pick(None, project, env).resolve() == b
    assert pick(None, project, {**env, "PAMD_BRAIN": str(a)}) == a
    assert pick(str(c), project, {**env, "PAMD_BRAIN": str(a)}) == c
    (tmp_path / "proj" / "sub" / ".pamd-brain").write_text("off\n")
    assert pick(None, project, env) is None
    (tmp_path / "proj" / "sub" / ".pamd-brain").write_text(str(tmp_path / "gone") + "\n")
    with pytest.raises(PamdError, match="does not exist"):
        pick(None, project, env)


def test_the_plugin_follows_pamds_version_and_wires_every_event():
    """Claude Code updates an installed plugin only when its version changes."""
    from pamd import __version__

    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "pamd" and manifest["version"] == __version__
    assert set(HOOKS) == {"SessionStart", "Stop", "SubagentStop", "SessionEnd", "PreCompact"}
    assert set(HOOKS["SessionStart"][0]["matcher"].split("|")) == {"startup", "resume", "clear", "compact"}
    for event, entries in HOOKS.items():
        for hook in (h for e in entries for h in e["hooks"]):
            assert hook["timeout"] <= 10 and hook.get("async", False) == (event != "SessionStart"), event
    assert json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["pamd"] == {"command": "pamd", "args": ["mcp"]}
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert [(p["name"], (REPO / p["source"]).resolve()) for p in market["plugins"]] == [("pamd", PLUGIN)]


# ---------------------------------------------------------------- the real Claude Code CLI
def claude_cli() -> str | None:
    return os.environ.get("PAMD_CLAUDE") or shutil.which("claude")


# Marked slow as well: .ci/run installs the CLI from npm after the README's test command and
# runs these with the other slow tests.
_skip_without_claude = pytest.mark.skipif(
    claude_cli() is None,
    reason="the Claude Code CLI is not installed: npm install -g @anthropic-ai/claude-code "
           "(or set PAMD_CLAUDE to its `claude`)")


def needs_claude(test):
    return pytest.mark.slow(_skip_without_claude(test))


def claude(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = claude_cli()
    assert exe
    node = shutil.which("node")
    path = os.pathsep.join([str(Path(sys.executable).parent), *([str(Path(node).parent)] if node else []),
                            os.environ["PATH"]])
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PATH": path, "DISABLE_AUTOUPDATER": "1"})


@needs_claude
def test_claude_validates_the_plugin_and_the_marketplace(tmp_path):
    r = claude("plugin", "validate", str(PLUGIN), cwd=tmp_path)
    assert r.returncode == 0 and "Validation passed" in r.stdout, r.stdout + r.stderr
    r = claude("plugin", "validate", str(REPO), cwd=tmp_path)
    assert r.returncode == 0 and "marketplace" in r.stdout and "Validation passed" in r.stdout, r.stdout + r.stderr
    broken = tmp_path / "broken"
    shutil.copytree(PLUGIN, broken)
    hooks = json.loads((broken / "hooks" / "hooks.json").read_text())
    hooks["hooks"]["Stop"][0]["hooks"][0]["type"] = "shell"
    (broken / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    r = claude("plugin", "validate", str(broken), cwd=tmp_path)
    assert r.returncode != 0 and "hooks.Stop" in r.stdout + r.stderr  # the check can fail


@needs_claude
def test_claude_mcp_add_connects_to_pamd_mcp(brain, tmp_path):
    project = tmp_path / "app"
    project.mkdir()
    r = claude("mcp", "add", "pamd", "--", sys.executable, "-m", "pamd", "mcp", "--brain", str(brain.cwd), cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    r = claude("mcp", "list", cwd=project)
    assert r.returncode == 0 and "pamd:" in r.stdout and "Connected" in r.stdout, r.stdout + r.stderr
    r = claude("mcp", "add", "nobrain", "--", sys.executable, "-m", "pamd", "mcp", "--brain",
               str(tmp_path / "gone"), cwd=project)
    r = claude("mcp", "list", cwd=project)
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("nobrain:"))
    assert "Connected" not in line  # a server that cannot start is not reported connected


@needs_claude
def test_the_plugin_installs_from_the_local_marketplace_and_its_server_connects(brain, tmp_path):
    project = tmp_path / "app"
    project.mkdir()
    (project / ".pamd-brain").write_text(str(brain.cwd) + "\n")
    r = claude("plugin", "marketplace", "add", str(REPO), cwd=project)
    assert r.returncode == 0 and "pamd" in r.stdout, r.stdout + r.stderr
    r = claude("plugin", "install", "pamd@pamd", cwd=project)
    assert r.returncode == 0 and "installed" in r.stdout.lower(), r.stdout + r.stderr
    r = claude("mcp", "list", cwd=project)  # the plugin's .mcp.json: `pamd mcp`, the brain from .pamd-brain
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("plugin:pamd:pamd:")), r.stdout)
    assert "Connected" in line, r.stdout + r.stderr
