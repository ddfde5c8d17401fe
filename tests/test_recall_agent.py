"""Recall shaped for an agent: k hits on an aged brain, each naming its entry, and an exact mode."""

from __future__ import annotations

import json
import re
from pathlib import Path

from recall_helpers import entries, make_brain, recall_cli

from pamd.core.fmt import render_doc

FACTS = [
    "The staging database listens on port 5433 since the migration.",
    "Anna prefers the darker theme for the dashboard colours.",
    "The nightly backup job writes to the bucket named pamd-archive-eu.",
    "The export runs in a single pod limited to 512 MB of memory.",
    "We decided to ship version 2 on Friday after the load test passes.",
    "The database migration failed with a timeout on the production cluster.",
    "I rotated the leaked API key and updated the vault entry.",
    "The quarterly revenue report is due to the board next Thursday.",
    "Boris owns the billing service and reviews every change to invoices.",
    "The CI pipeline caches wheels under the key py311-deps.",
    "Our Kafka cluster keeps messages for seven days before deleting them.",
    "The mobile app release needs sign-off from the security team first.",
    "Grafana alerts page the on-call engineer after five minutes of errors.",
    "The search service reindexes every night at two in the morning.",
    "Customer invoices are archived in cold storage for ten years.",
    "The frontend uses pnpm workspaces with one package per feature.",
]


def _aged(brain, tmp_path) -> list[dict]:
    """FACTS ingested, then eight days of compaction and defrag: the tree keeps summaries only."""
    rows = [{"ts": f"2026-11-30T08:{i:02d}:00Z", "role": "user" if i % 2 else "assistant",
             "session": "s", "text": t} for i, t in enumerate(FACTS)]
    f = tmp_path / "facts.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert brain("ingest", str(f), now="2026-11-30T09:00:00Z")[0] == 0
    assert brain("compact", now="2026-12-08T09:00:00Z")[0] == 0
    assert brain("defrag", now="2026-12-08T09:30:00Z")[0] == 0
    assert not list((brain.cwd / "memory" / "L0").glob("*.md"))  # nothing raw is left
    return rows


def _recall(brain, *args: str) -> list[dict]:
    code, out, err = brain("recall", "--json", *args, now="2026-12-08T10:00:00Z")
    assert code == 0, err
    return json.loads(out)


def test_k_10_gives_10_hits_on_an_aged_brain_each_naming_its_entry(brain, tmp_path):
    """Raw leaves behind one summary used to merge into a single place: 1-3 hits for -k 10."""
    rows = _aged(brain, tmp_path)
    hits = _recall(brain, "which bucket does the nightly backup write to", "-k", "10", "--no-log")
    assert len(hits) == 10
    by_text = {r["text"]: r for r in rows}
    ids = [h["id"] for h in hits]
    assert len(set(ids)) == 10
    top = hits[0]
    assert "pamd-archive-eu" in top["snippet"] and top["relevance"] > hits[-1]["relevance"]
    for h in hits:
        assert 0.0 <= h["relevance"] <= 1.0
        lines = (brain.cwd / h["path"]).read_text("utf-8").split("\n")[h["lines"][0] - 1: h["lines"][1]]
        assert h["location"] == f"{h['path']}:{h['lines'][0]}-{h['lines'][1]}"
        if h["summary"]:  # a compressed leaf: its lines are its summary's, as on disk now
            assert lines[0].startswith(f"### {h['summary']} ")
            assert h["id"].startswith("e-") and h["ids"] == [h["summary"], h["id"]]
            raw = by_text[h["snippet"]]  # the leaf's own words, its time and its speaker
            assert h["ts"] == raw["ts"] and h["role"] == raw["role"]
        else:
            assert lines[0].startswith(f"### {h['id']} ")
    assert sum(1 for h in hits if h["summary"]) >= 9


def test_a_recall_through_many_leaves_of_one_summary_logs_the_summary_once(brain, tmp_path):
    from pamd.myelin.recall_log import pending

    _aged(brain, tmp_path)
    hits = _recall(brain, "which bucket does the nightly backup write to", "-k", "10", "--log")
    summaries = {h["summary"] for h in hits if h["summary"]}
    assert len(summaries) == 1
    p = pending(brain.cwd / ".pamd", None)
    assert p.counts[summaries.pop()] == 1


WORKER_TALK = [
    ("user", "Make sure the worker pool starts before the scheduler does."),
    ("assistant", "The worker pool now starts first; the scheduler waits for it."),
    ("user", "Can we ensure the worker restarts after a crash?"),
    ("assistant", "The supervisor restarts a crashed worker within two seconds."),
    ("user", "How many workers does the pool keep warm?"),
    ("assistant", "Four workers stay warm; the pool grows to sixteen under load."),
    ("user", "Ensure the worker logs go to the shared volume."),
    ("assistant", "Worker logs now go to the shared volume under /var/log/workers."),
]
# The identifier, once, deep inside a long tool output; and once in an older entry.
LOG = "\n".join(f"2026-11-30 10:{i:02d}:00 INFO scheduler tick {i} queue=ok latency={i * 3}ms"
                for i in range(60))
OLD = ("assistant", "Renamed start_worker to ensure_worker in pool.py; ensure_workers stays as is.")
NEW = ("assistant", f"[tool Bash] pytest output:\n{LOG}\nFAILED tests/test_pool.py::test_boot - "
       f"AttributeError: module 'pool' has no attribute 'ensure_worker'\n{LOG}")
DECOY = ("user", "ensure_workers is the plural helper and must not be renamed.")


def _worker_brain(tmp_path: Path) -> Path:
    days = {"memory/L0/2026-11-29.md": render_doc({"day": "2026-11-29"}, "# 29 Nov",
                                                  entries([OLD, DECOY], start=entries()[0].ts.replace(day=29))),
            "memory/L0/2026-11-30.md": render_doc({"day": "2026-11-30"}, "# 30 Nov",
                                                  entries([*WORKER_TALK, NEW]))}
    return make_brain(tmp_path / "workers", days)


def test_exact_mode_finds_every_entry_holding_an_identifier_newest_first(tmp_path, capsys):
    root = _worker_brain(tmp_path)
    new_id = entries([*WORKER_TALK, NEW])[-1].id
    old_id = entries([OLD, DECOY], start=entries()[0].ts.replace(day=29))[0].id
    ranked = recall_cli(root, "ensure_worker", 3, capsys, "--ranked", "--no-log")
    assert new_id not in [h["id"] for h in ranked]  # the words around it outrank the long log
    hits = recall_cli(root, "ensure_worker", 10, capsys, "--exact", "--no-log")
    assert [h["id"] for h in hits] == [new_id, old_id]  # not the one that only says ensure_workers
    assert all(h["mode"] == "exact" and h["relevance"] == 1.0 for h in hits)
    assert "ensure_worker'" in hits[0]["snippet"] and len(hits[0]["snippet"]) < 400
    # a query of one identifier is looked up this way without the flag
    assert [h["id"] for h in recall_cli(root, "ensure_worker", 10, capsys, "--no-log")] == [new_id, old_id]
    # and falls back to ranking when no entry holds it
    hits = recall_cli(root, "restart_worker", 3, capsys, "--no-log")
    assert hits and all(h["mode"] == "ranked" for h in hits)


def test_exact_mode_says_how_many_more_entries_hold_the_term(tmp_path, capsys):
    from pamd.cli import main

    root = _worker_brain(tmp_path)
    assert main(["recall", "--brain", str(root), "--no-log", "--exact", "-k", "1", "ensure_worker"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("… 1 more entries hold it (-k 2 shows them all)"), out


def test_identifier_detection():
    from pamd.recall.exact import identifier

    for q in ("ensure_worker", "SessionEnd", "pamd.recall.api", "--now", "MAX_QUERY", "`getUser`"):
        assert identifier(q), q
    for q in ("deploy friday", "worker", "Friday", "v2", "what is ensure_worker"):
        assert identifier(q) is None, q


def _documented_fields() -> dict[str, str]:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "recall.md").read_text("utf-8")
    part = doc.split("## JSON output", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", part, re.M))


TYPES = {"string": str, "string or null": (str, type(None)), "number": (int, float),
         "[start, end]": list, "list of strings": list}


def test_json_output_matches_the_documented_schema(tmp_path, capsys):
    fields = _documented_fields()
    assert len(fields) >= 15, fields
    root = _worker_brain(tmp_path)
    for args in (("--ranked",), ("--exact",)):
        for h in recall_cli(root, "ensure_worker", 5, capsys, "--no-log", *args):
            assert set(h) == set(fields), set(h) ^ set(fields)
            for name, kind in fields.items():
                assert isinstance(h[name], TYPES[kind]), (name, kind, h[name])
            assert 0.0 <= h["relevance"] <= 1.0 and h["mode"] in ("ranked", "exact")
            assert all(isinstance(i, str) for i in h["ids"] + h["matched"])


def test_the_text_output_wraps_a_readable_snippet(tmp_path, capsys):
    from pamd.cli import main

    root = _worker_brain(tmp_path)
    assert main(["recall", "--brain", str(root), "--no-log", "-k", "1", "--exact", "ensure_worker"]) == 0
    head, *body, more = capsys.readouterr().out.rstrip("\n").split("\n")
    assert more == "… 1 more entries hold it (-k 2 shows them all)"
    assert re.match(r"memory/L0/2026-11-30\.md:\d+-\d+  1\.00  e-\w{12} · 2026-11-30T\S+ · assistant · L0$", head)
    assert 2 <= len(body) <= 4 and all(ln.startswith("    ") and len(ln) <= 100 for ln in body)
    assert "ensure_worker" in " ".join(body)


def test_a_hit_line_never_cuts_a_path_or_an_identifier():
    """The text output was wrapped by textwrap, which cuts at hyphens and splits a word
    longer than the line: a reader met 'integrations/claude-' and 'code/hooks/…' on two lines."""
    from pamd.recall.hit import Hit

    path = "integrations/claude-code/hooks/session-start-with-a-long-hyphenated-name.json"
    url = "https://example.org/" + "very-long-segment/" * 8
    h = Hit("memory/L0/2026-11-30.md", 3, 5, 1.0, "L0", ["e-1"], "",
            snippet=f"the hook config at {path} moved; its docs are at {url} since the change")
    head, *body = h.to_text(width=60, lines=4).split("\n")
    words = " ".join(ln.strip() for ln in body).split()
    assert path in words and url in words, body
    assert all(len(ln) <= 60 or " " not in ln.strip().removesuffix(" …") for ln in body)
    many = Hit("m.md", 1, 1, 1.0, "L0", [], "", snippet=" ".join(f"word{i}" for i in range(200)))
    body = many.to_text(width=40, lines=3).split("\n")[1:]
    assert len(body) == 3 and body[-1].endswith(" …") and all(len(ln) <= 40 for ln in body)
