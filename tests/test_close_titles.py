"""A task closed without a reason is named by the title the tracker showed for it."""

from __future__ import annotations

from datetime import datetime, timedelta

from test_boot_quality import Session, _cli, age

from pamd.consolidate.summarizers import facts
from pamd.core.fmt import split_frontmatter


def test_a_trackers_show_and_listing_lines_give_titles_and_a_status_line_does_not():
    shown = ("○ app-gqc.4 · Add a lifecycle state to annotations   [● P2 · OPEN]\nOwner: Ann · Type: task\n"
             "Created: 2026-02-11 · Updated: 2026-02-11\n\nDESCRIPTION\nAdd lifecycle state …")
    assert facts.item_titles(shown) == {"app-gqc.4": "Add a lifecycle state to annotations"}
    listed = ("1. [● P2] [epic] app-u4u: Add project filter chips to the dashboard\n"
              "○ app-obz.1 [● P1] - Fix the export (blocked by app-2)\n"
              "app-4 is now unblocked\n✓ Closed app-5: shipped\n42: some line of a file\n"
              "CHILDREN\n  ↳ ○ app-gqc.1: Extend the annotation schema ● P2")
    assert facts.item_titles(listed) == {"app-u4u": "Add project filter chips to the dashboard",
                                         "app-obz.1": "Fix the export", "app-gqc.1": "Extend the annotation schema"}
    assert facts.listed_titles("Listed by `bd ready`: app-1 Add the export, app-2 (P1) Fix it, and 3 more") == {
        "app-1": "Add the export", "app-2": "Fix it"}


def test_a_close_without_a_reason_gets_the_title_the_tracker_showed_and_keeps_it_a_week_later(brain, tmp_path):
    root = brain.cwd
    s = Session("s-annot", datetime(2026, 3, 2, 9, 0))
    s.user("Work on app-gqc.4 and close it when the tests pass.")
    s.tool("Bash", {"command": "bd show app-gqc.4"},
           "○ app-gqc.4 · Add a lifecycle state to annotations   [● P2 · OPEN]\nOwner: Ann · Type: task\n\n"
           "DESCRIPTION\nAnnotations get a state, open or closed.")
    s.tool("Bash", {"command": "bd ready"}, "📋 Ready work (2 issues with no blockers):\n\n"
           "1. [● P2] [task] app-gqc.5: Show open annotations on the review page\n"
           "2. [● P2] [task] app-gqc.6: Count closed annotations per session\n")
    s.tool("Bash", {"command": "mix test"}, "12 tests, 0 failures")
    s.tool("Bash", {"command": "bd close app-gqc.4 app-gqc.6"}, "✓ Closed app-gqc.4\n✓ Closed app-gqc.6")
    end = s.write(tmp_path / "s.jsonl")
    assert _cli(root, "ingest", str(tmp_path / "s.jsonl"), now=end)[0] == 0
    age(root, datetime(2026, 3, 2, 12, 0), datetime(2026, 3, 11), timedelta(hours=8))
    done = split_frontmatter((root / "STATE.md").read_text(), "STATE.md")[0]["done"]
    assert ("Closed app-gqc.4, app-gqc.6: app-gqc.4 Add a lifecycle state to annotations; "
            "app-gqc.6 Count closed annotations per session (2026-03-02)") in done, done
    assert sum(d.startswith("Closed app-gqc.4, app-gqc.6") for d in done) == 1, done  # once, titled
