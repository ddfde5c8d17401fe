"""synapse between two real local brains: publish, add, pull, attribution, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Pamd, git, head_count, made_once

FACT = "Invoices are kept for seven years in cold storage on the archive bucket."
L3_FACT = "Anna owns the Q3 revenue report; exports fail on staging above 1,200 rows."


def entry(eid: str, text: str, sources: str = "e-0123456789ab") -> str:
    return (
        f"### {eid} · 2026-11-20T09:00:00Z · pamd\n"
        f"type=decision importance=0.90 neuro=acetylcholine session=- recalls=0 from={sources}\n"
        f"> {text}\n"
    )


@pytest.fixture
def alice(tmp_path, capsys, tmp_path_factory) -> Pamd:
    """A brain whose MEMORY.md and L3 hold knowledge (written by hand, committed by git; made
    once per process, each test given a copy)."""

    def make(folder: Path) -> None:
        p = Pamd(folder, capsys)
        assert p("init", "--name", "alice", str(folder / "alice"))[0] == 0
        p.cwd = root = folder / "alice"
        mem = root / "MEMORY.md"
        mem.write_text(mem.read_text() + "\n" + entry("s-aaaaaaaaaaa1", FACT))
        (root / "memory" / "L3").mkdir(parents=True, exist_ok=True)
        (root / "memory" / "L3" / "2026-11.md").write_text(
            "---\ntier: L3\n---\n# L3\n\n" + entry("s-aaaaaaaaaaa2", L3_FACT)
        )
        (root / "memory" / "L0").mkdir(parents=True, exist_ok=True)
        (root / "memory" / "L0" / "2026-11-20.md").write_text("# L0\n")  # raw tiers never leave
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "alice knows things")
        assert p("check")[0] == 0

    made_once("alice", tmp_path, make, tmp_path_factory)
    return Pamd(tmp_path / "alice", capsys)


@pytest.fixture
def bob(tmp_path, capsys, tmp_path_factory) -> Pamd:
    def make(folder: Path) -> None:
        assert Pamd(folder, capsys)("init", "--name", "bob", str(folder / "bob"))[0] == 0

    made_once("bob", tmp_path, make, tmp_path_factory)
    return Pamd(tmp_path / "bob", capsys)


def frontmatter(text: str) -> dict:
    import yaml

    return yaml.safe_load(text.split("---\n")[1])


def test_publish_puts_only_shared_files_on_a_branch_and_leaves_the_checkout(alice):
    root = alice.cwd
    head = git(root, "rev-parse", "HEAD").strip()
    code, out, err = alice("synapse", "publish")
    assert code == 0, err
    files = git(root, "ls-tree", "-r", "--name-only", "pamd/publish").split()
    assert files == ["DNA.md", "MEMORY.md", "memory/L3/2026-11.md", "synapse.toml"]
    assert f'source_commit = "{head}"' in git(root, "show", "pamd/publish:synapse.toml")
    assert (
        git(root, "rev-parse", "HEAD").strip() == head and git(root, "status", "--porcelain") == ""
    )
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    # unchanged knowledge: no new publish commit, even though HEAD moves
    git(root, "commit", "-q", "--allow-empty", "-m", "unrelated")
    code, out, _ = alice("synapse", "publish")
    assert code == 0 and "already holds" in out
    assert git(root, "rev-list", "--count", "pamd/publish").strip() == "1"


def test_two_brains_share_through_synapse(alice, bob):
    alice_head = git(alice.cwd, "rev-parse", "HEAD").strip()
    root = bob.cwd
    n = head_count(root)
    code, out, err = bob("synapse", "add", "alice", str(alice.cwd))
    assert code == 0, err
    assert head_count(root) == n + 1
    assert f'[synapse.alice]\nurl = "{alice.cwd.resolve()}"' in (root / "pamd.toml").read_text()
    code, out, err = bob("synapse", "pull")
    assert code == 0, err
    assert head_count(root) == n + 2  # the pull is one commit
    shared = git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert shared == [
        "synapse/alice/DNA.md",
        "synapse/alice/L3/2026-11.md",
        "synapse/alice/MEMORY.md",
    ]
    body = git(root, "log", "-1", "--format=%B")
    assert "Pamd-Run: synapse-pull" in body and f"Pamd-Source-Commit: {alice_head}" in body
    mem = (root / "synapse" / "alice" / "MEMORY.md").read_text()
    meta = frontmatter(mem)
    assert meta["source"] == str(alice.cwd.resolve()) and meta["commit"] == alice_head
    assert meta["read_only"] is True and meta["synapse"] == "alice"
    assert meta["source_path"] == "MEMORY.md" and meta["kind"] == "memory"  # theirs kept after ours
    assert FACT in mem and L3_FACT in (root / "synapse" / "alice" / "L3" / "2026-11.md").read_text()
    assert "memory/L0" not in git(root, "ls-files", "synapse")  # raw tiers never travel
    # never mixed into bob's own tiers
    from pamd.edge.brain import Brain
    from pamd.ops.synapse import synapse_files

    b = Brain(root)
    assert not any(r.startswith("synapse/") for r in b.entry_files())
    assert FACT not in "".join(e.text for e in b.load().entries)
    assert synapse_files(b) == shared
    assert bob("fsck")[0] == 0 and bob("check")[0] == 0
    code, out, _ = bob("synapse", "list")
    assert out.startswith("alice\t") and "3 files" in out
    # again, nothing new: nothing committed
    code, out, _ = bob("synapse", "pull", "alice")
    assert code == 0 and "already up to date" in out and head_count(root) == n + 2


def test_publish_from_a_second_clone_builds_on_the_branch_another_clone_pushed(alice, tmp_path, capsys):
    """One brain on a laptop and a CI runner: the runner published and pushed first. The
    laptop's publish made a root commit beside it, and the `git push` pamd told it to run
    was refused as not a fast-forward."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(alice.cwd), str(origin))
    runner, laptop = (Pamd(tmp_path / n, capsys) for n in ("runner", "laptop"))
    for p in (runner, laptop):
        git(tmp_path, "clone", "-q", str(origin), str(p.cwd))
    assert runner("synapse", "publish")[0] == 0
    git(runner.cwd, "push", "-q", "origin", "pamd/publish")
    git(laptop.cwd, "fetch", "-q", "origin")
    first = git(laptop.cwd, "rev-parse", "origin/pamd/publish").strip()
    code, out, _ = laptop("synapse", "publish")  # the same shared files: nothing new
    assert code == 0 and "already holds" in out
    assert git(laptop.cwd, "rev-parse", "pamd/publish").strip() == first
    mem = laptop.cwd / "MEMORY.md"
    mem.write_text(mem.read_text() + "\n" + entry("s-aaaaaaaaaaa3", "Deploys freeze on Fridays."))
    git(laptop.cwd, "commit", "-q", "-am", "a new fact")
    code, out, _ = laptop("synapse", "publish")
    assert code == 0 and "published" in out
    assert git(laptop.cwd, "rev-parse", "pamd/publish^").strip() == first
    git(laptop.cwd, "push", "-q", "origin", "pamd/publish")  # a fast-forward: accepted


def test_pull_prefers_the_published_branch(alice, bob):
    assert alice("synapse", "publish")[0] == 0
    publish_sha = git(alice.cwd, "rev-parse", "pamd/publish").strip()
    alice_head = git(alice.cwd, "rev-parse", "HEAD").strip()
    git(alice.cwd, "commit", "-q", "--allow-empty", "-m", "later, unpublished")
    assert bob("synapse", "add", "alice", str(alice.cwd))[0] == 0
    code, _, err = bob("synapse", "pull")
    assert code == 0, err
    meta = frontmatter((bob.cwd / "synapse" / "alice" / "MEMORY.md").read_text())
    assert meta["commit"] == publish_sha and meta["published_from"] == alice_head
    assert f"Pamd-Source-Commit: {publish_sha}" in git(bob.cwd, "log", "-1", "--format=%B")


def test_pull_follows_changes_and_removals_at_the_source(alice, bob):
    bob("synapse", "add", "alice", str(alice.cwd))
    assert bob("synapse", "pull")[0] == 0
    a = alice.cwd
    git(a, "rm", "-q", "memory/L3/2026-11.md")
    mem = a / "MEMORY.md"
    mem.write_text(
        mem.read_text() + "\n" + entry("s-aaaaaaaaaaa3", "Friday deploys need two reviewers.")
    )
    git(a, "commit", "-q", "-am", "more")
    # alice never published: bob reads her HEAD
    code, out, err = bob("synapse", "pull", "alice")
    assert code == 0, err
    root = bob.cwd
    assert not (root / "synapse" / "alice" / "L3" / "2026-11.md").exists()
    assert "synapse/alice/L3/2026-11.md" not in git(root, "ls-files")
    assert "two reviewers" in (root / "synapse" / "alice" / "MEMORY.md").read_text()
    assert (
        frontmatter((root / "synapse" / "alice" / "MEMORY.md").read_text())["commit"]
        == git(a, "rev-parse", "HEAD").strip()
    )


def test_compaction_never_touches_synapse(alice, bob):
    bob("synapse", "add", "alice", str(alice.cwd))
    bob("synapse", "pull")
    before = git(bob.cwd, "rev-parse", "HEAD:synapse")
    assert bob("remember", "ok")[0] == 0
    for cmd in ("compact", "defrag"):
        assert bob(cmd, now="2026-12-30T12:00:00Z")[0] == 0
    assert git(bob.cwd, "rev-parse", "HEAD:synapse") == before


def test_recall_finds_shared_knowledge_with_its_attribution(alice, bob):
    from pamd.recall import api
    bob("synapse", "add", "alice", str(alice.cwd))
    bob("synapse", "pull")
    from pamd.edge.brain import Brain

    b = Brain(bob.cwd)
    hits = api.recall(b, "how long are invoices kept in cold storage", k=3, log=False)
    top = hits[0]
    path = getattr(top, "path", None) or top["path"]
    assert path == "synapse/alice/MEMORY.md"
    assert frontmatter((bob.cwd / path).read_text())["source"] == str(alice.cwd.resolve())


def test_a_recall_of_pulled_knowledge_is_not_counted_for_this_brains_entry_of_that_id(alice, tmp_path):
    """Ids are content hashes: a clone of alice that pulls alice as a synapse holds each id
    twice. A hit under synapse/ was logged and folded into the clone's own entry."""
    git(tmp_path, "clone", "-q", str(alice.cwd), "clone")
    me = Pamd(tmp_path / "clone", alice.capsys)
    assert me("synapse", "add", "self", str(alice.cwd))[0] == 0
    assert me("synapse", "pull")[0] == 0
    code, out, err = me("recall", "--log", "--tier", "synapse", "-k", "3", "invoices kept in cold storage")
    assert code == 0 and "synapse/self/MEMORY.md" in out, err
    log = me.cwd / ".pamd" / "recall.log"
    assert not log.exists() or "s-aaaaaaaaaaa1" not in log.read_text()
    code, out, err = me("recall", "--log", "-k", "5", "invoices kept in cold storage")
    assert "synapse/self/MEMORY.md" in out and "\nMEMORY.md" in "\n" + out, out
    assert me("compact")[0] == 0
    assert "s-aaaaaaaaaaa1 · " in (me.cwd / "MEMORY.md").read_text()
    assert "recalls=1" in (me.cwd / "MEMORY.md").read_text()  # its own hit, once
    assert "recalls=0" in (me.cwd / "synapse" / "self" / "MEMORY.md").read_text()


def test_expand_and_touch_of_pulled_knowledge_name_its_brain(alice, bob):
    """An id or line under synapse/ is the other brain's: its history is not this one's,
    and a recall of it does not myelinate here. The error said the id was in no tree."""
    bob("synapse", "add", "alice", str(alice.cwd))
    bob("synapse", "pull")
    lines = (bob.cwd / "synapse" / "alice" / "MEMORY.md").read_text().splitlines()
    at = f"synapse/alice/MEMORY.md:{next(i for i, t in enumerate(lines, 1) if 's-aaaaaaaaaaa1' in t) + 1}"
    before = git(bob.cwd, "rev-parse", "HEAD")
    for cmd in ("expand", "touch"):
        for ref in ("s-aaaaaaaaaaa1", at, "e-0123456789ab"):  # a summary, its line, a source it names
            code, out, err = bob(cmd, ref)
            assert code == 1 and out == "", err
            assert err.startswith("pamd: error: ") and "pulled from brain alice" in err, err
            assert f"{cmd} it in alice's own brain" in err and "Traceback" not in err
    assert not (bob.cwd / ".pamd" / "recall.log").exists()
    assert git(bob.cwd, "rev-parse", "HEAD") == before
    code, _, err = bob("expand", "s-bbbbbbbbbbb1")  # in no brain at all: as before
    assert code == 1 and "not in the tree nor in its history" in err


def test_remove_takes_the_table_the_files_and_the_cache_in_one_commit(alice, bob):
    root = bob.cwd
    for name in ("alice", "other"):
        assert bob("synapse", "add", name, str(alice.cwd))[0] == 0
    assert bob("synapse", "pull")[0] == 0
    cfg = (root / "pamd.toml").read_text()
    n = head_count(root)
    code, out, err = bob("synapse", "remove", "alice")
    assert code == 0 and "removed synapse alice (3 pulled files) in one commit" in out, err
    assert head_count(root) == n + 1 and git(root, "status", "--porcelain") == ""
    assert git(root, "show", "--name-status", "--format=", "HEAD").split() == [
        "M", "pamd.toml", "D", "synapse/alice/DNA.md", "D", "synapse/alice/L3/2026-11.md",
        "D", "synapse/alice/MEMORY.md"]
    body = git(root, "log", "-1", "--format=%B")
    assert "Pamd-Run: synapse-remove" in body and "Pamd-Synapse: alice" in body
    # exactly the table went: [synapse.other] and everything else stay byte for byte
    table = f'\n[synapse.alice]\nurl = "{alice.cwd.resolve()}"\n'
    assert (root / "pamd.toml").read_text() == cfg.replace(table, "", 1)
    assert not (root / "synapse" / "alice").exists()
    assert not (root / ".pamd" / "synapse" / "alice.git").exists()
    assert (root / ".pamd" / "synapse" / "other.git").exists()
    code, out, _ = bob("synapse", "list")
    assert out.startswith("other\t") and out.count("\n") == 1
    assert bob("fsck")[0] == 0 and bob("synapse", "pull")[0] == 0
    code, _, err = bob("synapse", "remove", "alice")
    assert code == 1 and err.startswith("pamd: error: no synapse named alice")
    assert bob("synapse", "remove", "other")[0] == 0
    assert bob("synapse", "list")[1].startswith("no synapse remotes")


def test_list_names_a_pulled_folder_no_table_registers_and_remove_clears_it(alice, bob):
    """A [synapse.NAME] deleted by hand left synapse/NAME/ in the tree and in recall,
    hidden from `synapse list`, with no verb to remove it."""
    root = bob.cwd
    assert bob("synapse", "add", "alice", str(alice.cwd))[0] == 0
    assert bob("synapse", "pull")[0] == 0
    cfg = root / "pamd.toml"
    cfg.write_text(cfg.read_text().split("\n[synapse.alice]")[0] + "\n")
    git(root, "commit", "-qam", "a person drops the table")
    code, out, _ = bob("synapse", "list")
    assert out.startswith("alice\tnot registered (`pamd synapse remove alice` removes it)\t3 files")
    code, out, err = bob("synapse", "remove", "alice")
    assert code == 0 and "in one commit" in out, err
    assert git(root, "ls-files", "synapse") == "" and not (root / "synapse" / "alice").exists()
    assert not (root / ".pamd" / "synapse" / "alice.git").exists()
    assert "Removed synapse/alice/ (3 files)." in git(root, "log", "-1", "--format=%B")


def test_an_edit_of_a_pulled_file_is_refused_with_how_to_drop_it(alice, bob):
    """The advice was "commit or stash them first": committing is what the read-only
    hook forbids."""
    root = bob.cwd
    assert bob("synapse", "add", "alice", str(alice.cwd))[0] == 0
    assert bob("synapse", "pull")[0] == 0
    mem = root / "synapse" / "alice" / "MEMORY.md"
    mem.write_text(mem.read_text() + "my note\n")
    same = unchanged_but_cache(bob)
    for verb in ("pull", "remove"):
        code, _, err = bob("synapse", verb, "alice")
        assert code == 1 and err.count("\n") == 1, err
        assert "`git checkout -- synapse/alice/MEMORY.md` drops the edit" in err
        assert "commit or stash" not in err
        same()


def test_a_file_git_ignores_or_does_not_track_under_a_pulled_folder(alice, bob):
    """remove handed every file on disk under synapse/NAME/ to the commit: an ignored
    .DS_Store (Finder) blocked it, and an untracked file got `git checkout --` as its
    fix, which git refuses for a file it does not know."""
    root = bob.cwd
    assert bob("synapse", "add", "alice", str(alice.cwd))[0] == 0
    assert bob("synapse", "pull")[0] == 0
    notes = root / "synapse" / "alice" / "notes.md"
    notes.write_text("my notes\n")
    same = unchanged_but_cache(bob)
    for verb in ("pull", "remove"):
        code, _, err = bob("synapse", verb, "alice")
        assert code == 1 and err.count("\n") == 1, err
        assert "synapse/alice/notes.md" in err and "delete or move it" in err
        assert "git checkout" not in err
        same()
    notes.unlink()
    (root / ".git" / "info").mkdir(exist_ok=True)
    with open(root / ".git" / "info" / "exclude", "a") as f:
        f.write(".DS_Store\n")
    for d in ("synapse/alice", "synapse/alice/L3"):
        (root / d / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    code, out, err = bob("synapse", "pull", "alice")
    assert code == 0 and "ignored" not in err, err
    code, out, err = bob("synapse", "remove", "alice")
    assert code == 0 and "removed synapse alice (3 pulled files) in one commit" in out, err
    assert git(root, "ls-files", "synapse") == "" and git(root, "status", "--porcelain") == ""
    # what git ignores is the person's, left where it was (and its folders with it)
    assert (root / "synapse" / "alice" / "L3" / ".DS_Store").read_bytes() == b"\0\0\0\1Bud1"
    assert sorted(p.name for p in (root / "synapse" / "alice").iterdir()) == [".DS_Store", "L3"]
    assert bob("synapse", "list")[1].startswith("no synapse remotes")


def test_remove_refuses_a_table_it_cannot_take_out_alone(alice, bob):
    root = bob.cwd
    cfg = root / "pamd.toml"
    text = cfg.read_text().replace(
        '[synapse]\npublish_branch = "pamd/publish"\n',
        f'[synapse]\npublish_branch = "pamd/publish"\nalice = {{ url = "{alice.cwd}" }}\n',
    )
    assert text != cfg.read_text()
    cfg.write_text(text)
    git(root, "commit", "-qam", "a person writes the remote inline")
    assert bob("synapse", "pull")[0] == 0
    same = unchanged_but_cache(bob)
    code, _, err = bob("synapse", "remove", "alice")
    assert code == 1 and "cannot take synapse alice out of pamd.toml by itself" in err
    assert err.count("\n") == 1
    same()


def test_publish_refuses_secrets(alice):
    mem = alice.cwd / "MEMORY.md"
    mem.write_text(
        mem.read_text() + "\n" + entry("s-aaaaaaaaaaa4", "key AKIA" + "Q4XZ7RT2MB6KPL3N")
    )
    git(alice.cwd, "commit", "-q", "-am", "oops")
    code, _, err = alice("synapse", "publish")
    assert code == 1 and "refusing to publish secrets: MEMORY.md:" in err
    assert (
        subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "pamd/publish"], cwd=alice.cwd
        ).returncode
        != 0
    )


# ------------------------------------------------ bad input: one line, nothing written
def unchanged(p: Pamd):
    head, status = git(p.cwd, "rev-parse", "HEAD"), git(p.cwd, "status", "--porcelain")
    cache = p.cwd / ".pamd" / "synapse"

    def check():
        assert (
            git(p.cwd, "rev-parse", "HEAD") == head
            and git(p.cwd, "status", "--porcelain") == status
        )
        assert not cache.exists() or not any(cache.iterdir())

    return check


def unchanged_but_cache(p: Pamd):
    head, status = git(p.cwd, "rev-parse", "HEAD"), git(p.cwd, "status", "--porcelain")
    caches = sorted((p.cwd / ".pamd" / "synapse").glob("*.git"))

    def check():
        assert git(p.cwd, "rev-parse", "HEAD") == head
        assert git(p.cwd, "status", "--porcelain") == status
        assert sorted((p.cwd / ".pamd" / "synapse").glob("*.git")) == caches

    return check


@pytest.mark.parametrize("name", ["../evil", "a/b", "/abs", "..", ".hidden", "a\0b", "", "x" * 65,
                                  "alice.bob", "a.b.c"])
def test_names_with_path_tricks_are_refused(bob, alice, name):
    same = unchanged(bob)
    code, _, err = bob("synapse", "add", name, str(alice.cwd))
    assert code == 1 and err.startswith("pamd: error: bad synapse name") and err.count("\n") == 1
    same()
    code, _, err = bob("synapse", "pull", name)
    assert code == 1 and err.startswith("pamd: error: bad synapse name")
    same()


def test_a_dotted_name_is_refused_and_the_next_add_still_works(bob, alice):
    """[synapse.alice.bob] is a nested table: a second such add committed a pamd.toml
    that no longer parsed, and every command failed from then on."""
    same = unchanged(bob)
    code, _, err = bob("synapse", "add", "alice.bob", str(alice.cwd))
    assert code == 1 and "bad synapse name" in err and "no ." in err
    same()
    assert bob("synapse", "add", "alice", str(alice.cwd))[0] == 0
    assert bob("check")[0] == 0


def test_add_with_a_ref_the_remote_lacks_says_nothing_was_added(alice, bob):
    """The hint said "fix `ref` in [synapse.alice]", a table the refused add never wrote."""
    before = head_count(bob.cwd)
    code, out, err = bob("synapse", "add", "alice", str(alice.cwd), "--ref", "nosuch")
    assert code == 1 and err.count("\n") == 1
    assert "has no refs/heads/nosuch" in err and "nothing was added" in err and "--ref" in err
    assert "[synapse.alice]" not in err and "\n[synapse.alice]" not in (bob.cwd / "pamd.toml").read_text()
    assert head_count(bob.cwd) == before


@pytest.mark.parametrize("table", ['uri = "../alice"', "url = 5", 'url = ""', 'url = "../alice"\nref = 7'])
def test_a_synapse_table_written_by_hand_without_a_usable_url_is_named(bob, table):
    """A [synapse.NAME] table with no string url was skipped without a word: pull said "no
    synapse remotes (add one …)", and add then said it was "already registered"."""
    root = bob.cwd
    cfg = root / "pamd.toml"
    lines = cfg.read_text().count("\n")
    cfg.write_text(cfg.read_text() + "\n[synapse.alice]\n" + table + "\n")
    git(root, "commit", "-qam", "person adds a synapse by hand")
    key = "ref" if "ref" in table else "url"
    for verb in (["pull"], ["list"], ["add", "alice", str(root.parent)]):
        code, out, err = bob("synapse", *verb)
        assert code == 1 and err.count("\n") == 1, (verb, err)
        assert err.startswith("pamd: error: pamd.toml:") and f"[synapse.alice] needs {key}" in err
        line = int(err.split(":")[3])
        named = cfg.read_text().split("\n")[line - 1]
        assert line > lines and named.startswith(key if f"{key} =" in table else "[synapse.alice]")
    code, out, err = bob("synapse", "remove", "alice")  # the way out the hint names
    assert code == 0, err
    assert "[synapse.alice]" not in cfg.read_text().split("# url")[-1]


def test_add_help_names_the_characters_a_name_may_hold():
    """The help said `letters, digits, . _ -` while a dotted name is refused."""
    r = subprocess.run([sys.executable, "-m", "pamd", "synapse", "add", "--help"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "digits, . _" not in r.stdout
    assert "no . or /" in " ".join(r.stdout.split())


def test_a_pamd_toml_that_would_not_parse_is_never_committed(bob, alice):
    root = bob.cwd
    cfg = root / "pamd.toml"
    # Valid TOML, but an inline table cannot take the [synapse.alice] table pamd appends.
    text = cfg.read_text().replace('[synapse]\npublish_branch = "pamd/publish"\n', "")
    cfg.write_text('synapse = { publish_branch = "pamd/publish" }\n' + text)
    git(root, "commit", "-qam", "person writes [synapse] inline")
    assert bob("check")[0] == 0
    same = unchanged(bob)
    code, _, err = bob("synapse", "add", "alice", str(alice.cwd))
    assert code == 1 and "pamd.toml that does not parse" in err and err.count("\n") == 1
    same()
    assert bob("check")[0] == 0


def test_unreachable_and_non_brain_remotes_are_refused(bob, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    git(plain, "init", "-q")
    (plain / "README.md").write_text("not a brain\n")
    git(plain, "add", "-A")
    git(plain, "commit", "-q", "-m", "x")
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    same = unchanged(bob)
    for url, says in (
        (str(tmp_path / "nowhere"), "does not exist"),
        ("file:///nonexistent/brain.git", "unreachable or not a git repository"),
        (str(tmp_path), "unreachable or not a git repository"),
        (str(plain), "is not a pamd brain"),
        (str(empty), "has no commits"),
        ("--upload-pack=touch /tmp/pwned", "bad synapse remote"),
        (str(bob.cwd), "cannot pull from itself"),
    ):
        code, _, err = bob("synapse", "add", "x", url)
        assert (
            code == 1 and says in err and err.startswith("pamd: error: ") and err.count("\n") == 1
        ), (url, err)
        same()


TOKEN = "ghp_" + "1234567890abcdefghijklmnopqrstuvwxyzAB"  # split: no scanner flags this file


@pytest.mark.parametrize("url", [
    f"https://bob:{TOKEN}@github.com/bob/brain.git",
    f"https://{TOKEN}@github.com/bob/brain.git",
    "https://bob:hunter2@example.com/brain.git",
    "https://oauth2:s3cr3t-v4lue@gitlab.example.com/brain.git",
    f"https://example.com/brain.git?access_token={TOKEN}",
    "https://abcdef0123456789abcdef0123456789abcdef01@github.com/o/b.git",  # no shape the scanner knows
    "https://bob@github.com/bob/brain.git",  # a token or a user name: pamd cannot tell
    "http://x-token-auth:t0k3n@bitbucket.org/o/b.git",
    f"git+https://{TOKEN}@github.com/o/b.git",  # any scheme but ssh's
    "ftps://s3cr3t@example.com/brain.git",
    "ftp://bob:s3cr3t@example.com/brain.git",
])
def test_a_credential_in_a_synapse_url_is_refused_not_committed(bob, alice, url):
    """pamd.toml, every pulled file's `source:` and the pull commit's `Pamd-Source:` hold the
    URL in clear: a token in it was committed three times over."""
    same = unchanged(bob)
    code, _, err = bob("synapse", "add", "alice", url)
    assert code == 1 and err.count("\n") == 1 and "holds a password or token" in err
    assert "credential helper" in err and "ssh URL" in err
    assert url not in err and TOKEN not in err  # the message is logged too
    same()
    # a person writing it into pamd.toml by hand: the pull refuses it just the same
    cfg = bob.cwd / "pamd.toml"
    cfg.write_text(cfg.read_text() + f'\n[synapse.alice]\nurl = "{url}"\n')
    git(bob.cwd, "commit", "-qam", "a person adds a remote by hand")
    same = unchanged(bob)
    code, _, err = bob("synapse", "pull")
    assert code == 1 and "holds a password or token" in err
    same()


def test_a_registered_url_with_a_user_name_names_its_synapse_and_where_to_change_it(bob):
    """0.2.0 let `https://alice@host/…` be added; `pull` then stopped with an error naming
    neither the synapse nor pamd.toml, saying pamd "would commit" what it had committed."""
    cfg = bob.cwd / "pamd.toml"
    cfg.write_text(cfg.read_text() + '\n[synapse.team]\nurl = "https://alice@git.example.invalid/t/b.git"\n')
    git(bob.cwd, "commit", "-qam", "added by 0.2.0")
    line = cfg.read_text().split("\n").index('url = "https://alice@git.example.invalid/t/b.git"') + 1
    same = unchanged(bob)
    for args in (("synapse", "pull"), ("synapse", "pull", "team")):
        code, _, err = bob(*args)
        assert code == 1 and err.count("\n") == 1, err
        assert err.startswith(f"pamd: error: synapse team's url (pamd.toml:{line}) holds a ")
        assert "[synapse.team] url in pamd.toml" in err and "would commit" not in err
        assert "alice" not in err
        same()


def test_an_scp_like_url_with_a_password_is_never_shown(bob):
    code, _, err = bob("synapse", "add", "t1", "bob:s3cr3t-pw@127.0.0.1:o/b.git")
    assert code == 1 and err.count("\n") == 1 and "s3cr3t" not in err and "…@127.0.0.1:o/b.git" in err


def test_a_user_name_alone_in_a_synapse_url_is_no_credential(bob, alice):
    from pamd.edge.brain import Brain
    from pamd.ops.synapse import check_credentials

    for url in ("ssh://git@github.com/bob/brain.git", "git@github.com:bob/brain.git",
                "https://github.com/bob/brain.git", str(alice.cwd)):
        assert check_credentials(Brain(bob.cwd), url) == url


def test_an_error_never_repeats_what_stands_before_a_urls_at(bob):
    """The unreachable-remote error printed the whole URL, a token before its @ included."""
    same = unchanged(bob)
    for url in ("ssh://s3cr3t-user@127.0.0.1:1/o/b.git", "ssh://s3cr3t-user@127.0.0.1:1/o/b.git\n",
                "HTTPS://s3cr3t@127.0.0.1:1/o/b.git"):  # not a scheme git knows: a path, not there
        code, _, err = bob("synapse", "add", "t1", url)
        assert code == 1 and err.count("\n") == 1 and "s3cr3t" not in err, err
        assert "://…@127.0.0.1:1/o/b.git" in err
        same()


def test_a_remote_that_went_away_fails_the_pull_and_writes_nothing(alice, bob):
    bob("synapse", "add", "alice", str(alice.cwd))
    bob("synapse", "pull")
    alice.cwd.rename(alice.cwd.with_name("gone"))
    head = git(bob.cwd, "rev-parse", "HEAD")
    code, _, err = bob("synapse", "pull")
    assert code == 1 and "unreachable" in err and git(bob.cwd, "rev-parse", "HEAD") == head
    assert git(bob.cwd, "status", "--porcelain") == ""


def test_pull_into_a_conflicted_brain_is_refused(alice, bob):
    bob("synapse", "add", "alice", str(alice.cwd))
    root = bob.cwd
    git(root, "checkout", "-q", "-b", "other")
    (root / "STATE.md").write_text("---\ncurrent_focus: a\n---\n")
    git(root, "commit", "-q", "-am", "a")
    git(root, "checkout", "-q", "main")
    (root / "STATE.md").write_text("---\ncurrent_focus: b\n---\n")
    git(root, "commit", "-q", "-am", "b")
    subprocess.run(["git", "merge", "-q", "other"], cwd=root, capture_output=True)
    head = git(root, "rev-parse", "HEAD")
    code, _, err = bob("synapse", "pull")
    assert code == 1 and "pamd: error: the brain is in the middle of a merge" in err
    assert git(root, "rev-parse", "HEAD") == head and not (root / "synapse").exists()
    code, out, _ = bob("fsck")
    assert code == 1 and "STATE.md:1: unresolved merge conflict" in out


def test_synapse_outside_a_brain(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "pamd", "synapse", "pull"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert (
        r.returncode == 1
        and r.stderr.startswith("pamd: error: no pamd brain")
        and r.stderr.count("\n") == 1
    )


def test_a_secret_in_a_remote_brain_is_redacted_before_a_pull_writes_it(alice, bob):
    """pamd never commits a secret it can see: ingest redacts, publish refuses, and a pull
    (of a brain that took one in by hand) redacts it too and says so in its commit."""
    key = "AKIA" + "Q7R4M2XK9ZP3W8HT"  # split: no scanner flags this test file
    memory = alice.cwd / "MEMORY.md"
    memory.write_text(memory.read_text() + f"\nThe deploy bot's key is {key}.\n")
    git(alice.cwd, "commit", "-qam", "a person pasted a key")
    assert bob("synapse", "add", "alice", str(alice.cwd))[0] == 0
    code, _, err = bob("synapse", "pull")
    assert code == 0, err
    pulled = (bob.cwd / "synapse" / "alice" / "MEMORY.md").read_text()
    assert key not in pulled and "[REDACTED:aws-access-key]" in pulled
    assert key not in git(bob.cwd, "log", "--all", "-p")
    assert "Redacted from alice's files before they were written: 1 aws-access-key." in git(
        bob.cwd, "log", "-1", "--format=%B")
