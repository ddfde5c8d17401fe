"""Retention: how much an entry is still worth keeping raw, from its type and age.

retention(t) = max(floor, importance * e^(-λ t)), t in hours, with λ and floor
from the entry type's row in [hippocampus.types]; thin myelin (often recalled)
slows λ. Pure functions of (entry, config, now).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from pamd.core.entry import Entry

KEEP, COMPRESS, DROP = "keep", "compress", "drop"


def type_row(config: dict[str, Any], type_: str) -> dict[str, float]:
    types = config["hippocampus"]["types"]
    return types.get(type_) or types["context"]


def decay_rate(entry: Entry, config: dict[str, Any]) -> float:
    lam = float(type_row(config, entry.type)["decay"])
    my = config.get("myelin", {})
    if entry.recalls >= int(my.get("thin", 3)):
        lam *= float(my.get("thin_decay_factor", 0.5))
    return lam


def retention(entry: Entry, config: dict[str, Any], now: datetime) -> float:
    row = type_row(config, entry.type)
    t = entry.age_hours(now)
    return max(float(row["floor"]), entry.importance * math.exp(-decay_rate(entry, config) * t))


def decide(value: float, config: dict[str, Any]) -> str:
    r = config["hippocampus"]["retention"]
    if value >= float(r["keep_hot"]):
        return KEEP
    if value < float(r["drop_below"]):
        return DROP
    return COMPRESS
