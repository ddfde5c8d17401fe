"""Code reads pamd.toml through the typed settings of pamd.core.config, never out of the dict.

A read like `config.get("myelin", {}).get("thin", 3)` carries a default of its own, which
drifts from the template's; `config["tiers"]["budgets"]` fails on a partial dict. The scan
below finds such reads in pamd/ and benchmarks/: a `.get(KEY, …)`, `[KEY]` or `KEY in …`
whose KEY is the name of a setting (a section or a field of one), on an expression that is
the config dict or a part of it: a name like `config`/`cfg`, an attribute `.config`, a config
function's result (`defaults()`, `view.config()`), a part taken out of one of these, or a
local name bound to any of them. Two-level reads of a section's own field
(`x["tiers"]["budgets"]`, `x.get("myelin", {}).get("thin")`) count whatever `x` is called.
JSON records, index meta and frontmatter fields are read from other expressions, so their
keys (`model`, `name`, `recalls`) do not count there.
"""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pamd
from pamd.core import config

PACKAGE = Path(pamd.__file__).parent
OWNER = PACKAGE / "core" / "config.py"  # the one module that turns the dict into settings
ROOT_NAMES = {"config", "cfg", "conf"}  # and names ending in _config or _cfg
ROOT_ATTRS = {"config", "_config"}  # brain.config, self._config; a call of it: view.config()
CONFIG_MODULES = {"config", "config_mod"}  # pamd.core.config as the code imports it
CONFIG_FUNCS = {"defaults", "load", "merge"}  # what returns a config dict: defaults(), config_mod.load(…)


def _dataclasses(kind: typing.Any) -> list[type]:
    """The settings dataclasses a field's type holds: itself, or in a list, dict or `| None`."""
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return [kind]
    return [d for arg in typing.get_args(kind) for d in _dataclasses(arg)]


def setting_keys() -> dict[str, set[str]]:
    """Name of every setting -> the names of the settings a table of it holds directly."""
    out: dict[str, set[str]] = {}

    def walk(kind: type) -> None:
        hints = typing.get_type_hints(kind)
        for f in dataclasses.fields(kind):
            own = out.setdefault(f.name, set())
            if dataclasses.is_dataclass(hints[f.name]):  # a table: [section] or [hippocampus.retention]
                own.update(g.name for g in dataclasses.fields(hints[f.name]))
            for inner in _dataclasses(hints[f.name]):
                walk(inner)

    walk(config.Settings)
    walk(config.Peer)  # a [synapse.NAME] table: read by code of its own, typed in pamd.core.config
    return out


KEYS = setting_keys()


def _key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _read(node: ast.AST) -> tuple[ast.AST, str] | None:
    """(what is read from, the key) of `x[KEY]` or `x.get/pop/setdefault(KEY, …)`."""
    if isinstance(node, ast.Subscript) and (k := _key(node.slice)) is not None:
        return node.value, k
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault") and node.args
            and (k := _key(node.args[0])) is not None):
        return node.func.value, k
    return None


class Scan(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []
        self.scopes: list[set[str]] = [set()]

    def is_config(self, node: ast.AST) -> bool:
        """Whether `node` is the config dict, a part of it, or a name bound to one."""
        if isinstance(node, ast.Name):
            return node.id in ROOT_NAMES or node.id.endswith(("_config", "_cfg")) or node.id in self.scopes[-1]
        if isinstance(node, ast.Attribute):
            return node.attr in ROOT_ATTRS
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            return self.is_config(node.values[0])
        if isinstance(node, ast.Call) and isinstance(f := node.func, ast.Name):
            return f.id == "defaults" or f.id == "dict" and bool(node.args) and self.is_config(node.args[0])
        if isinstance(node, ast.Call) and isinstance(f := node.func, ast.Attribute) and (
                f.attr in ROOT_ATTRS
                or f.attr in CONFIG_FUNCS and isinstance(f.value, ast.Name) and f.value.id in CONFIG_MODULES):
            return True
        read = _read(node)
        return read is not None and read[1] in KEYS and self.is_config(read[0])

    def section_chain(self, node: ast.AST) -> bool:
        """`x[SECTION][FIELD]` / `x.get(SECTION…).get(FIELD…)`, FIELD a setting of SECTION."""
        read = _read(node)
        if read is None:
            return False
        inner = _read(read[0].values[0] if isinstance(read[0], ast.BoolOp) else read[0])
        return inner is not None and read[1] in KEYS.get(inner[1], set())

    def _bind(self, nodes: list[ast.AST]) -> None:
        """Note the names these statements bind to a config expression (twice: `a = cfg` then
        `b = a["x"]`), before any read is checked, so a read above a rebinding in a loop counts."""
        for _ in range(2):
            for node in nodes:
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Assign | ast.NamedExpr | ast.AnnAssign) and sub.value is not None \
                            and self.is_config(sub.value):
                        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                        self.scopes[-1].update(t.id for t in targets if isinstance(t, ast.Name))

    def visit_Module(self, node: ast.Module) -> None:
        self._bind([n for n in node.body if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)])
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.scopes.append(set(self.scopes[-1]))  # a closure sees the names around it
        self._bind([node])
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def _check(self, node: ast.AST) -> None:
        read = _read(node)
        if read is not None and read[1] in KEYS and (self.is_config(read[0]) or self.section_chain(node)):
            self.found.append((node.lineno, read[1]))

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self._check(node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        k = _key(node.left)
        if (k in KEYS and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn)
                and self.is_config(node.comparators[0])):
            self.found.append((node.lineno, k))
        self.generic_visit(node)


def config_reads(source: str) -> list[tuple[int, str]]:
    """(line, key) of every read of a setting out of the config dict in `source`."""
    scan = Scan()
    scan.visit(ast.parse(source))
    return sorted(set(scan.found))


def test_no_module_reads_a_setting_out_of_the_config_dict():
    files = [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "benchmarks").glob("*.py")]
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {key!r}"
             for path in sorted(files) if path != OWNER
             for line, key in config_reads(path.read_text("utf-8"))]
    assert found == [], ("read these through settings(config) (pamd.core.config), whose dataclasses "
                         "hold the one default:\n" + "\n".join(found))


def test_the_scan_finds_the_reads_it_is_for():
    reads = [
        'g = brain.config.get("git", {})\nwait = g.get("on_lock", "wait") == "wait"',
        'sc = config_mod.load(text)["schedule"]\nat = sc["defrag_at"]',
        'def f(brain):\n    g = brain.config["git"]\n    def inner():\n        return g["on_lock"]\n    return inner',
        'budget = int(brain.config.get("boot", {}).get("budget", 500_000))',
        'def f(config):\n    return int(config.get("myelin", {}).get("thin", 3))',
        'def f(cfg):\n    m = cfg["myelin"]\n    return float(m.get("lesson_min_importance", 0.5))',
        'def f(config):\n    s = dict(config.get("summarizer") or {})\n    return s.get("batch_size", 8)',
        'def f(view):\n    return view.config()["brain"]["name"]',
        'x = defaults()["index"]',
        'def f(tables):\n    return tables["tiers"]["budgets"]',  # a section's own field, whatever x is
        'def f(c):\n    return (c.get("summarizer") or {}).get("model", "")',
        'def f(config):\n    s = config["summarizer"]\n    return "temperature" in s',
    ]
    for source in reads:
        assert config_reads(source), source


def test_the_scan_leaves_records_meta_and_frontmatter_alone():
    others = [
        'def f(obj):\n    return obj.get("model", "?"), obj.get("name", "")',  # a JSON record
        'def f(meta):\n    return meta.get("settings", ""), meta.get("labels", "0")',  # index meta
        'def f(fields):\n    return int(fields.get("recalls", "0")), fields.get("seen", "")',  # frontmatter
        'def f(block):\n    return str(block.get("name", "?")), block.get("input", {})',
        'def f(config):\n    return settings(config).myelin.thin',
        'def f(usage):\n    return usage["input"]["tokens"]',
        'def f(brain):\n    return brain.config_path["model"]',
    ]
    for source in others:
        assert config_reads(source) == [], source
