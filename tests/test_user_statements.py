"""What the person says of their project that is no instruction (a decision, a preference, a
fact: "we use X", "I prefer Y", "don't do Z") is a fact of high importance that reaches
MEMORY.md, however much the agent did around it."""

from __future__ import annotations

import re
from datetime import datetime

from test_boot_quality import Session, _cli, age

from pamd.consolidate.summarizers import facts
from pamd.core.fmt import parse_doc


def test_a_persons_statement_is_told_from_an_order_and_a_question():
    for said in ("We deploy billing to Fly.io from the main branch.", "I prefer small commits over squashed ones.",
                 "Don't mock the database in integration tests.", "Our staging API runs on port 4001.",
                 "Use pnpm, not npm.", "мы используем pnpm для фронтенда"):
        assert facts.is_user_statement(said), said
    for said in ("Work on bead billing-7.", "did you push?", "Check again.", "Start with the first ready task."):
        assert not facts.is_user_statement(said), said


def _busy_day(start: datetime) -> Session:
    s = Session("s-busy", start)
    s.user("Work on billing-7 and commit each step.")
    for i in range(12):
        s.say(f"Step {i}: the invoice exporter handles currency set {i} now.")
        s.tool("Edit", {"file_path": f"/home/ann/billing/lib/billing/export_{i}.ex", "old_string": "x",
                        "new_string": f"@batch_size_{i} {100 + i}"}, "The file has been updated.")
        s.tool("Bash", {"command": f"mix test test/billing/export_{i}_test.exs"}, f"{5 + i} tests, 0 failures")
        s.tool("Bash", {"command": f'git commit -m "feat: export step {i} for billing-7"'},
               f"[main {i:07x}] feat: export step {i} for billing-7")
        if i == 5:
            s.user("By the way, we deploy billing to Fly.io from the main branch, and I prefer "
                   "small commits over squashed ones.")
            s.user("did you push?")
    return s


def test_the_persons_statement_reaches_memory_a_week_later_and_is_important_at_ingest(tmp_path):
    root = tmp_path / "brain"
    assert _cli(tmp_path, "init", str(root), now="2026-03-01T00:00:00Z")[0] == 0
    s = _busy_day(datetime(2026, 3, 2, 9, 0))
    end = s.write(tmp_path / "s.jsonl")
    assert _cli(root, "ingest", str(tmp_path / "s.jsonl"), now=end)[0] == 0
    l0 = next((root / "memory" / "L0").glob("*.md"))
    said = [e for e in parse_doc(l0.read_text(), str(l0), "L0").entries if "Fly.io" in e.text]
    assert said and said[0].importance >= 0.75
    age(root, datetime(2026, 3, 2, 14, 0), datetime(2026, 3, 11))
    memory = (root / "MEMORY.md").read_text()
    assert "we deploy billing to Fly.io from the main branch" in memory, memory
    assert not re.search(r"did you push|Work on billing-7", memory)
