"""The secret corpus (tests/data/secrets/corpus.py) through redaction and through a real ingest.

Every secret of every family must be gone from L0, from the whole history and from `.pamd/`,
with the name it was given kept; every look-alike (hashes, ids, placeholders, public keys,
prose about passwords) must come through unchanged.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA

from pamd.core.redact import redact

sys.path.insert(0, str(DATA / "secrets"))
import corpus  # noqa: E402

SECRETS = corpus.secrets()
LOOKALIKES = corpus.lookalikes()


def test_the_corpus_is_broad() -> None:
    assert len(SECRETS) >= 150 and len(LOOKALIKES) >= 40
    assert len({c.family for c in SECRETS}) >= 30
    assert all(c.secrets for c in SECRETS) and all(c.keep for c in LOOKALIKES)


@pytest.mark.parametrize("case", SECRETS, ids=[f"{i}-{c.family}" for i, c in enumerate(SECRETS)])
def test_every_secret_is_redacted_and_its_name_kept(case) -> None:
    out, _ = redact(case.text)
    assert corpus.leaked(case, out) == [], out
    assert corpus.lost(case, out) == [], out
    # as a tool call's arguments or a JSON tool output hold it: one string, newlines as `\n`
    out, _ = redact(json.dumps({"command": f"cd /srv/app\n{case.text}"}))
    back = json.loads(out)["command"]
    assert corpus.leaked(case, back) == [], back
    assert corpus.lost(case, back) == [], back


@pytest.mark.parametrize("case", LOOKALIKES, ids=[f"{i}" for i in range(len(LOOKALIKES))])
def test_a_lookalike_is_kept_whole(case) -> None:
    assert redact(case.text) == (case.text, {})
    escaped = json.dumps({"command": case.text})
    assert redact(escaped) == (escaped, {})


def _entries(root: Path) -> dict[str, str]:
    """Each L0 entry's text by the corpus marker it holds (the call and its output: two)."""
    found: dict[str, str] = {}
    for path in sorted((root / "memory" / "L0").glob("*.md")):
        for entry in path.read_text().split("\n### ")[1:]:
            m = re.search(r"zq\d{4}", entry)
            if m:
                found[m.group(0)] = found.get(m.group(0), "") + "\n" + entry
    return found


def _everything(root: Path) -> str:
    """What a reader of the brain can find: history of every ref, and every file under .pamd/."""
    history = subprocess.run(["git", "log", "-p", "--all", "--format=%H%n%B"], cwd=root, check=True,
                             capture_output=True, text=True).stdout
    pamd = "\n".join(p.read_bytes().decode("utf-8", "replace") for p in (root / ".pamd").rglob("*") if p.is_file())
    return history + "\n" + pamd


def test_a_session_full_of_secrets_leaves_none_in_the_brain(brain, tmp_path) -> None:
    cases = SECRETS + LOOKALIKES
    session = tmp_path / "session.jsonl"
    session.write_bytes(corpus.session_jsonl(cases))
    code, out, err = brain("ingest", str(session))
    assert code == 0, err
    entries = _entries(brain.cwd)
    l0 = "\n".join(entries.values())
    anywhere = _everything(brain.cwd) + l0
    leaks = {f"{i} {c.family}": corpus.leaked(c, anywhere) for i, c in enumerate(SECRETS)}
    assert {k: v for k, v in leaks.items() if v} == {}
    for i, case in enumerate(cases):
        assert corpus.marker(i) in entries, f"case {i} ({case.family}) was not stored"
    for i, case in enumerate(LOOKALIKES, start=len(SECRETS)):
        text = entries[corpus.marker(i)]
        assert "[REDACTED" not in text, text
        assert corpus.lost(case, text) == [], text


def test_the_hook_and_pamd_redact_use_the_same_rules(brain) -> None:
    """A person pastes the corpus into a note: the pamd-secrets hook names a line for every
    secret, `pamd redact` leaves none, and the look-alikes in the same file stay as they were."""
    root = brain.cwd
    note = root / "notes.md"
    parts = [f"## {corpus.marker(i)}\n\n{c.text}\n" for i, c in enumerate(SECRETS + LOOKALIKES)]
    note.write_text("\n".join(parts))
    r = subprocess.run([sys.executable, "-m", "pamd.hooks", "secrets", "notes.md"], cwd=root,
                       capture_output=True, text=True)
    assert r.returncode == 1
    flagged = {int(m) for m in re.findall(r"^notes\.md:(\d+):", r.stdout, re.MULTILINE)}
    start = 1
    for i, (case, part) in enumerate(zip(SECRETS + LOOKALIKES, parts, strict=True)):
        lines = range(start, start + part.count("\n") + 1)
        start += part.count("\n") + 1
        assert bool(flagged & set(lines)) == (i < len(SECRETS)), (i, case.family, r.stdout[:2000])
    subprocess.run(["git", "add", "notes.md"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "notes", "--no-verify"], cwd=root, check=True)
    code, out, err = brain("redact")
    assert code == 0, err
    cleaned = note.read_text()
    assert {i: corpus.leaked(c, cleaned) for i, c in enumerate(SECRETS) if corpus.leaked(c, cleaned)} == {}
    assert [c.keep for c in SECRETS + LOOKALIKES if corpus.lost(c, cleaned)] == []
