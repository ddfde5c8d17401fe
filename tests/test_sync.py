"""Two clones of one brain and a bare origin: merges a person resolves by hand are caught by
fsck and put back by `pamd sync --repair`; `pamd sync` merges by entry id, losing and
doubling nothing whichever side moved."""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from conftest import Pamd, git

START = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
HUNK = re.compile(r"^<<<<<<< .*\n((?:.*\n)*?)=======\n((?:.*\n)*?)>>>>>>> .*\n", re.M)
TEXTS = [
    "{side} asked for the Q{n} revenue report with {m} rows for the billing team.",
    "The export job on {side} failed with error code {m} on staging; the disk was full.",
    "ok",
    "We decided on {side} to keep invoices for {n} years in cold storage, bucket b{m}.",
    "Deployed v{n}.{m} from {side} to production, the milestone is done, thanks!",
    "Maybe the slow part of report {m} is the currency conversion on {side}.",
]


def iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def batch(path, side: str, start: datetime, n: int = 6, step: int = 7, salt: int = 0):
    """n messages of `side`, `step` minutes apart from `start`, as JSONL."""
    lines = []
    for i in range(n):
        text = TEXTS[(i + salt) % len(TEXTS)].format(side=side, n=i % 4 + 1, m=100 + 13 * i + salt)
        lines.append(json.dumps({"ts": iso(start + timedelta(minutes=step * i)),
                                 "role": "user" if i % 2 else "assistant", "text": text,
                                 "session": f"{side}{salt}"}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def clones(tmp_path, capsys):
    """(a, b): two clones of a bare origin holding a brain made by `pamd init`."""
    a, b = _fresh_clones(tmp_path, capsys)
    for p in (a, b):
        git(p.cwd, "config", "pull.rebase", "false")
    return a, b


def tree_ids(root) -> Counter:
    return Counter(m.group(1) for p in [root / "MEMORY.md", *sorted(root.glob("memory/L[0-3]/*.md"))]
                   if p.is_file() for m in re.finditer(r"^### ([es]-[0-9a-f]{12}) ", p.read_text(), re.M))


def ledger_ids(root) -> set[str]:
    return {ln.strip() for p in root.glob("memory/ledger/*.txt") for ln in p.read_text().split() if ln.strip()}


def standing(root) -> Counter:
    """How many entries of the tree stand for each id: itself, or a summary holding it through `from=`."""
    from pamd.edge import lineage
    from pamd.edge.brain import Brain

    brain = Brain(root)
    tree = brain.load().entries
    below = dict(lineage.scan(brain).sources)
    below.update({e.id: e.sources for e in tree if e.sources})
    count: Counter = Counter()
    for e in tree:
        seen, stack = {e.id}, [e.id]
        while stack:
            for s in below.get(stack.pop(), ()):
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        count.update(seen)
    return count


def dropped(root) -> set[str]:
    from pamd.edge import lineage
    from pamd.edge.brain import Brain

    return lineage.dropped_ids(Brain(root))


def lost_lines(out: str) -> set[str]:
    return set(re.findall(r"(e-[0-9a-f]{12}) is lost", out))


def _pull(root, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "pull", "--no-edit", *args, "origin", "main"], cwd=root,
                          capture_output=True, text=True)


def _resolve_conflicts(root, how: str) -> None:
    for rel in git(root, "diff", "--name-only", "--diff-filter=U").split():
        if how == "hand":
            p = root / rel
            p.write_text(HUNK.sub(lambda m: m.group(1), p.read_text()))
        else:
            git(root, "checkout", f"--{how}", "--", rel)
        git(root, "add", "--", rel)
    if (root / ".git" / "MERGE_HEAD").exists():  # else git merged it all (or had nothing to merge)
        git(root, "commit", "-q", "--no-edit")


RESOLUTIONS = {
    "pull -X theirs": lambda root: _pull(root, "-X", "theirs"),
    "pull -X ours": lambda root: _pull(root, "-X", "ours"),
    "checkout --ours": lambda root: (_pull(root), _resolve_conflicts(root, "ours")),
    "checkout --theirs": lambda root: (_pull(root), _resolve_conflicts(root, "theirs")),
    "hand edit keeping one side": lambda root: (_pull(root), _resolve_conflicts(root, "hand")),
    "merge -s ours": lambda root: (git(root, "fetch", "-q", "origin"),
                                   git(root, "merge", "-q", "-s", "ours", "--no-edit", "origin/main")),
}


@pytest.mark.parametrize("how", list(RESOLUTIONS))
def test_a_one_sided_merge_is_named_by_fsck_and_put_back_by_repair(clones, tmp_path, how):
    """a ingests and pushes; b ingests messages of the same hours and merges by taking one side:
    entries of a side vanish from the tree. fsck names each one lost (it said "brain ok":
    its path-limited history skipped the side a merge took nothing from), and
    `pamd sync --repair` puts every one back, once."""
    a, b = clones
    at = iso(START + timedelta(hours=3))
    assert a("ingest", str(batch(tmp_path / "a.jsonl", "a", START + timedelta(hours=1))), now=at)[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    assert b("ingest", str(batch(tmp_path / "b.jsonl", "b", START + timedelta(hours=1, minutes=3))), now=at)[0] == 0
    every = ledger_ids(a.cwd) | ledger_ids(b.cwd)
    assert len(every) == 12
    RESOLUTIONS[how](b.cwd)
    assert not git(b.cwd, "status", "--porcelain", "--untracked-files=no").strip()
    gone = every - set(tree_ids(b.cwd))
    assert gone, "this way of merging lost nothing: the test needs another schedule"
    code, out, _ = b("fsck", "--skip", "index")
    assert code == 1 and lost_lines(out) == gone, out
    assert "`pamd sync --repair` puts it back" in out
    code, out, err = b("sync", "--repair")
    assert code == 0 and f"put back {len(gone)} entr" in out, out + err
    assert set(tree_ids(b.cwd)) == every and max(tree_ids(b.cwd).values()) == 1
    assert ledger_ids(b.cwd) >= every
    code, out, _ = b("fsck", "--skip", "index")
    assert code == 0, out
    # nothing for a re-ingest to add, and the next repair has nothing to do
    assert "nothing new" in b("ingest", str(tmp_path / "a.jsonl"), now=at)[1]
    assert b("sync", "--repair")[1].startswith("nothing lost")


def test_repair_puts_back_a_lost_summary_whole(clones, tmp_path):
    """a compacted its messages before pushing; b merges with `-s ours`: a's summaries and the
    messages behind them are lost. --repair puts the summaries back, not their raw sources."""
    a, b = clones
    day = START + timedelta(hours=1)
    assert a("ingest", str(batch(tmp_path / "a.jsonl", "a", day, n=9)), now=iso(day + timedelta(hours=1)))[0] == 0
    assert a("compact", now=iso(day + timedelta(hours=20)))[0] == 0
    summaries = {i for i in tree_ids(a.cwd) if i.startswith("s-")}
    assert summaries
    git(a.cwd, "push", "-q", "origin", "main")
    assert b("ingest", str(batch(tmp_path / "b.jsonl", "b", day)), now=iso(day + timedelta(hours=1)))[0] == 0
    RESOLUTIONS["merge -s ours"](b.cwd)
    code, out, _ = b("fsck", "--skip", "index")
    assert code == 1 and lost_lines(out), out
    code, out, err = b("sync", "--repair")
    assert code == 0, out + err
    assert summaries <= set(tree_ids(b.cwd)) and max(tree_ids(b.cwd).values()) == 1
    assert set(tree_ids(a.cwd)) <= set(tree_ids(b.cwd))
    assert b("fsck", "--skip", "index")[0] == 0


def test_repair_takes_out_a_message_a_merge_kept_raw_beside_its_summary(clones, tmp_path):
    """b folded a recall into a message a compacted; b pulls and keeps both sides of the
    conflict: the message stands raw and behind a's summary. fsck says so (`twice`), and
    --repair takes the raw copy out."""
    a, b = clones
    day = START + timedelta(hours=1)
    assert a("ingest", str(batch(tmp_path / "s.jsonl", "s", day, n=9)), now=iso(day + timedelta(hours=2)))[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    git(b.cwd, "pull", "-q", "--no-edit", "origin", "main")
    assert a("compact", now=iso(day + timedelta(hours=14)))[0] == 0
    l0 = "memory/L0/2026-11-30.md"
    taken = [i for i in ledger_ids(a.cwd) if f"{i} · " not in (a.cwd / l0).read_text() and i not in dropped(a.cwd)]
    for eid in taken:
        assert b("touch", eid, now=iso(day + timedelta(hours=2, minutes=5)))[0] == 0
    assert b("compact", now=iso(day + timedelta(hours=2, minutes=10)))[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    _pull(b.cwd)
    for rel in git(b.cwd, "diff", "--name-only", "--diff-filter=U").split():
        p = b.cwd / rel
        p.write_text(HUNK.sub(lambda m: m.group(1) + m.group(2), p.read_text()))
        git(b.cwd, "add", "--", rel)
    git(b.cwd, "commit", "-q", "--no-edit")
    code, out, _ = b("fsck", "--skip", "index", "--skip", "format")
    assert code == 1 and "counts twice" in out, out
    code, out, err = b("sync", "--repair")
    assert code == 0 and "standing twice" in out, out + err
    count, gone = standing(b.cwd), dropped(b.cwd)
    assert {i: count[i] for i in ledger_ids(b.cwd) if count[i] != 1 and not (count[i] == 0 and i in gone)} == {}
    code, out, _ = b("fsck", "--skip", "index")
    assert code == 0, out


def test_fsck_of_a_brain_with_an_unmerged_branch_is_unchanged(clones, tmp_path):
    """--full-history reads HEAD's history only: a side not merged is not the brain's past."""
    a, b = clones
    assert a("ingest", str(batch(tmp_path / "a.jsonl", "a", START)), now=iso(START + timedelta(hours=2)))[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    git(b.cwd, "fetch", "-q", "origin")
    code, out, _ = b("fsck", "--skip", "index")
    assert code == 0, out


def test_sync_merges_both_sides_ingests_and_compactions_by_id(clones, tmp_path):
    """Each clone ingests and compacts on its own clock; a's compaction took messages b still
    holds raw and b folded a recall into one of them. After `pamd sync` on b, then on a, both
    hold the same commit, every message exactly once, and fsck passes."""
    a, b = clones
    day = START + timedelta(hours=1)
    assert a("ingest", str(batch(tmp_path / "s.jsonl", "s", day, n=9)), now=iso(day + timedelta(hours=2)))[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    git(b.cwd, "pull", "-q", "--no-edit", "origin", "main")
    shared = ledger_ids(b.cwd)
    assert a("compact", now=iso(day + timedelta(hours=14)))[0] == 0
    l0 = "memory/L0/2026-11-30.md"
    raw = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^### (e-[0-9a-f]{12}) .*\n.*importance=(\S+)", (b.cwd / l0).read_text(), re.M)}
    taken = [i for i in raw if f"{i} · " not in (a.cwd / l0).read_text()]
    assert taken, "a's compaction took nothing"
    eid = max(taken, key=lambda i: (raw[i], i))
    assert b("touch", eid, now=iso(day + timedelta(hours=2, minutes=5)))[0] == 0
    assert b("compact", now=iso(day + timedelta(hours=2, minutes=10)))[0] == 0
    assert re.search(rf"^### {eid} .*\n.*recalls=1", (b.cwd / l0).read_text(), re.M)
    assert b("ingest", str(batch(tmp_path / "b.jsonl", "b", day + timedelta(hours=2))),
             now=iso(day + timedelta(hours=3)))[0] == 0
    assert a("ingest", str(batch(tmp_path / "a.jsonl", "a", day + timedelta(hours=13))),
             now=iso(day + timedelta(hours=14, minutes=5)))[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    before = int(git(b.cwd, "rev-list", "--count", "HEAD"))
    code, out, err = b("sync", now=iso(day + timedelta(hours=15)))
    assert code == 0 and out.startswith("merged origin main (") and out.rstrip().endswith("pushed"), out + err
    assert int(git(b.cwd, "rev-list", "--count", "HEAD")) == before + 3  # a's two commits and the merge
    assert len(git(b.cwd, "log", "-1", "--format=%P").split()) == 2
    said = git(b.cwd, "log", "-1", "--format=%B")
    assert "Pamd-Run: sync" in said and "Compacted by one side:" in said, said
    code, out, err = a("sync", now=iso(day + timedelta(hours=15)))
    assert code == 0 and out.startswith("fast-forwarded"), out + err
    assert git(a.cwd, "rev-parse", "HEAD") == git(b.cwd, "rev-parse", "HEAD")
    every = ledger_ids(a.cwd)
    assert every == shared | ledger_ids(tmp_path / "a") and len(every) == 21
    count, gone = standing(b.cwd), dropped(b.cwd)
    assert {i: count[i] for i in every if count[i] != 1 and not (count[i] == 0 and i in gone)} == {}
    code, out, _ = b("fsck", "--skip", "index")
    assert code == 0, out
    # the recall b folded into a message a compacted went to its summary
    assert any(f"{eid}" in ln and "recalls=1" in ln for p in b.cwd.glob("memory/L[1-3]/*.md")
               for ln in p.read_text().splitlines()), "the recall was lost"


def test_what_one_side_dropped_saying_so_stays_dropped(clones, tmp_path):
    """a's compaction drops trash (its commit names the ids) that b still holds raw; b folded a
    recall into it too, so git's own merge would keep it. sync takes the drop."""
    a, b = clones
    day = START + timedelta(hours=1)
    assert a("ingest", str(batch(tmp_path / "s.jsonl", "s", day, n=6)), now=iso(day + timedelta(hours=1)))[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    git(b.cwd, "pull", "-q", "--no-edit", "origin", "main")
    assert a("compact", now=iso(day + timedelta(hours=20)))[0] == 0
    trash = set(re.findall(r"e-[0-9a-f]{12}", "".join(
        ln for ln in git(a.cwd, "log", "-1", "--format=%B").splitlines(True) if ln.startswith("Dropped"))))
    assert trash
    git(a.cwd, "push", "-q", "origin", "main")
    assert b("remember", "b decided to rotate the staging keys on Monday.", now=iso(day + timedelta(hours=2)))[0] == 0
    code, out, err = b("sync", now=iso(day + timedelta(hours=3)))
    assert code == 0, out + err
    said = git(b.cwd, "log", "-1", "--format=%B")
    assert f"Dropped by one side: {', '.join(sorted(trash))}." in said, said
    assert not trash & set(tree_ids(b.cwd))
    assert b("fsck", "--skip", "index")[0] == 0


def test_two_clones_that_compact_the_same_messages_keep_one_summary(clones, tmp_path):
    """Both clones compact one shared day at different times, into different summaries:
    sync keeps one and takes the other apart, so no message stands twice."""
    a, b = clones
    day = START + timedelta(hours=1)
    assert a("ingest", str(batch(tmp_path / "s.jsonl", "s", day, n=12, step=20)),
             now=iso(day + timedelta(hours=4)))[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    git(b.cwd, "pull", "-q", "--no-edit", "origin", "main")
    assert b("ingest", str(batch(tmp_path / "b.jsonl", "b", day + timedelta(hours=3), n=3)),
             now=iso(day + timedelta(hours=4)))[0] == 0
    assert a("compact", now=iso(day + timedelta(hours=9)))[0] == 0
    assert b("compact", now=iso(day + timedelta(hours=30)))[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    code, out, err = b("sync", now=iso(day + timedelta(hours=31)))
    assert code == 0, out + err
    assert "Set aside (both sides compacted the same messages): s-" in git(b.cwd, "log", "-1", "--format=%B")
    every = ledger_ids(b.cwd)
    count = standing(b.cwd)
    gone = dropped(b.cwd)
    assert {i: count[i] for i in every if count[i] != 1 and not (count[i] == 0 and i in gone)} == {}
    code, out, _ = b("fsck", "--skip", "index")
    assert code == 0, out


def _both_ingest(a, b, tmp_path) -> None:
    at = iso(START + timedelta(hours=3))
    assert a("ingest", str(batch(tmp_path / "a.jsonl", "a", START + timedelta(hours=1))), now=at)[0] == 0
    git(a.cwd, "push", "-q", "origin", "main")
    assert b("ingest", str(batch(tmp_path / "b.jsonl", "b", START + timedelta(hours=1, minutes=3))), now=at)[0] == 0


def test_a_hook_that_refuses_the_merge_leaves_the_brain_as_it_was(clones, tmp_path):
    a, b = clones
    _both_ingest(a, b, tmp_path)
    hook = b.cwd / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'no merges today' >&2\nexit 1\n")
    hook.chmod(0o755)
    head = git(b.cwd, "rev-parse", "HEAD")
    code, _, err = b("sync")
    assert code == 1 and err.startswith("pamd: error: git commit failed: no merges today"), err
    assert git(b.cwd, "rev-parse", "HEAD") == head
    assert not (b.cwd / ".git" / "MERGE_HEAD").exists()
    assert not git(b.cwd, "status", "--porcelain").strip()
    hook.unlink()
    code, out, err = b("sync")
    assert code == 0 and out.startswith("merged"), out + err


def test_a_remote_that_moves_during_the_sync_still_gets_one_merge_commit(clones, tmp_path):
    """b's push is refused once (a pushed first, from b's pre-push hook): the sync merges again
    from where it started, so b's history gains one merge commit, not two."""
    a, b = clones
    _both_ingest(a, b, tmp_path)
    assert a("remember", "a decided to move the nightly job to 03:00.", now=iso(START + timedelta(hours=4)))[0] == 0
    hook = b.cwd / ".git" / "hooks" / "pre-push"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\n[ -e {tmp_path}/once ] && exit 0\ntouch {tmp_path}/once\n"
                    f"unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE\ncd {a.cwd} && git push -q origin main\n")
    hook.chmod(0o755)
    code, out, err = b("sync")
    assert code == 0 and out.startswith("merged") and "pushed" in out, out + err
    assert (tmp_path / "once").exists()
    merges = git(b.cwd, "log", "--merges", "--format=%H").split()
    assert len(merges) == 1, git(b.cwd, "log", "--oneline", "--graph")
    assert git(b.cwd, "rev-parse", "HEAD") == git(tmp_path / "origin.git", "rev-parse", "main")
    assert len(tree_ids(b.cwd)) == 13 and max(tree_ids(b.cwd).values()) == 1


def test_sync_refuses_uncommitted_edits_and_a_detached_head(clones, tmp_path):
    a, b = clones
    (b.cwd / "MEMORY.md").write_text((b.cwd / "MEMORY.md").read_text() + "\nmy note\n")
    head = git(b.cwd, "rev-parse", "HEAD")
    code, _, err = b("sync")
    assert code == 1 and err.startswith("pamd: error: uncommitted edits in MEMORY.md"), err
    assert "never merges a person's uncommitted edits" in err
    assert git(b.cwd, "rev-parse", "HEAD") == head and "my note" in (b.cwd / "MEMORY.md").read_text()
    git(b.cwd, "checkout", "-q", "MEMORY.md")
    git(b.cwd, "checkout", "-q", "--detach")
    code, _, err = b("sync")
    assert code == 1 and "detached HEAD" in err, err
    git(b.cwd, "checkout", "-q", "main")
    code, _, err = b("sync", "nowhere")
    assert code == 1 and err.startswith("pamd: error: git fetch nowhere main failed"), err


def test_a_conflict_in_a_persons_text_is_left_to_the_person(clones, tmp_path):
    """Both sides rewrote the same line of MEMORY.md's notes: sync resolves pamd's files, names
    that one file and commits nothing; the person finishes the merge and syncs again."""
    a, b = clones
    at = iso(START + timedelta(hours=3))
    for side, p in (("a", a), ("b", b)):
        mem = p.cwd / "MEMORY.md"
        text = mem.read_text()
        mem.write_text(text.replace("# MEMORY", f"# MEMORY\n\nThe team lead is {side}.", 1))
        git(p.cwd, "commit", "-qam", f"{side}'s note")
        assert p("ingest", str(batch(tmp_path / f"{side}.jsonl", side, START + timedelta(hours=1))), now=at)[0] == 0
    assert "The team lead is" in (a.cwd / "MEMORY.md").read_text()
    git(a.cwd, "push", "-q", "origin", "main")
    head = git(b.cwd, "rev-parse", "HEAD")
    code, _, err = b("sync")
    assert code == 1 and err.startswith("pamd: error: merged origin main except your own text in MEMORY.md ("), err
    assert git(b.cwd, "rev-parse", "HEAD") == head
    assert git(b.cwd, "diff", "--name-only", "--diff-filter=U").split() == ["MEMORY.md"]
    assert not list((b.cwd / "memory/L0").glob("*.md")) or "<<<<<<<" not in "".join(
        p.read_text() for p in (b.cwd / "memory/L0").glob("*.md"))
    mem = b.cwd / "MEMORY.md"
    mem.write_text(HUNK.sub(lambda m: m.group(1) + m.group(2), mem.read_text()))
    git(b.cwd, "add", "MEMORY.md")
    git(b.cwd, "commit", "-q", "--no-edit")
    code, out, err = b("sync")
    assert code == 0 and "pushed" in out, out + err
    assert len(tree_ids(b.cwd)) == 12 and max(tree_ids(b.cwd).values()) == 1
    assert b("fsck", "--skip", "index")[0] == 0


def test_pinned_goals_and_dna_lines_of_both_sides_are_kept(clones, tmp_path):
    """STATE.md's pinned goals and DNA.md's lists changed on both sides: each keeps both sides' items."""
    a, b = clones
    for side, p in (("a", a), ("b", b)):
        for rel, key in (("STATE.md", "pinned_goals: []"), ("DNA.md", "preferences: []")):
            f = p.cwd / rel
            f.write_text(f.read_text().replace(key, f"{key[:-3]}\n- {side} wants it {rel[:3]}", 1))
        git(p.cwd, "commit", "-qam", f"{side}'s goals")
    git(a.cwd, "push", "-q", "origin", "main")
    code, out, err = b("sync")
    assert code == 0 and out.startswith("merged"), out + err
    for rel in ("STATE.md", "DNA.md"):
        text = (b.cwd / rel).read_text()
        assert f"a wants it {rel[:3]}" in text and f"b wants it {rel[:3]}" in text and "<<<<" not in text, text
    assert b("check")[0] == 0


STEPS = ("ingest", "ingest", "shared", "shared", "remember", "compact", "compact", "defrag", "sync", "person")


def _schedule(seed: int, clones, tmp_path, steps: int, stats: Counter) -> None:
    """Each step: one clone, its own clock moved on by hours, one command. A shared transcript
    (one of three both clones may take in, at different times) gives both sides the same ids
    to compact on their own clocks."""
    rng = random.Random(seed)
    clock = {"a": START, "b": START}
    shared = [batch(tmp_path / f"shared{j}.jsonl", "t", START + timedelta(hours=5 * j), n=8, step=11, salt=50 + j)
              for j in range(3)]
    for k in range(steps):
        name = rng.choice("ab")
        p = clones[0] if name == "a" else clones[1]
        clock[name] += timedelta(hours=rng.choice((1, 3, 7, 13, 26)))
        what = rng.choice(STEPS)
        if what == "ingest":
            f = batch(tmp_path / f"{name}{k}.jsonl", name, clock[name] - timedelta(hours=1),
                      n=rng.randint(2, 7), salt=k)
            args: tuple[str, ...] = ("ingest", str(f))
        elif what == "shared":
            args = ("ingest", str(rng.choice(shared)))
        elif what == "remember":
            args = ("remember", f"{name} decided at step {k}: ship the billing export {k}.")
        elif what == "person":
            # a person's own merge, resolved one of the ways people do: fsck must name what it
            # lost or doubled, and --repair make the brain whole again
            other = clones[1] if name == "a" else clones[0]
            # the other machine shares its work first
            assert other("sync", now=iso(clock["b" if name == "a" else "a"]))[0] == 0
            how = rng.choice(sorted(RESOLUTIONS))
            stats["person merges"] += 1
            RESOLUTIONS[how](p.cwd)
            if (p.cwd / ".git" / "MERGE_HEAD").exists():
                git(p.cwd, "commit", "-q", "--no-edit")
            code, out, _ = p("fsck", "--skip", "index")
            if code:
                assert "is lost" in out or "counts twice" in out, (seed, k, how, out)
                args = ("sync", "--repair")
            else:
                continue
        else:
            args = (what,)
        code, out, err = p(*args, now=iso(max(clock[name], START + timedelta(hours=16))))
        assert code == 0, (seed, k, name, args, out, err)
        if what == "person":
            code, out, _ = p("fsck", "--skip", "index")
            assert code == 0, (seed, k, how, out)
            stats["repaired"] += 1


@pytest.mark.slow
def test_any_interleaving_of_two_clones_converges_with_every_entry_once(clones, tmp_path):
    """Seeded random schedules of ingests (each side's own and shared transcripts), remembers,
    compactions, defrags and syncs on two clones, each on its own clock: after a final sync
    of each, both hold the same commit, every message ever ingested stands exactly once (or
    was dropped by a commit that says so), and fsck passes on both. The schedules together
    must have made merges where one side compacted what the other held and where both
    compacted the same messages."""
    seen: Counter = Counter()
    for seed in range(1, 7):
        base = tmp_path / f"run{seed}"
        base.mkdir()
        a, b = _fresh_clones(base, clones[0].capsys)
        _schedule(seed, (a, b), base, steps=18, stats=seen)
        for p in (a, b, a):
            code, out, err = p("sync", now="2026-12-20T00:00:00Z")
            assert code == 0, (seed, out + err)
        assert git(a.cwd, "rev-parse", "HEAD") == git(b.cwd, "rev-parse", "HEAD"), seed
        log = git(a.cwd, "log", "--format=%B")
        for key in ("pamd sync: merge", "Compacted by one side", "Set aside"):
            seen[key] += log.count(key)
        for p in (a, b):
            every = ledger_ids(p.cwd)
            count = standing(p.cwd)
            gone = dropped(p.cwd)
            assert {i: count[i] for i in every if count[i] != 1 and not (count[i] == 0 and i in gone)} == {}, seed
            code, out, _ = p("fsck", "--skip", "index")
            assert code == 0, (seed, out)
    assert all(seen[k] for k in ("pamd sync: merge", "Compacted by one side", "Set aside", "repaired")), seen


def _fresh_clones(root, capsys) -> tuple[Pamd, Pamd]:
    seed = Pamd(root, capsys)
    assert seed("init", str(root / "seed"), now=iso(START))[0] == 0
    git(root, "clone", "-q", "--bare", "seed", "origin.git")
    out = []
    for name in ("a", "b"):
        git(root, "clone", "-q", "origin.git", name)
        out.append(Pamd(root / name, capsys))
    return out[0], out[1]
