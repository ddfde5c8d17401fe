"""The compaction policy as a pure function: the seed's rules, case by case."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pamd.consolidate.policy import plan_compaction
from pamd.core import config as config_mod
from pamd.core.entry import Entry, entry_id

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CFG = config_mod.defaults()


def entry(text, hours_ago, type_="context", importance=0.5, tier="L0", sources=(), recalls=0, session="s"):
    return Entry(id=entry_id("s" if sources else "e", text), ts=NOW - timedelta(hours=hours_ago), role="user",
                 text=text, session=session, type=type_, importance=importance, tier=tier,
                 sources=tuple(sources), recalls=recalls)


def decision_of(plan, e):
    return next(d for d in plan.decisions if d.entry.id == e.id)


def test_critical_decision_from_six_hours_ago_stays_hot():
    e = entry("We decided to move billing to Postgres", 6, "decision", 0.9)
    d = decision_of(plan_compaction([e], CFG, NOW), e)
    assert d.action == "keep" and d.target == "L0"
    assert d.retention == pytest.approx(0.9 * 2.718281828 ** (-0.03 * 6), rel=1e-6)


def test_acknowledgment_from_two_minutes_ago_leaves_l0_at_once():
    ack = entry("ok", 2 / 60, "ephemeral", 0.05)
    d = decision_of(plan_compaction([ack], CFG, NOW), ack)
    assert d.action in ("compress", "drop") and d.target != "L0"


def test_ephemeral_trash_is_dropped_and_low_context_is_compressed():
    trash = entry("thanks", 1, "ephemeral", 0.1)
    ctx = entry("the staging box runs Debian 12", 5, "context", 0.5)
    plan = plan_compaction([trash, ctx], CFG, NOW)
    assert decision_of(plan, trash).action == "drop"
    d = decision_of(plan, ctx)
    assert d.action == "compress" and d.target == "L1"


@pytest.mark.parametrize("importance,hours,stays", [
    (0.25, 0.4, True), (0.25, 0.6, False),   # < 0.3: 30 minutes
    (0.5, 3.9, True), (0.5, 4.1, False),     # 0.3–0.6: 4 hours
    (0.7, 23, True), (0.7, 25, False),       # 0.6–0.8: 24 hours
    (0.85, 24 * 6.9, True), (0.85, 24 * 7.1, False),  # > 0.8: raw for 7 days
])
def test_importance_moves_the_l0_clock(importance, hours, stays):
    e = entry(f"message {importance} {hours}", hours, "user_intent", importance)
    d = decision_of(plan_compaction([e], CFG, NOW, "defrag"), e)
    assert (d.action == "keep") is stays, d.why


@pytest.mark.parametrize("hours,tier", [(5, "L1"), (13, "L2"), (24 * 4, "L3"), (24 * 8, "L4")])
def test_age_decides_the_tier_an_entry_lands_in(hours, tier):
    e = entry("the deploy pipeline uses GitHub Actions", hours, "context", 0.5)
    d = decision_of(plan_compaction([e], CFG, NOW, "defrag"), e)
    assert d.target == tier


def test_compact_stops_at_l2_and_defrag_goes_on():
    old = entry("old context", 24 * 8, "context", 0.5)
    assert decision_of(plan_compaction([old], CFG, NOW, "compact"), old).target == "L2"
    assert decision_of(plan_compaction([old], CFG, NOW, "defrag"), old).target == "L4"


@pytest.mark.parametrize("recalls,dropped", [(0, True), (2, True), (3, False), (5, False), (10, False)])
def test_a_myelinated_entry_is_never_trash(recalls, dropped):
    # Importance alone would make it trash; recalled [myelin] thin (3) times or more,
    # it is in use: it is compressed instead, and its summary keeps the recalls.
    e = entry("ok, the wifi password for the office is on the fridge", 1, "ephemeral", 0.2, recalls=recalls)
    d = decision_of(plan_compaction([e], CFG, NOW), e)
    assert (d.action == "drop") is dropped, d.why
    if not dropped:
        assert d.action == "compress" and d.target == "L1" and "myelinated" in d.why


@pytest.mark.parametrize("mode", ["compact", "defrag"])
def test_an_entry_dated_after_now_is_never_dropped(mode):
    # A run whose clock is before an entry (a skewed source, an earlier --now) must not
    # judge it: trash has a 0 h clock, and the age of a future entry clamps to 0.
    later = entry("ok", -0.1, "ephemeral", 0.05)
    plan = plan_compaction([later], CFG, NOW, mode)
    d = decision_of(plan, later)
    assert d.action == "keep" and d.target == "L0" and "after now" in d.why
    assert plan.empty


def test_compact_never_moves_an_entry_back_up_a_tier():
    # An L3 one-liner past L3's 7 days would go to L4, which only defrag writes:
    # compact keeps it in L3 (it used to re-summarise it into L2).
    l3 = entry("billing: export in EUR (2026-11-23)", 24 * 7 + 1, tier="L3", sources=["e-000000000003"])
    l2 = entry("summary of last week", 24 * 8, tier="L2", sources=["e-000000000004"])
    plan = plan_compaction([l3, l2], CFG, NOW, "compact")
    for e in (l3, l2):
        d = decision_of(plan, e)
        assert d.action == "keep" and d.target == e.tier, d.why
        assert "waits for defrag" in d.why
    assert not plan.groups
    assert decision_of(plan_compaction([l3], CFG, NOW, "defrag"), l3).target == "L4"


def test_summaries_move_on_when_past_their_tier():
    l1 = entry("summary of the morning", 13, tier="L1", sources=["e-000000000001"])
    l2 = entry("summary of monday", 24 * 4, tier="L2", sources=["e-000000000002"])
    plan = plan_compaction([l1, l2], CFG, NOW, "defrag")
    assert decision_of(plan, l1).target == "L2"
    assert decision_of(plan, l2).target == "L3"


def test_over_budget_the_lowest_retention_moves_first():
    cfg = config_mod.merge(CFG, {"tiers": {"budgets": {"L0": 30}}})
    keep_a = entry("a decision worth a lot " * 3, 1, "decision", 0.9)
    keep_b = entry("a user goal that matters " * 3, 1, "user_intent", 0.8)
    plan = plan_compaction([keep_a, keep_b], cfg, NOW)
    assert decision_of(plan, keep_b).action == "compress"  # lower retention goes first
    assert decision_of(plan, keep_a).action == "keep"
    assert "budget" in decision_of(plan, keep_b).why


def test_groups_respect_sessions_and_size():
    es = [entry(f"context line {i} " * 20, 5, session="a" if i % 2 else "b") for i in range(40)]
    plan = plan_compaction(es, CFG, NOW)
    for members in plan.groups.values():
        assert len({m.session for m in members}) == 1
        assert sum(m.tokens for m in members) <= CFG["tiers"]["group_tokens"]["L1"] + 60
    assert sum(len(m) for m in plan.groups.values()) == 40


def test_plan_is_pure_and_deterministic():
    es = [entry(f"m{i}", i, "context", 0.5) for i in range(10)]
    a = plan_compaction(es, CFG, NOW)
    b = plan_compaction(list(reversed(es)), CFG, NOW)
    assert [(d.entry.id, d.action, d.target) for d in a.decisions] == \
           [(d.entry.id, d.action, d.target) for d in b.decisions]


def test_thin_myelin_slows_decay():
    from pamd.encode.hippocampus import retention

    plain = entry("context", 10, "context", 0.5)
    thin = entry("context", 10, "context", 0.5, recalls=3)
    assert retention(thin, CFG, NOW) > retention(plain, CFG, NOW)
