"""What every LLM backend shares: batching, retries with backoff, fallback, fitting, cost.

A backend subclasses `LLMSummarizer` and implements `_call(batch, usage)`: one request
for a batch of groups that returns the answer's text (usage recorded), or raises
`Transient` (worth retrying: a rate limit, a 5xx, a dropped connection) or `Failed`
(this batch cannot be answered: a malformed body, another 4xx). A misconfiguration
only the user can fix (a rejected key, an unknown model) raises PamdError and stops
the run before anything is written.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from pamd.consolidate.summarizers import prompts
from pamd.consolidate.summarizers.base import Group, Usage
from pamd.consolidate.summarizers.extractive import ExtractiveSummarizer
from pamd.core.config import Price, SummarizerSettings
from pamd.core.console import WAITING
from pamd.core.entry import count_tokens
from pamd.core.words import plural
from pamd.errors import PamdError

log = logging.getLogger(__name__)

# Worth retrying: request timeout, rate limits and server-side failures.
TRANSIENT = frozenset({408, 429, 500, 502, 503, 504})
FALLBACKS = ("extractive", "fail")


class Transient(Exception):
    """A failure worth retrying; `delay` is the server's own wait hint in seconds, if any."""

    def __init__(self, reason: str, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.delay = delay


class Failed(Exception):
    """This batch got no usable answer; retrying the same request would not help."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LLMSummarizer:
    name = "llm"
    key_hint = "set the API key"

    def __init__(
        self,
        *,
        model: str,
        batch_size: int = SummarizerSettings.batch_size,
        max_retries: int = SummarizerSettings.max_retries,
        retry_base_delay: float = SummarizerSettings.retry_base_delay,
        retry_max_delay: float = SummarizerSettings.retry_max_delay,
        timeout: float = SummarizerSettings.timeout,
        temperature: float | None = SummarizerSettings.temperature,
        prices: Mapping[str, Price] | None = None,
        fallback: str = SummarizerSettings.fallback,
        sleep: Callable[[float], None] = time.sleep,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if fallback not in FALLBACKS:
            raise PamdError(
                f"unknown [summarizer] fallback {fallback!r}",
                f"use one of: {', '.join(FALLBACKS)}",
            )
        if batch_size < 1 or max_retries < 0:
            raise PamdError(
                "[summarizer] batch_size must be >= 1 and max_retries >= 0", "fix pamd.toml"
            )
        if not timeout > 0:  # 0 would mean "wait forever" to one client, "fail at once" to another
            raise PamdError("[summarizer] timeout must be a number of seconds above 0", "fix pamd.toml")
        self.model = model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.timeout = timeout
        self.temperature = temperature
        self.prices = dict(prices or {})
        self.fallback = fallback
        self.sleep = sleep
        self.warn = warn or _waiting

    # ------------------------------------------------------------------ public

    def summarize(self, groups: list[Group]) -> tuple[list[str], Usage]:
        usage = Usage(backend=self.name, model=self.model)
        texts: list[str] = []
        failures: Counter[str] = Counter()
        refused: Counter[str] = Counter()
        trimmed = longer = 0
        # A batch that failed after all its retries with a transient error (refused,
        # timeout, 429, 5xx) says the endpoint is down for this run: the batches left
        # fall back at once instead of each paying the whole retry schedule again.
        down = ""
        for start in range(0, len(groups), self.batch_size):
            batch = groups[start : start + self.batch_size]
            try:
                answer, reason, exhausted = (None, down, True) if down else self._ask(batch, usage)
            except PamdError as exc:  # a rejected key after batches were answered and billed
                exc.message += self._spent(usage)
                raise
            if exhausted:
                down = reason
            if answer is None:
                if self.fallback == "fail":
                    raise self._failure(reason, exhausted, batch, usage)
                failures[reason] += len(batch)
                usage.fallbacks += len(batch)
                texts.extend(ExtractiveSummarizer().summarize(batch)[0])
                continue
            for text, group in zip(answer, batch, strict=True):
                if isinstance(text, prompts.Refused):
                    if self.fallback == "fail":
                        raise self._failure(f"facts refused ({text})", False, [group], usage)
                    refused[str(text)] += 1
                    usage.fallbacks += 1
                    texts.extend(ExtractiveSummarizer().summarize([group])[0])
                    continue
                fitted, cut = prompts.fit(text, group)
                if count_tokens(fitted) > prompts.longest(group):
                    # Longer than what it replaces (a small group's budget may exceed
                    # its input): padding or invention, not a summary. The extractive
                    # text of the group stands instead.
                    longer += 1
                    usage.fallbacks += 1
                    texts.extend(ExtractiveSummarizer().summarize([group])[0])
                    continue
                trimmed += cut
                texts.append(fitted)
        for reason, n in failures.items():
            usage.notes.append(f"{self.name}: {reason}; fell back to extractive for {plural(n, 'group')}")
        for reason, n in refused.items():
            usage.notes.append(f"{self.name}: facts refused ({reason}); fell back to extractive for "
                               f"{plural(n, 'group')}")
        if longer:
            one = longer == 1
            usage.notes.append(f"{self.name}: {plural(longer, 'summary')} longer than {'its' if one else 'their'} "
                               f"input; fell back to extractive for {'it' if one else 'them'}")
        if trimmed:
            over = plural(trimmed, "over-budget summary", "over-budget summaries")
            usage.notes.append(f"{self.name}: trimmed {over}")
        usage.cost_usd = self._cost(usage)
        return texts, usage

    def _failure(self, reason: str, transient: bool, batch: list[Group], usage: Usage) -> PamdError:
        """fallback = "fail": the run stops, with what was already paid for (no commit will
        record it) and, for an answer the model refuses, advice that is not "retry later"."""
        message = f"{self.name} summarizer failed: {reason}{self._spent(usage)}"
        if transient:
            return PamdError(message, 'nothing was written; retry later or set fallback = "extractive"')
        ids = [e.id for g in batch for e in g.entries]
        more = f" and {len(ids) - 3} more" if len(ids) > 3 else ""
        return PamdError(
            message,
            "nothing was written; the same request fails the same way on every run: set "
            f'fallback = "extractive", or look at the entries it sends ({", ".join(ids[:3])}{more})',
        )

    def _spent(self, usage: Usage) -> str:
        """"; spent ..." for tokens a run that stops now was billed for, else ""."""
        if not (usage.input_tokens or usage.output_tokens):
            return ""
        cost = self._cost(usage)
        price = f", ${cost:.4f}" if cost else ""
        return (f"; spent {usage.input_tokens:,} LLM tokens in and {usage.output_tokens:,} out"
                f" ({plural(usage.requests, 'request')}{price}) that no commit records")

    # ------------------------------------------------------------------ one batch

    def _call(self, batch: list[Group], usage: Usage) -> Any:
        """The answer: its text, or its already-parsed JSON (a tool call's input)."""
        raise NotImplementedError

    def _ask(self, batch: list[Group], usage: Usage) -> tuple[list[str] | None, str, bool]:
        """(the batch's summaries, "", False), or (None, why, exhausted): exhausted when
        a transient failure outlasted the retries, not for a malformed answer."""
        reason = ""
        hint: float | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, hint))
            usage.requests += 1
            try:
                text = self._call(batch, usage)
            except Transient as exc:
                reason, hint = exc.reason, exc.delay
                if attempt < self.max_retries:
                    self.warn(f"{self.name}: {reason}, retrying in {self._delay(attempt + 1, hint):g} s")
                continue
            except Failed as exc:
                return None, exc.reason, False
            try:
                return prompts.parse_answer(text, batch), "", False
            except ValueError as exc:
                return None, f"malformed response ({exc})", False
        return None, f"{reason} after {self.max_retries} retries", True

    def _delay(self, attempt: int, hint: float | None) -> float:
        """Exponential backoff, raised to the server's own delay when it sends one."""
        delay = self.retry_base_delay * 2 ** (attempt - 1)
        if hint is not None:
            delay = max(delay, hint)
        return min(delay, self.retry_max_delay)

    def _cost(self, usage: Usage) -> float:
        price = self.prices.get(self.model) or self.prices.get(self.model.removeprefix("models/"))
        if not price:
            if (usage.input_tokens or usage.output_tokens) and not getattr(self, "free", False):
                usage.notes.append(
                    f"{self.name}: no price for {self.model} in [summarizer.prices]; "
                    "cost counted as 0"
                )
            return 0.0
        return (usage.input_tokens * float(price.input) + usage.output_tokens * float(price.output)) / 1_000_000


def _waiting(line: str) -> None:
    """Why a run sits there, for a person at `pamd compact` in a terminal. Not for cron, CI
    or the daemon's log (WAITING): a retry that cures a 503 is no news, and cron mails any
    stderr; a retry that does not cure it ends in a fallback, which is said everywhere."""
    log.info("%s", line, extra=WAITING)


def common_options(s: SummarizerSettings) -> dict[str, Any]:
    """The `[summarizer]` settings every LLM backend reads."""
    return {
        "batch_size": int(s.batch_size),
        "max_retries": int(s.max_retries),
        "retry_base_delay": float(s.retry_base_delay),
        "retry_max_delay": float(s.retry_max_delay),
        "timeout": float(s.timeout),
        "temperature": float(s.temperature),
        "prices": s.prices,
        # an empty fallback is the default one, as an unset one is
        "fallback": str(s.fallback or SummarizerSettings.fallback),
    }


def http_url(base_url: str, example: str) -> str:
    """`base_url` when it is an http(s) URL with a host; else a PamdError. httpx would call
    another scheme an UnsupportedProtocol, a transport error: retried and fallen back on
    every run, for a mistake no retry can mend."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PamdError(f"[summarizer] base_url {base_url!r} is not an http(s) URL", example)
    return base_url
