"""pamd.toml: the packaged template is the defaults; a brain's file overrides it."""

from __future__ import annotations

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
    return merge(defaults(), own)
