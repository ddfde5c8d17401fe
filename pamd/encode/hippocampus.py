"""Retention: how much an entry is still worth keeping raw, from its type and age.

retention(t) = max(floor, importance * e^(-λ t)), t in hours, with λ and floor
from the entry type's row in [hippocampus.types]; thin myelin (often recalled)
slows λ. Pure functions of (entry, config, now); a caller that scores many entries
passes `settings(config)` once rather than the dict each time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pamd.core.config import Settings, TypeSettings, settings
from pamd.core.entry import Entry

KEEP, COMPRESS, DROP = "keep", "compress", "drop"


def type_row(config: Settings | Mapping[str, Any], type_: str) -> TypeSettings:
    types = settings(config).hippocampus.types
    return types.get(type_) or types["context"]


def decay_rate(entry: Entry, config: Settings | Mapping[str, Any]) -> float:
    s = settings(config)
    lam = float(type_row(s, entry.type).decay)
    if entry.recalls >= int(s.myelin.thin):
        lam *= float(s.myelin.thin_decay_factor)
    return lam


def retention(entry: Entry, config: Settings | Mapping[str, Any], now: datetime) -> float:
    s = settings(config)
    row = type_row(s, entry.type)
    t = entry.age_hours(now)
    return max(float(row.floor), entry.importance * math.exp(-decay_rate(entry, s) * t))


def decide(value: float, config: Settings | Mapping[str, Any]) -> str:
    r = settings(config).hippocampus.retention
    if value >= float(r.keep_hot):
        return KEEP
    if value < float(r.drop_below):
        return DROP
    return COMPRESS
