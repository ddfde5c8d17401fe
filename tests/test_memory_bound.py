"""MEMORY.md's budget ([tiers.budgets] L4): defrag merges its oldest, least retained summaries."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from conftest import git

from pamd.core.fmt import parse_doc

START = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
FACTS = ["The staging box {i} runs Debian 12 with nginx {w} in front.",
         "Anna asked for the Q{w} revenue report with {i}40 rows.",
         "The billing cron {i} moved to 04:{w}0 because backups ran late.",
         "We keep the {w}th region's logs in bucket logs-{i} for ninety days."]


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def weeks(path, n):
    lines = []
    for w in range(n):
        for i in range(84):
            ts = START + timedelta(days=7 * w + i // 12, minutes=40 * (i % 12))
            lines.append(json.dumps({"ts": iso(ts), "role": "user" if i % 2 else "assistant",
                                     "text": " ".join(f.format(i=i + k, w=w) for k, f in enumerate(FACTS))
                                     + f" Ticket OPS-{w}{i:02d} tracks it.", "session": f"w{w}d{i // 12}"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def memory(root):
    return parse_doc((root / "MEMORY.md").read_text(), "MEMORY.md", "L4")


def set_budget(root, l4):
    cfg = root / "pamd.toml"
    text = re.sub(r"(?m)^L4 = \d+", f"L4 = {l4}", cfg.read_text())
    cfg.write_text(text)
    git(root, "commit", "-qam", "a smaller MEMORY.md")


def test_memory_over_its_budget_is_merged_at_defrag_and_stays_findable(brain, tmp_path):
    root = brain.cwd
    note = "My own note: the VPN admin is Oleg."
    mem = (root / "MEMORY.md").read_text().replace("-->\n", f"-->\n\n{note}\n", 1)
    (root / "MEMORY.md").write_text(mem)
    git(root, "commit", "-qam", "my note")
    assert brain("ingest", str(weeks(tmp_path / "w.jsonl", 10)), now=iso(START + timedelta(days=70)))[0] == 0
    assert brain("defrag", now=iso(START + timedelta(days=71)))[0] == 0
    before = memory(root)
    size = sum(e.tokens for e in before.entries)
    assert len(before.entries) >= 8 and all(e.sources for e in before.entries)
    set_budget(root, size // 2)
    code, out, err = brain("defrag", now=iso(START + timedelta(days=72)))
    assert code == 0, err
    after = memory(root)
    assert sum(e.tokens for e in after.entries) <= size * 0.6
    assert note in after.preamble  # a person's notes are never touched
    gone = {e.id for e in before.entries} - {e.id for e in after.entries}
    assert gone
    msg = git(root, "log", "-1", "--format=%B")
    assert "MEMORY.md was over its" in msg and all(g in msg for g in gone)
    assert "L4 -> L4:" in msg
    # Every merged summary is a source of a new one: the way back to the raw messages stays.
    assert gone <= {s for e in after.entries for s in e.sources}
    assert brain("check")[0] == 0 and brain("fsck")[0] == 0
    code, out, _ = brain("expand", sorted(gone)[0])
    assert code == 0 and any(w in out for w in ("Debian 12", "revenue", "billing", "region"))
    # Nightly merges converge: they stop once nothing left can shrink, not a commit a night.
    sizes = []
    for night in range(74, 84):
        assert brain("defrag", now=iso(START + timedelta(days=night)))[0] == 0
        sizes.append((sum(e.tokens for e in memory(root).entries), "MEMORY.md was over" in
                      git(root, "log", "-1", "--format=%B")))
    assert not any(merged for _, merged in sizes[-3:]), sizes


def test_myelinated_and_hand_written_entries_are_never_merged(brain, tmp_path):
    root = brain.cwd
    assert brain("ingest", str(weeks(tmp_path / "w.jsonl", 6)), now=iso(START + timedelta(days=42)))[0] == 0
    assert brain("defrag", now=iso(START + timedelta(days=43)))[0] == 0
    before = memory(root).entries
    keep = before[0]
    text = (root / "MEMORY.md").read_text().replace(f"session={keep.session} recalls=0",
                                                     f"session={keep.session} recalls=4", 1)
    (root / "MEMORY.md").write_text(text)
    git(root, "commit", "-qam", "recalled")
    set_budget(root, 1)
    assert brain("defrag", now=iso(START + timedelta(days=44)))[0] == 0
    after = {e.id for e in memory(root).entries}
    assert keep.id in after
    assert len(after) < len(before)


def test_a_merge_ratio_of_one_merges_nothing(brain, tmp_path):
    # A merge that cannot shrink MEMORY.md would be made again, a commit every night.
    root = brain.cwd
    assert brain("ingest", str(weeks(tmp_path / "w.jsonl", 6)), now=iso(START + timedelta(days=42)))[0] == 0
    assert brain("defrag", now=iso(START + timedelta(days=43)))[0] == 0
    before = [e.id for e in memory(root).entries]
    cfg = root / "pamd.toml"
    cfg.write_text(cfg.read_text().replace("l4_merge_ratio = 3", "l4_merge_ratio = 1"))
    set_budget(root, 1)
    brain("defrag", now=iso(START + timedelta(days=44)))
    assert set(before) <= {e.id for e in memory(root).entries}
    assert "MEMORY.md was over" not in git(root, "log", "-1", "--format=%B")


@pytest.mark.slow  # six weeks of messages, four defrags, the whole brain embedded twice
def test_recall_after_merges_names_the_summary_in_the_tree_as_a_rebuild_does(brain, tmp_path):
    # A merged summary can take the lines of the one it replaced, over the same raw
    # messages: a refreshed index kept those leaves' chunks, with the merged-away id.
    root = brain.cwd
    assert brain("ingest", str(weeks(tmp_path / "w.jsonl", 6)), now=iso(START + timedelta(days=42)))[0] == 0
    assert brain("defrag", now=iso(START + timedelta(days=43)))[0] == 0
    assert brain("index")[0] == 0
    set_budget(root, 1)
    for night in (44, 45, 46):
        assert brain("defrag", now=iso(START + timedelta(days=night)))[0] == 0
    assert brain("index")[0] == 0
    in_tree = {e.id for e in memory(root).entries}

    def hits():
        code, out, err = brain("recall", "--json", "--no-log", "-k", "20", "staging box Debian nginx")
        assert code == 0, err
        return [(h["lines"], h["ids"]) for h in json.loads(out) if h["path"] == "MEMORY.md"]

    refreshed = hits()
    assert refreshed and all(ids[0] in in_tree for _, ids in refreshed), (in_tree, refreshed)
    assert brain("index", "--rebuild")[0] == 0
    assert hits() == refreshed


def test_a_merge_of_rarely_recalled_summaries_is_not_myelinated_by_their_summed_recalls(brain, tmp_path):
    # Each summary recalled twice (below thin, so merged); their sum made the merged one
    # thick (PRELOAD.md) or a DNA reflex: the bound grew the boot context it was to shrink.
    root = brain.cwd
    assert brain("ingest", str(weeks(tmp_path / "w.jsonl", 6)), now=iso(START + timedelta(days=42)))[0] == 0
    assert brain("defrag", now=iso(START + timedelta(days=43)))[0] == 0
    text = re.sub(r" recalls=0 ", " recalls=2 ", (root / "MEMORY.md").read_text())
    (root / "MEMORY.md").write_text(text)
    git(root, "commit", "-qam", "each recalled twice")
    before = {e.id for e in memory(root).entries}
    set_budget(root, 1)
    assert brain("defrag", now=iso(START + timedelta(days=44)))[0] == 0
    merged = [e for e in memory(root).entries if e.sources and set(e.sources) <= before]
    assert any(len(e.sources) > 1 for e in merged)
    assert all(e.recalls == 2 for e in merged), [(e.id, e.recalls) for e in merged]
    assert not any(e.id in (root / f).read_text() for e in merged for f in ("PRELOAD.md", "DNA.md"))
