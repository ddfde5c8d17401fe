"""Myelination, DNA, STATE and boot against real brains."""

from __future__ import annotations

import json
from datetime import UTC

import yaml
from conftest import git, head_count

from pamd.core.fmt import parse_doc, split_frontmatter

T0 = "2026-11-30T09:00:00Z"


def l0_entries(root):
    out = []
    for p in sorted(root.glob("memory/L*/*.md")):
        out += parse_doc(p.read_text(), str(p.relative_to(root)), p.parent.name).entries
    return out


def meta(path):
    return split_frontmatter(path.read_text())[0]


def seed(brain, tmp_path):
    f = tmp_path / "day.jsonl"
    rows = [
        ("user", "We decided the staging database is Postgres 16 on port 5433."),
        ("assistant", "The deploy failed with error: permission denied on /srv/app, data not written."),
        ("assistant", "Fixed by running the migration as the app user; the deploy works now."),
        ("user", "Please keep release notes in docs/releases.md from now on."),
    ]
    f.write_text("\n".join(json.dumps({"ts": f"2026-11-30T09:0{i}:00Z", "role": r, "text": t, "session": "w"})
                           for i, (r, t) in enumerate(rows)) + "\n")
    assert brain("ingest", str(f), now=T0)[0] == 0
    return {e.text.split()[1]: e for e in l0_entries(brain.cwd)}


def touch_and_compact(brain, eid, times, now="2026-11-30T09:30:00Z"):
    for _ in range(times):
        assert brain("touch", eid, now=now)[0] == 0
    code, out, err = brain("compact", now=now)
    assert code == 0, err
    return next(e for e in l0_entries(brain.cwd) if e.id == eid or eid in e.sources)


def test_recalls_cross_the_thresholds(brain, tmp_path):
    es = seed(brain, tmp_path)
    target = es["decided"]
    root = brain.cwd
    e = touch_and_compact(brain, target.id, 3)
    assert e.recalls == 3 and e.seen == "2026-11-30"
    assert "Pamd-Recall-Log:" in git(root, "log", "-1", "--format=%B")
    # thin myelin: retention decays slower than an unrecalled twin
    from datetime import datetime

    from pamd.core import config
    from pamd.encode.hippocampus import retention
    later = datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert retention(e, config.defaults(), later) > retention(e.with_(recalls=0), config.defaults(), later)
    assert target.id not in (root / "PRELOAD.md").read_text()
    e = touch_and_compact(brain, target.id, 2)
    assert e.recalls == 5
    assert target.id in (root / "PRELOAD.md").read_text()
    assert not any(target.id in str(r) for r in meta(root / "DNA.md")["reflexes"])
    e = touch_and_compact(brain, target.id, 5)
    assert e.recalls == 10
    reflexes = meta(root / "DNA.md")["reflexes"]
    mine = [r for r in reflexes if isinstance(r, dict) and target.id in r.get("from", [])]
    assert len(mine) == 1 and mine[0]["kind"] == "recalled"


def test_a_recall_is_folded_exactly_once(brain, tmp_path):
    es = seed(brain, tmp_path)
    eid = es["decided"].id
    brain("touch", eid)
    brain("compact", now="2026-11-30T09:30:00Z")
    n = head_count(brain.cwd)
    code, out, _ = brain("compact", now="2026-11-30T09:31:00Z")
    assert "nothing to compact" in out and head_count(brain.cwd) == n
    assert next(e for e in l0_entries(brain.cwd) if e.id == eid).recalls == 1


def test_a_cortisol_failure_becomes_a_dna_lesson_linked_to_its_source(brain, tmp_path):
    es = seed(brain, tmp_path)
    fail = es["deploy"]
    assert "cortisol" in fail.neuro
    code, out, err = brain("compact", now="2026-11-30T09:30:00Z")
    assert code == 0, err
    lessons = [r for r in meta(brain.cwd / "DNA.md")["reflexes"] if isinstance(r, dict) and r.get("kind") == "lesson"]
    assert len(lessons) == 1
    assert fail.id in lessons[0]["from"]
    assert lessons[0]["text"]
    assert "lessons from failures" in git(brain.cwd, "log", "-1", "--format=%B")


def test_a_person_dna_edit_survives_the_next_run(brain, tmp_path):
    es = seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    dna = brain.cwd / "DNA.md"
    m, body, _ = split_frontmatter(dna.read_text())
    m["preferences"] = ["Answer in short sentences."]
    m["reflexes"][0]["text"] = "Reworded by a person."
    dna.write_text("---\n" + yaml.safe_dump(m, sort_keys=False, allow_unicode=True) + "---\n" + "\n".join(body))
    git(brain.cwd, "commit", "-qam", "person edits DNA")
    for _ in range(10):
        brain("touch", es["decided"].id, now="2026-11-30T10:00:00Z")
    assert brain("compact", now="2026-11-30T10:00:00Z")[0] == 0
    m2 = meta(dna)
    assert m2["preferences"] == ["Answer in short sentences."]
    assert m2["reflexes"][0]["text"] == "Reworded by a person."
    assert len([r for r in m2["reflexes"] if r.get("kind") == "lesson"]) == 1  # not re-added
    assert any(es["decided"].id in r.get("from", []) for r in m2["reflexes"])


def test_broken_dna_is_named_and_never_overwritten(brain, tmp_path):
    seed(brain, tmp_path)
    dna = brain.cwd / "DNA.md"
    dna.write_text("---\nreflexes: [oops\n---\n# DNA\n")
    git(brain.cwd, "commit", "-qam", "person breaks DNA")
    code, out, _ = brain("check")
    assert code == 1 and out.startswith("DNA.md:")
    n = head_count(brain.cwd)
    code, _, err = brain("compact", now="2026-11-30T09:30:00Z")
    assert code == 1 and "DNA.md" in err and "will not overwrite" in err
    assert dna.read_text() == "---\nreflexes: [oops\n---\n# DNA\n" and head_count(brain.cwd) == n


def test_state_snapshot_and_state_at(brain, tmp_path):
    seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    first = git(brain.cwd, "rev-parse", "HEAD").strip()
    st = meta(brain.cwd / "STATE.md")
    assert any("release notes" in g for g in st["active_goals"])
    assert st["updated"] == "2026-11-30T09:30:00Z" and st["emotional_context"]
    brain("remember", "Maybe the slow deploys come from the DNS cache.", now="2026-11-30T11:00:00Z")
    brain("remember", "I want the CLI to print JSON everywhere.", "--type", "user_intent", now="2026-11-30T11:01:00Z")
    brain("compact", now="2026-11-30T11:30:00Z")
    code, out, _ = brain("state", "--json")
    now_state = json.loads(out)
    assert "JSON" in now_state["current_focus"]
    assert any("DNS" in h for h in now_state["hypotheses"])
    code, out, _ = brain("state", "--at", first, "--json")
    assert json.loads(out)["updated"] == "2026-11-30T09:30:00Z"


def test_boot_order_budget_and_cut(brain, tmp_path):
    seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    code, out, _ = brain("boot")
    assert code == 0
    order = [out.index(h) for h in ("## DNA (DNA.md)", "## Preloaded memories", "## State (STATE.md)",
                                    "## Long-term memory (MEMORY.md)", "## Hot memory (raw)")]
    assert order == sorted(order)
    assert "nothing cut" in out
    full = json.loads(brain("boot", "--json")[1])["tokens"]
    budget = full - 30
    code, out, _ = brain("boot", "--budget", str(budget), "--json")
    b = json.loads(out)
    assert b["tokens"] <= budget and b["cut"]["entries"] >= 1
    kept = "".join(s["text"] for s in b["sections"])
    assert "Postgres 16" in kept  # the decision has the highest retention: cut last
    code, out2, _ = brain("boot", "--budget", str(budget))
    assert "; cut " in out2.splitlines()[1]


def test_boot_says_when_what_always_goes_in_is_over_the_budget(brain, tmp_path):
    """DNA, PRELOAD, STATE and MEMORY.md's notes go in whole; when they alone pass --budget the
    output is over it, and an agent harness is told on stderr (and in JSON) which files did it."""
    seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    code, out, err = brain("boot", "--budget", "50")
    assert code == 0 and out.startswith("# Boot context")
    assert err.count("\n") == 1 and err.startswith("pamd: warning: the boot context is ")
    assert "over the budget of 50" in err and "STATE.md " in err and "DNA.md " in err
    b = json.loads(brain("boot", "--budget", "50", "--json")[1])
    assert b["over_budget"] is True and b["tokens"] > 50
    code, out, err = brain("boot", "--json")
    assert code == 0 and err == "" and json.loads(out)["over_budget"] is False


def test_boot_never_passes_its_budget_whatever_the_width_of_the_cut_note(brain, tmp_path):
    """The header's "cut N entries (T tokens)" is written after the cut: room for it is
    reserved at its widest, so no budget is passed by the one or two tokens of its digits."""
    from pamd.core.entry import parse_time
    from pamd.edge.brain import Brain
    from pamd.myelin.boot import build

    f = tmp_path / "many.jsonl"
    f.write_text("".join(json.dumps({"ts": f"2026-11-29T{8 + i // 60:02d}:{i % 60:02d}:00Z", "role": "user",
                                     "text": f"Note {i}: the cache for service {i} holds {i * 7} keys."}) + "\n"
                         for i in range(150)))
    assert brain("ingest", str(f), now="2026-11-29T12:00:00Z")[0] == 0
    b, now = Brain(brain.cwd), parse_time("2026-11-29T12:00:00Z")
    files = b.entry_files() + ["DNA.md", "PRELOAD.md", "STATE.md"]
    full = build(b.read, files, b.config, now).tokens
    over = [n for n in range(full // 3, full, 3) if build(b.read, files, b.config, now, n).tokens > n]
    assert over == []


def test_boot_at_reproduces_an_old_boot_byte_for_byte(brain, tmp_path):
    seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    sha = git(brain.cwd, "rev-parse", "HEAD").strip()
    r = brain.proc("boot", now=None)
    assert r.returncode == 0
    then = r.stdout
    brain("remember", "A later thought that changes the context.", now="2026-11-30T12:00:00Z")
    brain("compact", now="2026-11-30T14:00:00Z")
    r2 = brain.proc("boot", "--at", sha, now=None)
    assert r2.stdout == then
    assert brain.proc("boot", now=None).stdout != then


def test_a_recall_of_an_entry_not_yet_committed_is_counted_once_it_is(brain, tmp_path):
    """The fold reads committed entries only; a recall of an entry that sat uncommitted in
    the tree was dropped while the log's marker moved past it. It is carried instead."""
    assert brain("remember", "The DNS record for api points at the new load balancer.",
                 now="2026-11-28T09:00:00Z")[0] == 0
    assert brain("remember", "The echidna invoice is due on the 5th.", now="2026-11-27T09:05:00Z")[0] == 0
    root = brain.cwd
    git(root, "reset", "-q", "HEAD~1")  # the echidna entry (a day file of its own) is uncommitted
    assert brain("recall", "-k", "1", "echidna invoice", now="2026-11-28T10:00:00Z")[0] == 0
    assert brain("recall", "-k", "1", "DNS record load balancer", now="2026-11-28T10:01:00Z")[0] == 0
    assert brain("compact", now="2026-11-28T10:30:00Z")[0] == 0
    assert "Folded 1 recalls" in git(root, "log", "-1", "--format=%B")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the person commits the entry")
    assert brain("compact", now="2026-11-28T11:00:00Z")[0] == 0
    from pamd.edge.brain import Brain

    counts = {("echidna" if "echidna" in e.text else "dns"): e.recalls for e in Brain(root).load().entries}
    assert counts == {"dns": 1, "echidna": 1}
