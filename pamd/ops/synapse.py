"""synapse: share compressed knowledge between brains over git remotes.

`add` records a remote in pamd.toml (`[synapse.NAME] url = ...`) after
checking it is reachable and holds a brain. `pull` fetches each remote into a
bare cache (.pamd/synapse/NAME.git, untracked), reads MEMORY.md, DNA.md and
memory/L3/*.md at the fetched commit, and writes them under synapse/NAME/ with
frontmatter naming the source and commit, all in one commit. `remove` takes
the table, synapse/NAME/ and the cache away again in one commit. `publish` puts
exactly those files (from HEAD, after a secret scan) on a `pamd/publish`
branch that other brains pull. Nothing here touches this brain's own tiers:
`Brain.entry_files()` never reads synapse/.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from typing import Any

from pamd.core.config import Peer, SynapseSettings, peers, settings
from pamd.core.fmt import FormatError, dump_yaml, split_frontmatter
from pamd.core.message import one_line
from pamd.core.paths import CONFIG, DNA, MEMORY, SYNAPSE_DIR
from pamd.core.words import plural
from pamd.edge.brain import Brain
from pamd.errors import PamdError

# No ".": the name is a bare TOML key in [synapse.NAME], where a dot nests tables.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
# A URL git understands (scheme://... or scp-like user@host:path); anything else is a path.
URL_RE = re.compile(r"^[a-z][a-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")
L3_DIR = "memory/L3"
MARKER = "synapse.toml"  # what `publish` adds, so a published branch counts as a brain
PUBLISH_BRANCH = SynapseSettings().publish_branch
SYNAPSE_KEYS = {f.name for f in fields(SynapseSettings)}  # [synapse]'s own settings, no peer's name
MAX_FILE = 4 * 1024 * 1024
MAX_FILES = 5000
L3_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.md$")


@dataclass
class Pulled:
    name: str
    url: str
    commit: str
    changes: dict[str, str | None] = field(default_factory=dict)
    published_from: str = ""
    redacted: dict[str, int] = field(default_factory=dict)  # secrets found in what was pulled, by type


# ---------------------------------------------------------------- names and remotes
def check_name(name: str) -> str:
    if not NAME_RE.match(name or "") or ".." in name:
        raise PamdError(
            f"bad synapse name {name!r}",
            "use 1-64 letters, digits, _ or - (no . or /), starting with a letter or digit",
        )
    return name


def normalise_url(url: str, cwd: Path | None = None) -> str:
    if not url or url.startswith("-") or any(c in url for c in "\0\n\r"):
        raise PamdError(
            f"bad synapse remote {shown(url)!r}", "give a git URL or the path of another brain"
        )
    if URL_RE.match(url):
        return url
    path = (cwd or Path.cwd()) / Path(url).expanduser()
    if not path.exists():
        raise PamdError(
            f"synapse remote {shown(url)} does not exist", "give a git URL or the path of another brain"
        )
    return str(path.resolve())


# The userinfo of scheme://userinfo@host/...: up to the last @ before the path.
USERINFO_RE = re.compile(r"^[a-z][a-z0-9+.-]*://([^/?#]*)@", re.I)


# ssh's keys are never in the URL: what stands before its @ is a user name (git@)
SSH_SCHEMES = ("ssh://", "git+ssh://", "ssh+git://")
# scp-like user:password@host:path (a URL to git, not to URL_RE): the part before the @
SCP_USERINFO_RE = re.compile(r"^([^/@]*:[^/@]*)@")


def check_credentials(brain: Brain, url: str, name: str | None = None) -> str:
    """Refuse a remote whose URL carries a password or token.

    The URL is written in clear into pamd.toml, every pulled file's `source:` and the
    pull commit, all committed; git can find the credential without it. With any scheme
    but ssh (http(s), git+https, ftp(s), …) anything before the @ is refused: a bare token
    there (`https://TOKEN@host/…`) looks like a user name, and the secret scanner knows
    only some tokens' shapes. ssh's `git@` is a user name: ssh's keys are never in the URL.
    `name`: the URL is already registered as [synapse.NAME] (pull), so the error says
    where to change it.
    """
    m = USERINFO_RE.match(url)
    web = bool(m) and not url.lower().startswith(SSH_SCHEMES)
    if (m and (web or ":" in m.group(1))) or _secrets_in(brain, url):
        # the URL itself is not repeated: an error message ends up in logs too
        what = " (or a user name) before its @" if web else ""
        hint = ("let a git credential helper give the token (a user name too: git config "
                "credential.https://host.username NAME), or use an ssh URL: git@host:owner/brain.git")
        if name is not None:
            from pamd.ops.check import key_line

            line = key_line(brain.read(CONFIG) or "", f"synapse.{name}.url")
            raise PamdError(
                f"synapse {name}'s url ({CONFIG}:{line}) holds a password or token{what}, in clear",
                f"change [synapse.{name}] url in {CONFIG} to a plain URL "
                f"(https://host/owner/brain.git) or stop pulling it with `pamd synapse remove {name}`; {hint}",
            )
        raise PamdError(
            f"the synapse URL holds a password or token{what}, which pamd would commit in clear",
            f"keep the URL plain (https://host/owner/brain.git) and {hint}",
        )
    return url


def shown(url: str) -> str:
    """`url` for an error message: whatever stands before a URL's @ is left out (a scheme
    URL's userinfo, or an scp-like `user:password@host:path`'s)."""
    m = USERINFO_RE.match(url) or SCP_USERINFO_RE.match(url)
    return url if not m else url[: m.start(1)] + "…" + url[m.end(1):]


def _secrets_in(brain: Brain, text: str) -> bool:
    from pamd.ops.redaction import redactor

    return bool(redactor(brain.config).find(text))


def remotes(brain: Brain) -> dict[str, Peer]:
    """Registered remotes: every `[synapse.NAME]` table. One without a usable `url` (a table
    written by hand: `uri = …`, `url = 5`, `url = ""`) or with a `ref` that is no string is
    refused, naming its line: left out, pull said "no synapse remotes" and add "already
    registered"."""
    from pamd.ops.check import key_line

    out = {}
    for name, table in peers(brain.config).items():
        if table is None:
            continue  # a key of [synapse] that is no table
        url, ref = table.url, table.ref
        bad = ("url", 'url = "…" (the git URL or path of the other brain)') \
            if not isinstance(url, str) or not url.strip() else \
            ("ref", 'ref = "BRANCH" (a string), or no ref') if not isinstance(ref, str) else None
        if bad:
            text = brain.read(CONFIG) or ""
            line = key_line(text, f"synapse.{name}.{bad[0]}")
            if line == 1:
                line = next((n for n, ln in enumerate(text.split("\n"), 1)
                             if ln.strip().replace(" ", "") == f"[synapse.{name}]"), 1)
            raise PamdError(f"{CONFIG}:{line}: [synapse.{name}] needs {bad[1]}",
                            f"fix it in {CONFIG}, or `pamd synapse remove {name}` takes the table out")
        out[name] = table
    return out


def synapse_files(brain: Brain) -> list[str]:
    """Every pulled Markdown file (brain-relative), for the recall index."""
    base = brain.path(SYNAPSE_DIR)
    if not base.is_dir():
        return []
    return sorted(p.relative_to(brain.root).as_posix() for p in base.rglob("*.md") if p.is_file())


@contextmanager
def _env(**values: str) -> Iterator[None]:
    """Set variables for the git processes started inside (GitPython copies os.environ)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# No prompt for credentials (it would hang a daemon) and no ssh host-key question.
_QUIET = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"),
}


# ---------------------------------------------------------------- fetching
def fetch(brain: Brain, name: str, url: str, ref: str = "", ref_hint: str = "") -> tuple[Path, str, str]:
    """Fetch the remote into its bare cache; return (cache, commit sha, ref used).

    `ref_hint`: what to do about a `ref` the remote lacks (default: fix it in pamd.toml)."""
    cache = brain.state_dir / "synapse" / f"{name}.git"
    fresh = not cache.exists()
    try:
        with _env(**_QUIET):
            try:
                listing = brain.repo.run("ls-remote", url)
            except PamdError:
                raise PamdError(
                    f"synapse remote {name} ({shown(url)}) is unreachable or not a git repository",
                    "check the URL or path, and your access to it",
                ) from None
            refs = {ln.split("\t", 1)[1] for ln in listing.splitlines() if "\t" in ln}
            if ref:
                want = ref if ref.startswith("refs/") or ref == "HEAD" else f"refs/heads/{ref}"
                if want not in refs:
                    raise PamdError(
                        f"synapse remote {name} has no {want}",
                        ref_hint or "fix `ref` in [synapse." + name + "]",
                    )
            elif f"refs/heads/{PUBLISH_BRANCH}" in refs:
                want = f"refs/heads/{PUBLISH_BRANCH}"
            elif "HEAD" in refs:
                want = "HEAD"
            else:
                raise PamdError(
                    f"synapse remote {name} ({shown(url)}) has no commits", "publish or commit there first"
                )
            if fresh:
                cache.parent.mkdir(parents=True, exist_ok=True)
                brain.repo.run("init", "-q", "--bare", str(cache))
            brain.repo.run(
                "--git-dir",
                str(cache),
                "fetch",
                "-q",
                "--no-tags",
                url,
                f"+{want}:refs/synapse/src",
            )
        sha = brain.repo.run(
            "--git-dir", str(cache), "rev-parse", "--verify", "refs/synapse/src^{commit}"
        )
    except BaseException:
        if fresh:
            shutil.rmtree(cache, ignore_errors=True)
        raise
    return cache, sha, want


def read_source(brain: Brain, name: str, cache: Path, sha: str) -> tuple[dict[str, str], str]:
    """MEMORY.md, DNA.md, memory/L3/*.md at `sha`, and the brain commit a publish came from."""
    gd = str(cache)
    names = [
        n
        for n in brain.repo.run("--git-dir", gd, "ls-tree", "-r", "-z", "--name-only", sha).split(
            "\0"
        )
        if n
    ]
    if CONFIG not in names and MARKER not in names:
        raise PamdError(
            f"synapse remote {name} is not a pamd brain (no {CONFIG} or {MARKER} at {sha[:8]})",
            "point it at a brain, or publish one there with `pamd synapse publish`",
        )
    wanted = [
        n
        for n in names
        if n in (MEMORY, DNA)
        or (n.startswith(L3_DIR + "/") and n.count("/") == 2 and L3_NAME.match(n.rsplit("/", 1)[1]))
    ]
    if len(wanted) > MAX_FILES:
        raise PamdError(
            f"synapse remote {name} shares {plural(len(wanted), 'file')}", f"at most {MAX_FILES} are pulled"
        )
    files = {}
    for rel in wanted:
        size = int(brain.repo.run("--git-dir", gd, "cat-file", "-s", f"{sha}:{rel}"))
        if size > MAX_FILE:
            raise PamdError(
                f"synapse remote {name}: {rel} is larger than 4 MiB", "it is not a memory file"
            )
        files[rel] = brain.repo.run("--git-dir", gd, "show", f"{sha}:{rel}") + "\n"
    origin = ""
    if MARKER in names:
        m = re.search(
            r'^source_commit\s*=\s*"([0-9a-f]{40})"',
            brain.repo.run("--git-dir", gd, "show", f"{sha}:{MARKER}"),
            re.M,
        )
        origin = m.group(1) if m else ""
    return files, origin


def dest_of(name: str, rel: str) -> str:
    if rel.startswith(L3_DIR + "/"):
        return f"{SYNAPSE_DIR}/{name}/L3/{PurePosixPath(rel).name}"
    return f"{SYNAPSE_DIR}/{name}/{rel}"


def attributed(text: str, meta: dict[str, Any]) -> str:
    """`text` with `meta` first in its frontmatter (the source's own keys kept after it)."""
    try:
        own, body, _ = split_frontmatter(text)
    except FormatError:
        own, body = {}, text.split("\n")
    merged = {**meta, **{k: v for k, v in own.items() if k not in meta}}
    return "---\n" + dump_yaml(merged) + "---\n" + "\n".join(body).rstrip("\n") + "\n"


def plan_pull(
    brain: Brain, name: str, url: str, sha: str, files: dict[str, str], origin: str
) -> Pulled:
    from pamd.ops.redaction import redactor

    out = Pulled(name, url, sha, published_from=origin)
    meta: dict[str, Any] = {"synapse": name, "source": url, "commit": sha}
    if origin:
        meta["published_from"] = origin
    secrets = redactor(brain.config)
    for rel, text in sorted(files.items()):
        # Another brain's secret must not enter this one's history either: what ingest
        # and publish refuse, a pull redacts (and its commit says how many).
        text, counts = secrets.redact(text)
        for kind, n in counts.items():
            out.redacted[kind] = out.redacted.get(kind, 0) + n
        out.changes[dest_of(name, rel)] = attributed(
            text, {**meta, "source_path": rel, "read_only": True}
        )
    for rel in folder_files(brain, name):
        if rel not in out.changes:
            out.changes[rel] = None  # gone at the source
    return out


def folder_files(brain: Brain, name: str) -> list[str]:
    """The files under synapse/NAME/ that git tracks or would add (brain-relative).

    Files git ignores (a Finder .DS_Store) are the person's: pamd can neither commit
    nor delete them in a commit, so pull and remove leave them where they are. An
    untracked file that git does not ignore is listed: the commit refuses it with how
    to clear it, rather than leaving it among the pulled knowledge.
    """
    if not brain.path(f"{SYNAPSE_DIR}/{name}").is_dir():
        return []
    out = brain.repo.run(
        "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
        f"{SYNAPSE_DIR}/{name}/",
    )
    return sorted({rel for rel in out.split("\0") if rel and brain.path(rel).is_file()})


# ---------------------------------------------------------------- the three verbs
def add(brain: Brain, name: str, url: str, ref: str = "") -> tuple[str | None, str]:
    check_name(name)
    url = check_credentials(brain, normalise_url(url))
    if name in remotes(brain) or name in peers(brain.config) or name in SYNAPSE_KEYS:
        raise PamdError(
            f"synapse {name} is already registered",
            f"edit [synapse.{name}] in {CONFIG} to change it",
        )
    if not URL_RE.match(url) and Path(url).resolve() == brain.root:
        raise PamdError("a brain cannot pull from itself", "give another brain's path or URL")
    if ref and not re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", ref):
        raise PamdError(f"bad ref {ref!r}")
    with brain.transaction() as tx:
        was = (brain.state_dir / "synapse" / f"{name}.git").exists()
        cache, sha, _ = fetch(brain, name, url, ref, ref_hint="nothing was added: give --ref a branch it has "
                              "(`git ls-remote --heads URL` lists them), or leave --ref out")
        try:
            read_source(brain, name, cache, sha)  # refuses what is not a brain
        except PamdError:
            if not was:
                shutil.rmtree(cache, ignore_errors=True)
            raise
        text = (brain.read(CONFIG) or "").rstrip("\n") + "\n"
        table = f'\n[synapse.{name}]\nurl = "{_toml_str(url)}"\n' + (
            f'ref = "{ref}"\n' if ref else ""
        )
        try:
            new = tx.commit(
                {CONFIG: text + table},
                f"pamd synapse add {name}: {one_line(url)}\n\nPamd-Run: synapse-add\nPamd-Synapse: {name}\n",
            )
        except PamdError:
            if not was:  # a refused add leaves no cache behind either
                shutil.rmtree(cache, ignore_errors=True)
            raise
    return new, sha


def pull(brain: Brain, name: str | None = None) -> tuple[str | None, list[Pulled]]:
    known = remotes(brain)
    if name is not None:
        check_name(name)
        if name not in known:
            raise PamdError(f"no synapse named {name}", "add it with `pamd synapse add NAME URL`")
        todo = {name: known[name]}
    else:
        todo = known
        if not todo:
            raise PamdError("no synapse remotes", "add one with `pamd synapse add NAME URL`")
    with brain.transaction() as tx:
        pulled = []
        for n, table in todo.items():
            check_name(n)  # a hand-edited pamd.toml gets the same checks as `add`
            check_credentials(brain, table.url, n)
            cache, sha, _ = fetch(brain, n, table.url, str(table.ref))
            files, origin = read_source(brain, n, cache, sha)
            pulled.append(plan_pull(brain, n, table.url, sha, files, origin))
        changes = {rel: text for p in pulled for rel, text in p.changes.items()}
        made = tx.commit(changes, pull_message(pulled)) if changes else None
    return made, pulled


def pull_message(pulled: list[Pulled]) -> str:
    names = ", ".join(p.name for p in pulled)
    lines = [f"pamd synapse pull: {names}", ""]
    for p in pulled:
        files = sum(1 for t in p.changes.values() if t is not None)
        lines.append(f"{p.name}: {plural(files, 'file')} from {one_line(p.url)} at {p.commit[:12]}.")
        if p.redacted:
            found = ", ".join(f"{n} {kind}" for kind, n in sorted(p.redacted.items()))
            lines.append(f"Redacted from {p.name}'s files before they were written: {found}.")
    lines += ["", "Pamd-Run: synapse-pull"]
    for p in pulled:
        lines += [
            f"Pamd-Synapse: {p.name}",
            f"Pamd-Source: {one_line(p.url)}",
            f"Pamd-Source-Commit: {p.commit}",
        ]
    return "\n".join(lines) + "\n"


def remove(brain: Brain, name: str) -> tuple[str | None, list[str]]:
    """Stop pulling `name`: its [synapse.NAME] table and synapse/NAME/ go in one commit, and
    its cache with them. Returns (the new sha or None, the pulled files removed)."""
    check_name(name)
    cache = brain.state_dir / "synapse" / f"{name}.git"
    with brain.transaction() as tx:
        changes: dict[str, str | None] = {}
        if name in peers(brain.config):
            text = without_table(brain.read(CONFIG) or "", name)
            if text is None:
                raise PamdError(
                    f"cannot take synapse {name} out of {CONFIG} by itself (not a plain "
                    f"[synapse.{name}] table)",
                    f"delete it from {CONFIG} by hand, commit, then run `pamd synapse remove {name}`",
                )
            changes[CONFIG] = text
        base = brain.path(f"{SYNAPSE_DIR}/{name}")
        files = folder_files(brain, name)
        changes.update(dict.fromkeys(files))
        if not changes and not cache.exists():
            raise PamdError(f"no synapse named {name}", "`pamd synapse list` names them")
        sha = tx.commit(changes, remove_message(name, CONFIG in changes, files)) if changes else None
        # only once the commit landed: the cache, and the folders git leaves empty
        shutil.rmtree(cache, ignore_errors=True)
        for d in sorted((p for p in base.rglob("*") if p.is_dir()), reverse=True) + [base]:
            try:
                d.rmdir()
            except OSError:
                pass  # not empty (a file git ignores) or already gone
    return sha, files


def without_table(text: str, name: str) -> str | None:
    """pamd.toml `text` without its [synapse.NAME] table; None unless exactly that table goes."""
    import copy
    import tomllib

    head = re.compile(
        rf"""^[ \t]*\[[ \t]*synapse[ \t]*\.[ \t]*(?:{name}|"{name}"|'{name}')[ \t]*\][ \t]*(?:#.*)?$"""
    )
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if head.match(ln.rstrip("\r\n"))), None)
    if start is None:
        return None
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines)
    )
    cut = end
    # Comments set apart by a blank line right above the next table are that table's.
    k = end
    while k > start + 1 and lines[k - 1].lstrip().startswith("#"):
        k -= 1
    if end < len(lines) and k < end and not lines[k - 1].strip():
        cut = k
    out = "".join(lines[:start] + lines[cut:])
    if cut == len(lines):
        out = out.rstrip("\n") + "\n"
    try:
        want = copy.deepcopy(tomllib.loads(text))
        del want["synapse"][name]
        got = tomllib.loads(out)
    except (tomllib.TOMLDecodeError, KeyError, TypeError):
        return None
    if not want["synapse"] and "synapse" not in got:
        del want["synapse"]
    return out if got == want else None


def remove_message(name: str, table: bool, files: list[str]) -> str:
    what = [f"[synapse.{name}] from {CONFIG}"] if table else []
    if files:
        what.append(f"{SYNAPSE_DIR}/{name}/ ({plural(len(files), 'file')})")
    return (
        f"pamd synapse remove {name}\n\nRemoved {' and '.join(what)}.\n\n"
        f"Pamd-Run: synapse-remove\nPamd-Synapse: {name}\n"
    )


def unregistered(brain: Brain) -> list[str]:
    """Folders under synapse/ that no [synapse.NAME] table names any more."""
    base = brain.path(SYNAPSE_DIR)
    known = remotes(brain)
    return sorted(
        p.name
        for p in (base.iterdir() if base.is_dir() else ())
        if p.is_dir() and p.name not in known and folder_files(brain, p.name)
    )


def shared_paths(brain: Brain, rev: str = "HEAD") -> list[str]:
    names = [
        n
        for n in brain.repo.run(
            "ls-tree", "-r", "-z", "--name-only", rev, "--", MEMORY, DNA, L3_DIR
        ).split("\0")
        if n
    ]
    return sorted(n for n in names if n in (MEMORY, DNA) or n.endswith(".md"))


def publish(brain: Brain, branch: str | None = None) -> tuple[str | None, str, list[str]]:
    """Commit what this agent shares to `branch`: (new sha, or None if unchanged; branch; paths)."""
    from pamd.ops.redaction import scan

    branch = branch or str(settings(brain.config).synapse.publish_branch)
    if (
        not re.fullmatch(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*", branch)
        or ".." in branch
        or branch.endswith(".lock")
    ):
        raise PamdError(f"bad branch name {branch!r}")
    head = brain.repo.head()
    if not head:
        raise PamdError("nothing to publish: the brain has no commits")
    paths = shared_paths(brain)
    found = scan(brain, paths, lambda rel: brain.repo.show(head, rel))
    if found:
        where = ", ".join(f"{f.path}:{f.line} ({f.kind})" for f in found[:3])
        raise PamdError(
            f"refusing to publish secrets: {where}", "run `pamd redact`, then publish again"
        )
    listing = brain.repo.run("ls-tree", "-r", "-z", head, "--", *paths).split("\0") if paths else []
    name, email = brain.author()
    mine = brain.repo.rev_parse(f"refs/heads/{branch}")
    prev = published_tip(brain, branch, mine)
    tmp = Path(tempfile.mkdtemp(prefix="pamd-publish-"))
    try:
        marker = tmp / MARKER
        me = _toml_str(str(settings(brain.config).brain.name))
        marker.write_text(
            f'# published by `pamd synapse publish`\nname = "{me}"\nsource_commit = "{head}"\n',
            "utf-8",
        )
        # A private index: the person's index and work tree are never touched.
        with _env(
            GIT_INDEX_FILE=str(tmp / "index"),
            GIT_AUTHOR_NAME=name,
            GIT_AUTHOR_EMAIL=email,
            GIT_COMMITTER_NAME=name,
            GIT_COMMITTER_EMAIL=email,
        ):
            brain.repo.run("read-tree", "--empty")
            for rec in filter(None, listing):
                info, rel = rec.split("\t", 1)
                mode, _, blob = info.split()
                brain.repo.run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{rel}")
            blob = brain.repo.run("hash-object", "-w", str(marker))
            brain.repo.run("update-index", "--add", "--cacheinfo", f"100644,{blob},{MARKER}")
            tree = brain.repo.run("write-tree")
            if prev and _tree_without_marker(brain, prev) == _tree_without_marker(brain, tree):
                if prev != mine:  # another clone published it: take its commit as ours
                    brain.repo.run("update-ref", f"refs/heads/{branch}", prev, *([mine] if mine else []))
                return None, branch, paths
            parents = ["-p", prev] if prev else []
            msg = (
                f"pamd synapse publish: {plural(len(paths), 'file')} from {head[:12]}\n\n"
                f"Pamd-Run: synapse-publish\nPamd-Source-Commit: {head}\n"
            )
            sha = brain.repo.run("commit-tree", tree, *parents, "-m", msg)
            brain.repo.run("update-ref", f"refs/heads/{branch}", sha, *([mine] if mine else []))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sha, branch, paths


def published_tip(brain: Brain, branch: str, mine: str | None) -> str | None:
    """The publish commit to build on: the local branch, or the same branch fetched from a
    remote when it holds the local one. Another clone of this brain (a CI runner, a second
    machine) that published and pushed first made it there; building beside it instead made
    a commit that `git push` refused as not a fast-forward."""
    tip = mine
    for remote in brain.repo.run("remote").split():
        theirs = brain.repo.rev_parse(f"refs/remotes/{remote}/{branch}")
        if theirs and theirs != tip and (tip is None or _is_ancestor(brain, tip, theirs)):
            tip = theirs
    return tip


def _is_ancestor(brain: Brain, old: str, new: str) -> bool:
    try:
        brain.repo.run("merge-base", "--is-ancestor", old, new)
    except PamdError:
        return False
    return True


def _tree_without_marker(brain: Brain, rev: str) -> str:
    # The marker names the source commit, which changes on every commit; what is
    # shared changes only when the shared files do.
    return "\n".join(
        ln
        for ln in brain.repo.run("ls-tree", "-r", rev).splitlines()
        if not ln.endswith("\t" + MARKER)
    )


def _toml_str(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
