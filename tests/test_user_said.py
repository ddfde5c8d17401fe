"""What the person said, and what the agent's commits were, as STATE and the summaries keep them.

A person writes little in an agent's session, and every line of it steers the work: what
they typed, their answer to a question the agent asked with options (Claude Code's
AskUserQuestion), and what they said after refusing a tool call. STATE.md keeps them
(`user_said`, with the question a short reply answers) after their messages are
summarised or dropped. A commit is named by the hash git reported, and a commit a hook
refused is not called done.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from test_boot_quality import Session, _boot, _cli, age

from pamd.consolidate.summarizers import facts
from pamd.consolidate.summarizers.base import Group
from pamd.consolidate.summarizers.extractive import ExtractiveSummarizer
from pamd.core.entry import Entry
from pamd.core.fmt import split_frontmatter
from pamd.myelin.snapshot import DONE_ITEMS, USER_ITEMS, said_besides, snapshot

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ANSWER = ('[tool result] User has answered your questions: "The pre-commit hook blocks on old dialyzer '
          'issues. How should we proceed?"="main was clean; fix the issues", "Which \\"rig\\"?"="No rig". '
          "You can now continue with the user's answers in mind.")
REFUSED = ("[tool error] The user doesn't want to proceed with this tool use. The tool use was rejected "
           "(eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing")


def _entries(rows: list[tuple[str, str]], start: datetime = T0) -> list[Entry]:
    return [Entry(id=f"e-{i:012d}", ts=start + timedelta(minutes=i), role=role, text=text)
            for i, (role, text) in enumerate(rows)]


def test_answers_to_the_agents_questions_are_read_with_their_questions():
    assert facts.answered(ANSWER) == [
        'Asked "The pre-commit hook blocks on old dialyzer issues. How should we proceed?": '
        'the user answered "main was clean; fix the issues"',
        'Asked "Which "rig"?": the user answered "No rig"']
    assert facts.answered("[tool result] The user answered nothing here") == []


def test_a_commits_hash_and_subject_come_from_what_git_printed():
    made = facts.commit_made("[tool result] [spotter-fum af81c43] test: add coverage (fum.4)\n 8 files changed")
    assert made == ("af81c43", "test: add coverage (fum.4)")
    assert facts.commit_made("[main (root-commit) 4f2e1c0a9] init") == ("4f2e1c0", "init")
    assert facts.commit_made("[tool result] [main] not a commit") is None
    assert facts.with_hash('Committed "test: add coverage (fum.4)": body', made) == \
        'Committed af81c43 "test: add coverage (fum.4)": body'
    assert facts.with_hash('Committed "other"', made) == 'Committed "other"'
    cmd = "git add -A && git commit -m \"$(cat <<'EOF'\nfeat: GBP export\n\nBody.\nEOF\n)\""
    assert facts.commit_subject(cmd) == "feat: GBP export"
    assert facts.failed_commit('Committed "feat: GBP export": Body', "feat: GBP export") == \
        'Commit "feat: GBP export" failed'


def test_state_keeps_what_the_person_said_with_the_question_each_short_reply_answers():
    es = _entries([
        ("user", "Implement the GBP export for billing"),
        ("assistant", "The hook fails on old code. Should I skip it with --no-verify or fix the old issues?"),
        ("user", "fix them, main was clean"),
        ("assistant", '[tool TaskOutput] {"task_id": "b0be39e", "block": true}'),
        ("tool", REFUSED),
        ("user", "[Request interrupted by user for tool use]"),
        ("user", "check again"),
        ("user", "<task-notification>\n<task-id>b0be39e</task-id>\n<status>completed</status>"),
        ("user", "continue"),
        ("assistant", '[tool AskUserQuestion] {"questions": [{"question": "How should we proceed?"}]}'),
        ("tool", ANSWER),
        ("assistant", "Deployed. Anything else?"),
        ("user", "did you push?"),
        ("user", "Deploy billing to staging, then start on the PDF invoices."),
    ])
    st = snapshot(es, T0 + timedelta(hours=1))
    assert st["user_said"] == [
        "Implement the GBP export for billing (2026-03-02 09:00)",
        '(to "Should I skip it with --no-verify or fix the old issues?") fix them, main was clean (2026-03-02 09:02)',
        "(after refusing TaskOutput) check again (2026-03-02 09:06)",
        'Asked "The pre-commit hook blocks on old dialyzer issues. How should we proceed?": '
        'the user answered "main was clean; fix the issues" (2026-03-02 09:10)',
        'Asked "Which "rig"?": the user answered "No rig" (2026-03-02 09:10)',
        '(to "Anything else?") did you push? (2026-03-02 09:12)',
        "Deploy billing to staging, then start on the PDF invoices. (2026-03-02 09:13)",
    ], st["user_said"]
    assert st["last_instruction"] == "Deploy billing to staging, then start on the PDF invoices."
    # boot shows the last instruction under its own label, not twice
    assert said_besides(st["user_said"], st["last_instruction"]) == st["user_said"][:-1]

    # a week on, the messages are gone from the tree: STATE still has them, in order, once
    later = _entries([("user", "did you push?"), ("user", "Ship the PDF invoices next.")], T0 + timedelta(days=7))
    again = snapshot(later, T0 + timedelta(days=7, hours=1), previous=st)
    assert again["user_said"][:4] == st["user_said"][:4], again["user_said"]
    assert sum("did you push?" in s for s in again["user_said"]) == 1
    assert again["user_said"][-3].startswith("Deploy billing to staging"), again["user_said"]
    assert again["user_said"][-1].startswith("Ship the PDF invoices next."), again["user_said"]

    many = _entries([("user", f"Look at report {i} again") for i in range(USER_ITEMS + 5)])
    assert len(snapshot(many, T0 + timedelta(hours=1))["user_said"]) == USER_ITEMS


def test_state_names_a_commit_by_its_hash_and_never_calls_a_refused_one_done():
    commit = '[tool Bash] {"command": "git commit -m \\"feat: GBP export\\""}'
    es = _entries([("assistant", commit),
                   ("tool", "[tool error] Pre-commit validation failed:\n[FORMAT] Code is not formatted."),
                   ("assistant", '[tool Bash] {"command": "git commit -m \\"fix: round rates\\""}'),
                   ("tool", "[tool error] Exit code 1\nmix format failed"),
                   ("assistant", commit),
                   ("tool", "[tool result] [main 4f2e1c0] feat: GBP export\n 2 files changed")])
    assert snapshot(es, T0 + timedelta(hours=1))["done"] == ['Committed 4f2e1c0 "feat: GBP export" (2026-03-02)']


def test_state_keeps_each_commit_done_and_its_hash():
    """Done items were told apart by the words before their first colon, and a commit's
    subject has one of its own ("feat: …"): every commit without a hash was one item,
    and STATE.md kept the last of them. The same commit told with its hash and with its
    body is one item that keeps both."""
    rows = [("assistant", f'[tool Bash] {{"command": "git commit -m \\"feat: {w}\\""}}')
            for w in ("add the export", "add the checksum")]
    es = _entries(rows)
    es.append(Entry(id="s-000000000002", ts=T0 + timedelta(minutes=5), role="assistant", tier="L1",
                    sources=("e-000000000009",),
                    text='assistant: Committed 9a8b7c6 "fix: round rates"; '
                         'Committed "fix: round rates": Rounds half up.'))
    done = snapshot(es, T0 + timedelta(hours=1))["done"]
    assert done == ['Committed "feat: add the export" (2026-03-02)', 'Committed "feat: add the checksum" (2026-03-02)',
                    'Committed 9a8b7c6 "fix: round rates": Rounds half up. (2026-03-02)'], done


def test_an_instruction_followed_by_a_commit_is_no_open_work():
    es = _entries([("user", "Please add the GBP export to the billing service."),
                   ("assistant", '[tool Bash] {"command": "git commit -m \\"feat: GBP export\\""}'),
                   ("tool", "[tool result] [main 4f2e1c0] feat: GBP export\n 2 files changed")])
    st = snapshot(es, T0 + timedelta(hours=1))
    assert st["active_goals"] == [] and st["done"] == ['Committed 4f2e1c0 "feat: GBP export" (2026-03-02)'], st


def test_state_keeps_the_newest_work_done_when_summaries_hold_older_work():
    """STATE.md carries work done whose raw messages were summarised away; it was put before
    what the tree's summaries still held, so the cut to the last DONE_ITEMS dropped the
    newest work (an epic's last closes and commits) and kept older closes a day summary
    named. Items are ordered by the day they were done, which STATE.md now writes."""
    older = "; ".join(f"Closed app-{i}" for i in range(DONE_ITEMS))
    es = [Entry(id="s-000000000001", ts=T0, role="assistant", text=f"{older} (2026-03-02)",
                tier="L2", sources=("e-000000000001",))]
    newer = [f"Closed app-{DONE_ITEMS + i}: shipped (2026-03-04)" for i in range(DONE_ITEMS)]
    done = snapshot(es, T0 + timedelta(days=3), {"done": newer})["done"]
    assert done == newer, done
    again = snapshot(es, T0 + timedelta(days=3), {"done": done})["done"]
    assert again == newer  # carried as it was written, day and all
    # an item of an older STATE.md, with no day, is the first to go
    done = snapshot(es, T0 + timedelta(days=3), {"done": ["Closed app-old"]})["done"]
    assert "Closed app-old" not in done and done[0] == "Closed app-0 (2026-03-02)", done


def test_a_summary_keeps_the_persons_answer_and_the_commits_hash_and_not_a_refused_commit():
    rows = [("assistant", "Two options: skip the hook, or fix the pre-existing issues."),
            ("assistant", '[tool AskUserQuestion] {"questions": [{"question": "How should we proceed?"}]}'),
            ("tool", ANSWER),
            ("assistant", '[tool Bash] {"command": "git commit -m \\"fix: round GBP rates\\""}'),
            ("tool", "[tool error] Pre-commit validation failed:\n[DIALYZER] 3 errors"),
            ("assistant", '[tool Bash] {"command": "git commit -m \\"feat: GBP export for billing\\""}'),
            ("tool", "[tool result] [main 4f2e1c0] feat: GBP export for billing\n 2 files changed")]
    es = tuple(_entries(rows))
    text = ExtractiveSummarizer().summarize([Group("g", "L1", es, 400)])[0][0]
    assert 'user: Asked "The pre-commit hook blocks on old dialyzer issues. How should we proceed?": ' \
           'the user answered "main was clean; fix the issues"' in text, text
    assert 'Committed 4f2e1c0 "feat: GBP export for billing"' in text, text
    assert text.count("4f2e1c0") == 1, text
    assert 'Committed "fix: round GBP rates"' not in text and 'Commit "fix: round GBP rates" failed' in text, text

    # the output alone (its call summarised before) still names the commit
    alone = ExtractiveSummarizer().summarize([Group("g", "L1", es[-1:], 400)])[0][0]
    assert 'Committed 4f2e1c0 "feat: GBP export for billing"' in alone, alone


def test_an_aged_brain_boots_with_what_the_person_said_and_decided(tmp_path):
    """Through the CLI as the hooks and run-due do it: the person's answer is ingested as a
    fact of its own, outlives its raw message, and boot shows it a week later."""
    root = tmp_path / "brain"
    assert _cli(tmp_path, "init", str(root), now="2026-03-01T00:00:00Z")[0] == 0
    s = Session("s-ask", datetime(2026, 3, 2, 9, 0))
    s.user("Add a GBP export to the billing service.")
    s.tool("Bash", {"command": "mix test 2>&1 | tail -3"}, "12 tests, 0 failures")
    s.tool("AskUserQuestion", {"questions": [{"question": "Round GBP rates to 2 or 4 places?",
                                              "options": [{"label": "2"}, {"label": "4"}]}]},
           'User has answered your questions: "Round GBP rates to 2 or 4 places?"="4 places, as the bank does". '
           "You can now continue with the user's answers in mind.")
    s.tool("Bash", {"command": "git commit -qam \"feat: GBP export\""}, "[main 4f2e1c0] feat: GBP export")
    s.say("The GBP export is committed as 4f2e1c0, with rates rounded to 4 places.")
    s.user("thanks, now the PDF invoices please")
    end = s.write(tmp_path / "s.jsonl")
    assert _cli(root, "ingest", str(tmp_path / "s.jsonl"), now=end)[0] == 0
    age(root, datetime(2026, 3, 2, 12, 0), datetime(2026, 3, 10))
    assert not list(root.glob("memory/L0/*.md")) or "4 places" not in "".join(
        p.read_text() for p in root.glob("memory/L0/*.md"))  # the raw message is gone from L0
    meta, _, _ = split_frontmatter((root / "STATE.md").read_text(), "STATE.md")
    said = "\n".join(meta["user_said"])
    assert 'Asked "Round GBP rates to 2 or 4 places?" (2 / 4): the user answered "4 places, as the bank does"' \
        in said
    assert "Add a GBP export to the billing service." in said
    boot = _boot(root)
    assert "**The user said (oldest first):**" in boot and "4 places, as the bank does" in boot, boot
    assert 'Committed 4f2e1c0 "feat: GBP export"' in boot, boot


def test_an_answer_to_the_agents_question_is_a_fact_at_ingest(tmp_path):
    from pamd.encode import sources

    s = Session("s-fact", datetime(2026, 3, 2, 9, 0))
    s.tool("AskUserQuestion", {"questions": [{"question": "2 or 4 places?"}]},
           'User has answered your questions: "2 or 4 places?"="4". You can now continue.')
    s.tool("Read", {"file_path": "/srv/app/rates.ex"}, "defmodule Rates do\nend")
    s.write(tmp_path / "s.jsonl")
    msgs = sources.read((tmp_path / "s.jsonl").read_bytes(), "s.jsonl")
    facts_of = {m.text.split()[2]: m.fact for m in msgs if m.role == "tool"}
    assert facts_of == {"User": "answer", "defmodule": None}, facts_of


def test_a_subagents_messages_between_do_not_pair_a_reply_with_its_question_or_call():
    rows = [("parent", "assistant", "Which rate source do you want, ECB or the bank's?"),
            ("sub", "assistant", '[tool Read] {"file_path": "/srv/app/rates.ex"}'),
            ("sub", "assistant", "The rates module has three callers. Is that all?"),
            ("parent", "user", "the bank's, as before"),
            ("parent", "assistant", '[tool TaskOutput] {"task_id": "b0"}'),
            ("sub", "assistant", '[tool Bash] {"command": "mix test"}'),
            ("parent", "tool", REFUSED),
            ("parent", "user", "check again please"),
            ("parent", "tool", ANSWER)]
    es = [Entry(id=f"e-{i:012d}", ts=T0 + timedelta(minutes=i), role=role, text=text, session=s)
          for i, (s, role, text) in enumerate(rows)]
    st = snapshot(es, T0 + timedelta(hours=1))
    assert st["user_said"][:2] == [
        "(to \"Which rate source do you want, ECB or the bank's?\") the bank's, as before (2026-03-02 09:03)",
        "(after refusing TaskOutput) check again please (2026-03-02 09:07)"], st["user_said"]
    # an answer to the agent's question is what the person said, not a standing instruction
    assert st["last_instruction"] == "check again please", st
    summary = Entry(id="s-000000000001", ts=T0 + timedelta(minutes=30), role="summary", tier="L1",
                    sources=("e-1",), text='user: Asked "Fix or skip the hook?": the user answered "fix it"')
    st = snapshot([*es, summary], T0 + timedelta(hours=1))
    assert st["last_instruction"] == "check again please", st
    # read from its raw message (which names the options) and carried from there, not twice
    assert not any("Fix or skip the hook" in x for x in st["user_said"]), st["user_said"]


def test_a_choice_names_the_options_offered_and_a_persons_question_gets_the_agents_answer():
    ask = {"questions": [{"question": "The hook blocks on old issues. How should we proceed?",
                          "options": [{"label": "Skip hook (--no-verify)"}, {"label": "Fix pre-existing issues"}]}]}
    import json

    es = _entries([
        ("assistant", f"[tool AskUserQuestion] {json.dumps(ask)}"),
        ("tool", '[tool result] User has answered your questions: "The hook blocks on old issues. How should we '
                 'proceed?"="main was clean; fix the issues". You can now continue.'),
        ("user", "did you push?"),
        ("assistant", "Let me check."),
        ("assistant", '[tool Bash] {"command": "git status"}'),
        ("tool", "[tool result] Your branch is up to date with 'origin/main'."),
        ("assistant", "Yes, everything is pushed to origin/spotter-gqc and the tree is clean. The epic is closed."),
        ("user", "Now the PDF invoices, please."),
    ])
    assert snapshot(es, T0 + timedelta(hours=1))["user_said"][:2] == [
        'Asked "The hook blocks on old issues. How should we proceed?" (Skip hook (--no-verify) / Fix '
        'pre-existing issues): the user answered "main was clean; fix the issues" (2026-03-02 09:01)',
        'did you push? → the agent: "Yes, everything is pushed to origin/spotter-gqc and the tree is clean." '
        '(2026-03-02 09:02)']


def test_one_answer_told_with_and_without_its_options_is_shown_once_and_a_reply_without_its_code():
    plain = 'Asked "Fix or skip the hook?": the user answered "fix it" (2026-03-02 09:01)'
    fuller = 'Asked "Fix or skip the hook?" (Skip (--no-verify) / Fix): the user answered "fix it" (2026-03-02 09:01)'
    later = _entries([("user", "did you push?"),
                      ("assistant", "Yes — everything is pushed and clean:\n```\n$ git status\nclean\n```")])
    for before in ([plain, fuller], [fuller, plain]):
        said = snapshot(later, T0 + timedelta(hours=1), previous={"user_said": before})["user_said"]
        assert said == ['did you push? → the agent: "Yes — everything is pushed and clean" (2026-03-02 09:00)',
                        fuller], said
