"""Layers never point up, no module imports itself round a circle, and the entry points
share library code, not each other.

Every import in pamd/ counts: at the top of a module, inside a function, under
TYPE_CHECKING. A module may import its own layer or one below; a circle between
modules fails even inside one layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pamd

PACKAGE = Path(pamd.__file__).parent

# Bottom first. A module belongs to the layer of the longest name here that is it or holds it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # pure: the brain's file names and formats, entries, config, redaction patterns, templates
    ("core", ("pamd", "pamd.errors", "pamd.core", "pamd.data")),
    # the outside world: git, the brain's files and transactions, the lock, the clock
    ("edge", ("pamd.edge",)),
    # transcripts into entries
    ("encode", ("pamd.encode",)),
    # the pipeline after ingest: summarise and tier, search, what the agent reads first
    ("pipeline", ("pamd.consolidate", "pamd.recall", "pamd.myelin")),
    # whole-brain operations built on the pipeline: fsck, check, status, sync, init, fidelity
    ("ops", ("pamd.ops", "pamd.fidelity")),
    # what an agent calls: its tools, the MCP server, the Claude Code hooks
    ("agent", ("pamd.agent",)),
    # entry points: the CLI and its commands, the git hooks
    ("entry", ("pamd.__main__", "pamd.cli", "pamd.commands", "pamd.hooks")),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["pamd", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def layer_of(module: str) -> str | None:
    best, size = None, -1
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > size:
                best, size = name, len(prefix)
    return best


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, pamd module) for every import of a pamd module in `path`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for a in node.names:  # `from pamd.recall import api` imports the module pamd.recall.api
                sub = f"{source}.{a.name}"
                out.append((node.lineno, sub if sub in known else source))
    found = set()
    for line, name in out:
        if name != "pamd" and not name.startswith("pamd."):
            continue
        while name not in known:  # `import pamd.x.y` where y is a name in pamd.x
            name = name.rpartition(".")[0]
        if name != module:
            found.add((line, name))
    return sorted(found)


def missing(module: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, name) for every import in `path` of a pamd module, or a name in a pamd package,
    that does not exist: after a module moves, a lazy import of its old place fails only when run."""
    out = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names
                    if a.name.startswith("pamd.") and a.name not in known]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("pamd"):
            source = node.module or ""
            if source not in known:
                out.append((node.lineno, source))
                continue
            names = _defined(known[source])
            out += [(node.lineno, f"{source}.{a.name}") for a in node.names
                    if f"{source}.{a.name}" not in known and a.name not in names]
    return out


def _defined(path: Path) -> set[str]:
    """The names a module's top level defines or imports."""
    out = set()
    for node in ast.parse(path.read_text("utf-8"), str(path)).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                out.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


def graph() -> dict[str, list[tuple[int, str]]]:
    known = modules()
    return {m: imports(m, p, known) for m, p in known.items()}


def test_every_module_has_a_layer():
    assert [m for m in modules() if layer_of(m) is None] == []


def test_every_import_names_what_exists():
    known = modules()
    wrong = [f"{known[m].relative_to(PACKAGE.parent)}:{line} imports {name}"
             for m, p in known.items() for line, name in missing(m, p, known)]
    assert wrong == [], "imports of what is not there:\n" + "\n".join(wrong)


def test_no_import_runs_up():
    known = modules()
    upward = []
    for module, edges in graph().items():
        low = layer_of(module)
        for line, target in edges:
            high = layer_of(target)
            if low and high and RANK[high] > RANK[low]:
                rel = known[module].relative_to(PACKAGE.parent)
                upward.append(f"{rel}:{line} ({low}) imports {target} ({high})")
    assert upward == [], "imports that run up the layers:\n" + "\n".join(upward)


def test_commands_and_git_hooks_import_no_entry_point():
    """A command (pamd.commands.*) and the git hooks (pamd.hooks) import the library, never
    another command, the CLI or the hooks: what two of them share (a file argument's path,
    a probe run, a compaction's report) is a library function, which the MCP server and the
    agent hooks can call too, and a command stays parse, one call, print."""
    known = modules()
    wrong = []
    for module, edges in graph().items():
        if not (module.startswith("pamd.commands.") or module == "pamd.hooks"):
            continue
        for line, target in edges:
            if layer_of(target) == "entry":
                wrong.append(f"{known[module].relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert wrong == [], "entry points that import entry points:\n" + "\n".join(wrong)


def test_no_import_circle():
    edges = {m: sorted({t for _, t in e}) for m, e in graph().items()}
    circles = [sorted(c) for c in _strong_components(edges) if len(c) > 1]
    assert circles == [], "modules that import each other round a circle: " + "; ".join(
        " <-> ".join(c) for c in circles)


def _strong_components(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = edges.get(node, [])
            if i < len(targets):
                work.append((node, i + 1))
                nxt = targets[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                out.append(component)
    return out


def test_the_checks_see_what_they_must():
    """The graph holds an import made inside a function, and a circle is found."""
    edges = graph()
    assert any(t == "pamd.recall.api" for _, t in edges["pamd.agent.tools"])  # imported in a function
    circle = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert sorted(map(sorted, _strong_components(circle))) == [["a", "b", "c"], ["d"]]
