"""STATE.md's settings and names: one line per file and setting, newest value wins, carried
from run to run past the summaries that no longer name it, bounded, merged by `pamd sync`,
and shown by boot after STATE within --chars."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from test_boot_quality import Session, _cli

from pamd.core.entry import Entry
from pamd.core.fmt import split_frontmatter
from pamd.myelin import settings_index as si

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _edit(i: int, path: str, new: str, minutes: int) -> Entry:
    import json

    args = {"file_path": path, "old_string": "x", "new_string": new}
    return Entry(id=f"e-{i:012x}", ts=T0 + timedelta(minutes=minutes), role="assistant",
                 text=f"[tool Edit] {json.dumps(args)}")


def test_one_line_per_subject_the_newest_value_wins_and_a_bare_name_does_not_replace_a_value():
    entries = [_edit(1, "/p/lib/app/registry.ex", "@ttl_seconds 60\n@sweep_every_ms 15_000", 0),
               _edit(2, "/p/scripts/start.sh", 'PORT="${APP_PORT:-1100}"', 5),
               _edit(3, "/p/lib/app/registry.ex", "@ttl_seconds 90", 30),
               _edit(4, "/p/lib/app/web.ex", 'port = System.get_env("APP_PORT")', 40)]
    got = si.index(entries, None)
    assert got[:2] == ["app/web.ex: env `APP_PORT` (2026-03-02 09:40)",
                       "app/registry.ex: `@ttl_seconds 90` (2026-03-02 09:30)"]
    assert "app/registry.ex: `@sweep_every_ms 15_000` (2026-03-02 09:00)" in got
    assert "scripts/start.sh: env `APP_PORT` (default 1100) (2026-03-02 09:05)" in got
    assert not any("@ttl_seconds 60" in line for line in got)
    # the same file's env variable named again without its default keeps the default
    again = si.index([_edit(5, "/p/scripts/start.sh", 'echo "$APP_PORT" ${APP_PORT}', 50)], got)
    assert "scripts/start.sh: env `APP_PORT` (default 1100) (2026-03-02 09:05)" in again


def test_carried_forward_a_persons_correction_holds_until_the_work_sets_it_again():
    first = si.index([_edit(1, "/p/lib/app/repo.ex", "@pool_size 10", 0)], None)
    assert first == ["app/repo.ex: `@pool_size 10` (2026-03-02 09:00)"]
    # compacted away: the list alone keeps it
    assert si.index([], first) == first
    corrected = ["app/repo.ex: `@pool_size 12` (2026-03-02 09:00)", "Staging DB: db-staging:5432"]
    same = si.index([_edit(1, "/p/lib/app/repo.ex", "@pool_size 10", 0)], corrected)
    assert same == ["Staging DB: db-staging:5432", "app/repo.ex: `@pool_size 12` (2026-03-02 09:00)"]
    later = si.index([_edit(2, "/p/lib/app/repo.ex", "@pool_size 20", 90)], corrected)
    assert "app/repo.ex: `@pool_size 20` (2026-03-02 10:30)" in later
    assert not any("@pool_size 12" in line for line in later)


def test_a_summary_fills_a_subject_the_list_lacks_and_never_replaces_a_value_seen_raw():
    said = "assistant: app/repo.ex: `@pool_size 10`, env `DB_URL`; Committed \"feat: pool\""
    summary = Entry(id="s-000000000001", ts=T0 + timedelta(hours=5), role="assistant", tier="L2",
                    sources=("e-000000000009",), text=said)
    carried = ["app/repo.ex: `@pool_size 20` (2026-03-02 10:30)"]
    got = si.index([summary], carried)
    assert got == ["app/repo.ex: env `DB_URL` (2026-03-02 14:00)", *carried]


def test_the_budget_keeps_the_newest_subjects():
    entries = [_edit(i, f"/p/lib/m{i}.ex", f"@limit_{i} {i}", i) for i in range(40)]
    got = si.index(entries, None, budget=100)
    assert 0 < len(got) < 40 and sum((len(x) + 3) // 4 for x in got) <= 100
    assert got[0].startswith("lib/m39.ex") and all("m0.ex" not in x for x in got)
    assert len(si.index(entries, None, budget=0)) == 40


def test_two_clones_lists_merge_by_subject_the_newer_value_winning():
    from pamd.ops.fmmerge import merge_doc

    def state(lines: list[str], updated: str) -> str:
        items = "".join(f"- '{x}'\n" for x in lines)
        return f"---\nkind: state\nupdated: '{updated}'\nsettings:\n{items}---\n# STATE\n"

    a = "app/repo.ex: `@pool_size 10` (2026-03-02 09:00)"
    b = "app/web.ex: env `PORT` (2026-03-02 09:10)"
    base = state([a, b], "2026-03-02T10:00:00Z")
    ours = state(["app/repo.ex: `@pool_size 20` (2026-03-03 08:00)", b], "2026-03-03T09:00:00Z")
    theirs = state(["app/repo.ex: `@pool_size 15` (2026-03-02 18:00)", "app/x.ex: `@retries 3` (2026-03-02 17:00)"],
                   "2026-03-04T09:00:00Z")
    merged = merge_doc("STATE.md", base, ours, theirs, lambda b, o, t: o)
    meta = split_frontmatter(merged, "STATE.md")[0]
    # theirs removed the PORT line and ours left it: out; each subject once, the newer value
    assert meta["settings"] == ["app/repo.ex: `@pool_size 20` (2026-03-03 08:00)",
                                "app/x.ex: `@retries 3` (2026-03-02 17:00)"]


def _settings_session(start: datetime, ttl: int, token: str) -> Session:
    s = Session("s-reg", start)
    s.user("Add a session registry with a TTL to the app and commit it.")
    s.tool("Write", {"file_path": "/home/ann/app/lib/app/session_registry.ex",
                     "content": f"defmodule App.SessionRegistry do\n  @ttl_seconds {ttl}\n  @sweep_every_ms 15_000\n"
                                "  def f, do: :ok\nend\n"}, "File created successfully.")
    s.tool("Write", {"file_path": "/home/ann/app/config/runtime.exs",
                     "content": f'import Config\nconfig :app, api_token: "{token}"\nconfig :app, pool_size: 10\n'},
           "File created successfully.")
    s.tool("Bash", {"command": "git commit -m \"feat: session registry\""}, "[main 1a2b3c4] feat: session registry")
    return s


def _state(root) -> dict:
    return split_frontmatter((root / "STATE.md").read_text(), "STATE.md")[0]


def test_settings_reach_state_and_boot_after_a_week_and_the_newest_value_wins(brain, tmp_path):
    root = brain.cwd
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    t = T0.replace(tzinfo=None)
    for i, (ttl, when) in enumerate(((120, t), (90, t + timedelta(days=1)))):
        s = _settings_session(when, ttl, token)
        end = s.write(tmp_path / f"s{i}.jsonl")
        assert _cli(root, "ingest", str(tmp_path / f"s{i}.jsonl"), now=end)[0] == 0
        assert _cli(root, "run-due", now=end)[0] == 0
    now = t + timedelta(days=1, hours=1)
    while now < t + timedelta(days=10):
        assert _cli(root, "run-due", now=now.strftime("%Y-%m-%dT%H:%M:%SZ"))[0] == 0
        now += timedelta(hours=8)
    lines = [str(x) for x in _state(root).get("settings") or []]
    assert any(x.startswith("app/session_registry.ex: `@ttl_seconds 90` (2026-03-03") for x in lines), lines
    assert not any("@ttl_seconds 120" in x for x in lines)
    assert any("@sweep_every_ms 15_000" in x for x in lines)
    assert token not in (root / "STATE.md").read_text()
    # nothing raw is left after eight days: the list kept what the summaries may not name
    assert not list((root / "memory" / "L0").glob("*.md"))
    code, out = _cli(root, "boot", now=now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert code == 0
    assert out.index("## State (STATE.md)") < out.index("## Settings and names (STATE.md)")
    assert "> - app/session_registry.ex: `@ttl_seconds 90`" in out
    tail = out.index("## Long-term memory") if "## Long-term memory" in out else len(out)
    assert out.index("## Settings and names") < tail
    assert "settings:" not in out.split("## Settings and names")[0]
    # within --chars: memory goes first, then the oldest settings, and the closing note says so
    at = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    fits = {n: _cli(root, "boot", "--chars", str(n), now=at)[1] for n in range(len(out), 600, -5)}
    assert all(len(f) <= n for n, f in fits.items())
    partial = [f for f in fits.values() if "the oldest" not in f and "1 of 2 settings of Settings and names" in f]
    assert partial, fits
    assert "> - app/session_registry.ex: `@ttl_seconds 90`" in partial[0]
    assert "all of Long-term memory" in partial[0].split("## Left out to fit")[1]


def test_settings_is_a_key_pamd_remakes_and_sync_merges_it_by_subject():
    from pamd.myelin.snapshot import SNAPSHOT_KEYS, snapshot

    assert "settings" in SNAPSHOT_KEYS
    assert snapshot([_edit(1, "/p/lib/app/repo.ex", "@pool_size 10", 0)], T0 + timedelta(hours=1))["settings"] == [
        "app/repo.ex: `@pool_size 10` (2026-03-02 09:00)"]
