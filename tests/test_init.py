from __future__ import annotations

import os

from conftest import git, head_count


def test_init_lays_out_a_brain_in_one_commit(brain):
    root = brain.cwd
    for rel in ("pamd.toml", "MEMORY.md", "DNA.md", "STATE.md", "PRELOAD.md", ".gitignore",
                "protocols/hippocampus.md", "protocols/neocortex.md", "protocols/defrag.md",
                "protocols/synapse.md"):
        assert (root / rel).is_file(), rel
    assert ".pamd/" in (root / ".gitignore").read_text()
    assert "\nmemory/ledger/*.txt merge=union\n" in (root / ".gitattributes").read_text()
    assert head_count(root) == 1
    assert git(root, "status", "--porcelain") == ""
    assert "pamd init" in git(root, "log", "-1", "--format=%s")


def test_init_adopts_an_existing_repo_without_sweeping_edits(tmp_path, brain):
    repo = tmp_path / "existing"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "notes.txt").write_text("mine\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-qm", "person")
    (repo / "notes.txt").write_text("uncommitted edit\n")
    brain.cwd = tmp_path
    code, out, err = brain("init", str(repo))
    assert code == 0, err
    assert git(repo, "status", "--porcelain").strip() == "M notes.txt"
    assert "notes.txt" not in git(repo, "show", "--stat", "HEAD")


def test_init_refuses_an_existing_brain(brain):
    code, out, err = brain("init", ".")
    assert code == 1
    assert "already a pamd brain" in err


def test_commands_outside_a_brain_say_so(tmp_path, brain):
    brain.cwd = tmp_path
    code, out, err = brain("status")
    assert code == 1 and err.startswith("pamd: error: no pamd brain")
    code, out, err = brain("status", "--brain", str(tmp_path / "nope"))
    assert code == 1 and "does not exist" in err


def test_brain_found_from_a_subfolder_and_by_env(brain, monkeypatch, tmp_path):
    sub = brain.cwd / "protocols"
    root = brain.cwd
    brain.cwd = sub
    assert brain("status")[0] == 0
    brain.cwd = tmp_path
    monkeypatch.setenv("PAMD_BRAIN", str(root))
    code, out, _ = brain("status")
    assert code == 0 and str(root) in out


def test_help_has_an_example_for_every_command():
    from pamd.cli import COMMANDS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) <= set(COMMANDS)
    for name, p in sub.choices.items():
        assert "Example:" in p.format_help(), name


def test_python_m_pamd_and_help_do_not_import_torch(tmp_path):
    import subprocess
    import sys

    code = ("import sys, pamd.cli; pamd.cli.build_parser().format_help(); "
            "print('torch' in sys.modules, 'hnswlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"
    r = subprocess.run([sys.executable, "-m", "pamd", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "ingest" in r.stdout


def test_files_pamd_writes_are_as_readable_as_any_other(brain):
    import os
    import stat

    mask = os.umask(0)
    os.umask(mask)
    for rel in ("MEMORY.md", "pamd.toml", "DNA.md"):
        assert stat.S_IMODE((brain.cwd / rel).stat().st_mode) == 0o666 & ~mask, rel


def test_init_refused_by_a_hook_leaves_an_existing_repo_as_it_was(tmp_path, brain):
    repo = tmp_path / "existing"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text("node_modules/\n")
    (repo / ".gitattributes").write_text("*.png binary\n")
    (repo / "notes.txt").write_text("mine\n")
    git(repo, "add", ".gitignore", ".gitattributes", "notes.txt")
    git(repo, "commit", "-qm", "person")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    brain.cwd = tmp_path
    code, _, err = brain("init", str(repo))
    assert code == 1 and "git commit failed" in err
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert sorted(p.name for p in repo.iterdir()) == [".git", ".gitattributes", ".gitignore", "notes.txt"]
    assert (repo / ".gitignore").read_text() == "node_modules/\n"
    assert (repo / ".gitattributes").read_text() == "*.png binary\n"
    hook.unlink()
    code, _, err = brain("init", str(repo))  # the retry works
    assert code == 0, err
    assert head_count(repo) == 2 and git(repo, "status", "--porcelain") == ""
    attrs = (repo / ".gitattributes").read_text()  # the person's lines kept, pamd's added
    assert attrs.startswith("*.png binary\n") and attrs.endswith("memory/ledger/*.txt merge=union\n")


def test_init_refuses_a_bare_repository_in_one_line(tmp_path, brain):
    bare = tmp_path / "e4.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    before = sorted(p.name for p in bare.rglob("*"))
    brain.cwd = tmp_path
    code, _, err = brain("init", "e4.git")
    assert code == 1 and err.startswith("pamd: error: e4.git is a bare git repository")
    assert len(err.strip().splitlines()) == 1
    code, _, err = brain("init", "e4.git/refs")
    assert code == 1 and "inside the bare git repository" in err, err
    assert sorted(p.name for p in bare.rglob("*")) == before


def test_a_refused_init_leaves_no_folder_or_git_behind(tmp_path, brain, monkeypatch):
    """Refused inside another repository, or by a hook after `git init`: nothing init made stays."""
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q")
    brain.cwd = outer
    for sub in ("sub", "a/b/c"):
        code, _, err = brain("init", sub)
        assert code == 1 and f"{sub} is inside the git repository" in err, err
    assert sorted(p.name for p in outer.iterdir()) == [".git"]
    bare = tmp_path / "e4.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    brain.cwd = tmp_path
    code, _, err = brain("init", "e4.git/refs/x")
    assert code == 1 and "inside the bare git repository" in err, err
    assert not (bare / "refs" / "x").exists()
    (tmp_path / "file").write_text("x")
    code, _, err = brain("init", "file/sub")
    assert code == 1 and "file is not a folder" in err, err
    tmpl = tmp_path / "refusing-template"  # every new repository gets a hook that refuses commits
    (tmpl / "hooks").mkdir(parents=True)
    (tmpl / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 1\n")
    (tmpl / "hooks" / "pre-commit").chmod(0o755)
    plain = os.environ["GIT_TEMPLATE_DIR"]
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(tmpl))
    (tmp_path / "empty").mkdir()
    for target in ("new/deep", "empty"):
        code, _, err = brain("init", target)
        assert code == 1 and "git commit failed" in err, err
    assert not (tmp_path / "new").exists()
    assert list((tmp_path / "empty").iterdir()) == []
    monkeypatch.setenv("GIT_TEMPLATE_DIR", plain)
    code, _, err = brain("init", "new/deep")  # the retry works
    assert code == 0, err


def test_init_name_is_written_as_a_toml_string_or_refused_in_one_line(tmp_path, brain):
    import tomllib

    brain.cwd = tmp_path
    for i, name in enumerate(['Claude "Opus"', "C:\\new\\agent", 'a\\"b', "Клод 🤖 'x'"]):
        code, _, err = brain("init", "--name", name, f"ok{i}")
        assert code == 0, err
        config = tomllib.loads((tmp_path / f"ok{i}" / "pamd.toml").read_text("utf-8"))
        assert config["brain"]["name"] == name
    for i, (name, why) in enumerate([("x\ny = 1", "line break"), ("a\tb", "control character"),
                                     ("bell\x07", "control character"), ("\udcff", "not UTF-8"),
                                     ("", "--name is empty"), ("  ", "--name is empty")]):
        code, _, err = brain("init", "--name", name, f"bad{i}")
        assert code == 1 and why in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / f"bad{i}").exists()


def test_init_takes_brain_as_its_folder_and_refuses_an_empty_one(tmp_path, brain):
    from pamd.cli import build_parser

    work = tmp_path / "work"
    work.mkdir()
    brain.cwd = work
    for argv, why in ((["init", ""], "DIR is empty"), (["init", "--brain", ""], "--brain is empty"),
                      (["init", "a", "--brain", "b"], "two folders for the brain")):
        code, _, err = brain(*argv)
        assert code == 1 and why in err, err
    assert list(work.iterdir()) == []  # the cwd did not become a brain
    code, out, err = brain("init", "--brain", str(tmp_path / "target"))
    assert code == 0 and str(tmp_path / "target") in out, err
    assert (tmp_path / "target" / "pamd.toml").is_file() and list(work.iterdir()) == []
    code, _, err = brain("init", "same", "--brain", "./same")
    assert code == 0 and (work / "same" / "pamd.toml").is_file(), err
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert "--brain" not in sub.choices["init"].format_help()
    assert "--brain" in sub.choices["status"].format_help()


def test_two_clones_ingesting_the_same_month_merge_without_a_ledger_conflict(tmp_path, brain):
    """The ledger is `merge=union` (init's .gitattributes), so two machines that
    each ingested into one month merge cleanly. The union may list ids out of order or twice
    (both machines took in the same transcript); pamd reads it as a set, fsck passes, nothing
    is ingested again, and the next ingest into that month writes it sorted once more."""
    import json
    import subprocess

    def day(path, d, session):
        path.write_text("".join(json.dumps(
            {"ts": f"2026-11-{d:02d}T{9 + i:02d}:00:00Z", "role": "user", "session": session,
             "text": f"{session} fact {i}: the export of day {d} has {100 + i} rows."}) + "\n"
            for i in range(3)))
        return str(path)

    root = brain.cwd
    assert brain("ingest", day(tmp_path / "base.jsonl", 2, "base"))[0] == 0
    for side in ("m1", "m2"):
        git(tmp_path, "clone", "-q", str(root), side)
    shared = day(tmp_path / "shared.jsonl", 9, "shared")
    for side, d in (("m2", 10), ("m1", 20)):
        brain.cwd = tmp_path / side
        assert brain("ingest", day(tmp_path / f"{side}.jsonl", d, side))[0] == 0
        assert brain("ingest", shared)[0] == 0
    r = subprocess.run(["git", "-c", "pull.rebase=false", "pull", "--no-edit", "../m2", "main"],
                       cwd=brain.cwd, capture_output=True, text=True)
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout + r.stderr
    ledger = brain.cwd / "memory" / "ledger" / "2026-11.txt"
    ids = ledger.read_text().split()
    assert len(set(ids)) == 12 and ids != sorted(set(ids))  # out of order, or an id twice
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 0, out
    for f in ("m1.jsonl", "m2.jsonl", "shared.jsonl"):
        code, out, err = brain("ingest", str(tmp_path / f))
        assert code == 0 and out.startswith("nothing new: 3 entries"), out + err
    assert brain("ingest", day(tmp_path / "later.jsonl", 25, "later"))[0] == 0
    ids = ledger.read_text().split()
    assert ids == sorted(set(ids)) and len(ids) == 15


def test_every_package_of_pamd_is_in_the_wheel():
    # pamd.fidelity was missing from pyproject's list: a `pip install '.[search]'` (not -e) had no
    # `pamd probe`, `pamd eval` or pamd-probe hook ("internal error: No module named 'pamd.fidelity'")
    import tomllib

    from conftest import REPO

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "pamd").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)


def test_init_without_a_folder_takes_pamd_brain_as_every_command_does(brain, monkeypatch, tmp_path):
    # With PAMD_BRAIN exported, a bare `pamd init` made a brain (and a git repository) of the cwd
    root = brain.cwd
    here = tmp_path / "here"
    here.mkdir()
    brain.cwd = here
    monkeypatch.setenv("PAMD_BRAIN", str(root))
    code, _, err = brain("init")
    assert code == 1 and f"{root} is already a pamd brain" in err
    assert list(here.iterdir()) == []
    monkeypatch.setenv("PAMD_BRAIN", str(tmp_path / "new"))
    code, out, err = brain("init")
    assert code == 0, err
    assert (tmp_path / "new" / "pamd.toml").is_file() and list(here.iterdir()) == []


def test_init_hooks_in_a_clone_with_pamd_brain_naming_another_brain_is_refused(brain, monkeypatch, tmp_path):
    """In a teammate's fresh clone, with PAMD_BRAIN exported for their agent's
    brain, `pamd init --hooks` (what a plain init's refusal tells them) installed the hooks into
    the PAMD_BRAIN brain, said "installed hook pre-commit", and left the clone unchecked."""
    other = tmp_path / "agent"
    assert brain("init", str(other))[0] == 0
    clone = brain.cwd
    brain.cwd = clone / "protocols"
    monkeypatch.setenv("PAMD_BRAIN", str(other))
    for flags in (["--hooks"], ["--ci"], ["--ci", "--hooks"]):
        code, out, err = brain("init", *flags)
        assert code == 1 and out == "", (out, err)
        assert err.startswith(f"pamd: error: two brains: $PAMD_BRAIN names {other}, and you are in "
                              f"{clone.resolve()}") and len(err.splitlines()) == 1, err
        assert f"pamd init {' '.join(flags)} {clone.resolve()}" in err
    assert not (other / ".git" / "hooks" / "pre-commit").exists()
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()
    code, out, err = brain("init", "--hooks", str(clone))
    assert code == 0 and (clone / ".git" / "hooks" / "pre-commit").is_file(), err
    brain.cwd = tmp_path  # outside any brain: PAMD_BRAIN's, as for every command
    code, out, err = brain("init", "--hooks")
    assert code == 0 and (other / ".git" / "hooks" / "pre-commit").is_file(), err


def test_a_persons_global_commit_signing_does_not_stop_pamds_commits(tmp_path, brain):
    """A global `commit.gpgsign = true` whose key cannot sign unattended (a passphrase or a
    touch cron cannot give, no key at all) made `pamd init` and every later run fail with
    "gpg failed to sign the data (a hook of this brain may have refused it…)". pamd signs its
    commits only when the brain's own git config asks, and then names signing when it fails."""
    fails = tmp_path / "gpg-that-fails"
    fails.write_text("#!/bin/sh\nexit 1\n")
    fails.chmod(0o755)
    git(tmp_path, "config", "--global", "commit.gpgsign", "true")
    git(tmp_path, "config", "--global", "gpg.program", str(fails))
    brain.cwd = tmp_path
    code, _, err = brain("init", str(tmp_path / "b2"))
    assert code == 0, err
    brain.cwd = tmp_path / "b2"
    code, _, err = brain("remember", "We decided to keep invoices for seven years.")
    assert code == 0, err
    assert git(brain.cwd, "log", "--format=%s").count("pamd ") == 2
    git(brain.cwd, "config", "--local", "commit.gpgsign", "true")  # the brain's own choice is kept
    code, _, err = brain("remember", "Deploy of v2 is done, thanks!")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "commit.gpgsign" in err and "a hook" not in err
    assert head_count(brain.cwd) == 2 and git(brain.cwd, "status", "--porcelain") == ""


def test_init_suggests_what_the_machine_has_and_turns_nothing_on(brain, tmp_path, monkeypatch):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pamd.core.config import load

    class Tags(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps({"models": [{"name": "qwen2.5:3b"}]}).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Tags)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "claude").chmod(0o755)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text("{}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PAMD_OLLAMA_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-sent-anywhere")
    try:
        code, out, err = brain("init", str(tmp_path / "b"))
    finally:
        server.shutdown()
    assert code == 0, err
    toml = (tmp_path / "b" / "pamd.toml").read_text()
    assert load(toml)["summarizer"]["backend"] == "extractive"  # suggested, never switched on
    assert "# - claude on PATH (logged in): memories are sent to its provider\n# backend = \"claude-cli\"" in toml
    port = server.server_address[1]
    assert f'# base_url = "http://127.0.0.1:{port}/v1"\n# model = "qwen2.5:3b"' in toml
    assert "# - ANTHROPIC_API_KEY in the environment" in toml
    assert "sk-ant-not-sent-anywhere" not in toml
    assert toml.index("claude-cli") < toml.index("qwen2.5") < toml.index("ANTHROPIC_API_KEY")
    assert 'found claude on PATH (logged in): to use it, set backend = "claude-cli"' in out


def test_init_on_a_machine_with_nothing_adds_no_suggestion(brain, tmp_path, monkeypatch):
    monkeypatch.setenv("PAMD_OLLAMA_URL", "http://127.0.0.1:9")  # the discard port: nothing answers
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, out, err = brain("init", str(tmp_path / "b"))
    assert code == 0, err
    assert "found on this machine" not in (tmp_path / "b" / "pamd.toml").read_text()
    assert "summarizer:" not in out


def test_detect_tells_a_logged_in_codex_from_one_that_is_not(tmp_path):
    from pamd.ops.detect import detect

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "codex").chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-x",
           "PAMD_OLLAMA_URL": "http://127.0.0.1:9"}
    found = detect(env)
    assert [o.backend for o in found] == ["codex-cli", "openai"]
    assert found[0].what == "codex on PATH (login not found: run `codex login`)"
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "auth.json").write_text("{}")
    assert detect(env)[0].what == "codex on PATH (logged in)"
    assert detect({**env, "PATH": str(tmp_path / "none"), "OPENAI_API_KEY": ""}) == []
