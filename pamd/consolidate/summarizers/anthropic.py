"""Anthropic backend through the official `anthropic` SDK: the fact contract as a forced
tool call, the shared instructions cached, groups batched, retries, extractive fallback.

Configuration (`[summarizer]` in pamd.toml; environment wins for key and base URL):
  backend = "anthropic"
  ANTHROPIC_API_KEY                      the key; missing -> PamdError when there is work
  PAMD_ANTHROPIC_BASE_URL / base_url     another endpoint (a proxy, or the test stub)
  model (default claude-haiku-4-5), max_output_tokens, batch_size, max_retries,
  retry_base_delay, retry_max_delay, timeout, fallback, [summarizer.prices]
  (input, output, and cache_write / cache_read per million tokens)
"""

from __future__ import annotations

import os
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

DEFAULT_MODEL = "claude-haiku-4-5"
TOOL = "record_facts"
# 529 is Anthropic's "overloaded": as transient as a 503.
RETRY = TRANSIENT | {529}


class AnthropicSummarizer(LLMSummarizer):
    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str = "",
        max_output_tokens: int = 4096,
        **kw: Any,
    ) -> None:
        if not api_key:
            raise PamdError(
                'ANTHROPIC_API_KEY is not set but [summarizer] backend is "anthropic"',
                'export ANTHROPIC_API_KEY=..., or set backend = "claude-cli" (a logged-in Claude Code) '
                'or "extractive" in pamd.toml',
            )
        if base_url:
            http_url(base_url, 'e.g. base_url = "http://127.0.0.1:8080" for a proxy, or leave it empty')
        super().__init__(model=model, **kw)
        self.api_key = api_key
        self.base_url = base_url
        self.max_output_tokens = max_output_tokens
        self.cache_write_tokens = 0
        self.cache_read_tokens = 0
        self._client: Any = None

    @classmethod
    def from_config(
        cls, config: Settings | Mapping[str, Any], env: Mapping[str, str] | None = None, **kw: Any
    ) -> AnthropicSummarizer:
        env = os.environ if env is None else env
        s = settings(config).summarizer
        return cls(
            api_key=env.get("ANTHROPIC_API_KEY", ""),
            model=str(s.model or DEFAULT_MODEL),
            base_url=env.get("PAMD_ANTHROPIC_BASE_URL") or str(s.base_url),
            # 0 is no cap the API takes: the default one, as when unset
            max_output_tokens=int(s.max_output_tokens or SummarizerSettings.max_output_tokens),
            **common_options(s),
            **kw,
        )

    # ------------------------------------------------------------------ one request

    def request(self, batch: list[Group]) -> dict[str, Any]:
        """The Messages API request for a batch: the instructions as a cached system block
        (identical in every request, so the second and later requests read them from the
        cache), the fact schema as the one tool the model must call."""
        kw: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_output_tokens,
            "system": [{"type": "text", "text": prompts.SYSTEM_OBJECT,
                        "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": TOOL, "description": "Record the facts of every group.",
                       "input_schema": prompts.SCHEMA}],
            "tool_choice": {"type": "tool", "name": TOOL},
            "messages": [{"role": "user", "content": prompts.request_payload(batch)}],
        }
        # no temperature: the anthropic SDK this is written for no longer takes one, and a
        # forced tool call with a schema already keeps the answer's shape fixed
        return kw

    def _call(self, batch: list[Group], usage: Usage) -> Any:
        import anthropic

        client = self._get_client()
        try:
            response = client.messages.create(**self.request(batch))
        except anthropic.APIStatusError as exc:
            code = exc.status_code
            if code in RETRY:
                raise Transient(f"{code} {_error_type(exc)}".strip(),
                                _retry_after(exc.response.headers.get("retry-after"))) from None
            if code in (401, 403):
                raise PamdError(f"anthropic rejected the API key ({code} {_error_type(exc)})".strip(),
                                "check ANTHROPIC_API_KEY") from None
            if code == 404:
                raise PamdError(f"anthropic model {self.model!r} not found ({_error_type(exc)})",
                                "check [summarizer] model (and base_url) in pamd.toml") from None
            raise Failed(f"{code} {_error_type(exc)}".strip()) from None
        except (anthropic.APIConnectionError, anthropic.APITimeoutError) as exc:
            raise Transient(f"network error ({type(exc).__name__})") from None
        except (anthropic.APIResponseValidationError, ValueError):  # a 200 whose body is not JSON
            raise Failed("malformed response (unreadable body)") from None
        self._record(response, usage)
        stop = getattr(response, "stop_reason", None)
        for block in getattr(response, "content", None) or []:
            if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == TOOL:
                if stop == "max_tokens":  # the tool input was cut: usable only if it parses
                    try:
                        prompts.parse_answer(block.input, batch)
                    except ValueError as exc:
                        raise Failed(f"malformed response ({exc}, stop_reason max_tokens)") from None
                return block.input
        raise Failed(f"malformed response (no {TOOL} call, stop_reason {stop})")

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import anthropic
            except ImportError:
                raise PamdError("the anthropic summarizer needs the anthropic SDK",
                                "pip install 'pamd[anthropic]'") from None
            options: dict[str, Any] = {"api_key": self.api_key, "timeout": self.timeout,
                                       # pamd retries itself: the fallback and the notes need to
                                       # know every attempt, and the SDK's own would multiply them
                                       "max_retries": 0}
            if self.base_url:
                options["base_url"] = self.base_url
            self._client = anthropic.Anthropic(**options)
        return self._client

    def _record(self, response: Any, usage: Usage) -> None:
        meta = getattr(response, "usage", None)
        if meta is None:
            return
        written = int(getattr(meta, "cache_creation_input_tokens", 0) or 0)
        read = int(getattr(meta, "cache_read_input_tokens", 0) or 0)
        self.cache_write_tokens += written
        self.cache_read_tokens += read
        # the trailer's "in" is every prompt token, cached or not; _cost prices each kind
        usage.input_tokens += int(meta.input_tokens or 0) + written + read
        usage.output_tokens += int(meta.output_tokens or 0)

    def summarize(self, groups: list[Group]) -> tuple[list[str], Usage]:
        self.cache_write_tokens = self.cache_read_tokens = 0
        texts, usage = super().summarize(groups)
        if self.cache_read_tokens or self.cache_write_tokens:
            usage.notes.append(f"anthropic: prompt cache {self.cache_read_tokens:,} tokens read, "
                               f"{self.cache_write_tokens:,} written")
        return texts, usage

    def _cost(self, usage: Usage) -> float:
        """Cached prompt tokens bill at their own rates (a write above the input price, a
        read far below it); the price table may give them, else Anthropic's ratios apply."""
        price = self.prices.get(self.model)
        if not price:
            return super()._cost(usage)
        p_in = float(price.input)
        p_write = p_in * 1.25 if price.cache_write is None else float(price.cache_write)
        p_read = p_in * 0.1 if price.cache_read is None else float(price.cache_read)
        plain = usage.input_tokens - self.cache_write_tokens - self.cache_read_tokens
        return (plain * p_in + self.cache_write_tokens * p_write + self.cache_read_tokens * p_read
                + usage.output_tokens * float(price.output)) / 1_000_000


def _error_type(exc: Any) -> str:
    """Anthropic's own name for the error ("overloaded_error", "rate_limit_error")."""
    body = getattr(exc, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    return str(err.get("type") or "") if isinstance(err, dict) else ""


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
