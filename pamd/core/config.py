"""pamd.toml: the packaged template is the defaults; a brain's file overrides it."""

from __future__ import annotations

import json
import math
import re
import tomllib
from functools import lru_cache
from importlib import resources
from typing import Any

from pamd.errors import PamdError


@lru_cache(maxsize=1)
def defaults() -> dict[str, Any]:
    text = resources.files("pamd.templates").joinpath("brain/pamd.toml").read_text("utf-8")
    return tomllib.loads(text)


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
