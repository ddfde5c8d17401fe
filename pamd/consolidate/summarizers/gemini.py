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
from collections.abc import Mapping
from typing import Any

from pamd.consolidate.summarizers import prompts
from pamd.consolidate.summarizers.base import Group, Usage
from pamd.consolidate.summarizers.llm import (
    TRANSIENT,
    Failed,
    LLMSummarizer,
    Transient,
    common_options,
    http_url,
)
from pamd.core.config import Settings, SummarizerSettings, settings
from pamd.errors import PamdError

DEFAULT_MODEL = "gemini-2.5-flash"


class GeminiSummarizer(LLMSummarizer):
    name = "gemini"

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str = "",
        api_version: str = SummarizerSettings.api_version,
        thinking_budget: int | None = None,
        **kw: Any,
    ) -> None:
        if not api_key:
            raise PamdError(
                "GEMINI_API_KEY is not set but [summarizer] backend is \"gemini\"",
                'export GEMINI_API_KEY=..., or set backend = "extractive" in pamd.toml',
            )
        if base_url:
            http_url(base_url, 'e.g. base_url = "http://127.0.0.1:8080" for a proxy, or leave it empty')
        super().__init__(model=model, **kw)
        self.api_key = api_key
        self.base_url = base_url
        self.api_version = api_version
        self.thinking_budget = thinking_budget
        self._client: Any = None

    @classmethod
    def from_config(
        cls, config: Settings | Mapping[str, Any], env: Mapping[str, str] | None = None, **kw: Any
    ) -> GeminiSummarizer:
        env = os.environ if env is None else env
        s = settings(config).summarizer
        return cls(
            api_key=env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY") or "",
            model=str(s.model or DEFAULT_MODEL),
            base_url=env.get("PAMD_GEMINI_BASE_URL") or str(s.base_url),
            # an empty version is the default one, as when unset
            api_version=str(s.api_version or SummarizerSettings.api_version),
            thinking_budget=int(s.thinking_budget),
            **common_options(s),
            **kw,
        )

    # ------------------------------------------------------------------ one request

    def _call(self, batch: list[Group], usage: Usage) -> str | None:
        from google.genai import errors

        client = self._get_client()
        try:
            response = client.models.generate_content(
                model=self.model, contents=prompts.request_payload(batch),
                config=self._generate_config(),
            )
        except errors.APIError as exc:
            code = int(exc.code or 0)
            reason = f"{code} {exc.status or ''}".strip()
            if code in TRANSIENT:
                raise Transient(reason, _retry_delay(exc)) from None
            self._raise_if_misconfigured(exc)
            raise Failed(f"{reason} ({(exc.message or '')[:80]})") from None
        except Exception as exc:  # noqa: BLE001 - transport and decoding errors
            if _is_transport(exc):
                raise Transient(f"network error ({type(exc).__name__})") from None
            raise Failed(f"malformed response ({type(exc).__name__})") from None
        _record_tokens(response, usage)
        text = _response_text(response)
        why = _stop_reason(response)
        if why and text is None:  # blocked, or cut before a word: say which
            raise Failed(f"malformed response (empty response, {why})")
        if why:  # cut short (MAX_TOKENS) or stopped for a reason: usable only if it parses
            try:
                prompts.parse_answer(text, batch)
            except ValueError as exc:
                raise Failed(f"malformed response ({exc}, {why})") from None
        return text

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
                # milliseconds; never 0, which google-genai takes as no timeout at all
                api_version=self.api_version, timeout=max(1, round(self.timeout * 1000))
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
                type=types.Type.ARRAY,
                items=types.Schema(
                    type=types.Type.OBJECT,
                    properties={
                        "i": types.Schema(type=types.Type.INTEGER),
                        "facts": types.Schema(type=types.Type.ARRAY, items=types.Schema(
                            type=types.Type.OBJECT,
                            properties={
                                "text": types.Schema(type=types.Type.STRING),
                                "sources": types.Schema(
                                    type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING)),
                            },
                            required=["text", "sources"],
                            property_ordering=["text", "sources"],
                        )),
                    },
                    required=["i", "facts"],
                    property_ordering=["i", "facts"],
                ),
            ),
        }
        if self.temperature is not None:
            kw["temperature"] = self.temperature
        if self.thinking_budget is not None:
            kw["thinking_config"] = types.ThinkingConfig(thinking_budget=self.thinking_budget)
        return types.GenerateContentConfig(**kw)

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


def _stop_reason(response: Any) -> str:
    """Why the model stopped, when not a normal end: "blockReason SAFETY" for a blocked
    prompt, "finishReason SAFETY" / "RECITATION" / "MAX_TOKENS" for a cut answer."""
    feedback = getattr(response, "prompt_feedback", None)
    block = getattr(feedback, "block_reason", None)
    if block:
        return f"blockReason {getattr(block, 'value', block)}"
    for candidate in response.candidates or []:
        finish = getattr(candidate.finish_reason, "value", candidate.finish_reason)
        if finish and finish not in ("STOP", "FINISH_REASON_UNSPECIFIED"):
            return f"finishReason {finish}"
        break
    return ""


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
