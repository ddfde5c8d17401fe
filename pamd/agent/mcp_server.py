"""`pamd mcp`: the brain as MCP tools over stdio, on the official `mcp` SDK (2.x).

One process serves one brain. The search index and the embedding model stay loaded
between calls; each call opens the brain afresh and refreshes the index when the tree
changed (a compaction by the daemon, a `git pull`), so nothing needs a restart. Calls run
one at a time on one worker thread: the index's SQLite connection belongs to the thread
that opened it, and a write waits for the brain's lock like any other pamd run.
stdout is the protocol: logs and notes go to stderr.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from pamd import __version__
from pamd.agent import tools
from pamd.errors import PamdError

log = logging.getLogger("pamd.mcp")

INSTRUCTIONS = """pamd is this agent's long-term memory: a git repository of what past sessions said, \
did, decided, broke and fixed. Call `recall` with a few distinctive words before answering about past \
work, decisions, errors, people or preferences, and before redoing something that may have been done; \
`expand` a summary's id to read the raw messages behind it. Call `remember` for a decision, a lesson from \
a failure, or a fact the person asked you to keep. `boot` gives the session-start brief."""


def build(root: Path, warm: bool = True) -> MCPServer:
    """An MCPServer whose tools read and write the brain at `root`."""
    server = MCPServer(name="pamd", instructions=INSTRUCTIONS, version=__version__)
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pamd-mcp")
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=False)

    async def call(fn: Callable[..., tools.Reply], *args: Any, **kwargs: Any) -> CallToolResult:
        try:
            reply = await asyncio.wrap_future(worker.submit(fn, root, *args, **kwargs))
        except PamdError as exc:
            log.info("%s: %s", fn.__name__, exc)
            return CallToolResult(content=[TextContent(type="text", text=f"pamd: error: {exc}")], is_error=True)
        data = reply.data if isinstance(reply.data, dict) else {"result": reply.data}
        return CallToolResult(content=[TextContent(type="text", text=reply.text)], structured_content=data)

    @server.tool(annotations=read_only, title="Recall from memory")
    async def recall(
        query: Annotated[str, Field(description="what to look for: a few distinctive words, any language")] = "",
        k: Annotated[int, Field(description="number of hits", ge=1, le=100)] = 10,
        tier: Annotated[list[str] | str | None, Field(
            description="only these tiers: L0 (raw, hot) L1 L2 L3 L4 (MEMORY.md), daily, dna, synapse, memory"
        )] = None,
        since: Annotated[str | None, Field(description="only entries at or after this time (ISO 8601)")] = None,
        until: Annotated[str | None, Field(
            description="only entries at or before this time (ISO 8601; a date alone: its end)")] = None,
        q: Annotated[str | None, Field(description="same as query")] = None,
        limit: Annotated[int | None, Field(description="same as k", ge=1, le=100)] = None,
        exact: Annotated[bool, Field(
            description="every entry holding the query as a whole identifier, newest first "
                        "(a one-identifier query such as ensure_worker or SessionEnd does this by itself)")] = False,
    ) -> CallToolResult:
        """Search the agent's memory (every tier, meaning and exact words): hits with file:line, tier,
        time, ids and text, best first. Recalled memories are counted and grow stronger."""
        return await call(tools.recall, query or q or "", limit or k, tier, since, until, exact=exact)

    @server.tool(annotations=writes, title="Remember")
    async def remember(
        text: Annotated[str, Field(description="one self-contained statement naming its subject")],
        type: Annotated[str | None, Field(
            description="decision, user_intent, context, tool_result or ephemeral (default: detected)")] = None,
        importance: Annotated[float | None, Field(description="0..1 (default: computed)", ge=0, le=1)] = None,
        role: Annotated[str, Field(description="who said it: agent or user")] = "agent",
    ) -> CallToolResult:
        """Store one memory now (one entry, one git commit in the brain): a decision, a lesson from a
        failure and its fix, a preference, a fact the person asked to keep."""
        return await call(tools.remember, text, role=role, type=type, importance=importance)

    @server.tool(annotations=read_only, title="Expand a memory")
    async def expand(
        ref: Annotated[str, Field(description="an entry id (s-… or e-…) or path:line from a recall hit")],
        all: Annotated[bool, Field(description="also show the summaries in between")] = False,
    ) -> CallToolResult:
        """The raw messages behind a summary (or a dropped entry), read back from git history."""
        return await call(tools.expand, ref, all)

    @server.tool(annotations=read_only, title="Session-start brief")
    async def boot(
        max_chars: Annotated[int, Field(description="at most this many characters", ge=200)] = 20_000,
    ) -> CallToolResult:
        """What the agent should know at the start of a session: reflexes and lessons (DNA), preloaded
        memories, current state, long-term memory and recent detail, most useful first."""
        return await call(tools.boot, max_chars)

    @server.tool(annotations=writes, title="Mark a memory as used")
    async def touch(
        id: Annotated[str, Field(description="an entry id or path:line whose memory you used")],
    ) -> CallToolResult:
        """Count an explicit recall of a memory you used (it decays slower, and preloads once used often)."""
        return await call(tools.touch, [id])

    @server.tool(annotations=read_only, title="Memory status")
    async def status() -> CallToolResult:
        """The brain: entries per tier, index freshness, what is due, the last pamd commit."""
        return await call(tools.status)

    @server.resource("pamd://boot", name="boot", description="the session-start brief", mime_type="text/markdown")
    async def boot_resource() -> str:
        return (await asyncio.wrap_future(worker.submit(tools.boot, root, 9000))).text

    if warm:
        worker.submit(_warm, root)
    return server


def _warm(root: Path) -> None:
    """Load the model and the index before the first call needs them (it waits for this)."""
    try:
        from pamd.recall import api

        api.recall(tools.open_brain(root), "memory", k=1, log=False)
    except Exception as exc:  # noqa: BLE001 - the first recall says what is wrong
        log.info("warm-up: %s", exc)


def serve(root: Path) -> None:
    """Run the stdio server until the client closes it. Every log line goes to stderr:
    stdout is the protocol."""
    from pamd.core.console import human_log, service_log

    # the SDK's records (and any other library's) from WARNING on; the server's own likewise,
    # by a handler of its own; pamd's notes and warnings as every pamd command shows them
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="pamd mcp: %(message)s")
    own = logging.StreamHandler(sys.stderr)
    own.setFormatter(logging.Formatter("pamd mcp: %(message)s"))
    with human_log(), service_log(log.name, own, logging.WARNING):
        build(root).run()
