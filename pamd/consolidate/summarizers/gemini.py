"""Gemini backend through google-genai: batched JSON requests, retries, extractive fallback.

Configuration (`[summarizer]` in pamd.toml; environment wins for key and base URL):
  GEMINI_API_KEY (or GOOGLE_API_KEY)  the key; missing -> PamdError at construction
  PAMD_GEMINI_BASE_URL / base_url     another endpoint (a proxy, or the test stub)
  api_version                         "v1beta" (default)
  model, batch_size, max_retries, retry_base_delay, retry_max_delay, timeout,
  temperature, thinking_budget, fallback ("extractive" | "fail"), [summarizer.prices]
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from pamd.consolidate.summarizers import prompts
from pamd.consolidate.summarizers.base import Group, Usage, section
from pamd.consolidate.summarizers.extractive import ExtractiveSummarizer
from pamd.errors import PamdError

DEFAULT_MODEL = "gemini-2.5-flash"
# Worth retrying: rate limits, timeouts and server-side failures.
TRANSIENT = frozenset({408, 429, 500, 502, 503, 504})
FALLBACKS = ("extractive", "fail")


class GeminiSummarizer:
    name = "gemini"

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str = "",
        api_version: str = "v1beta",
        batch_size: int = 8,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        retry_max_delay: float = 30.0,
        timeout: float = 120.0,
        temperature: float | None = 0.2,
        thinking_budget: int | None = None,
        prices: Mapping[str, Any] | None = None,
        fallback: str = "extractive",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not api_key:
            raise PamdError(
                "GEMINI_API_KEY is not set but [summarizer] backend is \"gemini\"",
                'export GEMINI_API_KEY=..., or set backend = "extractive" in pamd.toml',
            )
        if fallback not in FALLBACKS:
            raise PamdError(
                f"unknown [summarizer] fallback {fallback!r}",
                f"use one of: {', '.join(FALLBACKS)}",
            )
        if batch_size < 1 or max_retries < 0:
            raise PamdError(
                "[summarizer] batch_size must be >= 1 and max_retries >= 0", "fix pamd.toml"
            )
        self.api_key = api_key
        self.model = model
        self.base_url = base_url
        self.api_version = api_version
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.timeout = timeout
        self.temperature = temperature
        self.thinking_budget = thinking_budget
        self.prices = dict(prices or {})
        self.fallback = fallback
        self.sleep = sleep
        self._client: Any = None

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], env: Mapping[str, str] | None = None, **kw: Any
    ) -> GeminiSummarizer:
        env = os.environ if env is None else env
        s = section(dict(config))
        thinking = s.get("thinking_budget")
        return cls(
            api_key=env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY") or "",
            model=str(s.get("model") or DEFAULT_MODEL),
            base_url=env.get("PAMD_GEMINI_BASE_URL") or str(s.get("base_url") or ""),
            api_version=str(s.get("api_version") or "v1beta"),
            batch_size=int(s.get("batch_size", 8)),
            max_retries=int(s.get("max_retries", 3)),
            retry_base_delay=float(s.get("retry_base_delay", 1.0)),
            retry_max_delay=float(s.get("retry_max_delay", 30.0)),
            timeout=float(s.get("timeout", 120.0)),
            temperature=float(s["temperature"]) if "temperature" in s else 0.2,
            thinking_budget=None if thinking is None else int(thinking),
            prices=s.get("prices") or {},
            fallback=str(s.get("fallback") or "extractive"),
            **kw,
        )

    # ------------------------------------------------------------------ public

    def summarize(self, groups: list[Group]) -> tuple[list[str], Usage]:
        usage = Usage(backend=self.name, model=self.model)
        texts: list[str] = []
        failures: Counter[str] = Counter()
        trimmed = 0
        for start in range(0, len(groups), self.batch_size):
            batch = groups[start : start + self.batch_size]
            answer, reason = self._ask(batch, usage)
            if answer is None:
                if self.fallback == "fail":
                    raise PamdError(
                        f"gemini summarizer failed: {reason}",
                        'nothing was written; retry later or set fallback = "extractive"',
                    )
                failures[reason] += len(batch)
                usage.fallbacks += len(batch)
                texts.extend(ExtractiveSummarizer().summarize(batch)[0])
                continue
            for text, group in zip(answer, batch, strict=True):
                fitted, cut = prompts.fit(text, group)
                trimmed += cut
                texts.append(fitted)
        for reason, n in failures.items():
            usage.notes.append(f"gemini: {reason}; fell back to extractive for {n} groups")
        if trimmed:
            usage.notes.append(f"gemini: trimmed {trimmed} over-budget summaries")
        usage.cost_usd = self._cost(usage)
        return texts, usage

    # ------------------------------------------------------------------ one batch

    def _ask(self, batch: list[Group], usage: Usage) -> tuple[list[str] | None, str]:
        """The batch's summaries, or (None, why) after retries/malformed answers."""
        from google.genai import errors

        client = self._get_client()
        config = self._generate_config()
        payload = prompts.request_payload(batch)
        reason = ""
        server_delay: float | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, server_delay))
            usage.requests += 1
            server_delay = None
            try:
                response = client.models.generate_content(
                    model=self.model, contents=payload, config=config
                )
            except errors.APIError as exc:
                code = int(exc.code or 0)
                reason = f"{code} {exc.status or ''}".strip()
                if code in TRANSIENT:
                    server_delay = _retry_delay(exc)
                    continue
                self._raise_if_misconfigured(exc)
                return None, f"{reason} ({(exc.message or '')[:80]})"
            except Exception as exc:  # noqa: BLE001 - transport and decoding errors
                if _is_transport(exc):
                    reason = f"network error ({type(exc).__name__})"
                    continue
                return None, f"malformed response ({type(exc).__name__})"
            _record_tokens(response, usage)
            try:
                return prompts.parse_answer(_response_text(response), len(batch)), ""
            except ValueError as exc:
                return None, f"malformed response ({exc})"
        return None, f"{reason} after {self.max_retries} retries"

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                from google import genai
                from google.genai import types
            except ImportError:
                raise PamdError(
                    "the gemini summarizer needs google-genai",
                    "pip install 'pamd[gemini]'",
                ) from None
            # v1beta pinned: google-genai 3.x defaults to v1, while structured output
            # (responseSchema) and thinkingConfig are documented on v1beta.
            options = types.HttpOptions(
                api_version=self.api_version, timeout=int(self.timeout * 1000)
            )
            if self.base_url:
                options.base_url = self.base_url
            # vertexai=False: an ambient GOOGLE_GENAI_USE_VERTEXAI must not reroute us.
            self._client = genai.Client(api_key=self.api_key, vertexai=False, http_options=options)
        return self._client

    def _generate_config(self) -> Any:
        from google.genai import types

        kw: dict[str, Any] = {
            "system_instruction": prompts.SYSTEM,
            "response_mime_type": "application/json",
            "response_schema": types.Schema(
                type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING)
            ),
        }
        if self.temperature is not None:
            kw["temperature"] = self.temperature
        if self.thinking_budget is not None:
            kw["thinking_config"] = types.ThinkingConfig(thinking_budget=self.thinking_budget)
        return types.GenerateContentConfig(**kw)

    def _delay(self, attempt: int, hint: float | None) -> float:
        """Exponential backoff, raised to the server's RetryInfo delay when it sends one."""
        delay = self.retry_base_delay * 2 ** (attempt - 1)
        if hint is not None:
            delay = max(delay, hint)
        return min(delay, self.retry_max_delay)

    def _raise_if_misconfigured(self, exc: Any) -> None:
        """Errors only the user can fix (bad key, no access, unknown model) stop the run."""
        code = int(exc.code or 0)
        details = str(exc.details)
        if code in (401, 403) or (code == 400 and "API_KEY" in details):
            raise PamdError(
                f"gemini rejected the API key ({code} {exc.status or ''})".strip(),
                "check GEMINI_API_KEY",
            )
        if code == 404:
            raise PamdError(
                f"gemini model {self.model!r} not found ({exc.message or code})",
                "check [summarizer] model (and base_url) in pamd.toml",
            )

    def _cost(self, usage: Usage) -> float:
        price = self.prices.get(self.model) or self.prices.get(self.model.removeprefix("models/"))
        if not price:
            if usage.input_tokens or usage.output_tokens:
                usage.notes.append(
                    f"gemini: no price for {self.model} in [summarizer.prices]; cost counted as 0"
                )
            return 0.0
        return (
            usage.input_tokens * float(price.get("input", 0))
            + usage.output_tokens * float(price.get("output", 0))
        ) / 1_000_000


def _record_tokens(response: Any, usage: Usage) -> None:
    meta = getattr(response, "usage_metadata", None)
    if meta is None:
        return
    usage.input_tokens += int(meta.prompt_token_count or 0)
    # Thinking tokens are billed as output.
    usage.output_tokens += int(meta.candidates_token_count or 0) + int(
        meta.thoughts_token_count or 0
    )


def _response_text(response: Any) -> str | None:
    """The answer's text parts joined (response.text, without its warnings)."""
    parts = []
    for candidate in response.candidates or []:
        for part in getattr(candidate.content, "parts", None) or []:
            if part.text and not part.thought:
                parts.append(part.text)
        break
    return "".join(parts) or None


def _retry_delay(exc: Any) -> float | None:
    """Seconds from a google.rpc.RetryInfo detail ("retryDelay": "37s"), if any."""
    match = re.search(r"'retryDelay': '(\d+(?:\.\d+)?)s'", str(exc.details))
    return float(match.group(1)) if match else None


def _is_transport(exc: Exception) -> bool:
    """A connection/timeout failure of httpx, or of httpx2 which google-genai 3.x uses."""
    return isinstance(exc, (ConnectionError, TimeoutError)) or any(
        cls.__module__.split(".")[0] in ("httpx", "httpx2")
        and cls.__name__ in ("TransportError", "TimeoutException")
        for cls in type(exc).__mro__
    )
