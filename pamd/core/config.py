"""pamd.toml: one typed set of defaults (the dataclasses here); a brain's file overrides it.

The packaged template (templates/brain/pamd.toml) says the same defaults to people, with
comments; tests/test_config.py checks that it holds exactly these values. Code reads a
setting through `settings(config)` (the `[synapse.NAME]` tables through `peers(config)`),
which fills in what a partial dict lacks, and never out of the dict itself:
tests/test_config_reads.py fails on a `config.get("key", default)` or `config["key"]` in pamd/.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from pamd.errors import PamdError


@dataclass
class BrainSettings:
    name: str = "agent"


@dataclass
class GitSettings:
    author_name: str = "pamd"
    author_email: str = "pamd@localhost"
    on_lock: str = "wait"  # "wait" (up to lock_timeout seconds) or "fail"
    lock_timeout: float = 60
    branch: str | None = None  # None: origin's HEAD, else main or master


@dataclass
class NeurotagSettings:
    rules_file: str = ""
    languages: list[str] = field(default_factory=list)
    trash_below: float = 0.15


@dataclass
class TypeSettings:
    """A type of entry: its importance, its decay (λ per hour) and the floor retention keeps."""

    importance: float = 0.5
    decay: float = 0.12
    floor: float = 0.0


@dataclass
class RetentionSettings:
    keep_hot: float = 0.65
    drop_below: float = 0.25


def _types() -> dict[str, TypeSettings]:
    return {"decision": TypeSettings(0.90, 0.03, 0.50), "user_intent": TypeSettings(0.80, 0.05, 0.35),
            "context": TypeSettings(0.50, 0.12, 0.0), "tool_result": TypeSettings(0.30, 0.20, 0.0),
            "ephemeral": TypeSettings(0.10, 0.35, 0.0)}


@dataclass
class HippocampusSettings:
    types: dict[str, TypeSettings] = field(default_factory=_types)
    retention: RetentionSettings = field(default_factory=RetentionSettings)


@dataclass
class ClockStep:
    below: float
    hours: float


@dataclass
class TiersSettings:
    l0_hours: float = 4
    l1_hours: float = 12
    l2_hours: float = 72
    l3_hours: float = 168
    clock: list[ClockStep] = field(default_factory=lambda: [ClockStep(0.3, 0.5), ClockStep(0.6, 4),
                                                            ClockStep(0.8, 24)])
    critical_hours: float = 168
    l4_merge_ratio: float = 3
    budgets: dict[str, int] = field(default_factory=lambda: {"L0": 200000, "L1": 150000, "L2": 100000,
                                                             "L3": 50000, "L4": 100000})
    group_tokens: dict[str, int] = field(default_factory=lambda: {"L1": 1200, "L2": 4000, "L3": 4000,
                                                                  "L4": 8000})
    ratios: dict[str, float] = field(default_factory=lambda: {"L1": 3, "L2": 10, "L3": 50})


@dataclass
class Price:
    """USD per million tokens (cache_*: anthropic's prompt cache)."""

    input: float = 0.0
    output: float = 0.0
    cache_write: float | None = None
    cache_read: float | None = None


def _prices() -> dict[str, Price]:
    return {"claude-haiku-4-5": Price(1.00, 5.00, 1.25, 0.10), "claude-sonnet-4-5": Price(3.00, 15.00, 3.75, 0.30),
            "gemini-2.5-flash": Price(0.30, 2.50), "gemini-2.5-flash-lite": Price(0.10, 0.40)}


@dataclass
class SummarizerSettings:
    backend: str = "extractive"
    model: str = ""
    batch_size: int = 8
    max_retries: int = 3
    fallback: str = "extractive"
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    json_mode: bool = True
    api_version: str = "v1beta"
    timeout: float = 120
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0
    temperature: float = 0.2
    thinking_budget: int = 0
    max_output_tokens: int = 4096
    cli_path: str = ""  # "claude-cli" / "codex-cli": the executable ("": claude / codex on PATH)
    prices: dict[str, Price] = field(default_factory=_prices)


@dataclass
class RedactPattern:
    """A secret format of the brain's own: the placeholder says [REDACTED:name]."""

    name: str = ""
    regex: str = ""
    group: int = 0  # which regex group is the secret (0: all of it)


@dataclass
class RedactSettings:
    # None: no formats of the brain's own. The template leaves the key out, so that a person's
    # [[redact.patterns]] tables may follow [redact] anywhere in the file.
    patterns: list[RedactPattern] | None = None


@dataclass
class SynapseSettings:
    publish_branch: str = "pamd/publish"  # each peer is a table of its own beside this: [synapse.alice]


@dataclass
class Peer:
    """A `[synapse.NAME]` table (`pamd synapse add`): another brain this one pulls from."""

    url: str = ""
    ref: str = ""  # the branch to pull ("": the other brain's HEAD)


@dataclass
class IndexSettings:
    embedder: str = "auto"
    model: str = ""
    refresh_after_pipeline: bool = True
    fusion: str = "learned"
    rerank: int = 0
    fusion_k: float = 10
    dense_weight: float = 0.7
    lexical_weight: float = 1.0
    neighbour_weight: float = 0.6
    file_weight: float = 0.3
    role_boost: float = 0.5
    hit_lines: float = 4
    dense_context: int = 1
    max_chars: int = 800
    deep: bool = True
    recency_boost: float = 0.0
    recency_half_life_days: float = 30
    importance_boost: float = 0.0


@dataclass
class MyelinSettings:
    lesson_min_importance: float = 0.5
    max_lessons_per_run: int = 5
    thin: int = 3
    thick: int = 5
    reflex: int = 10
    dna_budget: int = 5000
    settings_budget: int = 1500
    thin_decay_factor: float = 0.5
    demote_after_days: float = 30


@dataclass
class ScheduleSettings:
    compact_every_minutes: float = 30
    defrag_at: str = "02:30"  # "HH:MM" UTC, or "off"


@dataclass
class BootSettings:
    budget: int = 500000


@dataclass
class Settings:
    """Every setting of pamd.toml, with its default."""

    brain: BrainSettings = field(default_factory=BrainSettings)
    git: GitSettings = field(default_factory=GitSettings)
    neurotag: NeurotagSettings = field(default_factory=NeurotagSettings)
    hippocampus: HippocampusSettings = field(default_factory=HippocampusSettings)
    tiers: TiersSettings = field(default_factory=TiersSettings)
    summarizer: SummarizerSettings = field(default_factory=SummarizerSettings)
    redact: RedactSettings = field(default_factory=RedactSettings)
    synapse: SynapseSettings = field(default_factory=SynapseSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    myelin: MyelinSettings = field(default_factory=MyelinSettings)
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    boot: BootSettings = field(default_factory=BootSettings)


def as_dict(value: Any) -> Any:
    """A settings object as pamd.toml's tables hold it (a setting with no value is left out)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_dict(getattr(value, f.name)) for f in dataclasses.fields(value)
                if getattr(value, f.name) is not None}
    if isinstance(value, dict):
        return {k: as_dict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_dict(v) for v in value]
    return value


@lru_cache(maxsize=1)
def defaults() -> dict[str, Any]:
    return as_dict(Settings())


def settings(config: Settings | Mapping[str, Any] | None) -> Settings:
    """The typed settings of a config dict (a brain's, or any part of one: what it lacks is the
    default); settings already typed are returned as they are, so a function may take either.
    Keys it does not know (a synapse's table) are left out: `peers()` reads those."""
    if isinstance(config, Settings):
        return config
    return _build(Settings, merge(defaults(), dict(config or {})))


def peers(config: Mapping[str, Any] | None) -> dict[str, Peer | None]:
    """Every `[synapse.NAME]` table of a config dict by its name; None for a key of [synapse]
    that is neither a table nor one of [synapse]'s own settings (written by hand)."""
    tables = (config or {}).get("synapse")
    if not isinstance(tables, dict):
        return {}
    own = {f.name for f in dataclasses.fields(SynapseSettings)}
    return {name: _build(Peer, table) if isinstance(table, dict) else None
            for name, table in tables.items() if name not in own}


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _build(kind: Any, value: Any) -> Any:
    return _builder(kind)(value)


def _same(value: Any) -> Any:
    return value


@cache
def _builder(kind: Any) -> typing.Callable[[Any], Any]:
    """How a value of the type `kind` is built from its TOML form, worked out once per type:
    the typed settings are built at every command and every recall."""
    origin = typing.get_origin(kind)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        hints = _hints(kind)
        plan = tuple((f.name, _builder(hints[f.name])) for f in dataclasses.fields(kind))

        def record(value: Any) -> Any:
            if not isinstance(value, dict):
                return value
            return kind(**{name: make(value[name]) for name, make in plan if name in value})
        return record
    if origin in (typing.Union, types.UnionType):  # X | None
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(inner) != 1:
            return _same
        make = _builder(inner[0])
        return lambda value: value if value is None else make(value)
    if origin is dict:
        make = _builder(typing.get_args(kind)[1])
        if make is _same:
            return lambda value: dict(value) if isinstance(value, dict) else value
        return lambda value: {k: make(v) for k, v in value.items()} if isinstance(value, dict) else value
    if origin is list:
        make = _builder(typing.get_args(kind)[0])
        if make is _same:
            return lambda value: list(value) if isinstance(value, list) else value
        return lambda value: [make(v) for v in value] if isinstance(value, list) else value
    return _same


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def load(text: str | None, path: str = "pamd.toml") -> dict[str, Any]:
    """Defaults merged with the brain's own pamd.toml text (None = defaults only)."""
    if text is None:
        return defaults()
    try:
        own = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PamdError(f"{path}: {exc}", "fix the TOML syntax") from None
    found = problems(own)
    if found:
        raise PamdError(f"{path}: {found[0][1]}", "fix it in pamd.toml")
    return merge(defaults(), own)


# Ranges beyond "a number >= 0": fractions in [0, 1], counts that must be > 0,
# and the one number that may be negative (-1 = the model decides).
FRACTION = {"hippocampus.types.*.importance", "hippocampus.types.*.floor", "hippocampus.retention.*",
            "neurotag.trash_below", "myelin.lesson_min_importance", "tiers.clock.below"}
POSITIVE = {"tiers.ratios.*", "tiers.group_tokens.*", "tiers.l4_merge_ratio", "summarizer.batch_size",
            "index.max_chars", "schedule.compact_every_minutes", "summarizer.timeout"}
ANY_SIGN = {"summarizer.thinking_budget"}
CLOCK_TIME = re.compile(r"(\d{1,2}):(\d{2})")


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _matches(name: str, patterns: set[str]) -> bool:
    parts = name.split(".")
    return any(len(p.split(".")) == len(parts) and all(a in ("*", b) for a, b in zip(p.split("."), parts, strict=True))
               for p in patterns)


def check_value(name: str, want: Any, got: Any) -> str | None:
    """Why `got` cannot stand where the template has `want` (None: it can)."""
    if isinstance(want, bool):
        return None if isinstance(got, bool) else f"expected true or false, got {_show(got)}"
    if isinstance(want, int | float):
        if isinstance(got, bool) or not isinstance(got, int | float) or not math.isfinite(got):
            return f"expected a number, got {_show(got)}"
        if _matches(name, FRACTION) and not 0 <= got <= 1:
            return f"expected a number from 0 to 1, got {_show(got)}"
        if _matches(name, POSITIVE) and got <= 0:
            return f"expected a number above 0, got {_show(got)}"
        if not _matches(name, ANY_SIGN) and got < 0:
            return f"expected a number of at least 0, got {_show(got)}"
        return None
    if isinstance(want, str):
        if not isinstance(got, str):
            return f"expected a string, got {_show(got)}"
        if name == "schedule.defrag_at" and clock_time(got) is None and not is_off(got):
            return f'expected "HH:MM" (00:00 to 23:59, UTC) or "off", got {_show(got)}'
        return None
    if isinstance(want, list):
        return None if isinstance(got, list) else f"expected a list, got {_show(got)}"
    if isinstance(want, dict):
        return None if isinstance(got, dict) else f"expected a table, got {_show(got)}"
    return None


def clock_time(value: str) -> tuple[int, int] | None:
    """(hh, mm) of "HH:MM" on a 24-hour clock, else None."""
    m = CLOCK_TIME.fullmatch(value.strip())
    if not m or int(m[1]) > 23 or int(m[2]) > 59:
        return None
    return int(m[1]), int(m[2])


def is_off(value: str) -> bool:
    """A schedule time switched off: `defrag_at = "off"` leaves the nightly defrag to something
    else (the pull-request workflow of `pamd init --ci`)."""
    return value.strip().lower() == "off"


def problems(own: dict[str, Any]) -> list[tuple[str, str]]:
    """(dotted key, message) for each value in a brain's pamd.toml that the template's key would refuse.

    Keys the template does not have (a synapse, an added price) are left to the code that reads them.
    """
    out: list[tuple[str, str]] = []

    def walk(want: dict[str, Any], got: dict[str, Any], section: list[str]) -> None:
        for key, value in got.items():
            ref = want.get(key)
            if ref is None and section == ["hippocampus", "types"]:
                ref = want.get("context")  # a type of the brain's own: the shape of the built-in ones
            if ref is None:
                continue
            name = ".".join([*section, key])
            where = f"[{'.'.join(section)}] {key}" if section else key
            why = check_value(name, ref, value)
            if why:
                out.append((name, f"{where}: {why}"))
            elif isinstance(ref, dict):
                walk(ref, value, [*section, key])
            elif name == "tiers.clock":
                for i, item in enumerate(value, 1):
                    if not isinstance(item, dict):
                        out.append((name, f"{where}[{i}]: expected a table {{ below = …, hours = … }}, "
                                          f"got {_show(item)}"))
                        continue
                    for k in ("below", "hours"):
                        why = check_value(f"tiers.clock.{k}", 0.0, item.get(k))
                        if why:
                            out.append((name, f"{where}[{i}].{k}: {why}"))

    walk(defaults(), own, [])
    return out
