"""pamd fsck on real brains: a simulated week passes; hand-made damage is found at path:line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import pytest
from conftest import Pamd, git, made_once

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
def lived_week(brain, tmp_path, capsys, tmp_path_factory):
    """Seven days: ingest each morning, compact twice a day, defrag each night (lived once per
    process, each test given a copy: the tests only read it or damage their own copy)."""

    def live(folder: Path) -> None:
        me = Pamd(folder, capsys)
        assert me("init", str(folder / "brain"))[0] == 0
        me.cwd = folder / "brain"
        for day in range(7):
            f = day_of_messages(folder / f"day{day}.jsonl", day)
            base = START + timedelta(days=day)
            steps = [
                ("ingest", str(f), base + timedelta(hours=7)),
                ("compact", None, base + timedelta(hours=8)),
                ("compact", None, base + timedelta(hours=16)),
                ("defrag", None, base + timedelta(hours=17, minutes=30)),
            ]
            for cmd, arg, when in steps:
                code, _, err = me(*([cmd, arg] if arg else [cmd]), now=iso(when))
                assert code == 0, f"{cmd} on day {day}: {err}"

    shutil.rmtree(brain.cwd)
    made_once("lived-week", tmp_path, live, tmp_path_factory)
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
    # The week drops trash and summarises summaries: ledger ids that only a commit's
    # Dropped line, or a summary that has left the tree, accounts for.
    log = git(root, "log", "--format=%B")
    assert "Dropped as trash" in log
    ledger = {i for p in root.glob("memory/ledger/*.txt") for i in p.read_text().split()}
    tree = "\n".join(p.read_text() for p in [*root.glob("memory/L*/*.md"), root / "MEMORY.md"])
    assert any(i not in tree and i not in log for i in ledger)
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
    # The other checks stay quiet: only the broken link is reported, and the ledger
    # ids it stood for, which nothing in the tree accounts for any more.
    problems = [ln for ln in out.splitlines() if ln.startswith(("memory/", "MEMORY"))]
    assert [ln for ln in problems if "e-000000000000" not in ln] == [
        ln for ln in problems if ln.startswith("memory/ledger/") and " is lost: " in ln
    ]
    if victim.startswith("e-"):
        assert f"{victim} is lost: " in out and "named it in from= once, no longer" in out


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


def test_an_entry_added_by_hand_is_registered_as_fsck_says_then_guarded_like_any(brain):
    """fsck failed on a well-formed hand-made entry with only "re-ingest would duplicate
    it", no way out short of a compaction (and the nightly workflow runs fsck first). It
    names the ledger line to add; once added, the entry is held to fsck's loss check too."""
    root = brain.cwd
    assert brain("remember", "We decided to ship the billing export on Friday.", now="2026-11-20T09:00:00Z")[0] == 0
    l0 = next(root.glob("memory/L0/*.md"))
    rel = l0.relative_to(root).as_posix()
    eid = "e-0123456789ab"
    l0.write_text(l0.read_text() + f"\n### {eid} · 2026-11-20T10:00:00Z · user\n"
                  "type=decision importance=0.90 neuro=- session=by-hand recalls=0\n"
                  "> The staging box moves to Frankfurt in December.\n")
    git(root, "commit", "-qam", "an entry added by hand")
    assert brain("check")[0] == 0
    code, out, _ = brain("fsck", "--skip", "index")
    line = 1 + l0.read_text().split("\n").index(next(ln for ln in l0.read_text().split("\n") if eid in ln))
    assert code == 1 and out.splitlines()[0] == (
        f"{rel}:{line}: {eid} is not in memory/ledger/ (re-ingest would duplicate it; an entry "
        "added by hand: add its id as a line of memory/ledger/2026-11.txt)"), out
    ledger = root / "memory" / "ledger" / "2026-11.txt"
    ledger.write_text(ledger.read_text() + eid + "\n")
    git(root, "commit", "-qam", "register it")
    assert brain("fsck", "--skip", "index")[0] == 0
    assert brain("compact", now="2026-12-09T00:00:00Z")[0] == 0
    assert brain("fsck", "--skip", "index")[0] == 0
    # deleted without a word, it is lost, as an ingested entry would be
    for p in root.glob("memory/L*/*.md"):
        p.unlink()
    git(root, "commit", "-qam", "oops")
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 1 and f"{eid} is lost" in out, out


def _entry_block(text: str, eid: str) -> str:
    """The lines of entry `eid` in a tier file's text, with the blank line after it."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"### {eid} "))
    end = start + 2
    while end < len(lines) and lines[end].startswith(">"):
        end += 1
    return "\n".join(lines[start:end]) + "\n\n"


def _ledger_line(root, eid: str) -> str:
    for p in sorted(root.glob("memory/ledger/*.txt")):
        ids = p.read_text().split("\n")
        if eid in ids:
            return f"{p.relative_to(root).as_posix()}:{ids.index(eid) + 1}"
    raise AssertionError(f"{eid} is not in the ledger")


def _a_day_and_one_of_its_entries(brain, tmp_path):
    """Ingest a day of messages; its L0 file and the id of its fourth entry."""
    f = day_of_messages(tmp_path / "day.jsonl", 0)
    assert brain("ingest", str(f), now=iso(START + timedelta(hours=7)))[0] == 0
    l0 = next(brain.cwd.glob("memory/L0/*.md"))
    return l0, re.findall(r"^### (e-[0-9a-f]{12}) ", l0.read_text(), re.M)[3]


def test_fsck_finds_an_entry_deleted_by_hand(brain, tmp_path):
    root = brain.cwd
    l0, eid = _a_day_and_one_of_its_entries(brain, tmp_path)
    block = _entry_block(l0.read_text(), eid)
    l0.write_text(l0.read_text().replace(block, ""))
    git(root, "commit", "-qam", "tidy the day by hand")
    assert brain("check")[0] == 0  # the format is fine: only the ledger knows
    code, out, _ = brain("fsck")
    assert code == 1
    problems = [ln for ln in out.splitlines() if ln.startswith("memory/")]
    assert problems == [
        f"{_ledger_line(root, eid)}: {eid} is lost: not in the tree, behind no summary's from= and"
        f" on no commit's Dropped line; `pamd expand {eid}` shows it from history,"
        " `pamd sync --repair` puts it back"
    ]
    code, out, _ = brain("fsck", "--json")
    assert code == 1 and [p["message"].split()[0] for p in json.loads(out)["ledger"]] == [eid]
    # the words are still in history, as the message says
    code, out, _ = brain("expand", eid)
    assert code == 0 and block.split("\n")[2][2:] in out
    # Saying so in a commit makes it a deliberate drop: fsck is content again.
    git(root, "commit", "-q", "--allow-empty", "-m", f"forget a line\n\nDropped: {eid}")
    code, out, _ = brain("fsck")
    assert code == 0, out


def test_fsck_counts_only_the_checked_out_branch_history(brain, tmp_path):
    """A Dropped line on a branch not merged (a defrag PR under review) hides no hand deletion."""
    root = brain.cwd
    l0, eid = _a_day_and_one_of_its_entries(brain, tmp_path)
    main = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(root, "checkout", "-qb", "pamd/defrag-review")
    git(root, "commit", "-q", "--allow-empty", "-m", f"defrag\n\nDropped: {eid}")
    git(root, "checkout", "-q", main)
    l0.write_text(l0.read_text().replace(_entry_block(l0.read_text(), eid), ""))
    git(root, "commit", "-qam", "tidy the day by hand")
    code, out, _ = brain("fsck")
    assert code == 1 and f"{eid} is lost: " in out, out
    # merged, the branch's Dropped line is main's history too
    git(root, "merge", "-q", "--no-edit", "pamd/defrag-review")
    code, out, _ = brain("fsck")
    assert code == 0, out


def test_a_squash_merged_defrag_keeps_its_drops_and_its_run(brain, tmp_path):
    """`git merge --squash` indents the defrag's message by four spaces: its Dropped line still
    accounts for the trash, and run-due still sees that the defrag ran."""
    root = brain.cwd
    f = day_of_messages(tmp_path / "day.jsonl", 0)
    assert brain("ingest", str(f), now=iso(START + timedelta(hours=7)))[0] == 0
    night = START + timedelta(days=1, hours=2)
    code, out, err = brain("defrag", "--branch", "pamd/defrag-x", now=iso(night))
    assert code == 0 and "dropped" in out, out + err
    git(root, "merge", "--squash", "pamd/defrag-x")
    git(root, "-c", "core.editor=true", "commit", "-q")
    git(root, "branch", "-D", "pamd/defrag-x")  # "delete branch after merge"
    body = git(root, "log", "-1", "--format=%B")
    assert "\n    Dropped as trash" in body and "\n    Pamd-Run: defrag\n" in body
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 0, out
    code, out, _ = brain("run-due", "--list", now=iso(night + timedelta(minutes=10)))
    assert code == 0 and "defrag" not in out, out


def test_fsck_finds_the_raw_entries_behind_a_summary_deleted_by_hand(lived_week):
    root = lived_week.cwd
    path, lineno, line = summary_with_sources(root)
    text = path.read_text()
    sid = text.split("\n")[lineno - 2].split()[1]
    text = text.replace(_entry_block(text, sid), "")
    if not re.search(r"^### ", text, re.M) and path.name != "MEMORY.md":
        path.unlink()
    else:
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "remove a summary by hand")
    code, out, _ = lived_week("fsck")
    assert code == 1
    lost = [ln for ln in out.splitlines() if " is lost: " in ln]
    assert lost and all(ln.startswith("memory/ledger/") for ln in lost)
    assert any(f"(its summary {sid}" in ln or "left the tree the same way" in ln for ln in lost)
    # nothing else is wrong with this brain
    assert len([ln for ln in out.splitlines() if ln.startswith(("memory/", "MEMORY"))]) == len(lost)


def test_fsck_outside_a_brain_and_bad_skip(tmp_path, capsys):
    from conftest import Pamd

    p = Pamd(tmp_path, capsys)
    code, out, err = p("fsck")
    assert code == 1 and err.startswith("pamd: error: no pamd brain") and err.count("\n") == 1


def test_fsck_rejects_an_unknown_check(brain):
    code, _, err = brain("fsck", "--skip", "nope")
    assert code == 1 and "unknown check 'nope'" in err


def _summaries_of(root, eid: str) -> list[tuple[str, int, str]]:
    """(path, header line, summary id) of every summary of the tree whose from= names `eid`."""
    out = []
    for p in sorted(root.glob("memory/L[1-3]/*.md")) + [root / "MEMORY.md"]:
        lines = p.read_text().split("\n")
        for i, line in enumerate(lines):
            if re.search(rf"from=(\S+,)?{eid}\b", line):
                out.append((p.relative_to(root).as_posix(), i, lines[i - 1].split()[1]))
    return out


def test_fsck_finds_a_message_behind_two_summaries_after_merging_a_stale_defrag_branch(brain, tmp_path):
    """The nightly defrag PR takes an old message to MEMORY.md while main's compaction files it
    in L2; git merges both without a conflict on them. fsck names the id and both places, also
    once a later defrag took one of them into another summary, and says which one to delete."""
    root = brain.cwd
    f = tmp_path / "one.jsonl"
    f.write_text(json.dumps({"ts": "2026-11-19T10:00:00Z", "role": "user", "session": "s19",
                             "text": "We decided to use Postgres 16 for the ledger service, final decision."}) + "\n")
    assert brain("ingest", str(f), now="2026-11-26T07:00:00Z")[0] == 0
    eid = re.search(r"^### (e-[0-9a-f]{12}) ", next(root.glob("memory/L0/*.md")).read_text(), re.M).group(1)
    assert brain("defrag", "--branch", "pamd/defrag-2026-11-27", now="2026-11-27T02:30:00Z")[0] == 0
    assert brain("compact", now="2026-11-27T03:00:00Z")[0] == 0
    subprocess.run(["git", "merge", "-q", "--no-edit", "pamd/defrag-2026-11-27"], cwd=root, capture_output=True)
    git(root, "checkout", "--theirs", "STATE.md")  # the snapshot: the next run writes it anew
    git(root, "commit", "-qam", "merge the nightly defrag")
    two = _summaries_of(root, eid)
    assert [p for p, _, _ in two] == ["memory/L2/2026-11-19.md", "MEMORY.md"], two
    (l2, l2_line, _), (mem, mem_line, _) = two
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 1, out
    assert (f"{mem}:{mem_line}: {eid} is behind two summaries: {mem}:{mem_line} and {l2}:{l2_line}, "
            "so it counts twice") in out, out
    assert f"the summary at {l2}:{l2_line} stands for nothing the other does not: delete it" in out
    assert out.count(" counts twice ") == 1 and "1 problem;" in out

    # A later defrag takes the L2 one into another summary: still found, through history.
    assert brain("defrag", now="2026-12-05T02:30:00Z")[0] == 0
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 1 and f"{eid} is behind two summaries: " in out, out

    # What the hint says: delete the summary that restates the other, commit; fsck is content.
    git(root, "reset", "-q", "--hard", "HEAD~1")
    l2_text = (root / l2).read_text()
    (root / l2).write_text(re.sub(rf"(?m)^### {two[0][2]} .*\n.*\n(>.*\n)*", "", l2_text))
    git(root, "commit", "-qam", "delete the summary the merge doubled")
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 0, out


def test_a_shallow_clone_is_named_once_with_its_fix(lived_week, tmp_path):
    """fsck, expand and recall say the clone is shallow instead of blaming each id."""
    clone = tmp_path / "shallow"
    assert lived_week("index")[0] == 0
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{lived_week.cwd}", str(clone))
    lived_week.cwd = clone
    code, out, _ = lived_week("fsck", "--skip", "index")
    problems = [ln for ln in out.splitlines() if ln.startswith(("memory/", "MEMORY.md"))]
    assert code == 1 and len(problems) == 1, out
    assert "shallow" in problems[0] and "git fetch --unshallow" in problems[0]
    # the first message ingested (the ledger also holds session-free ids, which are no entries)
    first = git(tmp_path / "brain", "log", "--reverse", "--format=%H", "--grep", "^pamd ingest").split()[0]
    old = re.search(r"^\+### (e-[0-9a-f]{12}) ", git(tmp_path / "brain", "show", first, "--", "memory/L0"),
                    re.M).group(1)
    code, _, err = lived_week("expand", old)
    assert code == 1 and "shallow" in err and "git fetch --unshallow" in err
    code, _, err = lived_week("recall", "revenue report rows", "-k", "3")
    assert code == 0 and err.count("clone is shallow") == 1 and "pamd index --rebuild" in err
    # --expand prints every hit; a summary history lacks says so under its hit
    code, out, err = lived_week("recall", "revenue report rows", "-k", "10", "--expand", "--no-log")
    assert code == 0 and "(cannot expand: " in out and "git fetch --unshallow" in out, out + err
    hits = json.loads(lived_week("recall", "revenue report rows", "-k", "10", "--expand", "--json",
                                 "--no-log")[1])
    assert any("shallow" in h.get("expand_error", "") for h in hits)
    git(clone, "fetch", "-q", "--unshallow")
    code, _, err = lived_week("index", "--rebuild")
    assert code == 0 and "shallow" not in err
    assert lived_week("fsck", "--skip", "index")[0] == 0
    assert lived_week("expand", old)[0] == 0
    # nothing was cached as "no leaves": the rebuilt index holds every leaf the full brain's does
    assert _leaf_chunks(clone) == _leaf_chunks(tmp_path / "brain")


def _leaf_chunks(root) -> list[str]:
    import sqlite3

    db = sqlite3.connect(root / ".pamd" / "index" / "index.sqlite")
    try:
        return sorted(r[0] for r in db.execute("SELECT ids FROM chunks WHERE alive=1") if "," in r[0])
    finally:
        db.close()


def test_fsck_names_two_summaries_sharing_many_messages_once(brain, tmp_path):
    """Two summaries that stand for the same messages (a stale defrag branch merged) are one
    problem naming the shared ids, not one line per message."""
    root = brain.cwd
    f = day_of_messages(tmp_path / "day.jsonl", 0)
    assert brain("ingest", str(f), now=iso(START + timedelta(hours=7)))[0] == 0
    assert brain("compact", now=iso(START + timedelta(days=2)))[0] == 0
    path, lineno, line = summary_with_sources(root)
    text = path.read_text()
    sid = text.split("\n")[lineno - 2].split()[1]
    block = _entry_block(text, sid)
    assert block.count(",") >= 1  # a summary of two messages or more
    mem = root / "MEMORY.md"
    mem.write_text(mem.read_text().rstrip("\n") + "\n\n" + block.replace(sid, "s-0123456789ab"))
    git(root, "commit", "-qam", "the same summary twice, as a stale merge leaves it")
    code, out, _ = brain("fsck", "--skip", "index")
    problems = [ln for ln in out.splitlines() if " counts twice " in ln]
    n = len(re.search(r"from=(\S+)", line).group(1).split(","))
    assert code == 1 and len(problems) == 1, out
    assert f"more id{'s' if n > 2 else ''}: " in problems[0] and "is behind two summaries" in problems[0]


def test_a_compaction_that_only_folds_recalls_keeps_the_index_manifest_whole(brain):
    """Folding `recalls=`/`seen=` changes a file's bytes but none of its chunk keys: the
    index records the new sha, and its manifest's tree hash must follow."""
    week = resources.files("pamd.data").joinpath("sample-week.jsonl")
    assert brain("ingest", str(week), now="2026-11-28T00:00:00Z")[0] == 0
    assert brain("compact", now="2026-11-28T02:00:00Z")[0] == 0
    assert brain("recall", "--log", "Kubernetes", "-k", "1", now="2026-11-28T03:00:00Z")[0] == 0
    code, out, err = brain("compact", now="2026-11-28T03:10:00Z")
    assert code == 0 and "1 file changed" in out + err, out + err
    code, out, _ = brain("fsck")
    assert code == 0 and out.strip().startswith("brain ok"), out


@pytest.fixture
def merging(tmp_path, capsys):
    """Two clones of one brain that each ingested and compacted on their own, one pulled
    into the other: git stops on conflicts in an entry file, the ledger and STATE.md (a
    brain made before `pamd init` wrote .gitattributes, whose union merge takes the ledger)."""
    from conftest import Pamd

    p = Pamd(tmp_path, capsys)
    assert p("init", str(tmp_path / "base"), "--name", "agent")[0] == 0
    p.cwd = tmp_path / "base"
    git(p.cwd, "rm", "-q", ".gitattributes")
    git(p.cwd, "commit", "-qm", "an older brain")
    assert p("ingest", str(day_of_messages(tmp_path / "d0.jsonl", 0)), now=iso(START))[0] == 0
    git(tmp_path, "clone", "-q", "base", "m1")
    git(tmp_path, "clone", "-q", "base", "m2")
    for side, day in (("m1", 1), ("m2", 2)):
        p.cwd = tmp_path / side
        f = day_of_messages(tmp_path / f"{side}.jsonl", day)
        for cmd, at in ((("remember", f"{side} note: the quota is {day} TB."), 4),
                        (("ingest", str(f)), 4), (("compact",), 4 + day)):
            code, _, err = p(*cmd, now=iso(START + timedelta(days=at)))
            assert code == 0, err
    p.cwd = tmp_path / "m1"
    r = subprocess.run(["git", "-c", "pull.rebase=false", "pull", "--no-edit", "../m2", "main"],
                       cwd=p.cwd, capture_output=True, text=True)
    assert r.returncode == 1 and "CONFLICT" in r.stdout, r.stdout + r.stderr
    return p


def test_fsck_during_an_unresolved_merge_names_the_conflicts_and_nothing_else(merging):
    """A conflicted entry file does not parse; fsck's conflicts check names it
    instead of dying on the parse, and the other checks neither die on it nor call its ids
    lost; history of the side being merged counts as the brain's past."""
    root = merging.cwd
    conflicted = sorted(git(root, "diff", "--name-only", "--diff-filter=U").split())
    assert "STATE.md" in conflicted and any(p.startswith("memory/ledger/") for p in conflicted)
    l0 = next(p for p in conflicted if p.startswith("memory/L"))  # an entry file
    code, out, err = merging("fsck", "--skip", "index")
    assert code == 1 and not err, err
    assert sorted(out.splitlines()[:-1]) == sorted(
        f"{p}:1: unresolved merge conflict (resolve it, `git add` it and commit, or `git merge --abort`)"
        for p in conflicted), out
    for cmd in (("status",), ("compact",), ("expand", re.search(
            r"### ([es]-[0-9a-f]{12})", (root / l0).read_text()).group(1))):
        code, _, err = merging(*cmd)
        assert code == 1 and err.startswith("pamd: error: "), (cmd, err)
        assert "text between entries" not in err and "Traceback" not in err
    assert merging("status")[2].startswith(f"pamd: error: unresolved merge conflict in {l0} (")
    assert merging("state")[2].startswith("pamd: error: unresolved merge conflict in STATE.md (")


@pytest.mark.parametrize("op", ["rebase", "cherry-pick"])
def test_a_conflict_of_a_rebase_or_cherry_pick_names_its_own_commands(merging, op):
    """`git merge --abort` was the advice during any conflict, and git refuses it outside
    a merge: fsck, a reader and a writer name the stopped operation's own commands."""
    root = merging.cwd
    git(root, "merge", "--abort")
    # the ledger merged as a brain made by `pamd init` now does, so the rebase stops at STATE.md
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("memory/ledger/*.txt merge=union\n")
    git(root, "fetch", "-q", "../m2", "main")
    r = subprocess.run(["git", op, "FETCH_HEAD"], cwd=root, capture_output=True, text=True)
    assert r.returncode != 0 and "CONFLICT" in r.stdout + r.stderr, r.stdout + r.stderr
    hint = f"`git add` it and `git {op} --continue`, or `git {op} --abort`"
    code, out, _ = merging("fsck", "--skip", "index")
    assert code == 1 and f":1: unresolved merge conflict (resolve it, {hint})" in out, out
    assert "STATE.md" in git(root, "diff", "--name-only", "--diff-filter=U").split()
    code, _, err = merging("state")
    assert code == 1 and err.startswith("pamd: error: unresolved merge conflict in STATE.md ("), err
    assert hint in err and "merge --abort" not in err, err
    code, _, err = merging("compact")
    assert code == 1 and f"or `git {op} --abort`, then run again" in err, err


def test_conflict_markers_committed_are_named_as_such(merging):
    root = merging.cwd
    git(root, "commit", "-qam", "a merge concluded with its markers")
    code, out, _ = merging("fsck", "--skip", "index")
    assert code == 1 and "lost" not in out and "neither in the tree" not in out, out
    assert re.search(r"^STATE.md:\d+: conflict marker left in the file$", out, re.M), out
    for cmd in (("compact",), ("status",), ("state",)):
        code, _, err = merging(*cmd)
        assert code == 1 and re.match(r"pamd: error: \S+:\d+: conflict marker left in the file ", err), err


DAY = [("2026-11-23T09:00:00Z", "user", "Let's build the billing export service this week, for two million invoices."),
       ("2026-11-23T09:37:00Z", "assistant", "Plan: a streaming CSV writer, a Postgres cursor, and a nightly job."),
       ("2026-11-23T09:50:00Z", "assistant",
        "We decided to use server-side cursors in Postgres 16 so memory stays flat for large exports."),
       ("2026-11-23T10:05:00Z", "assistant", "The first export of 10,000 rows took 1.8 seconds."),
       ("2026-11-23T10:19:00Z", "assistant", "Maybe the slow part later will be currency conversion.")]


def _merge_with_a_compacted_day(tmp_path, capsys) -> tuple[Pamd, str]:
    """Clone b compacts a day whose entry clone a folded a recall into; a pulls b: a conflict
    where a's side has the entries and b's has none. Returns (a, the recalled entry's id)."""
    p = Pamd(tmp_path, capsys)
    assert p("init", str(tmp_path / "a"), now="2026-11-23T08:00:00Z")[0] == 0
    p.cwd = a = tmp_path / "a"
    git(a, "config", "pull.rebase", "false")
    f = tmp_path / "day.jsonl"
    f.write_text("".join(json.dumps({"ts": ts, "role": r, "text": t, "session": "billing"}) + "\n"
                         for ts, r, t in DAY))
    assert p("ingest", str(f), now="2026-11-23T10:30:00Z")[0] == 0
    git(tmp_path, "clone", "-q", "a", "b")
    eid = re.search(r"^### (e-[0-9a-f]{12}) .*\n.*\n> Plan:", (a / "memory/L0/2026-11-23.md").read_text(),
                    re.M).group(1)
    assert p("touch", eid, now="2026-11-23T10:35:00Z")[0] == 0
    assert p("compact", now="2026-11-23T10:40:00Z")[0] == 0
    assert f"{eid} · " in (a / "memory/L0/2026-11-23.md").read_text()  # still raw here, recalls=1
    p.cwd = tmp_path / "b"
    assert p("compact", now="2026-11-24T18:10:00Z")[0] == 0
    assert f"{eid} · " not in (p.cwd / "memory/L0/2026-11-23.md").read_text()  # compacted there
    p.cwd = a
    subprocess.run(["git", "pull", "-q", "--no-edit", "../b", "main"], cwd=a, capture_output=True)
    assert "memory/L0/2026-11-23.md" in git(a, "diff", "--name-only", "--diff-filter=U")
    for rel in git(a, "diff", "--name-only", "--diff-filter=U").split():
        if not rel.startswith("memory/"):
            git(a, "checkout", "--ours", rel)  # DNA.md, STATE.md: either side (docs/hooks.md)
            git(a, "add", rel)
    return p, eid


HUNK = re.compile(r"^<<<<<<< .*\n((?:.*\n)*?)=======\n((?:.*\n)*?)>>>>>>> .*\n", re.M)


def test_a_merge_that_takes_the_side_without_compacted_entries_counts_each_once(tmp_path, capsys):
    """docs/hooks.md said to keep both sides' entries: where the other clone had compacted them
    that put them back raw beside their summary, and fsck guessed "two clones that each
    compacted it?" (only one had). Taking the side without them, as the doc now says, and
    carrying the folded recall to the summary leaves a sound brain."""
    p, eid = _merge_with_a_compacted_day(tmp_path, capsys)
    a, l0 = p.cwd, p.cwd / "memory/L0/2026-11-23.md"
    text = l0.read_text()
    both = tmp_path / "both.md"
    both.write_text(HUNK.sub(lambda m: m.group(1) + m.group(2), text))
    hunks = HUNK.findall(text)  # this side holds the entries, the other nothing (its compaction)
    assert hunks and all("### " in ours and not theirs.strip() for ours, theirs in hunks), text
    l0.write_text(HUNK.sub(lambda m: m.group(1) if "### " not in m.group(1) else m.group(2), text))
    (rel, line, sid), = _summaries_of(a, eid)
    summary = (a / rel).read_text().split("\n")
    recalls = int(re.search(r"recalls=(\d+)", summary[line]).group(1))
    summary[line] = re.sub(r"recalls=\d+", f"recalls={recalls + 1}", summary[line])
    (a / rel).write_text("\n".join(summary))
    git(a, "add", "-A", "memory")
    git(a, "commit", "-q", "--no-edit")
    code, out, _ = p("fsck", "--skip", "index", now=None)
    assert code == 0, out
    assert p("check", now=None)[0] == 0
    # what the doc said before: keep both sides' entries
    git(a, "reset", "-q", "--hard", "HEAD~1")
    subprocess.run(["git", "pull", "-q", "--no-edit", "../b", "main"], cwd=a, capture_output=True)
    for rel in git(a, "diff", "--name-only", "--diff-filter=U").split():
        if not rel.startswith("memory/"):
            git(a, "checkout", "--ours", rel)
    l0.write_text(both.read_text())
    git(a, "add", "-A", ".")
    git(a, "commit", "-q", "--no-edit")
    code, out, _ = p("fsck", "--skip", "index", now=None)
    assert code == 1 and f"{eid} is in the tree at memory/L0/2026-11-23.md:" in out, out
    assert "a merge that kept an entry the other side had compacted" in out
    assert "two clones that each compacted it" not in out
