"""How fast is the extractive summarizer? 10,000 synthetic L0 entries -> L1, L2, L3.

Run: python benchmarks/summarize_speed.py [N]
Prints seconds per tier, entries/s and the token ratio reached, against a baseline
measured in the same run (plain head-truncation of each group to the same budget:
the cheapest possible "summarizer", so the ratio shows what scoring costs).
"""

from __future__ import annotations

import random
import sys
import time
from datetime import UTC, datetime, timedelta

from pamd.consolidate.summarizers import Group, get_summarizer
from pamd.core.entry import Entry, count_tokens

NAMES = ["Caroline", "Melanie", "Alice", "Bob", "Дмитрий", "Анна"]
SENTENCES = [
    "I went to the {n} support group yesterday and it was so powerful.",
    "We decided to deploy version {d}.{d} to production on 2024-05-{d2}.",
    "ok thanks",
    "The build failed with exit code {d} because the cache was stale.",
    "Let's meet at {d}:30 next Tuesday with {n} to review the budget of ${d}00.",
    "Мы решили перенести релиз на {d2} мая, {n} согласна.",
    "Спасибо!",
    "Honestly I am not sure, maybe we could think about it some more later on.",
    "{n} said the migration {d}{d}{d} must run before the restart.",
    "That's really cool, you've got guts.",
]


def make_entries(n: int, seed: int = 7) -> list[Entry]:
    rnd = random.Random(seed)
    t0 = datetime(2024, 5, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        parts = []
        for _ in range(rnd.randint(1, 4)):
            parts.append(
                rnd.choice(SENTENCES).format(
                    n=rnd.choice(NAMES), d=rnd.randint(1, 9), d2=rnd.randint(10, 28)
                )
            )
        out.append(
            Entry(
                id=f"e-{i:012x}",
                ts=t0 + timedelta(minutes=5 * i),
                role=rnd.choice(NAMES[:2]),
                text=f"[D{i // 20}:{i % 20}] " + " ".join(parts),
                importance=rnd.random(),
            )
        )
    return out


def groups_of(entries, size, tier, ratio):
    out = []
    for i in range(0, len(entries), size):
        chunk = tuple(entries[i : i + size])
        tokens = sum(e.tokens for e in chunk)
        out.append(Group(f"g{i}", tier, chunk, max(1, tokens // ratio)))
    return out


def truncate_baseline(groups):
    return [" ".join(e.text for e in g.entries)[: g.target_tokens * 4] for g in groups]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    entries = make_entries(n)
    raw_tokens = sum(e.tokens for e in entries)
    summarizer = get_summarizer({})
    print(f"{n} entries, {raw_tokens} tokens")
    for tier, size, ratio in (("L1", 12, 3), ("L2", 40, 10), ("L3", 100, 50)):
        groups = groups_of(entries, size, tier, ratio)
        t = time.perf_counter()
        truncate_baseline(groups)
        base = time.perf_counter() - t
        t = time.perf_counter()
        texts, _ = summarizer.summarize(groups)
        took = time.perf_counter() - t
        out_tokens = sum(count_tokens(x) for x in texts)
        print(
            f"{tier}: {len(groups)} groups of {size}  {took:.3f} s  "
            f"({n / took:,.0f} entries/s; truncation baseline {base:.4f} s, "
            f"x{took / max(base, 1e-9):.0f})  ratio {raw_tokens / out_tokens:.1f}:1 "
            f"(target {ratio}:1)"
        )


if __name__ == "__main__":
    main()
