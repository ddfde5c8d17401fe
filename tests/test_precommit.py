"""pamd's hooks under the real pre-commit tool, installed from this checkout into its env.

The hook repository is a snapshot of this checkout (tracked and new files,
committed once), so its pip-installed environment is built once per module
(~15 s) and every test reuses it through one PRE_COMMIT_HOME.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import FOREIGN_ENV, REPO, git

BIN = Path(sys.executable).parent
AWS = "AKIA" + "Q4XZ7RT2MB6KPL3N"  # split so this file is no secret itself
GITHUB = "ghp_" + "x7Gk2mQp9LrT4vW8yB1nC5dF3hJ6sA0eZ2uK"



@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> tuple[Path, str, Path]:
    """(snapshot repo, its commit, PRE_COMMIT_HOME with pamd's env built)."""
    snap = tmp_path_factory.mktemp("pamd-hook-repo")
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listing.split("\0")):
        src = REPO / rel
        if src.is_file():
            (snap / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, snap / rel)
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    # A module fixture runs before conftest's per-test isolation: no config of the machine's
    # (a global commit.gpgsign, core.hooksPath, init.templateDir) may reach this commit.
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN_ENV}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    for args in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=snap, check=True, capture_output=True, env=env)
    sha = git(snap, "rev-parse", "HEAD").strip()
    home = tmp_path_factory.mktemp("pre-commit-home")
    return snap, sha, home


def precommit(
    root: Path, home: Path, *args: str, env: dict | None = None
) -> subprocess.CompletedProcess:
    # The real tool, from the test extra; a missing one fails here rather than skipping.
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PRE_COMMIT_HOME": str(home),
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            **(env or {}),
        },
    )


def use_pamd_repo(root: Path, snap: Path, sha: str) -> None:
    cfg = {
        "minimum_pre_commit_version": "3.2.0",  # as docs/hooks.md's config has it
        "default_install_hook_types": ["pre-commit", "post-merge", "post-checkout", "post-rewrite"],
        "repos": [
            {
                "repo": str(snap),
                "rev": sha,
                "hooks": [
                    {"id": i}
                    for i in (
                        "pamd-check",
                        "pamd-budget",
                        "pamd-secrets",
                        "pamd-synapse-readonly",
                        "pamd-index",
                    )
                ],
            }
        ],
    }
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git(root, "add", ".pre-commit-config.yaml")
    git(root, "commit", "-q", "-m", "use pamd's hooks")


def git_hooked(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    """A plain git command that runs the hooks pre-commit installed (its cache in `home`)."""
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PRE_COMMIT_HOME": str(home)})


def break_importance(root: Path) -> tuple[str, int]:
    l0 = next(root.glob("memory/L0/*.md"))
    lines = l0.read_text().split("\n")
    i = next(i for i, ln in enumerate(lines) if ln.startswith("type="))
    lines[i] = re.sub(r"importance=\S+", "importance=9.50", lines[i])
    l0.write_text("\n".join(lines))
    rel = l0.relative_to(root).as_posix()
    git(root, "commit", "-q", "--no-verify", "-am", "a person breaks the format")
    return rel, i + 1


@pytest.fixture
def lived(brain):
    for text in ("We decided to keep invoices for seven years.", "Deploy of v2 is done, thanks!"):
        assert brain("remember", text)[0] == 0
    return brain


@pytest.mark.slow  # pre-commit builds an environment with pamd and its search stack
def test_run_all_files_passes_on_a_clean_brain_and_builds_the_env_once(lived, hook_repo):
    snap, sha, home = hook_repo
    root = lived.cwd
    use_pamd_repo(root, snap, sha)
    t0 = time.monotonic()
    r = precommit(root, home, "run", "--all-files")
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("pamd check", "pamd budget"):
        assert any(ln.startswith(name) and ln.endswith("Passed") for ln in r.stdout.splitlines()), (
            r.stdout
        )
    assert "Failed" not in r.stdout
    print(f"\npre-commit env for pamd built and run in {took:.1f}s")
    t0 = time.monotonic()
    assert precommit(root, home, "run", "--all-files").returncode == 0
    assert time.monotonic() - t0 < took  # the second run reuses the env


@pytest.mark.slow  # pre-commit builds an environment with pamd and its search stack
def test_run_all_files_fails_with_path_line_on_a_broken_brain(lived, hook_repo):
    snap, sha, home = hook_repo
    root = lived.cwd
    use_pamd_repo(root, snap, sha)
    rel, line = break_importance(root)
    r = precommit(root, home, "run", "--all-files")
    assert r.returncode == 1
    assert f"{rel}:{line}: importance must be within 0..1" in r.stdout
    assert "pamd check (brain file format)" in r.stdout and "Failed" in r.stdout


@pytest.mark.slow  # pre-commit builds an environment with pamd and its search stack
def test_try_repo_runs_one_hook_against_this_repository(lived, hook_repo):
    snap, sha, home = hook_repo
    root = lived.cwd
    rel, line = break_importance(root)
    # try-repo builds its env in a fresh temporary store each time (~10 s): one call only
    r = precommit(root, home, "try-repo", str(snap), "pamd-check", "--ref", sha, "--all-files")
    assert r.returncode == 1 and f"{rel}:{line}:" in r.stdout


@pytest.mark.slow  # pre-commit builds an environment with pamd and its search stack
def test_planted_secret_is_blocked_then_cleaned_by_pamd_redact(lived, hook_repo):
    snap, sha, home = hook_repo
    root = lived.cwd
    use_pamd_repo(root, snap, sha)
    l0 = next(root.glob("memory/L0/*.md"))
    lines = l0.read_text().split("\n")
    i = next(i for i, ln in enumerate(lines) if ln.startswith("> "))
    lines[i] += f" key {AWS} and token {GITHUB}"
    l0.write_text("\n".join(lines))
    rel = l0.relative_to(root).as_posix()
    git(root, "add", rel)
    r = precommit(root, home, "run", "--all-files", env={"SKIP": ""})
    assert r.returncode == 1
    assert f"{rel}:{i + 1}: possible aws-access-key" in r.stdout and "pamd redact" in r.stdout
    # a real `git commit` through the installed framework hook is refused: nothing enters history
    assert precommit(root, home, "install").returncode == 0
    c = git_hooked(root, home, "commit", "-m", "paste")
    assert c.returncode != 0
    assert AWS not in git(root, "log", "--all", "-p")
    code, out, err = lived("redact", "--no-commit", rel)
    assert code == 0, err
    git(root, "add", rel)
    assert AWS not in l0.read_text() and "[REDACTED:aws-access-key]" in l0.read_text()
    r = precommit(root, home, "run", "--all-files", env={"SKIP": ""})
    assert r.returncode == 0, r.stdout


@pytest.mark.slow  # pre-commit builds an environment with pamd and its search stack
def test_pamd_check_hook_refuses_a_staged_conflict_marker(lived, hook_repo):
    snap, sha, home = hook_repo
    root = lived.cwd
    use_pamd_repo(root, snap, sha)
    mem = root / "MEMORY.md"
    good = mem.read_text()
    mem.write_text(good + "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> side\n")
    git(root, "add", "MEMORY.md")
    r = precommit(root, home, "run")  # the staged files, as at `git commit`
    assert r.returncode == 1
    assert f"MEMORY.md:{len(good.split(chr(10)))}: conflict marker left in the file" in r.stdout


@pytest.mark.slow  # pre-commit builds an environment with pamd and its search stack
def test_index_hook_runs_at_checkout_and_never_fails_it(lived, hook_repo):
    snap, sha, home = hook_repo
    root = lived.cwd
    use_pamd_repo(root, snap, sha)
    r = precommit(root, home, "install")
    assert r.returncode == 0 and "post-checkout" in r.stdout
    c = git_hooked(root, home, "checkout", "-b", "elsewhere")
    assert c.returncode == 0, c.stdout + c.stderr
    assert "pamd index refresh" in c.stdout + c.stderr and "Passed" in c.stdout + c.stderr
    # The commit-time hooks stay out of checkouts: they printed "(no files to check)Skipped"
    # on every checkout, merge and rebase of a config without default_stages.
    assert "Skipped" not in c.stdout + c.stderr and "pamd check" not in c.stdout + c.stderr
    manifest = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"]: h.get("stages") for h in manifest} == {
        **{i: ["pre-commit"] for i in ("pamd-check", "pamd-budget", "pamd-secrets",
                                       "pamd-synapse-readonly", "pamd-probe")},
        "pamd-index": ["post-merge", "post-checkout", "post-rewrite"]}


def test_the_manifest_and_the_documented_config_name_pre_commit_3_2_as_their_minimum():
    """`stages: [pre-commit]` is pre-commit 3.2's name: an older pre-commit refused the whole
    manifest with a schema error and nothing said which version pamd needs."""
    def version(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in str(v).split("."))

    manifest = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    named_in_3_2 = {"pre-commit", "pre-push", "pre-merge-commit"}
    for hook in manifest:
        if named_in_3_2 & set(hook.get("stages", ())):
            assert version(hook.get("minimum_pre_commit_version", "0")) >= (3, 2, 0), hook["id"]
    # older pre-commit reads a hook's minimum only after the manifest validated: the
    # config's own minimum, checked first, is what gives the reader a clear message
    doc = (REPO / "docs" / "hooks.md").read_text()
    block = doc.split("can use them from pamd's repository:\n\n```yaml\n", 1)[1].split("```")[0]
    assert version(yaml.safe_load(block)["minimum_pre_commit_version"]) >= (3, 2, 0)
    assert "needs pre-commit 3.2.0 or\nlater" in doc


def test_the_brain_template_config_runs_the_installed_pamd(lived, hook_repo):
    _, _, home = hook_repo
    root = lived.cwd
    shutil.copy(
        REPO / "templates" / "ci" / "pre-commit-config.yaml", root / ".pre-commit-config.yaml"
    )
    git(root, "add", ".pre-commit-config.yaml")
    git(root, "commit", "-q", "-m", "template config")
    r = precommit(root, home, "run", "--all-files")
    assert r.returncode == 0, r.stdout + r.stderr
    rel, line = break_importance(root)
    r = precommit(root, home, "run", "--all-files")
    assert r.returncode == 1 and f"{rel}:{line}:" in r.stdout


def test_pamd_run_by_its_full_path_commits_through_the_init_ci_config(brain, hook_repo):
    """cron, a daemon or an agent's tool config runs pamd as /path/venv/bin/pamd, its venv not
    on PATH: the `repo: local` hooks `pamd init --ci` lays down run `pamd-hook` from PATH, so
    every pamd commit failed ("Executable `pamd-hook` not found") and defrag --branch too."""
    _, _, home = hook_repo
    root = brain.cwd
    assert brain("init", "--ci")[0] == 0
    assert precommit(root, home, "install").returncode == 0
    # every folder that offers a pamd-hook goes: the venv's own, and such as pyenv's shims,
    # which name the scripts of whatever pamd the interpreter's global site once installed
    bare = {**os.environ, "PRE_COMMIT_HOME": str(home), "PATH": os.pathsep.join(
        d for d in os.environ["PATH"].split(os.pathsep)
        if d and Path(d).resolve() != BIN.resolve() and not (Path(d) / "pamd-hook").exists())}
    assert shutil.which("pamd-hook", path=bare["PATH"]) is None
    before = git(root, "rev-parse", "HEAD").strip()
    r = subprocess.run([str(BIN / "pamd"), "--now", "2026-11-20T10:00:00Z", "remember", "We ship on Tuesdays."],
                       cwd=root, capture_output=True, text=True, env=bare)
    assert r.returncode == 0, r.stderr
    assert git(root, "rev-parse", "HEAD^").strip() == before
    r = subprocess.run([str(BIN / "pamd"), "--now", "2026-12-20T10:00:00Z", "defrag", "--branch", "pamd/d"],
                       cwd=root, capture_output=True, text=True, env=bare)
    assert r.returncode == 0, r.stderr
    assert git(root, "worktree", "list").count("\n") == 1


@pytest.mark.slow  # pre-commit builds an environment with pamd and its search stack
def test_hook_outside_a_brain_fails_with_one_clear_line(tmp_path, hook_repo):
    snap, sha, home = hook_repo
    git(tmp_path, "init", "-q")
    (tmp_path / "notes.md").write_text("hello\n")
    (tmp_path / "memory" / "L0").mkdir(parents=True)
    (tmp_path / "memory" / "L0" / "x.md").write_text("hello\n")
    git(tmp_path, "add", "-A")
    use_pamd_repo(tmp_path, snap, sha)
    r = precommit(tmp_path, home, "run", "pamd-check", "--all-files")
    assert r.returncode == 1 and "pamd: error: no pamd brain" in r.stdout


@pytest.mark.slow  # pre-commit builds an environment with pamd and its search stack
def test_the_template_probe_hook_blocks_only_a_newly_lost_fact_never_an_ingest(brain, hook_repo, tmp_path,
                                                                               monkeypatch):
    """`pamd init --ci` + `pre-commit install`: pamd's own commits run the pamd-probe hook. A probe
    that was never found (a fact not learned yet) stopped every ingest, remember and compaction;
    now only a commit that loses a fact that resolves at HEAD is refused."""
    _, _, home = hook_repo
    root = brain.cwd
    monkeypatch.setenv("PRE_COMMIT_HOME", str(home))
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    shutil.copy(REPO / "templates" / "ci" / "pre-commit-config.yaml", root / ".pre-commit-config.yaml")
    git(root, "add", ".pre-commit-config.yaml")
    git(root, "commit", "-q", "-m", "template config")
    assert precommit(root, home, "install").returncode == 0
    f = tmp_path / "s.jsonl"
    rows = [{"ts": "2026-11-30T08:00:00Z", "role": "user", "session": "p",
             "text": "We decided to host billing on Postgres 16."},
            {"ts": "2026-11-30T08:01:00Z", "role": "tool", "session": "p",
             "text": "[tool result] cron: staging password rotation runs on the 3rd of each month"}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert brain("ingest", str(f), now="2026-11-30T08:05:00Z")[0] == 0
    zebra = '{"question": "what is the zebra password policy?", "expect_text": "zebra-unicorn-policy-42"}\n'
    staging = '{"question": "when does the staging password rotation run", "expect_text": "3rd of each month"}\n'
    (root / "probes.jsonl").write_text(zebra + staging)
    # a person adds a probe for a fact the brain has not learned yet: not lost by this commit
    c = git_hooked(root, home, "add", "probes.jsonl")
    c = git_hooked(root, home, "commit", "-q", "-m", "probes")
    assert c.returncode == 0, c.stdout + c.stderr
    head = git(root, "rev-parse", "HEAD").strip()
    code, out, err = brain("remember", "The zebra password policy is still being written.",
                           now="2026-11-30T08:06:00Z")
    assert code == 0, out + err
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"ts": "2026-11-30T08:02:00Z", "role": "user", "session": "q",
                                "text": "Deploy of v2 is done, thanks!"}) + "\n")
    assert brain("ingest", str(more), now="2026-11-30T08:07:00Z")[0] == 0, "an ingest is never held up"
    assert git(root, "rev-list", "--count", f"{head}..HEAD").strip() == "2"
    # a compaction that drops the staging fact (it resolves at HEAD) is refused, nothing committed
    tip = git(root, "rev-parse", "HEAD").strip()
    code, out, err = brain("compact", now="2026-11-30T13:00:00Z")
    assert code == 1 and "git commit failed" in err, out + err
    assert git(root, "rev-parse", "HEAD").strip() == tip and git(root, "status", "--porcelain") == ""
    # the person lets that fact go: the same compaction passes, the zebra probe (lost before) does not stop it
    (root / "probes.jsonl").write_text(zebra)
    c = git_hooked(root, home, "commit", "-q", "-am", "staging rotation is no longer a must-keep")
    assert c.returncode == 0, c.stdout + c.stderr
    code, out, err = brain("compact", now="2026-11-30T13:00:00Z")
    assert code == 0 and "1 dropped" in out, out + err
    assert "Pamd-Run: compact" in git(root, "log", "-1", "--format=%B")
    assert git(root, "worktree", "list", "--porcelain").count("worktree ") == 1  # HEAD's look is gone


def test_a_framework_hook_that_refuses_pamds_commit_is_named_not_the_first_that_passed(
    lived, tmp_path, monkeypatch
):
    """Under pre-commit the first line of a refused commit's output is always the first
    hook's "…Passed"; pamd's one-line error names the hook that failed and what it said.
    Local `system` hooks: no hook environment to build."""
    root = lived.cwd
    said = "echo 'probes.jsonl:1: LOST  ls output files'; echo '1 of 1 probes lost'; exit 1"
    hooks = [
        {"id": "fine", "name": "pamd check (brain file format)", "entry": "true"},
        {"id": "probe", "name": "pamd probe (facts this brain must never lose)",
         "entry": f"sh -c \"{said}\" --"},
        {"id": "after", "name": "pamd budget", "entry": "true"},
    ]
    for h in hooks:
        h.update(language="system", pass_filenames=False, always_run=True)
    cfg = {"repos": [{"repo": "local", "hooks": hooks}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git(root, "add", ".pre-commit-config.yaml")
    git(root, "commit", "-q", "-m", "hooks")
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pc-home"))
    r = precommit(root, tmp_path / "pc-home", "install", "-t", "pre-commit")
    assert r.returncode == 0, r.stdout + r.stderr
    n = int(git(root, "rev-list", "--count", "HEAD"))
    code, _, err = lived("remember", "We decided to use Postgres 16 for billing.")
    assert code == 1 and err.count("\n") == 1, err
    assert ("git commit failed: pamd probe (facts this brain must never lose) failed: "
            "probes.jsonl:1: LOST  ls output files; 1 of 1 probes lost (") in err, err
    assert "Passed" not in err
    assert int(git(root, "rev-list", "--count", "HEAD")) == n


def test_a_user_install_puts_its_scripts_folder_on_the_hooks_path(tmp_path, monkeypatch, request):
    """`pip install --user pamd` puts pamd and pamd-hook in ~/.local/bin,
    not in the interpreter's scripts folder, which was the only one looked at: run by cron
    (PATH=/usr/bin:/bin), the init --ci hooks still found no `pamd-hook`, every commit refused."""
    import sysconfig

    from pamd.edge import git as seam

    base, user = tmp_path / "usr-bin", tmp_path / "local-bin"
    base.mkdir()
    user.mkdir()
    (user / "pamd-hook").write_text("#!/bin/sh\n")
    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path", lambda name, scheme=None, *a, **k:
                        str(user if scheme and scheme.endswith("_user") else base) if name == "scripts"
                        else real(name, scheme, *a, **k))
    # pamd reads the folders from sysconfig once a process: here, from the one above, and
    # after this test from the real one again
    seam._scripts_dirs.cache_clear()
    request.addfinalizer(seam._scripts_dirs.cache_clear)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert seam._hook_path() == {"PATH": f"{user}{os.pathsep}/usr/bin:/bin"}
    (base / "pamd-hook").write_text("#!/bin/sh\n")  # the interpreter's own comes first (a venv)
    (base / "pamd-hook").chmod(0o755)
    assert seam._hook_path() == {"PATH": f"{base}{os.pathsep}/usr/bin:/bin"}
    monkeypatch.setenv("PATH", f"/usr/bin:{base}")
    assert seam._hook_path() == {}


def test_an_older_pamd_hook_earlier_on_path_does_not_run_pamds_own_hooks(brain, tmp_path, monkeypatch):
    """The scripts folder was put on the hooks' PATH only when PATH lacked it.
    A PATH holding it after another folder with a `pamd-hook` (pyenv's shims, naming the scripts
    of whatever pamd the global interpreter once installed, as on CI machines) ran that older
    pamd-hook in the `init --ci` hooks: every pamd commit refused by a pamd that is not this one."""
    from pamd.edge import git as seam

    root = brain.cwd
    home = tmp_path / "pc-home"
    old = tmp_path / "shims"
    old.mkdir()
    (old / "pamd-hook").write_text('#!/bin/sh\necho "older pamd-hook ran: $*" >&2\nexit 1\n')
    (old / "pamd-hook").chmod(0o755)
    assert brain("init", "--ci")[0] == 0
    assert precommit(root, home, "install").returncode == 0
    path = os.pathsep.join([str(old), str(BIN), os.environ["PATH"]])
    monkeypatch.setenv("PATH", path)
    assert seam._hook_path() == {"PATH": f"{BIN}{os.pathsep}{path}"}
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PATH": path}
    before = git(root, "rev-parse", "HEAD").strip()
    r = subprocess.run([str(BIN / "pamd"), "--now", "2026-11-20T10:00:00Z", "remember", "We ship on Tuesdays."],
                       cwd=root, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "older pamd-hook" not in r.stderr
    assert git(root, "rev-parse", "HEAD^").strip() == before
    # this pamd's own pamd-hook found first: PATH is left as it is
    monkeypatch.setenv("PATH", os.pathsep.join([str(BIN), str(old), os.environ["PATH"]]))
    assert seam._hook_path() == {}
