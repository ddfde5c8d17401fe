"""Secret redaction: well-known key and token formats become typed placeholders.

`redact(text)` returns the text with each secret replaced by
`[REDACTED:<type>]` and a count per type. It is idempotent (a placeholder
never matches a pattern again) and pure, so ingest can run it before anything
is written and a pre-commit hook can use `Redactor.find` to point at spans.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pamd.errors import PamdError

PLACEHOLDER = "[REDACTED:{}]"


def _mixed(value: str) -> bool:
    """Looks generated: has a digit and a letter (rules out words and identifiers like get_token)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _not_placeholder(value: str) -> bool:
    # Templating and examples people write instead of real secrets.
    return not (value[:1] in "$<{%*[" or value.lower().strip("\"'") in _DUMMIES)


def _generic_ok(value: str) -> bool:
    v = value.strip("\"'")
    if not _not_placeholder(v):
        return False
    quoted = value[:1] in "\"'"
    # Quoted literals are values by construction; bare ones must look generated,
    # or `token = get_token_from_environment()` would be redacted.
    return len(v) >= 8 and (quoted or (len(v) >= 12 and _mixed(v)))


_DUMMIES = {"password", "changeme", "secret", "example", "xxxxxxxx", "redacted", "none", "null",
            "true", "false", "your-password", "your_password", "your-api-key", "your_api_key",
            "<password>", "placeholder", "********"}


@dataclass(frozen=True)
class Pattern:
    """One secret format: `group` is the part replaced (0 = whole match)."""

    name: str
    regex: re.Pattern[str]
    group: int = 0
    check: Callable[[str], bool] | None = None


def _p(name: str, regex: str, group: int = 0, flags: int = 0,
       check: Callable[[str], bool] | None = None) -> Pattern:
    return Pattern(name, re.compile(regex, flags), group, check)


def _assignment(name: str, keys: str) -> Pattern:
    """`key = value` / `key: value` / `"key": "value"` with a long, secret-looking value."""
    return _p(
        name,
        # The lookbehind (not `\w*` before the key) keeps the scan linear on long tokens.
        rf"(?<![A-Za-z0-9])(?i:{keys})[\"']?\s*(?:=|:|=>)\s*"
        r"(\"[^\"\s\[]{8,}\"|'[^'\s\[]{8,}'|[^\s\"'\[,;)}<>]{12,})",
        1,
        check=_generic_ok,
    )


# Order is priority: where two patterns claim overlapping text, the earlier
# one wins, so a specific type beats the generic `key = value` rule.
BUILTIN: tuple[Pattern, ...] = (
    _p("private-key",
       r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----"
       # A block cut short (a truncated log) is redacted to the end of its base64.
       r"(?:[\s\S]*?-----END \1PRIVATE KEY\2-----|[A-Za-z0-9+/=\s:,-]*)"),
    _p("aws-access-key", r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"),
    _p("aws-secret-key",
       r"(?i:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)\W{0,3}\s*[:=]\s*[\"']?"
       r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", 1),
    _p("github-token", r"\b(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{36,255}\b|\bgithub_pat_[A-Za-z0-9_]{22,255}"),
    _p("anthropic-key", r"\bsk-ant-(?:[a-z0-9]+-)?[A-Za-z0-9_\-]{20,}"),
    _p("openai-key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
       check=lambda v: _mixed(v[3:]) and v.count("-") <= 12),
    _p("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    _p("slack-token", r"\bxox[baprse]-[0-9A-Za-z][0-9A-Za-z\-]{8,}"),
    _p("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # scheme://user:password@host — only the password goes.
    _p("password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@'\"\[\]]+:([^\s@/'\"\[\]]+)@[^\s/@]", 1,
       check=_not_placeholder),
    *(_assignment(name, keys) for name, keys in (
        ("password", "password|passwd|pwd|passphrase"),
        ("api-key", r"api[_\-]?key|apikey|access[_\-]?key"),
        ("token", r"auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|bearer[_\-]?token|token"),
        ("secret", r"client[_\-]?secret|private[_\-]?key|secret[_\-]?key|secret"),
    )),
)


class Redactor:
    """A set of secret patterns; built-ins first, a brain's own after them."""

    def __init__(self, patterns: Iterable[Pattern] = BUILTIN) -> None:
        self.patterns = tuple(patterns)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Redactor:
        """Built-ins plus `[[redact.patterns]]` tables: name, regex, optional group."""
        extra = (config.get("redact", {}) or {}).get("patterns", []) or []
        if not isinstance(extra, list):
            raise PamdError("pamd.toml: [redact] patterns must be an array of tables",
                            'write [[redact.patterns]] with name = "…" and regex = "…"')
        own: list[Pattern] = []
        for i, item in enumerate(extra):
            where = f"pamd.toml: redact.patterns[{i}]"
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) \
                    or not isinstance(item.get("regex"), str):
                raise PamdError(f"{where}: needs a string `name` and a string `regex`",
                                "see docs/neurotag.md#redaction")
            name, group = item["name"], item.get("group", 0)
            if not re.fullmatch(r"[a-z0-9][a-z0-9\-]*", name):
                raise PamdError(f"{where}: name {name!r} must be lowercase letters, digits, -",
                                "it becomes the placeholder [REDACTED:name]")
            try:
                regex = re.compile(item["regex"])
            except re.error as exc:
                raise PamdError(f"{where} ({name}): bad regex: {exc}", "fix the regex") from None
            if not isinstance(group, int) or isinstance(group, bool) \
                    or not 0 <= group <= regex.groups:
                raise PamdError(f"{where} ({name}): group {group!r} is not a group of the regex",
                                "use 0 for the whole match")
            if regex.search("") is not None:
                raise PamdError(f"{where} ({name}): the regex matches the empty string",
                                "make it match only the secret")
            own.append(Pattern(name, regex, group))
        return cls((*BUILTIN, *own))

    def find(self, text: str) -> list[tuple[str, int, int]]:
        """Non-overlapping secret spans (type, start, end), in text order."""
        taken: list[tuple[int, int]] = []
        found: list[tuple[str, int, int]] = []
        for pat in self.patterns:
            for m in pat.regex.finditer(text):
                start, end = m.span(pat.group)
                if start < 0 or end <= start:
                    continue
                value = m.group(pat.group)
                if value.startswith("[REDACTED:") or (pat.check and not pat.check(value)):
                    continue
                if any(start < e and s < end for s, e in taken):
                    continue
                taken.append((start, end))
                found.append((pat.name, start, end))
        found.sort(key=lambda f: f[1])
        return found

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        spans = self.find(text)
        if not spans:
            return text, {}
        out: list[str] = []
        counts: dict[str, int] = {}
        pos = 0
        for name, start, end in spans:
            out.append(text[pos:start])
            out.append(PLACEHOLDER.format(name))
            counts[name] = counts.get(name, 0) + 1
            pos = end
        out.append(text[pos:])
        return "".join(out), counts


_DEFAULT = Redactor()


def redact(text: str, patterns: Redactor | None = None) -> tuple[str, dict[str, int]]:
    """Text with secrets replaced by `[REDACTED:<type>]`, and how many of each type."""
    return (patterns or _DEFAULT).redact(text)
