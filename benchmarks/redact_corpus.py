"""Secret redaction against the corpus: leaks per family, look-alikes redacted, and speed.

    python benchmarks/redact_corpus.py            # leaks and false positives
    python benchmarks/redact_corpus.py --speed    # also: redaction of the 10,000-message workload

Each case of tests/data/secrets/corpus.py is redacted as written and as a tool call stores it
(one JSON string, newlines as `\\n`); a leak is any fragment of its secret left, a loss any of the
words around it gone. Target: 0 leaks, 0 look-alikes touched.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "data" / "secrets"))
import corpus  # noqa: E402

from pamd.core.redact import Redactor  # noqa: E402


def forms(text: str) -> list[tuple[str, str, callable]]:
    escaped = json.dumps({"command": f"cd /srv/app\n{text}"})
    return [("raw", text, lambda out: out), ("json", escaped, lambda out: json.loads(out)["command"])]


def measure(r: Redactor) -> dict:
    leaks, lost, total = Counter(), Counter(), Counter()
    for case in corpus.secrets():
        for _form, text, back in forms(case.text):
            out = back(r.redact(text)[0])
            total[case.family] += 1
            leaks[case.family] += bool(corpus.leaked(case, out))
            lost[case.family] += bool(corpus.lost(case, out))
    touched = [case.text[:70] for case in corpus.lookalikes()
               for _, text, _ in forms(case.text) if r.redact(text)[1]]
    return {"leaks": leaks, "lost": lost, "total": total, "touched": touched}


def speed(r: Redactor) -> float:
    from _workload import START, replay

    texts = [m.text for m in replay(10_000, START, 10_000)]
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        for text in texts:
            r.redact(text)
        best = min(best, time.process_time() - t)
    return best


def long_line() -> float:
    """A one-line tool result of 150 KB full of command words and flags (minified HTML, JSON)."""
    line = "curl -s https://x/a.js mysql --host db login -p 1 redis-cli -a $X openssl " * 2000
    t = time.process_time()
    Redactor().redact(line)
    return time.process_time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--speed", action="store_true", help="also time the 10,000-message workload")
    args = ap.parse_args()
    r = Redactor()
    m = measure(r)
    print(f"{'family':24} {'leaked':>6} {'lost':>5} {'of':>4}")
    for family in sorted(m["total"]):
        print(f"{family:24} {m['leaks'][family]:6} {m['lost'][family]:5} {m['total'][family]:4}")
    cases = len(corpus.secrets())
    print(f"secrets: {cases} cases in {len(m['total'])} families, {sum(m['total'].values())} forms; "
          f"leaked {sum(m['leaks'].values())}, words around them lost {sum(m['lost'].values())}")
    print(f"look-alikes: {len(corpus.lookalikes())} cases, {2 * len(corpus.lookalikes())} forms; "
          f"redacted {len(m['touched'])}")
    for text in m["touched"]:
        print("  touched:", text)
    if args.speed:
        print(f"redact 10,000 workload messages: {speed(r):.2f} s CPU (best of 3)")
        print(f"redact one 150 KB line of command words and flags: {long_line():.2f} s CPU")
    return 1 if sum(m["leaks"].values()) or m["touched"] else 0


if __name__ == "__main__":
    sys.exit(main())
