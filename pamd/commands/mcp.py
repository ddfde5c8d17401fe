from __future__ import annotations

HELP = "serve the brain to an agent as MCP tools over stdio (recall, remember, expand, boot, touch, status)"
DESCRIPTION = """Serve the brain to an agent as MCP tools over stdio (recall, remember, expand, boot, touch,
status), with the index and model kept loaded. The brain: --brain, else $PAMD_BRAIN, else a
.pamd-brain file in the cwd or above, else the brain the cwd is in, else ~/.config/pamd/brain
(docs/agents.md). Needs the `mcp` extra: pip install 'pamd[mcp]'."""
EXAMPLE = """claude mcp add pamd -- pamd mcp --brain ~/brains/agent
pamd mcp   # from a project with a .pamd-brain file; an MCP client starts it"""


def add_arguments(p) -> None:
    pass


def run(args) -> int:
    import importlib.util
    import os
    import sys

    from pamd.agent import brainpick
    from pamd.core.visible import raw
    from pamd.edge.brain import Brain
    from pamd.errors import PamdError

    if importlib.util.find_spec("mcp") is None:
        raise PamdError("`pamd mcp` needs the MCP SDK", "pip install 'pamd[mcp]'")
    root = brainpick.pick(args.brain)
    if root is None:
        raise PamdError(f"memory is off for this project ({brainpick.PROJECT_FILE} says off)")
    root = Brain.find(str(root), env=False).root
    if not (root / "pamd.toml").is_file():  # the one-line error now, not at every call
        raise PamdError(f"{root} is no pamd brain (no pamd.toml)", "check the path, or `pamd init` it")
    if args.now_given:  # every call's clock; the real one advances while the server runs
        os.environ["PAMD_NOW"] = args.now.isoformat()
    from pamd.agent.mcp_server import serve

    sys.stdout = raw(sys.stdout)  # the protocol's bytes, as they are
    print(f"pamd mcp: serving {root} on stdio", file=sys.stderr)
    serve(root)
    return 0
