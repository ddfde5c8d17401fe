"""Issue 7: how much of LoCoMo's evidence a tree 25 times smaller than the raw input can hold.

    python benchmarks/fidelity_bound.py [--ratio 25]

Counts, with pamd's own token count over the turns as `pamd eval` ingests them
("[D1:3] Speaker: text"), what the tree-alone target (recall@10 from the tree
alone >= 70 % of raw) asks of any summary: a tree holds a turn's evidence only
while one of its lines carries the turn's tag, so each evidence turn found costs
at least a short sentence in the tree. Three ways to spend the budget:

- an oracle that knows the questions keeps, of each evidence turn, only its
  shortest sentence (with tag and speaker), shortest first, and nothing else;
- a question-blind tree keeps the shortest sentence of as many turns as fit
  (shortest first), or of turns taken at random;
- a question-blind rewrite keeps a fact of `--fact-tokens` tokens per turn.

Reads ../shared/bench/data/locomo/locomo10.json (never copied here). No model, no brain.
"""

from __future__ import annotations

import argparse
import random
import re

from fidelity_locomo import DATA


def main() -> int:
    from pamd.core.entry import count_tokens
    from pamd.fidelity import qa

    ap = argparse.ArgumentParser()
    ap.add_argument("--ratio", type=float, default=25.0)
    ap.add_argument("--fact-tokens", type=int, default=6)
    a = ap.parse_args()
    turns = []  # (tokens of its shortest tagged sentence, is evidence)
    raw = 0
    for conv in qa.load_locomo(DATA):
        evidence = {e for q in conv.questions for e in q.evidence}
        for dia, speaker, text in conv.messages:
            raw += count_tokens(f"[{dia}] {speaker}: {text}")
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()] or [text]
            shortest = min(count_tokens(f"[{dia}] {speaker}: {s}") for s in sentences)
            turns.append((shortest, dia in evidence))
    budget = raw / a.ratio
    n_ev = sum(e for _, e in turns)
    print(f"{len(turns):,} turns, {raw:,} tokens; {n_ev:,} evidence turns "
          f"({n_ev / len(turns):.0%}); a {a.ratio:g}:1 tree holds {budget:,.0f} tokens")

    def fill(order) -> tuple[int, int]:
        used = kept = found = 0
        for tokens, is_ev in order:
            if used + tokens <= budget:
                used, kept, found = used + tokens, kept + 1, found + is_ev
        return kept, found

    for name, order in (("oracle: shortest sentence of evidence turns only",
                         sorted(t for t in turns if t[1])),
                        ("blind: shortest sentence of any turn, shortest first", sorted(turns)),
                        ("blind: shortest sentence of turns at random", random.Random(1).sample(turns, len(turns))),
                        (f"blind: a {a.fact_tokens}-token fact per turn, at random",
                         [(a.fact_tokens, e) for _, e in random.Random(1).sample(turns, len(turns))])):
        kept, found = fill(order)
        print(f"{name}: {kept:,} turns kept, {found / n_ev:.1%} of the evidence turns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
