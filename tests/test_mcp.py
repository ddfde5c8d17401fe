"""`pamd mcp` through the official MCP client over stdio, against a real brain."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from conftest import NOW, git, head_count

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'pamd[mcp]')")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402


def week_brain(brain) -> Path:
    week = resources.files("pamd.data").joinpath("sample-week.jsonl")
    assert brain("ingest", str(week))[0] == 0
    return brain.cwd


def serve(argv: list[str], steps, cwd: Path | None = None):
    """Start `python -m pamd mcp ARGV` as an MCP client does and run `steps(session)` against it."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "pamd", "mcp", *argv],
                                   env={**os.environ, "PAMD_NOW": NOW}, cwd=str(cwd) if cwd else None)

    async def main():
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            return await steps(session)

    return asyncio.run(main())


def text(result) -> str:
    return "\n".join(c.text for c in result.content)


def test_the_tools_over_stdio(brain):
    root = week_brain(brain)
    commits = head_count(root)

    async def steps(s):
        out = {"tools": {t.name: t for t in (await s.list_tools()).tools}}
        out["recall"] = await s.call_tool("recall", {"query": "Kubernetes CronJob export", "k": 3})
        out["alias"] = await s.call_tool("recall", {"q": "Kubernetes CronJob export", "limit": 1})
        out["tier"] = await s.call_tool("recall", {"query": "Kubernetes", "tier": ["L3"]})
        out["tier1"] = await s.call_tool("recall", {"query": "Kubernetes", "tier": "L0", "since": "2026-11-25"})
        out["badtime"] = await s.call_tool("recall", {"query": "Kubernetes", "since": "friday"})
        out["empty"] = await s.call_tool("recall", {"query": "?!"})
        out["remember"] = await s.call_tool("remember", {"text": "We decided the nightly export moves to 02:00 UTC",
                                                         "type": "decision"})
        out["again"] = await s.call_tool("recall", {"query": "nightly export moves to 02:00"})
        hit = out["recall"].structured_content["hits"][0]
        out["expand"] = await s.call_tool("expand", {"ref": f"{hit['path']}:{hit['lines'][0]}"})
        out["boot"] = await s.call_tool("boot", {"max_chars": 900})
        out["touch"] = await s.call_tool("touch", {"id": hit["ids"][0]})
        out["bad_touch"] = await s.call_tool("touch", {"id": "s-000000000000"})
        out["status"] = await s.call_tool("status", {})
        return out

    out = serve(["--brain", str(root)], steps)
    tools = out["tools"]
    assert set(tools) == {"recall", "remember", "expand", "boot", "touch", "status"}
    for name in ("recall", "expand", "boot", "status"):
        assert tools[name].annotations.read_only_hint is True, name
    for name in ("remember", "touch"):
        assert tools[name].annotations.read_only_hint is False and not tools[name].annotations.destructive_hint
    assert {"query", "k", "tier", "since", "until", "q", "limit"} <= set(tools["recall"].input_schema["properties"])

    r = out["recall"]
    hits = r.structured_content["hits"]
    assert not r.is_error and 1 <= len(hits) <= 3 and "Kubernetes CronJob" in hits[0]["text"]
    assert text(r).startswith(f"{len(hits)} hit") and f"{hits[0]['path']}:{hits[0]['lines'][0]}-" in text(r)
    assert len(out["alias"].structured_content["hits"]) == 1  # q and limit, as models write them
    assert out["tier"].structured_content["hits"] == [] and "No memory matches" in text(out["tier"])
    assert {h["tier"] for h in out["tier1"].structured_content["hits"]} == {"L0"}
    assert all(h["ts"] >= "2026-11-25" for h in out["tier1"].structured_content["hits"])
    assert out["badtime"].is_error and text(out["badtime"]).startswith("pamd: error: bad time 'friday' for since")
    assert out["empty"].is_error and text(out["empty"]).startswith("pamd: error: no word to search for")
    assert "\n" not in text(out["empty"])

    m = out["remember"].structured_content
    assert not out["remember"].is_error and m["new"] and m["type"] == "decision"
    assert head_count(root) == commits + 1 and m["commit"] == git(root, "rev-parse", "HEAD").strip()
    assert "pamd remember" in git(root, "log", "-1", "--format=%s")
    # recalled at once: the server's warm index picked up its own commit
    assert out["again"].structured_content["hits"][0]["ids"][0] == m["id"]

    assert "Kubernetes CronJob" in text(out["expand"]) and out["expand"].structured_content["entries"]
    boot = text(out["boot"])
    assert len(boot) <= 900 and boot.startswith("# Boot context") and "recall" in boot.splitlines()[-1]
    assert not out["touch"].is_error and "Noted 1 recall" in text(out["touch"])
    assert out["bad_touch"].is_error and text(out["bad_touch"]).startswith("pamd: error: no entry s-000000000000")
    assert out["status"].structured_content["tiers"][0]["entries"] == 30

    # an agent's recalls count (the recall log), and so does its touch
    log = [json.loads(x) for x in (root / ".pamd" / "recall.log").read_text().splitlines()[1:]]
    assert [rec["via"] for rec in log] == ["recall", "recall", "recall", "recall", "touch"]


def test_a_commit_by_another_process_is_found_without_a_restart(brain):
    """The server keeps its index loaded; a `pamd remember` run beside it (as the hooks, the
    daemon or a `git pull` change the tree) is in its next recall."""
    root = week_brain(brain)

    async def steps(s):
        first = await s.call_tool("recall", {"query": "tangerine submarine protocol"})
        await s.call_tool("recall", {"query": "deploys"})  # the server now watches the brain's folders
        r = subprocess.run([sys.executable, "-m", "pamd", "--brain", str(root), "--now", NOW, "remember",
                            "The tangerine submarine protocol means deploys pause on Fridays"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return first, await s.call_tool("recall", {"query": "tangerine submarine protocol", "k": 1})

    first, second = serve(["--brain", str(root)], steps)
    assert not any("tangerine" in h["text"] for h in first.structured_content["hits"])
    assert "tangerine submarine protocol means deploys pause" in second.structured_content["hits"][0]["text"]


def test_the_brain_comes_from_the_projects_pamd_brain_file(brain, tmp_path):
    root = week_brain(brain)
    project = tmp_path / "project" / "src"
    project.mkdir(parents=True)
    (tmp_path / "project" / ".pamd-brain").write_text(os.path.relpath(root, tmp_path / "project") + "\n")

    async def steps(s):
        return await s.call_tool("status", {})

    st = serve([], steps, cwd=project)
    assert st.structured_content["brain"] == str(root)


def test_pamd_mcp_without_a_brain_says_so_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pamd", "mcp"], cwd=tmp_path, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("pamd: error: no brain set for") and r.stderr.count("\n") == 1


def test_remember_waits_for_the_brains_lock_like_any_pamd_run(brain):
    """The server works beside the daemon and the hooks: a write while another run holds the
    brain's lock waits ([git] lock_timeout) and, given up, is a one-line tool error that
    leaves nothing half-written; the server answers the next call."""
    from pamd.edge.lock import Lock

    root = week_brain(brain)
    toml = root / "pamd.toml"
    toml.write_text(toml.read_text().replace("lock_timeout = 60", "lock_timeout = 1"))
    git(root, "commit", "-qam", "a short lock timeout")
    commits = head_count(root)

    async def steps(s):
        with Lock(root / ".pamd" / "lock"):  # a compaction, an ingest at work
            held = await s.call_tool("remember", {"text": "The walrus cache is flushed at noon"})
            found = await s.call_tool("recall", {"query": "Kubernetes CronJob"})  # reads still answer
        return held, found, await s.call_tool("remember", {"text": "The walrus cache is flushed at noon"})

    held, found, done = serve(["--brain", str(root)], steps)
    assert held.is_error and text(held).startswith("pamd: error: another pamd run holds the brain's lock (pid ")
    assert not found.is_error and found.structured_content["hits"]
    assert not done.is_error and head_count(root) == commits + 1
    assert git(root, "status", "--porcelain") == ""
