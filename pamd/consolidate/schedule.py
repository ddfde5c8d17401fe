"""What is due, and the daemon that runs it: compact every N minutes, defrag nightly.

Due-ness is read from the brain's own history (the `Pamd-Now` trailer of the
last compact/defrag commit), so cron, CI, a hook and the daemon agree, and a
simulated clock (--now) works the same as the real one.

`defrag_at = "off"` leaves the nightly defrag to something else, the pull-request
workflow of `pamd init --ci`: a defrag on a branch under review is not in HEAD's
history, so without it run-due and the daemon would defrag main as well, unreviewed.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from datetime import UTC, datetime, timedelta

from pamd.core.config import clock_time, is_off, settings
from pamd.core.entry import parse_time
from pamd.core.message import trailer_blocks
from pamd.edge.brain import Brain
from pamd.errors import PamdError

log = logging.getLogger("pamd.daemon")
# SIGHUP: the terminal the daemon was started from closed (unless `nohup` ignores it)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
IDLE = "idle-runs.json"
AHEAD = "warned-ahead"  # in IDLE: the future run date run-due has warned about


def last_run(brain: Brain, mode: str, now: datetime | None = None) -> datetime | None:
    """When `mode` last ran: its last commit's Pamd-Now, or a later run that had nothing to do.

    With `now`, a run dated after it is not counted: one run with the clock ahead (a `--now`
    typo, a bad RTC) would else keep its mode from being due until that date (see ahead())."""
    times = _last_times(brain, mode)
    if now is not None:
        times = [t for t in times if t <= now]
    return max(times) if times else None


def _last_times(brain: Brain, mode: str) -> list[datetime]:
    times = []
    if brain.repo.head():
        # Leading blanks allowed: `git merge --squash` indents each squashed message by four.
        out = brain.repo.log("-1", f"--grep=^[[:space:]]*Pamd-Run: {mode}[[:space:]]*$", "--format=%B")
        times += run_times(out, mode)
    idle = _idle_runs(brain).get(mode)
    if idle:
        times.append(parse_time(idle))
    return times


def ahead(brain: Brain, now: datetime, once: bool = False) -> str | None:
    """A warning if the last compact or defrag is dated after `now` (its Pamd-Now, or the idle
    run pamd noted): a clock was ahead then, or is behind now. due() does not count such a run,
    so what is due runs. `once`: said for a given date only the first time (run-due from cron
    would else say it every half hour until a compaction commits); noted in the state dir."""
    from pamd.core.entry import fmt_time
    from pamd.edge.files import write_atomic

    late = [(t, mode) for mode in ("compact", "defrag") for t in _last_times(brain, mode) if t > now]
    if not late:
        return None
    t, mode = max(late)
    if once:
        runs = _idle_runs(brain)
        if runs.get(AHEAD) == fmt_time(t):
            return None
        runs[AHEAD] = fmt_time(t)
        write_atomic(brain.state_dir / IDLE, json.dumps(runs))
    return (f"the last {mode} is dated {fmt_time(t)} (its Pamd-Now), later than now ({fmt_time(now)}): "
            f"a clock was ahead then or is behind now; it is not counted, so what is due runs")


def run_times(message: str, mode: str) -> list[datetime]:
    """The Pamd-Now after each `Pamd-Run: mode` line of a commit message.

    A plain pamd commit has one pair, as trailers; a squash merge holds one per
    squashed commit, indented (git's default message) or inside the pull
    request's description (GitHub's "title and description" setting)."""
    out: list[datetime] = []
    inside = False
    # Only trailer blocks: a title or body line never counts, whatever text reached it.
    for key, value in (pair for block in trailer_blocks(message) for pair in block):
        if key == "Pamd-Run":
            inside = value.strip() == mode
        elif key == "Pamd-Now" and inside:
            inside = False
            try:
                out.append(parse_time(value.strip()))
            except ValueError:
                continue
    return out


def _idle_runs(brain: Brain) -> dict[str, str]:
    try:
        return json.loads((brain.state_dir / IDLE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}


def note_idle_run(brain: Brain, mode: str, now: datetime) -> None:
    """A run with nothing to do makes no commit; remember it locally so it is not due again."""
    from pamd.core.entry import fmt_time
    from pamd.edge.files import write_atomic

    runs = _idle_runs(brain)
    runs[mode] = fmt_time(now)
    write_atomic(brain.state_dir / IDLE, json.dumps(runs))


def defrag_off(at: str) -> bool:
    """Whether the nightly defrag is switched off (`"off"`); a bad time is refused."""
    if is_off(at):
        return True
    if clock_time(at) is None:
        raise PamdError(f"bad defrag time {at!r}", 'use "HH:MM", 00:00 to 23:59 UTC, or "off"')
    return False


def defrag_slot(now: datetime, at: str) -> datetime:
    """The most recent scheduled defrag time at or before `now` (UTC)."""
    hhmm = clock_time(at)
    if hhmm is None:
        raise PamdError(f"bad defrag time {at!r}", 'use "HH:MM", 00:00 to 23:59 UTC, or "off"')
    hh, mm = hhmm
    slot = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    return slot if slot <= now else slot - timedelta(days=1)


def due(brain: Brain, now: datetime, compact_minutes: float | None = None,
        defrag_at: str | None = None) -> list[str]:
    """What should run at `now`; the daemon's --compact-every/--defrag-at override the config."""
    sc = settings(brain.config).schedule
    at = str(sc.defrag_at) if defrag_at is None else defrag_at
    minutes = float(sc.compact_every_minutes) if compact_minutes is None else compact_minutes
    out = []
    last = last_run(brain, "defrag", now)
    if not defrag_off(at) and (last is None or last < defrag_slot(now, at)):
        out.append("defrag")
    # A defrag does everything a compact does, so it counts as one.
    last_c = max((t for t in (last_run(brain, "compact", now), last) if t), default=None)
    every = timedelta(minutes=minutes)
    if "defrag" not in out and (last_c is None or now - last_c >= every):
        out.append("compact")  # a defrag includes everything a compact does
    return out


def run_due(brain: Brain, now: datetime) -> list[tuple[str, str | None, list[str]]]:
    """Each due run: its mode, its commit, and its warnings (the summarizer's notes, such as
    a fallback to extractive, and a line on LLM work it paid for in vain)."""
    from pamd.consolidate.compaction import run, run_warnings

    done = []
    for mode in due(brain, now):
        out = run(brain, now, mode)
        if out.sha is None:
            note_idle_run(brain, mode, now)
        done.append((mode, out.sha, run_warnings(out)))
    return done


def held_signals(fn):
    """`fn`, run with SIGTERM/SIGINT/SIGHUP held back: Ctrl-C in a terminal and a service manager's
    stop (systemd signals every process of the unit) go to the whole process group, and
    killed the run's git children (and a brain's hook) mid-commit. Blocked, a signal waits
    for the daemon's handler, which stops the daemon once `fn` is over; ignored too, since
    children inherit the disposition (a hook's shell clears the blocked mask, but keeps a
    signal ignored at its start ignored). Linux keeps a blocked signal pending even while
    it is ignored, so none is lost (but setting SIG_IGN again would drop it: not nested)."""
    def held(*args, **kwargs):
        old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        if set(STOP_SIGNALS) <= old:  # inside a held call already
            return fn(*args, **kwargs)
        # one that came between the block and the ignore is pending, and SIG_IGN discards a
        # pending signal (POSIX): noted here, raised again once the handlers are back
        early = signal.sigpending() & set(STOP_SIGNALS)
        handlers = {s: signal.signal(s, signal.SIG_IGN) for s in STOP_SIGNALS}
        try:
            return fn(*args, **kwargs)
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
            for s in early:
                signal.raise_signal(s)
    return held


def daemon(brain: Brain, compact_minutes: float | None = None, defrag_at: str | None = None,
           stop: threading.Event | None = None, clock=None) -> int:
    """Run until SIGTERM/SIGINT/SIGHUP (one ignored at start, as `nohup` does, stays ignored);
    each job logs one line; a failing run is logged, not fatal.

    `clock()` is the UTC time (default: the real one; tests move it)."""
    import schedule

    from pamd.consolidate.compaction import run, summarizer_notes, unrecorded_spend

    stop = stop or threading.Event()
    sc = settings(brain.config).schedule
    minutes = float(sc.compact_every_minutes if compact_minutes is None else compact_minutes)
    if not minutes > 0:
        raise PamdError(f"the compact interval must be above 0 minutes, got {minutes:g}")
    at = str(sc.defrag_at) if defrag_at is None else defrag_at
    off = defrag_off(at)  # a bad time is refused before the daemon starts

    clock = clock or (lambda: datetime.now(UTC))

    @held_signals
    def job(mode: str) -> bool:
        """One run, logged in one line; whether it went through (committed or had nothing to do)."""
        now = clock().replace(microsecond=0)
        note = None
        # A failed defrag is not left to the next night: the compact job asks due() again.
        again = f"; trying again with the next compact run, in {minutes:g} min" if mode == "defrag" else ""
        try:
            # A fresh Brain per run: it reads pamd.toml again, so a committed change of author,
            # budgets or summarizer applies from the next run on (the schedule itself is fixed at start).
            fresh = Brain(brain.root)
            out = run(fresh, now, mode)
            if out.sha is None:
                note_idle_run(fresh, mode, now)
                if spent := unrecorded_spend(out):
                    log.warning("%s: %s", mode, spent)
            else:
                from pamd.recall.refresh import after_commit

                note = after_commit(fresh)
                if loaded := sys.modules.get("pamd.recall.embed"):
                    loaded.unload()  # ~230 MB a daemon would hold for the next commit, 30 min on
            # the commit's subject says the mode ("pamd compact: 1 entry into 1 summary"), and
            # the log format starts "pamd ": said once, as the lines of an idle run read
            subject = out.message.split("\n", 1)[0].removeprefix("pamd ")
            line = subject if out.sha else f"{mode}: nothing to do"
            # a fallback (the LLM down, its key refused…) is said in the run's own line
            notes = summarizer_notes(out)
            log.log(logging.WARNING if notes else logging.INFO, "%s",
                    "; ".join([line, *(f"warning: {n}" for n in notes)]))
            if note:
                log.info("%s", note)  # after the run's own line
        except PamdError as exc:
            log.warning("%s failed: %s%s", mode, exc, again)
            return False
        except Exception:  # a bug or the OS (a full disk): said in full; the next run tries again
            log.exception("%s failed unexpectedly%s", mode, again)
            return False
        return True

    retry_defrag = False  # the last defrag failed: the compact job runs what is due instead

    @held_signals
    def run_what_is_due() -> None:
        """What `pamd run-due` would run now, from the brain's history: so a defrag (or a
        compact) missed while the machine was off or asleep runs at start or on waking,
        and a failed one with the next compact job (at the compact interval, no sooner)."""
        nonlocal retry_defrag
        try:
            modes = due(Brain(brain.root), clock().replace(microsecond=0), minutes, at)
        except PamdError as exc:
            log.warning("cannot tell what is due: %s", exc)
            return
        except Exception:  # noqa: BLE001 - as for a run: said in full, the daemon goes on
            log.exception("cannot tell what is due")
            return
        retry_defrag = False
        for mode in modes:
            if not job(mode) and mode == "defrag":
                retry_defrag = True

    def compact_job() -> None:
        if retry_defrag:
            run_what_is_due()  # the defrag if still due (cron or CI may have run it meanwhile)
        else:
            job("compact")

    sched = schedule.Scheduler()
    interval = max(1, round(minutes * 60))
    compacting = sched.every(interval).seconds.do(compact_job)
    # defrag_at is UTC, and so is this clock: `schedule`'s daily .at() counts in local
    # time, computed once, which an hour's DST change would shift for half the year.
    # Each time a new slot passes (also across a suspend: the clock jumps past it),
    # the brain's history decides, as for run-due: a defrag cron or CI already ran is not redone.
    seen_slot = None if off else defrag_slot(clock(), at)

    def defrag_when_due() -> None:
        nonlocal seen_slot
        if off:
            return
        slot = defrag_slot(clock(), at)
        if slot != seen_slot:
            seen_slot = slot
            run_what_is_due()

    def on_signal(signum, frame) -> None:
        log.info("received signal %d; stopping after the current run", signum)
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS if signal.getsignal(s) != signal.SIG_IGN}
    log.info("daemon on %s: compact every %g min, %s", brain.root, minutes,
             "no defrag (defrag_at is off)" if off else f"defrag daily at {at} UTC")
    try:
        run_what_is_due()  # what was missed before the start (the machine was off at defrag_at)
        while not stop.is_set():
            # `schedule` counts in naive local time: a clock set back (by hand, NTP) or the end
            # of DST in the local zone would leave the next compaction that much further ahead.
            late = (sched.idle_seconds or 0) - interval
            if late > 0:
                compacting.next_run -= timedelta(seconds=late)
            # the defrag first: waking past defrag_at with a compaction overdue too, the defrag
            # does its work in one commit, and the compaction then finds nothing to do
            defrag_when_due()
            sched.run_pending()
            stop.wait(min(1.0, max(0.05, sched.idle_seconds or 1.0)))
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    log.info("daemon stopped")
    return 0

