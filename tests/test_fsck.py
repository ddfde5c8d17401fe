"""pamd fsck on real brains: a simulated week passes; hand-made damage is found at path:line."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from conftest import git

START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
TEXTS = [
    "Anna asked for the Q{q} revenue report with {n} rows.",
    "The export job failed with error code {n} on staging.",
    "ok",
    "We decided to keep invoices for {q} years in cold storage.",
    "Deployed v{q}.{n} to production, the milestone is done, thanks!",
]


def iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def day_of_messages(path, day: int, per_day: int = 10):
    lines = []
    for i in range(per_day):
        ts = START + timedelta(days=day, minutes=37 * i)
        text = TEXTS[i % len(TEXTS)].format(q=day % 4 + 1, n=100 + 7 * i + day)
        lines.append(
            json.dumps(
                {
                    "ts": iso(ts),
                    "role": "user" if i % 2 else "assistant",
                    "text": text,
                    "session": f"day{day}",
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def lived_week(brain, tmp_path):
    """Seven days: ingest each morning, compact twice a day, defrag each night."""
    for day in range(7):
        f = day_of_messages(tmp_path / f"day{day}.jsonl", day)
        base = START + timedelta(days=day)
        steps = [
            ("ingest", str(f), base + timedelta(hours=7)),
            ("compact", None, base + timedelta(hours=8)),
            ("compact", None, base + timedelta(hours=16)),
            ("defrag", None, base + timedelta(hours=17, minutes=30)),
        ]
        for cmd, arg, when in steps:
            code, _, err = brain(*([cmd, arg] if arg else [cmd]), now=iso(when))
            assert code == 0, f"{cmd} on day {day}: {err}"
    return brain


def summary_with_sources(root):
    for p in sorted(root.glob("memory/L[1-3]/*.md")) + [root / "MEMORY.md"]:
        lines = p.read_text().split("\n")
        for i, line in enumerate(lines):
            if " from=" in line:
                return p, i + 1, line
    raise AssertionError("the week made no summaries")


def test_fsck_passes_after_a_week_of_operation(lived_week):
    root = lived_week.cwd
    assert int(git(root, "rev-list", "--count", "HEAD")) > 15
    assert list(root.glob("memory/L3/*.md")) or "from=" in (root / "MEMORY.md").read_text()
    code, out, err = lived_week("fsck")
    assert code == 0, out + err
    assert out.strip().startswith("brain ok")
    code, out, _ = lived_week("fsck", "--deep", "--json")
    assert code == 0 and all(v == [] for v in json.loads(out).values())


def test_fsck_finds_a_hand_broken_provenance_link(lived_week):
    root = lived_week.cwd
    path, lineno, line = summary_with_sources(root)
    victim = re.search(r"from=([es]-[0-9a-f]{12})", line).group(1)
    text = path.read_text().replace(f"from={victim}", "from=e-000000000000", 1)
    path.write_text(text)
    rel = path.relative_to(root).as_posix()
    git(root, "commit", "-qam", "hand edit")
    code, out, _ = lived_week("fsck")
    assert code == 1
    assert f"{rel}:{lineno}: from= names e-000000000000" in out
    # the other checks stay quiet: only the broken link is reported
    assert [ln for ln in out.splitlines() if ln.startswith(("memory/", "MEMORY"))] == [
        ln for ln in out.splitlines() if "e-000000000000" in ln
    ]


def test_fsck_finds_a_missing_ledger_id_and_conflict_markers(brain):
    root = brain.cwd
    assert brain("remember", "We decided to ship the billing export on Friday.")[0] == 0
    ledger = next(root.glob("memory/ledger/*.txt"))
    l0 = next(root.glob("memory/L0/*.md"))
    eid = ledger.read_text().split()[0]
    ledger.write_text("not-an-id\n")
    dna = root / "DNA.md"
    dna.write_text(dna.read_text() + "<<<<<<< HEAD\n")
    code, out, _ = brain("fsck")
    assert code == 1
    l0_rel, ledger_rel = l0.relative_to(root).as_posix(), ledger.relative_to(root).as_posix()
    assert f"{ledger_rel}:1: 'not-an-id' is not an entry id" in out
    header = 1 + l0.read_text().split("\n").index(
        next(ln for ln in l0.read_text().split("\n") if eid in ln)
    )
    assert f"{l0_rel}:{header}: {eid} is not in memory/ledger/" in out
    assert re.search(r"^DNA.md:\d+: conflict marker", out, re.M)


def test_fsck_outside_a_brain_and_bad_skip(tmp_path, capsys):
    from conftest import Pamd

    p = Pamd(tmp_path, capsys)
    code, out, err = p("fsck")
    assert code == 1 and err.startswith("pamd: error: no pamd brain") and err.count("\n") == 1


def test_fsck_rejects_an_unknown_check(brain):
    code, _, err = brain("fsck", "--skip", "nope")
    assert code == 1 and "unknown check 'nope'" in err
