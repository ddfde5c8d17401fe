"""What a refresh embeds: a compaction's raw leaves come from the vector cache; progress on a terminal only."""

from __future__ import annotations

import json
import os
import pty
import re
import sqlite3
import subprocess
import sys

from conftest import git


def _keys(root) -> set[str]:
    db = sqlite3.connect(root / ".pamd" / "index" / "index.sqlite")
    try:
        return {k for (k,) in db.execute("SELECT key FROM chunks WHERE alive=1")}
    finally:
        db.close()


def _leaves(root) -> int:
    db = sqlite3.connect(root / ".pamd" / "index" / "index.sqlite")
    try:
        return db.execute("SELECT count(*) FROM chunks WHERE alive=1 AND ids LIKE '%,%'").fetchone()[0]
    finally:
        db.close()


ROWS = [{"ts": f"2026-11-30T08:{i:02d}:00Z", "role": "user" if i % 2 else "assistant", "session": "s",
         "text": t} for i, t in enumerate([
             "The staging database listens on port 5433 since the migration.",
             "Reviewed the dashboard colours with Anna; she prefers the darker theme.",
             "The nightly backup job writes to the bucket named pamd-archive-eu.",
             "Lunch order placed for the team offsite on Thursday.",
             "The export runs in a single pod limited to 512 MB of memory.",
             "We talked about the weather in Lisbon and the new coffee machine.",
             "The CI pipeline caches wheels under the key py311-deps.",
             "Boris owns the billing service and reviews every change to invoices.",
             "Grafana alerts page the on-call engineer after five minutes of errors.",
         ])]


def test_a_compaction_embeds_its_summaries_not_the_raw_leaves_behind_them(brain, tmp_path):
    """The leaves are the raw entries just indexed: read among the same neighbours as then,
    their vectors are in the cache. A clone reads those neighbours from history: same index."""
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    assert brain("ingest", str(f), now="2026-11-30T09:00:00Z")[0] == 0
    assert brain("index")[0] == 0
    code, out, err = brain("compact", now="2026-11-30T20:00:00Z")
    assert code == 0, err
    m = re.search(r"index: index refreshed: \d+ chunks, \+(\d+) -\d+, (\d+) embedded", out + err)
    added, embedded = int(m.group(1)), int(m.group(2))
    leaves = _leaves(brain.cwd)
    assert leaves >= 3 and embedded <= added - leaves, out + err
    original = _keys(brain.cwd)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(brain.cwd), str(clone))
    brain.cwd = clone
    assert brain("index")[0] == 0
    assert _keys(clone) == original  # the same text embedded for every chunk, leaves included


def _index_on(cwd, stderr_tty: bool) -> str:
    """`pamd index` as a subprocess, its stderr a terminal (a pty) or a pipe; what it wrote there."""
    env = {**os.environ, "PAMD_PROGRESS_AFTER": "0"}
    if stderr_tty:
        master, slave = pty.openpty()
        p = subprocess.Popen([sys.executable, "-m", "pamd", "index"], cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        got = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            got += chunk
        os.close(master)
        assert p.wait() == 0
        return got.decode("utf-8", "replace")
    p = subprocess.run([sys.executable, "-m", "pamd", "index"], cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stderr


def test_progress_is_shown_on_a_terminal_only(brain, tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    assert brain("ingest", str(f), now="2026-11-30T09:00:00Z")[0] == 0
    assert _index_on(brain.cwd, stderr_tty=False) == ""
    (brain.cwd / ".pamd" / "index").rename(tmp_path / "old-index")
    (brain.cwd / ".pamd" / "vectors.sqlite").unlink()
    shown = _index_on(brain.cwd, stderr_tty=True)
    assert re.search(rf"embedding\s.*{len(ROWS)}/{len(ROWS)}", shown), repr(shown)
    assert "\r" in shown and shown.endswith("\n")
