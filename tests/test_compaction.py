"""Compaction and defrag against real brains: one commit per run, provenance, revert, faults."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import Pamd, git, head_count, made_once

from pamd.core.fmt import parse_doc

START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_week(path, days=2, per_day=12):
    lines = []
    for d in range(days):
        for i in range(per_day):
            ts = START + timedelta(days=d, minutes=25 * i)
            text = [f"Anna asked for the Q{d % 4 + 1} revenue report with 1,{i}40 rows.",
                    f"The export job failed with error code {400 + i} on staging.",
                    "ok",
                    f"We decided to keep invoices for {i + 2} years in cold storage.",
                    f"The staging box {i} runs Debian 12 with nginx in front."][i % 5]
            lines.append(json.dumps({"ts": iso(ts), "role": "user" if i % 2 else "assistant",
                                     "text": text, "session": f"day{d}"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def tier_entries(root):
    out = []
    for p in sorted(root.glob("memory/L*/*.md")) + [root / "MEMORY.md"]:
        rel = str(p.relative_to(root))
        tier = "L4" if rel == "MEMORY.md" else rel.split("/")[1]
        out += parse_doc(p.read_text(), rel, tier).entries
    return out


def trailers(root, rev="HEAD"):
    body = git(root, "log", "-1", "--format=%B", rev)
    return {k: v.strip() for k, _, v in (ln.partition(":") for ln in body.splitlines() if ln.startswith("Pamd-"))}


@pytest.fixture
def week(brain, tmp_path, capsys, tmp_path_factory):
    """A brain that ingested two days of messages (once per process; each test gets a copy)."""

    def ingest(folder: Path) -> None:
        me = Pamd(folder, capsys)
        assert me("init", str(folder / "brain"))[0] == 0
        me.cwd = folder / "brain"
        code, _, err = me("ingest", str(write_week(folder / "week.jsonl")), now=iso(START + timedelta(days=2)))
        assert code == 0, err

    shutil.rmtree(brain.cwd)
    made_once("week", tmp_path, ingest, tmp_path_factory)
    return brain


def test_ageing_through_all_five_tiers_one_commit_per_run(week):
    root = week.cwd
    seen_tiers = set()
    for hours in (6, 14, 24 * 4, 24 * 9):
        now = iso(START + timedelta(days=1, hours=hours))
        for cmd in ("compact", "defrag"):
            n = head_count(root)
            code, out, err = week(cmd, now=now)
            assert code == 0, err
            if "nothing to" in out:
                assert head_count(root) == n
                continue
            assert head_count(root) == n + 1
            t = trailers(root)
            assert t["Pamd-Run"] == cmd and t["Pamd-Summarizer"] == "extractive"
            assert {"Pamd-Tier-L0", "Pamd-Tier-L4", "Pamd-Compression", "Pamd-Tokens-In",
                    "Pamd-Cost-USD", "Pamd-Model"} <= set(t)
            seen_tiers |= {e.tier for e in tier_entries(root)}
            assert git(root, "status", "--porcelain") == ""
            assert week("check")[0] == 0
    assert seen_tiers >= {"L1", "L2", "L3", "L4"}
    final = tier_entries(root)
    assert final and all(e.tier == "L4" for e in final if e.type != "decision")


def test_nothing_to_do_makes_no_commit(week):
    n = head_count(week.cwd)
    code, out, _ = week("compact", now=iso(START + timedelta(days=2)))
    assert code == 0
    code, out, _ = week("compact", now=iso(START + timedelta(days=2)))
    assert "nothing to compact" in out
    assert head_count(week.cwd) == n + 1 or head_count(week.cwd) == n


def test_plan_prints_decisions_and_writes_nothing(week):
    n = head_count(week.cwd)
    code, out, _ = week("compact", "--plan", now=iso(START + timedelta(days=1, hours=6)))
    assert code == 0
    assert "retention" in out.splitlines()[0]
    assert "drop" in out and "compress" in out and "keep" in out
    assert head_count(week.cwd) == n and git(week.cwd, "status", "--porcelain") == ""


def test_defrag_plan_counts_memory_md_entries_as_staying(week):
    """`pamd defrag --plan` on a brain whose memories had all reached
    MEMORY.md said "0 to compress, 0 to drop, 0 stay": its entries were left out of the plan."""
    root = week.cwd
    assert week("defrag", now=iso(START + timedelta(days=20)))[0] == 0
    l4 = [e for e in tier_entries(root) if e.tier == "L4"]
    assert l4 and all(e.tier != "L0" for e in tier_entries(root))
    for cmd in ("defrag", "compact"):
        code, out, err = week(cmd, "--plan", now=iso(START + timedelta(days=21)))
        assert code == 0, err
        assert out.splitlines()[-1] == f"0 to compress, 0 to drop, {len(l4)} stay", out
        assert all(f"{e.id:<15}L4" in out for e in l4) and "in MEMORY.md" in out


def test_expand_recovers_raw_text_from_an_l3_line(week):
    root = week.cwd
    week("compact", now=iso(START + timedelta(days=1, hours=6)))
    week("compact", now=iso(START + timedelta(days=2, hours=14)))
    week("defrag", now=iso(START + timedelta(days=5)))
    l3 = [e for e in tier_entries(root) if e.tier == "L3"]
    assert l3, "defrag made no L3 one-liners"
    target = l3[0]
    assert "\n" not in target.text
    code, out, err = week("expand", target.id, "--json")
    assert code == 0, err
    found = json.loads(out)
    raw = [f for f in found if f["id"].startswith("e-")]
    assert raw and all(f["tier"] == "L0" for f in raw)
    assert {f["tier"] for f in json.loads(week("expand", target.id, "--all", "--json")[1])} >= {"L3", "L2", "L0"}
    source = (root.parent / "week.jsonl").read_text()
    assert all(f["text"] in source for f in raw)
    # by path:line as well
    code, out2, _ = week("expand", f"{target.path}:{target.line_start + 1}", "--json")
    assert json.loads(out2) == found


def test_dropped_entries_are_recoverable(week):
    root = week.cwd
    week("compact", now=iso(START + timedelta(days=1, hours=6)))
    body = git(root, "log", "-1", "--format=%B")
    dropped = [x.strip() for x in body.split("Dropped as trash")[1].split(":", 1)[1].split("\n")[0].split(",")]
    code, out, _ = week("expand", dropped[0], "--json")
    assert code == 0 and json.loads(out)[0]["text"] == "ok"


def test_git_revert_of_a_defrag_restores_the_tree_and_pamd_goes_on(week):
    root = week.cwd
    week("compact", now=iso(START + timedelta(days=1, hours=6)))
    before = git(root, "rev-parse", "HEAD^{tree}").strip()
    code, out, _ = week("defrag", now=iso(START + timedelta(days=5)))
    assert code == 0 and "nothing" not in out
    git(root, "revert", "--no-edit", "HEAD")
    assert git(root, "rev-parse", "HEAD^{tree}").strip() == before
    code, out, err = week("defrag", now=iso(START + timedelta(days=5)))
    assert code == 0 and "pamd defrag" in out, err
    assert week("check")[0] == 0


def test_defrag_on_a_branch_leaves_the_checkout_alone(week):
    root = week.cwd
    week("compact", now=iso(START + timedelta(days=1, hours=6)))
    head = git(root, "rev-parse", "HEAD").strip()
    code, out, err = week("defrag", "--branch", "defrag/nightly", now=iso(START + timedelta(days=5)))
    assert code == 0, err
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert "Pamd-Run: defrag" in git(root, "log", "-1", "--format=%B", "defrag/nightly")
    assert git(root, "rev-parse", "defrag/nightly^").strip() == head
    assert git(root, "status", "--porcelain") == ""
    assert week("defrag", "--branch", "../evil", now=iso(START + timedelta(days=5)))[0] == 1


def test_defrag_branch_does_not_index_its_throwaway_worktree(week, tmp_path):
    """pamd's post-checkout hook fires in the worktree `defrag --branch` makes; it must not
    embed the whole brain there (under the brain's lock) for a folder deleted a moment later."""
    from pamd.edge.brain import Brain
    from pamd.ops.githooks import hooks_dir, install_hooks

    root = week.cwd
    install_hooks(Brain(root))
    hooks = hooks_dir(Brain(root))
    (hooks / "post-checkout").rename(hooks / "post-checkout.pamd")
    log = tmp_path / "post-checkout.log"
    (hooks / "post-checkout").write_text(
        f'#!/bin/sh\n"$(dirname "$0")/post-checkout.pamd" "$@" 2>> "{log}"\n'
        f'echo "ran in $PWD" >> "{log}"\n'
        f'[ -d .pamd/index ] && echo "indexed $PWD" >> "{log}"\nexit 0\n')
    (hooks / "post-checkout").chmod(0o755)
    (hooks / "pre-commit").rename(hooks / "pre-commit.pamd")
    (hooks / "pre-commit").write_text(
        f'#!/bin/sh\necho "pre-commit in $PWD PAMD_HOOK_INDEX=$PAMD_HOOK_INDEX" >> "{log}"\n'
        'exec "$(dirname "$0")/pre-commit.pamd" "$@"\n')
    (hooks / "pre-commit").chmod(0o755)
    code, out, err = week("defrag", "--branch", "pamd/nightly", now=iso(START + timedelta(days=5)))
    assert code == 0 and "pamd defrag" in out, err
    text = log.read_text()
    assert "ran in" in text and "pamd-defrag-" in text  # the hook did run, in the worktree
    assert "indexed" not in text and "index refresh skipped" in text, text
    # pamd's commit in the worktree still runs the brain's pre-commit hook, env untouched
    assert re.search(r"pre-commit in \S*pamd-defrag-\S*/brain PAMD_HOOK_INDEX=\n", text), text
    # a person's own checkout still refreshes the index
    git(root, "checkout", "-q", "pamd/nightly")
    assert f"indexed {root}" in log.read_text()


def test_defrag_plan_on_a_branch_only_plans(week):
    root = week.cwd
    week("compact", now=iso(START + timedelta(days=1, hours=6)))
    branches = git(root, "branch", "--list")
    n = head_count(root)
    code, out, err = week("defrag", "--plan", "--branch", "defrag/nightly", now=iso(START + timedelta(days=5)))
    assert code == 0, err
    assert "retention" in out.splitlines()[0]
    assert head_count(root) == n and git(root, "branch", "--list") == branches
    assert git(root, "status", "--porcelain") == ""


def _snapshot(root):
    return git(root, "rev-parse", "HEAD").strip(), git(root, "status", "--porcelain")


def test_person_edit_in_a_file_compaction_touches_is_refused(week):
    root = week.cwd
    l0 = sorted(root.glob("memory/L0/*.md"))[0]
    l0.write_text(l0.read_text().replace("# L0", "# L0 (my note)"))
    head, status = _snapshot(root)
    code, _, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
    assert code == 1 and "uncommitted edits" in err
    assert _snapshot(root) == (head, status)
    assert "(my note)" in l0.read_text()


def test_a_broken_brain_file_stops_the_run(week):
    root = week.cwd
    l0 = sorted(root.glob("memory/L0/*.md"))[0]
    l0.write_text(l0.read_text().replace("importance=", "importance=lots", 1))
    git(root, "commit", "-qam", "person breaks a file")
    head, status = _snapshot(root)
    code, _, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
    assert code == 1 and str(l0.relative_to(root)) in err
    assert _snapshot(root) == (head, status)


def test_two_entries_with_one_id_stop_every_writing_run_and_expand(week, tmp_path):
    # A person pasted an entry under an id the brain already holds: a run keyed by id
    # would fold the two messages into one summary and lose one, fsck clean after.
    root = week.cwd
    l0 = sorted(root.glob("memory/L0/*.md"))[0]
    rel = str(l0.relative_to(root))
    first = parse_doc(l0.read_text(), rel, "L0").entries[0]
    n = len(l0.read_text().split("\n"))
    l0.write_text(l0.read_text() + f"\n### {first.id} · {iso(first.ts)} · user\n"
                  "type=context importance=0.50 neuro=- session=x recalls=0\n> a pasted second message\n")
    git(root, "commit", "-qam", "person pastes an entry")
    head, status = _snapshot(root)
    want = f"pamd: error: {rel}:{n + 1}: duplicate id {first.id} (also at {rel}:{first.line_start})"
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"ts": iso(START + timedelta(days=3)), "role": "user", "text": "new"}) + "\n")
    for args in (("compact",), ("defrag",), ("ingest", str(more)), ("remember", "a fact"),
                 ("expand", first.id)):
        code, _, err = week(*args, now=iso(START + timedelta(days=9)))
        assert code == 1 and err.splitlines()[0].startswith(want), (args, err)
        assert _snapshot(root) == (head, status)
    assert first.text in l0.read_text() and "a pasted second message" in l0.read_text()


@pytest.mark.parametrize("exc", [RuntimeError("summarizer exploded"), KeyboardInterrupt()])
def test_a_failure_mid_run_leaves_the_repo_exactly_as_before(week, monkeypatch, exc):

    root = week.cwd
    head, status = _snapshot(root)
    files = {p: p.read_text() for p in root.rglob("*.md") if ".git" not in p.parts}

    from pamd.edge import brain as brain_mod

    def boom(self, paths, message, author):
        raise exc

    monkeypatch.setattr(brain_mod.Repo, "commit", boom)
    code, _, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
    assert code in (3, 130)
    assert _snapshot(root) == (head, status)
    assert {p: p.read_text() for p in root.rglob("*.md") if ".git" not in p.parts} == files
    assert not (root / ".pamd" / "txn.json").exists()


def test_a_run_killed_between_write_and_commit_is_rolled_back_next_time(week, monkeypatch):
    import os

    from pamd.edge import brain as brain_mod

    root = week.cwd
    head, status = _snapshot(root)

    def die(self, paths, message, author):
        os._exit(9)

    import multiprocessing as mp

    def child():
        monkeypatch.setattr(brain_mod.Repo, "commit", die)
        from pamd.cli import main

        os.chdir(root)
        main(["compact", "--now", iso(START + timedelta(days=1, hours=6))])

    p = mp.get_context("fork").Process(target=child)
    p.start()
    p.join()
    assert p.exitcode == 9
    assert git(root, "status", "--porcelain") != status  # the dead run left files behind
    code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
    assert code == 0, err
    assert git(root, "status", "--porcelain") == status
    assert head_count(root) >= 1 and git(root, "rev-parse", "HEAD^").strip() == head


def test_run_due_and_the_schedule(week):
    now = START + timedelta(days=2, hours=4)  # after 02:30: defrag is due
    code, out, _ = week("run-due", "--list", now=iso(now))
    assert out.strip() == "defrag"
    week("run-due", now=iso(now))
    code, out, _ = week("run-due", "--list", now=iso(now + timedelta(minutes=10)))
    assert out.strip() == "nothing due"
    code, out, _ = week("run-due", "--list", now=iso(now + timedelta(minutes=31)))
    assert out.strip() == "compact"
    code, out, _ = week("run-due", "--list", now=iso(now + timedelta(days=1)))
    assert out.strip() == "defrag"


def test_a_run_with_the_clock_ahead_does_not_silence_the_schedule(week):
    """One compact (or defrag) with a clock months ahead: the schedule does not wait for
    that date; run-due says so once, status each time, and what is due runs."""
    now = START + timedelta(days=2, hours=4)
    assert week("run-due", now=iso(now))[0] == 0  # the nightly defrag
    assert week("compact", now=iso(now + timedelta(days=90)))[0] == 0  # the wrong clock
    later = now + timedelta(hours=2)
    code, out, err = week("run-due", "--list", now=iso(later))
    assert code == 0 and out.strip() == "compact" and "later than now" in err, out + err
    code, out, err = week("run-due", now=iso(later))
    assert code == 0 and out.startswith("compact: ") and "is dated" in err and "later than now" in err, out + err
    code, out, err = week("run-due", now=iso(later + timedelta(hours=1)))
    assert code == 0 and out.startswith("compact: ") and "later than now" not in err, out + err  # once
    code, out, err = week("status", now=iso(later + timedelta(hours=1)))
    assert code == 0 and "due now: nothing" in out and "later than now" in err, out + err
    # a defrag dated ahead does not keep the next night's defrag away either
    assert week("defrag", now=iso(now + timedelta(days=120)))[0] == 0
    assert week("run-due", "--list", now=iso(now + timedelta(days=1)))[1].strip() == "defrag"


def test_defrag_at_off_leaves_the_nightly_defrag_to_the_pull_request_workflow(week):
    """A defrag on a branch under review is not in HEAD's history: with defrag_at = "off"
    neither run-due nor the daemon defrags main behind the pull request's back."""
    import re
    import threading

    from pamd.consolidate.schedule import daemon
    from pamd.edge.brain import Brain

    root = week.cwd
    now = START + timedelta(days=2, hours=4)  # after 02:30
    assert week("defrag", "--branch", "pamd/defrag-nightly", now=iso(now - timedelta(hours=1)))[0] == 0
    assert week("run-due", "--list", now=iso(now))[1].strip() == "defrag"  # the default: main as well
    cfg = root / "pamd.toml"
    cfg.write_text(re.sub(r'(?m)^defrag_at = .*$', 'defrag_at = "off"', cfg.read_text()))
    git(root, "commit", "-qam", "the nightly workflow defrags in a pull request")
    assert week("run-due", "--list", now=iso(now))[1].strip() == "compact"
    code, out, err = week("status", now=iso(now))
    assert code == 0 and "defrag off" in out and "due now: compact" in out, out + err
    code, out, err = week("run-due", now=iso(now))
    assert code == 0 and out.startswith("compact: "), out + err
    assert _defrag_runs(root) == []
    # The daemon agrees: started hours past 02:30 with no defrag in history, it only compacts.
    stop = threading.Event()
    timer = threading.Timer(1.5, stop.set)
    timer.start()
    try:
        assert daemon(Brain(root), compact_minutes=10_000, stop=stop,
                      clock=lambda: now + timedelta(days=1)) == 0
    finally:
        timer.cancel()
        stop.set()
    assert _defrag_runs(root) == []
    assert "Pamd-Run: compact" in git(root, "log", "-1", "--format=%B")
    assert week("defrag", now=iso(now + timedelta(days=1)))[0] == 0  # by hand it still runs


def defragged_tonight(week) -> None:
    """Last night's defrag done on the real clock (a daemon starts by running a missed one),
    then something old for the daemon's compactions to work on."""
    assert week("defrag", now=None)[0] == 0
    assert week("remember", "An old note about the build box.", now=iso(START + timedelta(hours=1)))[0] == 0


def test_daemon_runs_compact_and_stops_cleanly_on_sigterm(week):
    import signal
    import subprocess
    import sys
    import time

    defragged_tonight(week)

    proc = subprocess.Popen([sys.executable, "-m", "pamd", "daemon", "--compact-every", "0.01"],
                            cwd=week.cwd, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    log = ""
    while time.time() < deadline and "compact:" not in log:
        time.sleep(0.3)
        if "Pamd-Run: compact" in git(week.cwd, "log", "-1", "--format=%B"):
            break
    proc.send_signal(signal.SIGTERM)
    _, log = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert re.search(r"\d pamd compact: \d+ entr(y|ies) into \d+ summar", log) and "stopped" in log, log
    assert "pamd pamd" not in log and "compact: pamd compact:" not in log  # the mode said once


def test_daemon_reads_a_committed_config_change_before_each_run(week):
    import re
    import signal
    import subprocess
    import sys
    import time

    root = week.cwd
    defragged_tonight(week)

    def last_compact_author() -> str:
        return git(root, "log", "-1", "--grep=^Pamd-Run: compact$", "--format=%an").strip()

    def wait_for(what, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if what():
                return True
            time.sleep(0.3)
        return False

    proc = subprocess.Popen([sys.executable, "-m", "pamd", "daemon", "--compact-every", "0.01"],
                            cwd=root, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: last_compact_author() == "pamd")
        cfg = root / "pamd.toml"
        cfg.write_text(re.sub(r'(?m)^author_name = .*$', 'author_name = "pamd-two"', cfg.read_text()))
        # The daemon may be committing at this moment (index.lock): a person would try again.
        assert wait_for(lambda: subprocess.run(["git", "commit", "-qm", "a person renames pamd's author", "--",
                                                "pamd.toml"], cwd=root, capture_output=True).returncode == 0)
        # Something old to compact, so the daemon's next run commits.
        assert week("remember", "An old note about the staging box.", now=iso(START + timedelta(hours=1)))[0] == 0
        assert wait_for(lambda: last_compact_author() == "pamd-two"), last_compact_author()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_defrag_archives_daily_notes_and_compacts_them_only_after_they_landed_raw(brain):
    root = brain.cwd
    (root / "memory").mkdir(exist_ok=True)
    (root / "memory" / "2026-11-20.md").write_text(
        "# 2026-11-20\n\n- 09:15 The staging box now runs Debian 12.\n- 10:00 Boris owns the release checklist.\n")
    git(root, "add", "memory/2026-11-20.md")
    git(root, "commit", "-qm", "agent writes a daily note")
    code, out, err = brain("defrag", now="2026-11-25T02:30:00Z")
    assert code == 0, err
    assert not (root / "memory" / "2026-11-20.md").exists()
    assert (root / "memory" / "daily" / "2026-11-20.md").read_text().startswith("# 2026-11-20")
    raw = tier_entries(root)
    assert {e.tier for e in raw} == {"L0"} and any("Boris" in e.text for e in raw)
    assert "Archived 1 daily note " in git(root, "log", "-1", "--format=%B")
    code, out, err = brain("defrag", now="2026-11-26T02:30:00Z")
    assert code == 0, err
    summary = next(e for e in tier_entries(root) if e.sources)
    texts = [f["text"] for f in json.loads(brain("expand", summary.id, "--json")[1])]
    assert any("Boris owns the release checklist." in t for t in texts)
    assert brain("fsck")[0] == 0


def test_defrag_does_what_compact_does_first_and_its_help_and_protocol_say_so(brain):
    """A defrag also moves raw L0 entries and drops trash (a backlog can reach MEMORY.md in one
    run); `defrag --help`, README and protocols/defrag.md named only L2->L3->MEMORY.md."""
    from conftest import REPO

    from pamd.cli import build_parser

    root = brain.cwd
    assert brain("remember", "the build server is ci-7 in rack 4", now="2026-03-01T10:00:00Z")[0] == 0
    assert brain("remember", "ok", now="2026-03-01T10:01:00Z")[0] == 0
    assert brain("remember", "the old build server was ci-3", now="2026-02-20T10:00:00Z")[0] == 0
    code, out, err = brain("defrag", now="2026-03-01T20:00:00Z")
    assert code == 0, err
    message = git(root, "log", "-1", "--format=%B")
    assert "L0 -> L1: 1 entry" in message and "L0 -> L4: 1 entry" in message
    assert "\nDropped as trash " in message and "ci-3" in (root / "MEMORY.md").read_text()
    sub = build_parser()._subparsers._group_actions[0].choices["defrag"]
    readme = (REPO / "README.md").read_text()
    for text in (sub.format_help(), next(ln for ln in readme.splitlines() if ln.startswith("| `defrag")),
                 (REPO / "templates" / "brain" / "protocols" / "defrag.md").read_text()):
        assert "compact" in text and "L0" in text and "trash" in text
        assert "MEMORY.md" in text and "L3" in text


def _use_gemini(root, base_url, retries=1, backend="gemini", model="gemini-2.5-flash"):
    import re

    cfg = root / "pamd.toml"
    text = cfg.read_text()
    for key, value in (("backend", f'"{backend}"'), ("model", f'"{model}"'), ("base_url", f'"{base_url}"'),
                       ("max_retries", str(retries)), ("retry_base_delay", "0.01")):
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text, count=1)
        assert n == 1, key
    cfg.write_text(text)
    git(root, "commit", "-qam", f"use {backend}")


def test_compaction_through_the_real_gemini_client_records_usage_and_cost(week, monkeypatch):
    from gemini_stub import GeminiStub

    monkeypatch.setenv("GEMINI_API_KEY", "stub-key")
    with GeminiStub() as stub:
        _use_gemini(week.cwd, stub.base_url)
        code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
        assert code == 0, err
        assert stub.requests and all(r.headers["x-goog-api-key"] == "stub-key" for r in stub.requests)
    t = trailers(week.cwd)
    assert t["Pamd-Summarizer"] == "gemini" and t["Pamd-Model"] == "gemini-2.5-flash"
    llm_in, llm_out = (int(x.split()[0]) for x in t["Pamd-LLM-Tokens"].split(","))
    assert llm_in > 0 and llm_out > 0 and float(t["Pamd-Cost-USD"]) > 0
    assert "Pamd-Fallback" not in t
    assert any("summary of" in e.text for e in tier_entries(week.cwd) if e.tier == "L1")


def test_compaction_through_a_local_openai_compatible_server(week, monkeypatch):
    from gemini_stub import OpenAIStub

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIStub() as stub:
        _use_gemini(week.cwd, stub.base_url, backend="openai", model="llama3.2")
        code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
        assert code == 0, err
        assert stub.requests and all(r.body["model"] == "llama3.2" for r in stub.requests)
    t = trailers(week.cwd)
    assert t["Pamd-Summarizer"] == "openai" and t["Pamd-Model"] == "llama3.2"
    assert "Pamd-Fallback" not in t
    assert any("summary of" in e.text for e in tier_entries(week.cwd) if e.tier == "L1")


def test_a_failing_gemini_falls_back_to_extractive_and_the_commit_says_so(week, monkeypatch):
    from gemini_stub import GeminiStub, error

    monkeypatch.setenv("GEMINI_API_KEY", "stub-key")
    with GeminiStub(responder=lambda req: error(500, "INTERNAL")) as stub:
        _use_gemini(week.cwd, stub.base_url)
        code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
        assert code == 0, err
        assert len(stub.requests) >= 2  # retried before giving up
    body = git(week.cwd, "log", "-1", "--format=%B")
    assert "Pamd-Fallback:" in body and "fell back to extractive" in body
    assert all(e.text for e in tier_entries(week.cwd) if e.tier == "L1")
    # and the terminal says it too, not only the commit body (before: stderr was empty)
    assert re.fullmatch(r"pamd: warning: gemini: 500 INTERNAL.*fell back to extractive for \d+ groups?\n", err)


@pytest.mark.parametrize("command", ["run-due", "defrag"])
def test_run_due_and_defrag_warn_of_a_fallback_on_stderr(week, monkeypatch, command):
    from gemini_stub import GeminiStub, error

    monkeypatch.setenv("GEMINI_API_KEY", "stub-key")
    with GeminiStub(responder=lambda req: error(503, "UNAVAILABLE")) as stub:
        _use_gemini(week.cwd, stub.base_url)
        code, out, err = week(command, now=iso(START + timedelta(days=8)))
    assert code == 0, err
    assert "Pamd-Fallback:" in git(week.cwd, "log", "-1", "--format=%B")
    assert re.fullmatch(r"pamd: warning: gemini: 503 UNAVAILABLE.*fell back to extractive for \d+ groups?\n", err)


def test_a_note_that_is_no_fallback_stays_in_the_commit_and_off_stderr(week, monkeypatch):
    """Only a fallback is said on stderr: a note that would come every run (a model without
    a price) stays in the commit body, or cron would mail every 30 minutes."""
    from gemini_stub import GeminiStub

    monkeypatch.setenv("GEMINI_API_KEY", "stub-key")
    with GeminiStub() as stub:
        _use_gemini(week.cwd, stub.base_url, model="gemma-local-7b")
        code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
    assert code == 0 and stub.requests, err
    assert "no price for gemma-local-7b" in git(week.cwd, "log", "-1", "--format=%B")
    assert "warning" not in err and "no price" not in err, err


def test_the_daemon_logs_a_fallback_in_the_runs_line_and_not_the_http_clients_chatter(week, monkeypatch):
    import signal
    import subprocess
    import sys
    import time

    from gemini_stub import GeminiStub, error

    defragged_tonight(week)
    with GeminiStub(responder=lambda req: error(503, "UNAVAILABLE")) as stub:
        _use_gemini(week.cwd, stub.base_url)
        proc = subprocess.Popen([sys.executable, "-m", "pamd", "daemon", "--compact-every", "0.01"],
                                cwd=week.cwd, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "GEMINI_API_KEY": "stub-key"})
        deadline = time.time() + 30
        while time.time() < deadline and "Pamd-Run: compact" not in git(week.cwd, "log", "-1", "--format=%B"):
            time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, log = proc.communicate(timeout=30)
    assert proc.returncode == 0 and stub.requests, log
    assert re.search(r"\d pamd compact: \d+ entr(y|ies) into \d+ summar.*; warning: gemini: 503 UNAVAILABLE"
                     r".*fell back to extractive for \d+ groups?\n", log), log
    assert "AFC is enabled" not in log and "HTTP Request" not in log, log  # google-genai's, httpx's INFO


def test_a_persons_uncommitted_entries_never_reach_dna_state_or_preload(brain):
    """Compaction derives DNA lessons, STATE and PRELOAD from the committed entries only:
    an entry that sits uncommitted in an L0 file stays out of pamd's commit."""
    root = brain.cwd
    assert brain("remember", "We decided to keep the staging database on Postgres 16.",
                 now="2026-11-21T09:00:00Z")[0] == 0
    assert brain("remember", "The deploy to prod failed with error 503: my private draft.",
                 now="2026-11-21T09:05:00Z")[0] == 0
    git(root, "reset", "-q", "HEAD~1")  # the second entry is now in the tree, uncommitted
    l0 = root / "memory/L0/2026-11-21.md"
    lines = l0.read_text().splitlines()
    mine = lines[next(i for i, ln in enumerate(lines) if "private draft" in ln) - 2].split()[1]
    assert mine.startswith("e-")
    head = git(root, "rev-parse", "HEAD").strip()
    code, _, err = brain("compact", now="2026-11-21T11:00:00Z")
    assert code == 0, err
    assert git(root, "rev-parse", "HEAD").strip() != head  # it ran and committed
    for c in git(root, "rev-list", f"{head}..HEAD").split():
        shown = git(root, "show", "--format=%B", c)
        assert mine not in shown and "private draft" not in shown, shown
    assert "private draft" in l0.read_text()
    assert " M memory/L0/2026-11-21.md" in git(root, "status", "--porcelain").splitlines()
    # once the person commits it, the next run learns the lesson from it (with its fix)
    git(root, "commit", "-qam", "my entry")
    assert brain("remember", "Fixed by restarting the prod load balancer; the deploy works now.",
                 now="2026-11-21T11:20:00Z")[0] == 0
    assert brain("compact", now="2026-11-21T11:30:00Z")[0] == 0
    assert mine in (root / "DNA.md").read_text()


def test_a_later_daily_note_of_an_archived_day_is_appended_never_over_it(brain):
    root = brain.cwd
    note = root / "memory" / "2026-11-19.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("# 2026-11-19\n\n- 09:00 The first note: Vera owns the backups.\n")
    git(root, "add", "memory/2026-11-19.md")
    git(root, "commit", "-qm", "agent writes a daily note")
    assert brain("defrag", now="2026-11-21T03:00:00Z")[0] == 0
    note.write_text("# 2026-11-19\n\n- 18:00 An addendum: Omar owns the alerts.\n")
    git(root, "add", "memory/2026-11-19.md")
    git(root, "commit", "-qm", "agent writes the same day again")
    code, _, err = brain("defrag", now="2026-11-22T03:00:00Z")
    assert code == 0, err
    archive = (root / "memory" / "daily" / "2026-11-19.md").read_text()
    assert "Vera owns the backups" in archive and "Omar owns the alerts" in archive
    assert archive.index("Vera") < archive.index("Omar")
    body = git(root, "log", "-1", "--format=%B")
    assert "Appended to existing archives" in body and "memory/daily/2026-11-19.md" in body
    assert not note.exists() and brain("check")[0] == 0


def test_expand_follows_provenance_into_entry_files_with_non_ascii_names(week):
    """git grep C-quotes such names ("memory/L0/\\320\\267...") unless asked for -z."""
    root = week.cwd
    for p in sorted(root.glob("memory/L0/*.md")):
        git(root, "mv", str(p.relative_to(root)), f"memory/L0/заметки ü {p.name}")
    git(root, "commit", "-qm", "a person renames the raw files")
    assert week("compact", now=iso(START + timedelta(days=1, hours=6)))[0] == 0
    summary = next(e for e in tier_entries(root) if e.sources)
    code, out, err = week("expand", summary.id, "--json")
    assert code == 0, err
    raw = [f for f in json.loads(out) if f["id"].startswith("e-")]
    assert {f["id"] for f in raw} == set(summary.sources)
    assert all("заметки ü" in f["path"] for f in raw)


def test_expand_reads_history_under_a_persons_diff_prefix_config(week):
    """A global `diff.noprefix` (a common dotfile setting) dropped git log -p's `a/`, and the
    history reader cut two characters off every path: expand said "not in the tree nor in its
    history" for every entry compaction had moved."""
    root = week.cwd
    assert week("compact", now=iso(START + timedelta(days=1, hours=6)))[0] == 0
    summary = next(e for e in tier_entries(root) if e.sources)
    for key, value in (("diff.noprefix", "true"), ("diff.mnemonicPrefix", "true"), ("color.ui", "always")):
        git(root, "config", "--global", key, value)
    code, out, err = week("expand", summary.id, "--json")
    assert code == 0, err
    raw = [f for f in json.loads(out) if f["id"].startswith("e-")]
    assert {f["id"] for f in raw} == set(summary.sources)
    assert all(f["path"].startswith("memory/L0/") for f in raw)


def test_a_daily_note_not_yet_committed_waits_and_the_rest_of_defrag_goes_on(brain):
    root = brain.cwd
    (root / "memory").mkdir(exist_ok=True)
    done = root / "memory" / "2026-11-20.md"
    done.write_text("# 2026-11-20\n\n- 09:15 The staging box now runs Debian 12.\n")
    git(root, "add", "memory/2026-11-20.md")
    git(root, "commit", "-qm", "agent writes a daily note")
    draft = root / "memory" / "2026-11-21.md"
    draft.write_text("# 2026-11-21\n\n- 11:00 Draft, not committed yet.\n")
    code, _, err = brain("defrag", now="2026-11-25T02:30:00Z")
    assert code == 0, err  # before: "uncommitted edits in memory/2026-11-21.md", no defrag at all
    msg = git(root, "log", "-1", "--format=%B")
    assert "Archived 1 daily note " in msg and "memory/2026-11-21.md" in msg and "later night" in msg
    assert not done.exists() and draft.read_text().endswith("Draft, not committed yet.\n")
    assert git(root, "status", "--porcelain").strip() == "?? memory/2026-11-21.md"
    assert "Draft" not in git(root, "show", "HEAD")
    git(root, "add", "memory/2026-11-21.md")
    git(root, "commit", "-qm", "the draft is done")
    assert brain("defrag", now="2026-11-26T02:30:00Z")[0] == 0
    assert (root / "memory" / "daily" / "2026-11-21.md").exists() and not draft.exists()


def _defrag_runs(root) -> list[str]:
    """Pamd-Now of every defrag, newest first: its commits, and a last one that had nothing
    to commit (noted in .pamd/idle-runs.json, which due() reads too)."""
    runs = git(root, "log", "--grep=^Pamd-Run: defrag$", "--format=%(trailers:key=Pamd-Now,valueonly)").split()
    idle_file = root / ".pamd" / "idle-runs.json"
    idle = json.loads(idle_file.read_text()).get("defrag") if idle_file.exists() else None
    return sorted({*runs, idle} - {None}, reverse=True)


def test_the_daemon_defrags_at_defrag_at_utc_whatever_the_local_zone(week, monkeypatch):
    """defrag_at is UTC: the daemon counts it on a UTC clock, never in local time (a
    daily local "HH:MM" computed at start moved an hour with each DST change)."""
    import threading
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    root = week.cwd
    assert week("defrag", now="2026-11-04T02:30:00Z")[0] == 0  # last night's: nothing due at the start
    clock = [datetime(2026, 11, 5, 1, 0, tzinfo=UTC)]
    stop = threading.Event()

    def defrags() -> list[str]:
        return _defrag_runs(root)

    early: list[list[str]] = []

    def drive() -> None:
        try:
            time.sleep(1.0)
            early.append(defrags())  # 01:00 UTC: not yet
            clock[0] = datetime(2026, 11, 5, 2, 31, tzinfo=UTC)  # past 02:30 UTC (21:31 in New York)
            deadline = time.time() + 60
            while time.time() < deadline and len(defrags()) < 2:
                time.sleep(0.2)
        finally:
            stop.set()

    try:
        assert daemon_beside(root, drive, stop, compact_minutes=10_000, defrag_at="02:30",
                             clock=lambda: clock[0]) == 0
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert early == [["2026-11-04T02:30:00Z"]]
    assert defrags() == ["2026-11-05T02:31:00Z", "2026-11-04T02:30:00Z"]


def test_the_daemon_runs_a_defrag_missed_before_it_started_and_after_a_suspend(week):
    """The daemon agrees with run-due: a machine that was off at 02:30 defrags when the
    daemon starts, and one that slept through 02:30 defrags when it wakes — once each."""
    import threading
    import time

    from pamd.consolidate.schedule import due
    from pamd.edge.brain import Brain

    root = week.cwd
    assert week("defrag", now="2026-11-26T02:30:00Z")[0] == 0
    assert due(Brain(root), datetime(2026, 11, 28, 8, 0, tzinfo=UTC)) == ["defrag"]
    clock = [datetime(2026, 11, 28, 8, 0, tzinfo=UTC)]
    stop = threading.Event()
    seen: list[list[str]] = []

    def defrags() -> list[str]:
        return _defrag_runs(root)

    def wait_for(n: int) -> None:
        deadline = time.time() + 60
        while time.time() < deadline and len(defrags()) < n:
            time.sleep(0.2)

    def drive() -> None:
        try:
            wait_for(2)
            clock[0] = datetime(2026, 11, 28, 20, 0, tzinfo=UTC)  # the same day: nothing more
            time.sleep(1.5)
            seen.append(defrags())
            clock[0] = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # woke from a suspend past 02:30
            wait_for(3)
            time.sleep(1.5)  # and it does not run twice
        finally:
            stop.set()

    assert daemon_beside(root, drive, stop, compact_minutes=10_000, clock=lambda: clock[0]) == 0
    assert seen == [["2026-11-28T08:00:00Z", "2026-11-26T02:30:00Z"]]
    assert defrags() == ["2026-11-30T09:00:00Z", "2026-11-28T08:00:00Z", "2026-11-26T02:30:00Z"]


def test_the_daemon_tries_a_failed_defrag_again_with_the_next_compact_run(week, monkeypatch, caplog):
    """A nightly defrag that fails (the LLM down with fallback = "fail") is tried again by the
    next compact job, which asks due() as run-due would: before, the slot was used up and
    the defrag waited for the next night while `run-due --list` said "defrag"."""
    import threading
    import time

    from gemini_stub import GeminiStub, echo, error

    from pamd.consolidate.schedule import due
    from pamd.edge.brain import Brain

    root = week.cwd
    monkeypatch.setenv("GEMINI_API_KEY", "stub-key")
    down = [True]
    now = datetime(2026, 11, 28, 8, 0, tzinfo=UTC)
    stop = threading.Event()

    def failures() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("defrag failed")]

    def drive() -> None:
        try:
            deadline = time.time() + 60
            while time.time() < deadline and not failures():
                time.sleep(0.1)
            down[0] = False  # the endpoint is back
            while time.time() < deadline and not _defrag_runs(root):
                time.sleep(0.2)
        finally:
            stop.set()

    with GeminiStub(responder=lambda req: error(503, "UNAVAILABLE") if down[0] else echo(req)) as stub:
        _use_gemini(root, stub.base_url, retries=0)
        cfg = root / "pamd.toml"
        cfg.write_text(re.sub(r"(?m)^fallback = .*$", 'fallback = "fail"', cfg.read_text(), count=1))
        git(root, "commit", "-qam", "fail rather than fall back")
        assert due(Brain(root), now) == ["defrag"]
        assert daemon_beside(root, drive, stop, compact_minutes=1 / 60, clock=lambda: now) == 0
    assert failures() and all("trying again with the next compact run" in f for f in failures())
    assert _defrag_runs(root) == ["2026-11-28T08:00:00Z"]
    assert due(Brain(root), now) == []


def test_a_branch_git_refuses_leaves_no_temporary_worktree_folder(week, tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    code, _, err = week("defrag", "--branch", "defrag/.hidden", now=iso(START + timedelta(days=3)))
    assert code != 0 and "defrag/.hidden" in err
    assert list(scratch.iterdir()) == []
    assert "defrag/.hidden" not in git(week.cwd, "branch", "--list")


@pytest.mark.parametrize("kill_at, branch_kept, next_run", [
    ("txn:journal", False, ("remember", "The build box moved to rack 4.")),
    ("git:committed", True, ("remember", "The build box moved to rack 4.")),
    ("txn:journal", False, ("fsck", "--skip", "index")),
])
def test_a_killed_defrag_branch_leaves_a_worktree_the_next_run_removes(week, tmp_path, kill_at, branch_kept,
                                                                        next_run):
    """SIGKILL skips the in-process cleanup: the worktree stays registered and git refuses to
    delete its branch. The next pamd run holding the lock removes it, and says so; the branch
    goes too unless the killed run's commit had landed on it."""
    import os
    import shutil
    import subprocess
    import sys

    root = week.cwd
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    argv = [sys.executable, "-m", "pamd", "defrag", "--branch", "d2", "--now", iso(START + timedelta(days=5))]
    # Which checkpoint to kill at, counted on a copy of the brain.
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    log = tmp_path / "checkpoints"
    subprocess.run(argv, cwd=copy, env={**env, "PAMD_FAULT_LOG": str(log)}, check=True, capture_output=True)
    at = next(int(n) for n, name in (ln.split() for ln in log.read_text().splitlines()) if name == kill_at)
    shutil.rmtree(copy)

    r = subprocess.run(argv, cwd=root, env={**env, "PAMD_FAULT_AT": str(at)}, capture_output=True)
    assert r.returncode == -9
    (stale,) = scratch.iterdir()
    assert str(stale) in git(root, "worktree", "list")
    assert subprocess.run(["git", "branch", "-D", "d2"], cwd=root, capture_output=True).returncode != 0
    # One made from another worktree of the same repo is that brain's business (its lock, not ours).
    (stale / "owner").write_text("/elsewhere/brain")
    code, _, err = week("remember", "A note while another worktree's defrag runs.")
    assert code == 0 and "stale worktree" not in err and str(stale) in git(root, "worktree", "list")
    (stale / "owner").write_text(str(root.resolve()))

    code, _, err = week(*next_run)
    assert code == 0, err
    assert "pamd: note: removed a stale worktree" in err and str(stale) in err
    assert list(scratch.iterdir()) == [] and str(stale) not in git(root, "worktree", "list")
    if branch_kept:
        assert "kept its branch d2" in err
        assert "Pamd-Run: defrag" in git(root, "log", "-1", "--format=%B", "d2")
    else:
        assert "deleted its branch d2" in err
        assert git(root, "branch", "--list", "d2") == ""
        r = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
        assert r.returncode == 0 and "on d2" in r.stdout, r.stderr
    assert git(root, "status", "--porcelain") == ""


def test_defrag_branch_with_pamd_toml_not_committed_names_the_brain_and_the_fix(tmp_path, brain):
    """The branch starts from HEAD: without a committed pamd.toml its copy is no brain. The error
    named the temporary worktree and suggested `pamd init` there."""
    import shutil

    root = tmp_path / "nc"
    root.mkdir()
    git(root, "init", "-q")
    shutil.copy(brain.cwd / "pamd.toml", root / "pamd.toml")
    brain.cwd = root
    assert brain("remember", "The build box moved to rack 4.")[0] == 0
    code, _, err = brain("defrag", "--branch", "x")
    assert code == 1 and err.count("\n") == 1
    assert f"pamd.toml of the brain {root} is not committed" in err and "git add pamd.toml" in err
    assert "pamd-defrag-" not in err and "pamd init" not in err
    assert git(root, "branch", "--list", "x") == "" and "pamd-defrag-" not in git(root, "worktree", "list")


def test_a_run_that_fails_unexpectedly_is_logged_and_the_daemon_goes_on(week, monkeypatch, caplog):
    """Its docstring promises it: a failing run is logged, not fatal — a bug or an OSError too."""
    import threading
    import time

    from pamd.consolidate import compaction

    calls = []
    real = compaction.run

    def flaky(brain, now, mode="compact", dry_run=False):
        calls.append(mode)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        return real(brain, now, mode, dry_run)

    defragged_tonight(week)
    monkeypatch.setattr(compaction, "run", flaky)
    stop = threading.Event()

    def drive() -> None:
        deadline = time.time() + 60
        while time.time() < deadline and len(calls) < 2:
            time.sleep(0.1)
        stop.set()

    with caplog.at_level("INFO", logger="pamd"):
        assert daemon_beside(week.cwd, drive, stop, compact_minutes=0.01) == 0
    assert len(calls) >= 2
    assert "compact failed unexpectedly" in caplog.text and "No space left on device" in caplog.text


def test_a_memory_recalled_ten_times_is_not_dropped_as_trash(brain):
    # Its importance (0.2) alone makes it trash; ten recalls make it a reflex.
    assert brain("remember", "ok, the wifi password for the office is on the fridge",
                 "--importance", "0.2", now="2026-11-30T10:00:00Z")[0] == 0
    (e,) = tier_entries(brain.cwd)
    for _ in range(10):
        assert brain("touch", e.id, now="2026-11-30T10:05:00Z")[0] == 0
    code, out, err = brain("compact", now="2026-11-30T10:40:00Z")
    assert code == 0, err
    assert "dropped" not in out
    t = trailers(brain.cwd)
    assert t["Pamd-Dropped"] == "0" and t["Pamd-Moved"] == "1"
    (s,) = tier_entries(brain.cwd)
    assert s.tier == "L1" and s.sources == (e.id,) and s.recalls == 10


def test_a_future_dated_entry_neither_churns_state_nor_is_dropped(brain, tmp_path):
    f = tmp_path / "f.jsonl"
    f.write_text(json.dumps({"ts": "2026-12-05T10:00:00Z", "role": "user",
                             "text": "We decided to ship the release on Friday at noon."}) + "\n"
                 + json.dumps({"ts": "2026-12-05T10:01:00Z", "role": "user", "text": "ok"}) + "\n")
    assert brain("ingest", str(f), now="2026-11-30T12:00:00Z")[0] == 0
    code, out, err = brain("compact", now="2026-11-30T12:00:00Z")  # the first STATE snapshot
    assert code == 0, err
    assert "dropped" not in out and len(tier_entries(brain.cwd)) == 2
    n = head_count(brain.cwd)
    for t in ("12:30", "13:00", "13:30"):
        code, out, err = brain("compact", now=f"2026-11-30T{t}:00Z")
        assert code == 0, err
        assert out.strip() == "nothing to compact"  # STATE's `updated:` alone is no commit
    code, out, err = brain("defrag", now="2026-12-01T02:30:00Z")
    assert code == 0, err
    assert "dropped" not in out
    assert head_count(brain.cwd) <= n + 1 and len(tier_entries(brain.cwd)) == 2


def test_gemini_without_a_key_still_refreshes_state_when_nothing_needs_summarising(brain, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    _use_gemini(brain.cwd, "http://127.0.0.1:9")
    assert brain("remember", "We decided to use Postgres 16.", now="2026-11-30T10:00:00Z")[0] == 0
    n = head_count(brain.cwd)
    code, out, err = brain("compact", now="2026-11-30T10:10:00Z")  # no summary, no lesson: no LLM
    assert code == 0, err
    assert head_count(brain.cwd) == n + 1
    assert "Postgres 16" in (brain.cwd / "STATE.md").read_text()
    assert trailers(brain.cwd)["Pamd-Summarizer"] == "gemini"
    # When a summary is needed, the missing key is still the clear one-line error.
    code, out, err = brain("compact", now="2026-12-09T10:10:00Z")
    assert code != 0 and "GEMINI_API_KEY is not set" in err and "Traceback" not in err
    assert head_count(brain.cwd) == n + 1 and git(brain.cwd, "status", "--porcelain") == ""


def test_a_gemini_summary_longer_than_its_input_is_not_stored(brain, monkeypatch):
    from gemini_stub import GeminiStub, answer

    monkeypatch.setenv("GEMINI_API_KEY", "stub-key")
    assert brain("remember", "Deploy done.", "--importance", "0.5", now="2026-11-30T10:00:00Z")[0] == 0
    with GeminiStub(responder=lambda req: answer(["X" * 5000 for _ in req.groups])) as stub:
        _use_gemini(brain.cwd, stub.base_url)
        code, out, err = brain("compact", now="2026-11-30T15:00:00Z")
        assert code == 0, err
        assert stub.requests
    (s,) = tier_entries(brain.cwd)
    assert s.tier == "L1" and "Deploy done" in s.text and "XX" not in s.text
    t = trailers(brain.cwd)
    assert t["Pamd-Fallback"].startswith("1 ")
    assert "longer than its input" in git(brain.cwd, "log", "-1", "--format=%B")


def test_an_emptied_tier_file_with_a_persons_note_is_kept(brain):
    root = brain.cwd
    for day in ("2026-11-20", "2026-11-21"):
        assert brain("remember", f"We decided to use Postgres 16 for billing ({day}).",
                     now=f"{day}T10:00:00Z")[0] == 0
    noted = root / "memory/L0/2026-11-20.md"
    noted.write_text(noted.read_text().replace(
        "# L0 · 2026-11-20\n", "# L0 · 2026-11-20\n\nPerson note: the kickoff day; ask Anna about the budget.\n"))
    assert brain("check")[0] == 0
    git(root, "commit", "-qam", "note on the day")
    code, _, err = brain("compact", now="2026-11-30T10:00:00Z")
    assert code == 0, err
    # pamd's own emptied file goes; the one holding the person's note stays, note and all.
    assert not (root / "memory/L0/2026-11-21.md").exists()
    text = noted.read_text()
    assert "Person note: the kickoff day; ask Anna about the budget." in text and "### " not in text
    assert "Kept 1 tier file " in git(root, "log", "-1", "--format=%B")
    assert brain("check")[0] == 0
    n = head_count(root)
    assert "nothing to compact" in brain("compact", now="2026-11-30T10:30:00Z")[1] and head_count(root) == n


@pytest.mark.parametrize("rel, edit", [
    ("STATE.md", lambda t: t + "\nMy own line, not committed yet.\n"),
    ("PRELOAD.md", lambda t: t + "\nMy own line, not committed yet.\n"),
    # half-way through an edit: what pamd could not parse must not stop it either
    ("STATE.md", lambda t: t.replace("---\n", "---\ncurrent_focus: \"unterminated\n", 1)),
    ("PRELOAD.md", lambda t: t + "\n<!-- pamd:begin a second one\n"),
])
def test_a_snapshot_file_a_person_is_editing_waits_and_compaction_goes_on(week, rel, edit):
    """STATE.md and PRELOAD.md are remade at every run: one with uncommitted edits is left
    as it is (and said so) instead of stopping every compaction until it is committed."""
    root = week.cwd
    path = root / rel
    before_head = git(root, "show", f"HEAD:{rel}")
    path.write_text(edit(path.read_text()))
    mine = path.read_text()
    code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
    assert code == 0, err
    body = git(root, "log", "-1", "--format=%B")
    assert "Pamd-Run: compact" in body and f"Left {rel} as they are: uncommitted edits" in body
    assert path.read_text() == mine  # the person's edit, untouched
    assert git(root, "show", f"HEAD:{rel}") == before_head  # and not swept into pamd's commit
    assert git(root, "status", "--porcelain") == f" M {rel}\n"
    path.write_text(before_head + "\nMy own line, finished.\n")
    git(root, "commit", "-qam", "my line")  # once committed, the next run refreshes it
    code, _, err = week("compact", now=iso(START + timedelta(days=2, hours=6)))
    assert code == 0, err
    assert "Left " not in git(root, "log", "-1", "--format=%B")


def test_a_summary_reads_a_chat_of_one_second_in_the_order_it_was_said(brain, tmp_path):
    said = [{"role": "system", "content": "You are a deploy bot."}]
    for i in range(8):
        said += [{"role": "user", "content": f"step {i}: please run migration {i}"},
                 {"role": "assistant", "content": f"ran migration {i} ok"}]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": said}))  # no times: all of one second
    assert brain("ingest", str(chat), now=iso(START))[0] == 0
    order = [e.id for e in tier_entries(brain.cwd)]
    later = iso(START + timedelta(days=2))
    assert brain("compact", now=later)[0] == 0
    summaries = [e for e in tier_entries(brain.cwd) if e.sources]
    assert summaries
    for s in summaries:
        assert list(s.sources) == [i for i in order if i in s.sources]
    made = {p: p.read_text() for p in brain.cwd.glob("memory/L*/*.md")}
    git(brain.cwd, "reset", "-q", "--hard", "HEAD~1")
    assert brain("compact", now=later)[0] == 0  # the same tree compacts to the same files
    assert {p: p.read_text() for p in brain.cwd.glob("memory/L*/*.md")} == made


def daemon_beside(root, drive, stop, **kwargs) -> int:
    """pamd's daemon on the brain at `root`, run here until `stop` is set, while `drive` (which
    sets `stop` when it is done) works in a thread of its own; on every way out `stop` is set
    and that thread joined."""
    import threading

    from pamd.consolidate.schedule import daemon
    from pamd.edge.brain import Brain

    helper = threading.Thread(target=drive)
    helper.start()
    try:
        return daemon(Brain(root), stop=stop, **kwargs)
    finally:
        stop.set()
        helper.join()


def test_compaction_through_the_real_anthropic_sdk_records_tokens_and_cost(week, monkeypatch):
    from gemini_stub import AnthropicStub

    monkeypatch.setenv("ANTHROPIC_API_KEY", "stub-key")
    with AnthropicStub() as stub:
        _use_gemini(week.cwd, stub.base_url, backend="anthropic", model="claude-haiku-4-5")
        code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
        assert code == 0, err
        assert stub.requests
    t = trailers(week.cwd)
    assert t["Pamd-Summarizer"] == "anthropic" and t["Pamd-Model"] == "claude-haiku-4-5"
    assert float(t["Pamd-Cost-USD"]) > 0 and "Pamd-Fallback" not in t
    assert any("summary of" in e.text for e in tier_entries(week.cwd) if e.tier == "L1")
    # status names the summarizer and the cost a day at the rate of the runs it finds
    code, out, err = week("status", now=iso(START + timedelta(days=1, hours=8)))
    assert code == 0, err
    cost = float(t["Pamd-Cost-USD"])
    assert f"summarizer: anthropic (claude-haiku-4-5), ${cost:.2f}/day at the last day's rate (1 run," in out


def test_one_config_line_has_a_logged_in_claude_write_the_summaries(week, monkeypatch, tmp_path):
    from cli_stub import StandIn

    standin = StandIn(tmp_path / "standin")
    standin.env(monkeypatch)
    cfg = week.cwd / "pamd.toml"
    cfg.write_text(cfg.read_text().replace('backend = "extractive"', 'backend = "claude-cli"', 1))
    git(week.cwd, "commit", "-qam", "use claude-cli")
    code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
    assert code == 0, err
    assert standin.runs and all(r["argv"][:3] == ["-p", "--output-format", "json"] for r in standin.runs)
    t = trailers(week.cwd)
    assert t["Pamd-Summarizer"] == "claude-cli" and "Pamd-Fallback" not in t, git(week.cwd, "log", "-1", "--format=%B")
    assert float(t["Pamd-Cost-USD"]) == pytest.approx(0.0125 * len(standin.runs))
    assert any("summary of" in e.text for e in tier_entries(week.cwd) if e.tier == "L1")


def test_an_llm_backend_writes_states_open_work_and_focus_in_the_same_batch(week, monkeypatch):
    """With an LLM backend a compaction also hands it the last day's raw messages (tier
    "state"): its "open: …" facts join STATE.md's open work and its "focus: …" is the focus;
    its "done: …" is left to the commits and closes the entries record. When it fails,
    STATE.md is the extractive snapshot and the run still lands."""
    from gemini_stub import OpenAIStub, chat_answer

    from pamd.core.fmt import split_frontmatter

    def answer(request):
        out = []
        for i, g in enumerate(request.groups):
            first = g["messages"][0]["id"]
            facts = ([{"text": "open: the PDF invoices for billing-9, asked for and not started", "sources": [first]},
                      {"text": "focus: the GBP rounding in Billing.Rates", "sources": [first]},
                      {"text": "done: shipped everything", "sources": [first]}]
                     if g["tier"] == "state" else [{"text": f"summary of {g['messages'][0]['text']}"[:200],
                                                   "sources": [first]}])
            out.append({"i": i, "facts": facts})
        return chat_answer(json.dumps({"summaries": out}))

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIStub(responder=answer) as stub:
        _use_gemini(week.cwd, stub.base_url, backend="openai", model="llama3.2")
        code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
        assert code == 0, err
        tiers = [g["tier"] for r in stub.requests for g in r.groups]
    assert tiers.count("state") == 1 and "L1" in tiers, tiers
    meta = split_frontmatter((week.cwd / "STATE.md").read_text(), "STATE.md")[0]
    assert "the PDF invoices for billing-9, asked for and not started" in meta["active_goals"], meta
    assert meta["current_focus"] == "the GBP rounding in Billing.Rates"
    assert "shipped everything" not in str(meta["done"])


def test_a_failing_llm_leaves_state_extractive(week, monkeypatch, tmp_path, capsys):
    from gemini_stub import OpenAIStub, chat_error

    from pamd.core.fmt import split_frontmatter

    # the same compaction with the extractive backend, on a copy: what STATE.md must say
    shutil.copytree(week.cwd, tmp_path / "copy", symlinks=True)
    other = Pamd(tmp_path, capsys)
    other.cwd = tmp_path / "copy"
    assert other("compact", now=iso(START + timedelta(days=1, hours=6)))[0] == 0
    want = split_frontmatter((other.cwd / "STATE.md").read_text(), "STATE.md")[0]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIStub(responder=lambda req: chat_error(500)) as stub:
        _use_gemini(week.cwd, stub.base_url, backend="openai", model="llama3.2")
        code, out, err = week("compact", now=iso(START + timedelta(days=1, hours=6)))
        assert code == 0, err
        assert any(g["tier"] == "state" for r in stub.requests for g in r.groups)
    meta = split_frontmatter((week.cwd / "STATE.md").read_text(), "STATE.md")[0]
    assert {k: meta.get(k) for k in ("active_goals", "current_focus", "done")} == \
        {k: want.get(k) for k in ("active_goals", "current_focus", "done")}
    assert "Pamd-Fallback:" in git(week.cwd, "log", "-1", "--format=%B")
