"""An OpenAI-compatible chat-completions endpoint: OpenAI itself, or a local model server.

Ollama, llama.cpp's server, vLLM and LM Studio all speak `POST {base_url}/chat/completions`,
so one backend covers a local model that keeps an agent's memories on its own machine.
It needs no package: the request is one JSON POST through the standard library.

Configuration (`[summarizer]` in pamd.toml; environment wins for key and base URL):
  backend = "openai"
  base_url      the API root, e.g. "http://127.0.0.1:11434/v1" for Ollama
                (env PAMD_OPENAI_BASE_URL wins; default https://api.openai.com/v1)
  model         the model the server knows (e.g. "llama3.2", "gpt-4.1-mini")
  api_key_env   the environment variable holding the key (default OPENAI_API_KEY);
                a local server needs none, api.openai.com must have one
  json_mode     true (default): ask for `response_format = json_object`; false for a
                server that rejects it (the prompt still asks for JSON)
  batch_size, max_retries, retry_base_delay, retry_max_delay, timeout, temperature,
  fallback ("extractive" | "fail"), [summarizer.prices] as for gemini
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any, NoReturn
from urllib.parse import urlsplit

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

OPENAI_URL = "https://api.openai.com/v1"
KEY_ENV = SummarizerSettings.api_key_env


class OpenAISummarizer(LLMSummarizer):
    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "",
        api_key: str = "",
        key_env: str = KEY_ENV,
        json_mode: bool = True,
        **kw: Any,
    ) -> None:
        base_url = (base_url or OPENAI_URL).rstrip("/")
        parts = urlsplit(http_url(base_url, 'e.g. base_url = "http://127.0.0.1:11434/v1" (Ollama)'))
        if not api_key and parts.hostname == urlsplit(OPENAI_URL).hostname:
            raise PamdError(
                f"{key_env} is not set but [summarizer] backend \"openai\" uses api.openai.com",
                f"export {key_env}=..., or point base_url at a local server",
            )
        if not model:
            raise PamdError("[summarizer] model is not set for backend \"openai\"",
                            'set model = "..." to a model the server serves')
        super().__init__(model=model, **kw)
        self.base_url = base_url
        self.api_key = api_key
        self.json_mode = json_mode
        # a model on this machine costs nothing: no "no price" note in every commit
        self.free = parts.hostname in ("localhost", "127.0.0.1", "::1")

    @classmethod
    def from_config(
        cls, config: Settings | Mapping[str, Any], env: Mapping[str, str] | None = None, **kw: Any
    ) -> OpenAISummarizer:
        env = os.environ if env is None else env
        s = settings(config).summarizer
        # an empty variable name is the default one, as when unset
        key_env = str(s.api_key_env or SummarizerSettings.api_key_env)
        json_mode = s.json_mode
        if not isinstance(json_mode, bool):
            raise PamdError("[summarizer] json_mode must be true or false", "fix pamd.toml")
        return cls(
            model=str(s.model),
            base_url=env.get("PAMD_OPENAI_BASE_URL") or str(s.base_url),
            api_key=env.get(key_env, ""),
            key_env=key_env,
            json_mode=json_mode,
            **common_options(s),
            **kw,
        )

    # ------------------------------------------------------------------ one request

    def _call(self, batch: list[Group], usage: Usage) -> str | None:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system",
                 "content": prompts.SYSTEM_OBJECT if self.json_mode else prompts.SYSTEM},
                {"role": "user", "content": prompts.request_payload(batch)},
            ],
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=json.dumps(body).encode(),
            headers=headers, method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            self._http_error(exc)
        # refused, reset, DNS, timeout; a server dying mid-answer (IncompleteRead) or
        # garbage on the socket (BadStatusLine, RemoteDisconnected) as well
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            cause = getattr(exc, "reason", exc)
            name = "timeout" if isinstance(cause, (TimeoutError, socket.timeout)) \
                else type(cause).__name__
            raise Transient(f"network error ({name})") from None
        try:
            data = json.loads(raw)
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Failed("malformed response (no choices[0].message)") from None
        _record_tokens(data, usage)
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else None

    def _http_error(self, exc: urllib.error.HTTPError) -> NoReturn:
        """Sort an HTTP error into retry, the user's misconfiguration, or this batch's loss."""
        code = exc.code
        detail = _error_message(exc)
        if code in TRANSIENT:
            raise Transient(str(code), _retry_after(exc.headers.get("Retry-After"))) from None
        if code in (401, 403):
            raise PamdError(f"{self.base_url} rejected the API key ({code}: {detail})",
                            "check the key in the environment ([summarizer] api_key_env)")
        if code == 404:
            raise PamdError(
                f"{self.base_url}: model {self.model!r} or /chat/completions not found "
                f"({detail})",
                "check [summarizer] model and base_url in pamd.toml",
            )
        raise Failed(f"{code} ({detail})")


def _error_message(exc: urllib.error.HTTPError) -> str:
    """The server's own words ({"error": {"message": ...}}), shortened to one line."""
    try:
        data = json.loads(exc.read() or b"{}")
        err = data.get("error") if isinstance(data, dict) else None
        text = err.get("message") if isinstance(err, dict) else err
    except (ValueError, OSError):
        text = None
    return " ".join(str(text or exc.reason or "").split())[:80]


def _record_tokens(data: Any, usage: Usage) -> None:
    meta = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(meta, dict):
        return
    for attr, key in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        value = meta.get(key)  # completion_tokens includes any reasoning tokens
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            setattr(usage, attr, getattr(usage, attr) + value)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (an HTTP date is not worth parsing here)."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
