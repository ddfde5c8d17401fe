"""What this machine's CPU can run: the engines pamd picks between need some x86-64 features."""

from __future__ import annotations

import platform


def x86_flags() -> set[str] | None:
    """The CPU's feature flags on x86-64 (empty when /proc/cpuinfo cannot tell), None on
    any other machine."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
