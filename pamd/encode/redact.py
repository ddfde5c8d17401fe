"""Secret redaction: well-known key and token formats become typed placeholders.

`redact(text)` returns the text with each secret replaced by
`[REDACTED:<type>]` and a count per type. It is idempotent (a placeholder
never matches a pattern again) and pure, so ingest can run it before anything
is written and a pre-commit hook can use `Redactor.find` to point at spans.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pamd.errors import PamdError

PLACEHOLDER = "[REDACTED:{}]"


_DUMMIES = frozenset({
    "password", "changeme", "secret", "example", "xxxxxxxx", "redacted", "none", "null", "true",
    "false", "your-password", "your_password", "your-api-key", "your_api_key", "placeholder",
    "********", "undefined",
})


def _mixed(value: str) -> bool:
    """Looks generated: a digit and a letter (not a word or an identifier like get_token)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _real(value: str) -> bool:
    """Not a template or a stand-in people write where a secret would go."""
    return value[:1] not in "$<{%*[" and value.lower() not in _DUMMIES


# (match, the original text) -> keep? The match may be of the lowercased text (same positions).
Check = Callable[[re.Match[str], str], bool]


def _url_password(m: re.Match[str], text: str) -> bool:
    return _real(m.group(1))


# Values that name where a secret is, not the secret: a path (`/etc/ssl/x.key`,
# `~/.ssh/id_rsa`, `./certs/k.pem`), a URI reference (`op://vault/item`,
# `vault:secret/db`), unquoted an env-var name (`AWS_ACCESS_KEY_ID_2`; quoted only one
# of words, `"OPENAI_API_KEY_V2"`, not `"ABCD_1234_EFGH"`) and an `a.b.c` of
# identifiers (`state.auth.token2`), which is code. Digits only at a part's end, so a
# dotted token like `ya29.a0AfH6SMBx3` is no such name.
_REFERENCE = re.compile(r"(?:~|\.{1,2})/|[A-Za-z][A-Za-z0-9+.\-]*://|(?:vault|env|arn):")
# A path from the root has a second `/` or an extension and no base64 `+`/`=`: a
# base64 secret starts with `/` once in 64 (`/9j4kLmN0…`).
_ROOT_PATH = re.compile(r"/[^+=/]*(?:/[^+=]*|\.[A-Za-z0-9]{1,8})")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_WORDS_NAME = re.compile(r"[A-Z]+\d*(?:_(?:[A-Z]+\d*|\d{1,2}))+")
_WORD = re.compile(r"[A-Z]{3,}")
_CLASS_CHANGE = re.compile(r"(?<=[a-z])[A-Z0-9]|(?<=[A-Z])[a-z0-9]|(?<=[0-9])[A-Za-z]")


def _interleaved(value: str) -> bool:
    """Letters of both cases and digits interleave as in generated text (base64: about 6
    changes of class in 10 characters; `/home/u/projects2`, `/Users/Alice/Docs`: under 2)."""
    return len(_CLASS_CHANGE.findall(value)) > 0.35 * len(value)
_NAME_PART = r"[A-Za-z_][a-z_]*(?:[A-Z][a-z_]*)*\d*"
_MEMBER = re.compile(rf"{_NAME_PART}(?:\.{_NAME_PART})+")


def _reference(value: str, quoted: bool) -> bool:
    if _REFERENCE.match(value) or _ROOT_PATH.fullmatch(value) and not _interleaved(value):
        return True
    if quoted:  # a name of words: most of its parts are words (not `AB12_CD34_EF56_GH78`)
        parts = value.split("_")
        return bool(_WORDS_NAME.fullmatch(value)) and 2 * sum(map(bool, map(_WORD.fullmatch, parts))) >= len(parts)
    return bool(_ENV_NAME.fullmatch(value) or _MEMBER.fullmatch(value))


def _assigned(bare_min: int) -> Check:
    def check(m: re.Match[str], text: str) -> bool:
        value = text[m.start(2) : m.end(2)]  # as written (`m` may be of the lowercased text)
        if _caps_key(value):  # a licence key of capitals and digits is no env-var name
            return True
        if not _real(value) or _reference(value, bool(m.group(1))):
            return False
        if text.startswith("(", m.end(2)):  # `token = Base.url_encode64(...)`: a call, not a value
            return False
        # Quoted literals are values by construction; bare ones must look generated,
        # or `token = get_token_from_environment()` would be redacted.
        return bool(m.group(1)) or (len(value) >= bare_min and _mixed(value))
    return check


def _bearer(m: re.Match[str], text: str) -> bool:
    return _real(m.group(1)) and _mixed(m.group(1))


def _basic(m: re.Match[str], text: str) -> bool:
    """`Basic <base64>` is a secret when it decodes to printable `user:password`.

    The regex starts at "asic" (a plain literal is what `re` finds fast): the B or b
    before it, at the start of a word, is checked here."""
    at = m.start()
    if at < 1 or text[at - 1] not in "Bb" or (at >= 2 and text[at - 2].isalnum()):
        return False
    return _user_password(m.group(1))


def _user_password(token: str) -> bool:
    """`token` is base64 of printable `user:password`."""
    try:
        plain = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, sep, password = plain.partition(":")
    return bool(sep and user and password and plain.isprintable())


def _docker_auth(m: re.Match[str], text: str) -> bool:
    """`"auth": "<base64 of user:password>"` in a docker config.json (`"oauth"` is no `"auth"`)."""
    return text[m.start() - 1 : m.start()] == '"' and _user_password(m.group(1))


def _random(m: re.Match[str], text: str) -> bool:
    """Generated, not a word: two of lowercase, uppercase, digits."""
    value = m.group(m.lastindex or 0)
    return sum((any(c.islower() for c in value), any(c.isupper() for c in value),
                any(c.isdigit() for c in value))) >= 2


_HEX = re.compile(r"[0-9a-fA-F]{20,}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_CAPS_VALUE = re.compile(r"[A-Z0-9]+(?:[-_][A-Z0-9]+)*")
_LETTER_DIGIT = re.compile(r"(?<=[A-Z])[0-9]|(?<=[0-9])[A-Z]")
_NAME_GROUP = re.compile(r"([A-Z]*)[0-9]*")
_GROUPED = re.compile(r"(?:[A-Z0-9]{4,6})(?:-[A-Z0-9]{4,6}){3,}")


def _caps_key(value: str) -> bool:
    """A licence or product key of capitals and digits (`XK92_PL4Q_ZZ81`, `XK92-PL4Q-ZZ81-7TQM`,
    `BCDFG-HJKMP-QRTVW-XY234-6789B`), not a name (`ERR_404_NOT_FOUND`, `AWS_S3_KEY_2`,
    `PROD_V2_K8S_TOKEN`, `HTTP2_TLS13_ONLY`): letters and digits change places three times or
    more and in most of its groups, or it is four or more groups of one length with a letter
    and a digit."""
    if len(value) < 12 or not _CAPS_VALUE.fullmatch(value) or not _mixed(value) \
            or _reference(value, True):
        return False
    groups = re.split(r"[-_]", value)
    # a name: each group a word then digits (`HTTP2_TLS13_ONLY`), most words of three letters
    words = [m.group(1) for g in groups if (m := _NAME_GROUP.fullmatch(g))]
    if len(words) == len(groups) and 2 * sum(len(w) >= 3 for w in words) >= len(groups):
        return False
    if _GROUPED.fullmatch(value) and len({len(g) for g in groups}) == 1:
        return True
    mixing = sum(map(_mixed, groups))
    return len(_LETTER_DIGIT.findall("".join(groups))) >= 3 and 2 * mixing > len(groups)


def _env_key(m: re.Match[str], text: str) -> bool:
    """`STRIPE_KEY=…`, `ENCRYPTION_KEY=…`: an UPPER_CASE name ending in _KEY (not a public,
    GPG, cache or idempotency key) with a long generated value: hex, or base64(url) with
    capitals, small letters and digits and no `.` (not an S3 object, routing or i18n key,
    a path or a fixture name; no UUID)."""
    at = m.start()
    # (After a JSON-escaped newline or tab too: a `.env` a tool call wrote, `…\nAPP_KEY=…`.)
    name = re.search(r"(?:(?<![\w])|(?<=\\[nrt]))[A-Z][A-Z0-9_]*$", text[max(0, at - 64) : at])
    if name is None or re.search(r"PUBLIC|PUBLISHABLE|PUB$|GPG|PGP|CACHE|HASH|CHECKSUM|IDEMPOTENCY",
                                 name.group(0)):
        return False
    value = text[m.start(2) : m.end(2)]
    if _caps_key(value):  # a licence key: capitals and digits only, as such keys often are
        return True
    generated = _HEX.fullmatch(value) or "." not in value and not value.islower() \
        and not value.isupper() and any(c.isdigit() for c in value)
    return len(value) >= 20 and bool(generated) and _mixed(value) and _real(value) \
        and not _reference(value, bool(m.group(1))) and not _UUID.fullmatch(value)


def _cli_password(m: re.Match[str], text: str) -> bool:
    """A password on a command line: not a template (`$PW`), a flag, or a number (a port
    after `-p`, a uid:gid after `-u`)."""
    value = m.group(m.lastindex or 0)
    return _real(value) and not value.startswith("-") and not value.isdigit()


def _registry_login(m: re.Match[str], text: str) -> bool:
    """`docker login -p X` (podman, helm registry, az, …), not `gh auth login -p ssh`."""
    before = text[max(0, m.start() - 16) : m.start()]
    return bool(re.search(r"\b(?:docker|podman|buildah|skopeo|oras|nerdctl|registry|az|cf) $", before)) \
        and _cli_password(m, text)


def _flag_password(m: re.Match[str], text: str) -> bool:
    """`--password X`: also prose about the flag (`pass --password when prompted`), so a
    lowercase word after a space is no password; `--password=X` is always a value. PostgreSQL's
    clients (`psql --password mydb`, `pg_dump --password postgres://…`) take none: their
    `--password` only asks for it, and the word after it is the database."""
    value = m.group(2)
    spaced = not m.group(1) and text[m.start(2) - 1 : m.start(2)] == " "  # quoted: a value
    command = re.split(r"[\n|;&]|\\n", text[max(0, m.start() - 240) : m.start()])[-1]  # `\n`: JSON
    if spaced and _PG_CLIENT.search(command):
        return False
    return _cli_password(m, text) and not (spaced and value.isalpha() and value.islower())


_PG_CLIENT = re.compile(r"\b(?:psql|pg_dump|pg_dumpall|pg_restore|pg_basebackup|createdb|dropdb|createuser"
                        r"|dropuser|vacuumdb|reindexdb|clusterdb|pgbench)\b")


def _telegram(m: re.Match[str], text: str) -> bool:
    """`:AA…` after a bot's number of 8 to 10 digits."""
    return bool(re.search(r"(?<![0-9])[0-9]{8,10}$", text[max(0, m.start() - 11) : m.start()]))


def _openai(m: re.Match[str], text: str) -> bool:
    value = m.group(0)
    # Not words joined by `-`: `sk-learn-compatible-estimators-v2`, `sk-1-2-release`.
    wordy = all(re.fullmatch(r"[A-Za-z]*\d*", part) for part in re.split(r"[-_]", value[3:]))
    return _mixed(value[3:]) and value.count("-") <= 12 and not wordy


@dataclass(frozen=True)
class Pattern:
    """One secret format: `group` is the part replaced (0 = whole match)."""

    name: str
    regex: re.Pattern[str]
    group: int = 0
    check: Check | None = None
    # The match may not start where this regex matches the original text from
    # the character before the match (a word boundary tested in code, so the
    # regex can start with a plain literal, which `re` finds much faster than a
    # pattern starting with \b or a lookbehind). It sees the match's first
    # character too, so a rule can tell `dbPassword` from `mypassword`.
    not_after: str = ""
    # Match against the lowercased text (same positions) instead of IGNORECASE,
    # which would also cost `re` its fast literal search.
    lower: bool = False
    # A literal every match holds (in the lowercased text when `lower`): a message without
    # it is skipped by one `in` test. `re` finds a literal prefix fast by itself, but not a
    # pattern that starts with a group of alternatives, like the `key = value` rules.
    needs: str = ""


def _p(name: str, regex: str, group: int = 0, check: Check | None = None,
       not_after: str = r"\w", lower: bool = False, needs: str = "") -> Pattern:
    return Pattern(name, re.compile(regex), group, check, not_after, lower, needs)


# A backslash inside a value: an escaped backslash, or one that does not end the
# value (`\"`, `\'`, `\n`, `\t`, `\r` end it, as the character they stand for would).
_ESCAPED = r"\\\\|\\(?![\"'nrt\\])"


def _assignment(name: str, keys: str, needs: str, bare_min: int = 12) -> Pattern:
    """`key = value`, `key: value`, `"key": "value"` with a long, secret-looking value.

    `keys` should start with a literal (see `Pattern.not_after`); `db_password`,
    `x-api-key`, `dbPassword`, `accessToken` and `PGPASSWORD` match through their
    last part, `mypassword` not at all. A bare value needs `bare_min` characters.
    """
    return _p(
        name,
        # A quote may be JSON-escaped (`API_KEY=\"…\"` in a tool call's stored arguments).
        rf"(?:{keys})(?:\\?[\"'])?\s*(?:=|:|=>)\s*"
        # group 1: the opening quote (if any); group 2: the value, replaced. In
        # JSON-escaped text (a file a tool call wrote) the value ends at an escaped
        # quote, newline, tab or CR like at a real one; `\\` is one backslash.
        rf"(\\?[\"']|)((?<=[\"'])(?:[^\"'\s\[\\]|{_ESCAPED}){{8,}}"
        rf"(?=\\?[\"'])|(?<![\"'])(?:[^\s\"'`\[,;(){{}}<>\\]|{_ESCAPED}){{8,}})",
        2,
        check=_assigned(bare_min),
        # Not glued to a word, unless the key starts a new one with a capital
        # (camelCase `clientSecret`, run-together capitals `SLACKTOKEN`).
        not_after="[A-Za-z0-9](?![A-Z])",
        lower=True,
        needs=needs,
    )


# Between a key block's lines: newlines (real or JSON-escaped), blank lines, spaces;
# then a line may carry a listing's line number: Claude Code's Read tool (`     3→`),
# `cat -n`/`nl` (`     3<tab>`), `grep -n` (`3:`, `file:3:`, `file-3-`), blank lines too.
_PEM_SEP = r"(?:[ \t\r\n]|\\[rn])+"
_PEM_LINE = rf"{_PEM_SEP}(?:(?:[\w./\-]+[:\-])?\d+(?:→|\\t|[:\- \t])(?:{_PEM_SEP})?)*"
# A body line: a whole line of base64 with capitals and small letters (not a long word).
_PEM_BODY = r"(?=[a-z0-9+/=]*[A-Z])(?=[A-Z0-9+/=]*[a-z])[A-Za-z0-9+/=]{16,}(?=[\s\\\"']|$)"
_AWS = "A(?:KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA)"

# Order is priority: where two patterns claim overlapping text, the earlier
# one wins, so a specific type beats the generic `key = value` rule.
BUILTIN: tuple[Pattern, ...] = (
    # A key block: the header, its `Proc-Type:`/`Version:` lines, then base64 lines
    # (also where newlines are JSON-escaped `\n`, as in a tool call's input, and lines
    # numbered by a listing) up to the END line or, in a block cut short, to its last
    # full line. Only a body is a secret:
    # a header followed by prose, a quote or nothing (code and greps that mention the
    # markers) matches nothing, and no text after the body is taken.
    _p("private-key",
       rf"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----"
       rf"(?:{_PEM_LINE}[A-Za-z][\w-]*:[ \t][^\r\n\\]*)*"
       rf"(?:{_PEM_LINE}{_PEM_BODY})+"
       rf"(?:(?:{_PEM_LINE}[A-Za-z0-9+/=]+)?{_PEM_LINE}-----END \1PRIVATE KEY\2-----)?",
       not_after=""),
    _p("aws-access-key", rf"{_AWS}[A-Z0-9]{{16}}(?![A-Z0-9])", not_after="[A-Z0-9]"),
    _p("aws-secret-key",
       r"(?:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)\W{0,3}\s*[:=]\s*\\?[\"']?"
       r"([a-z0-9/+=]{40})(?![a-z0-9/+=])", 1, not_after="[A-Za-z0-9]", lower=True, needs="secret"),
    _p("github-token",
       r"gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9])|github_pat_[A-Za-z0-9_]{22,255}"),
    _p("anthropic-key", r"sk-ant-(?:[a-z0-9]+-)?[A-Za-z0-9_\-]{20,}"),
    _p("openai-key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}", check=_openai),
    # (Two rules: a pattern that starts with a literal is found much faster than `[sr]k_`.)
    _p("stripe-key", r"sk_(?:live|test)_[0-9A-Za-z]{20,247}(?![0-9A-Za-z])", check=_random),
    _p("stripe-key", r"rk_(?:live|test)_[0-9A-Za-z]{20,247}(?![0-9A-Za-z])", check=_random),
    _p("gitlab-token", r"gl(?:pat|dt|rt|ptt)-[0-9A-Za-z_\-]{20,}(?![0-9A-Za-z_\-])",
       check=_random),
    _p("npm-token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", check=_random),
    _p("huggingface-token", r"hf_[A-Za-z0-9]{34,40}(?![A-Za-z0-9])", check=_random),
    # A PyPI token is a macaroon: its base64 always starts `AgE`.
    _p("pypi-token", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    _p("sendgrid-key", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])"),
    # The path after the host is the secret; the host stays, so a memory says what it was.
    _p("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/"
       r"(T[A-Z0-9]{6,}/[A-Z0-9]{6,}/(?:[0-9]+/)?[A-Za-z0-9]{16,})", 1, not_after=r"[\w.\-]"),
    _p("azure-key", r"AccountKey=([A-Za-z0-9+/]{20,}={0,2})(?![A-Za-z0-9+/=])", 1),
    # A Telegram bot token: the bot's number, `:AA`, 33 more (`api.telegram.org/bot<token>/…`).
    # The number (the bot's public id) stays, like a webhook's host.
    _p("telegram-token", r":(AA[A-Za-z0-9_\-]{33})(?![A-Za-z0-9_\-])", 1, check=_telegram, not_after=""),
    # age (and SOPS with age): an X25519 identity in bech32.
    _p("age-key", r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}(?![0-9A-Z])"),
    _p("google-api-key", r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    _p("slack-token", r"xox[baprse]-[0-9A-Za-z][0-9A-Za-z\-]{8,}"),
    _p("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # `Authorization: Bearer <token>`: an opaque token (a JWT or a known format wins above).
    _p("token", r"bearer[ \t]+([a-z0-9\-._~+/]{16,}=*)(?![a-z0-9\-._~+/=])", 1,
       check=_bearer, lower=True),
    # `Authorization: Basic <base64 of user:password>` (curl -u, HTTP headers).
    _p("password", r"asic[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", 1,
       check=_basic, not_after=""),
    # scheme://user:password@host (or scheme://:password@host): only the password goes.
    # (No backslash either: in JSON-escaped text `\n` ends the URL.)
    _p("password", r"://[^\s:/@'\"\[\]<>\\]*:([^\s@/'\"\[\]<>\\]+)@[^\s/@]", 1,
       check=_url_password, not_after=""),
    # On a command line (an agent's Bash calls): `--password X` / `--password=X` (not
    # `--password-stdin`), curl's `-u user:X`, mysql's `-pX` (a bare `-p` asks for it),
    # `sshpass -p X` and a registry's login `-p X` (not ssh's port, nor gh's protocol).
    _p("password", r"--(?:password|passwd|http-password|ftp-password)(?:=| +)(\\?[\"']?)([^\s\"'`\\]{4,})",
       2, check=_flag_password),
    _p("password", r"curl\b[^\n|;&]{0,240}? (?:-u|--user)(?:=| *)(\\?[\"']?)[^\s:\"'\\$]+:([^\s\"'`\\]{4,})",
       2, check=_cli_password),
    _p("password", r"(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]{0,240}? -p(\\?[\"']?)"
       r"([^\s\"'`\\]{4,})", 2, check=_cli_password),
    _p("password", r"sshpass\b[^\n|;&]{0,240}? -p(?:=| +)(\\?[\"']?)([^\s\"'`\\]{4,})", 2, check=_cli_password),
    _p("password", r"login\b[^\n|;&]{0,240}? -p(?:=| +)(\\?[\"']?)([^\s\"'`\\]{4,})", 2, check=_registry_login),
    # Passwords are short: a bare one counts from 8 characters (not `pwd`, also
    # the shell's working directory).
    _assignment("password", "pass(?:word|wd|phrase)", "pass", 8),
    _assignment("password", "pwd", "pwd"),
    _assignment("api-key", r"api[_\-]?key|apikey", "api"),
    _assignment("api-key", r"access[_\-]?key", "access"),
    _assignment("token", "token", "token"),
    _assignment("secret", r"secret(?:[_\-]?key(?:[_\-]?base)?)?", "secret"),
    _assignment("secret", r"private[_\-]?key", "private"),
    _assignment("secret", r"licen[cs]e[_\-]?key", "licen"),
    _p("secret", r"_KEY(?:_BASE)?(?:\\?[\"'])?\s*[=:]\s*(\\?[\"']?)([A-Za-z0-9+/=_.\-]{12,})"
       r"(?![A-Za-z0-9+/=_.\-])", 2, check=_env_key, not_after=""),
    # docker's config.json: `"auths": {"ghcr.io": {"auth": "<base64 of user:password>"}}`.
    _p("password", r'auth\\?"\s*:\s*\\?"([A-Za-z0-9+/]{8,}={0,2})(?=\\?")', 1,
       check=_docker_auth, not_after=""),
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
            own.append(Pattern(name, regex, group, not_after=""))
        return cls((*BUILTIN, *own))

    def find(self, text: str) -> list[tuple[str, int, int]]:
        """Non-overlapping secret spans (type, start, end), in text order."""
        taken: list[tuple[int, int]] = []
        found: list[tuple[str, int, int]] = []
        low: str | None = None
        for pat in self.patterns:
            subject, regex = text, pat.regex
            if pat.lower:
                if low is None:
                    low = text.lower()
                if len(low) == len(text):
                    subject = low
                else:  # lowercasing moved positions (rare: İ); fall back to IGNORECASE
                    regex = re.compile(regex.pattern, re.IGNORECASE)
            if pat.needs and pat.needs not in subject and subject is not text:
                continue
            for m in regex.finditer(subject):
                start, end = m.span(pat.group)
                if end <= start or text.startswith("[REDACTED:", start):
                    continue
                m_start = m.start()
                # An escaped newline, tab or CR (`\npassword: …` in JSON text) is no word.
                if pat.not_after and m_start \
                        and re.match(pat.not_after, text[m_start - 1 : m_start + 1]) \
                        and not (text[m_start - 1] in "nrt" and text[m_start - 2 : m_start - 1] == "\\"):
                    continue
                if pat.check and not pat.check(m, text):
                    continue
                if any(start < e and s < end for s, e in taken):
                    continue
                taken.append((start, end))
                found.append((pat.name, start, end))
        found.sort(key=lambda f: f[1])
        return found

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """Text with every secret replaced by its placeholder, and counts per type."""
        counts: dict[str, int] = {}
        # A match that lost an overlap to a stronger pattern can match again once
        # that one is a placeholder; repeating until nothing is found makes
        # redact(redact(x)) == redact(x) hold by construction. Almost always
        # one round; the bound only guards against a pathological user pattern.
        for _ in range(8):
            spans = self.find(text)
            if not spans:
                break
            out: list[str] = []
            pos = 0
            for name, start, end in spans:
                out.append(text[pos:start])
                out.append(PLACEHOLDER.format(name))
                counts[name] = counts.get(name, 0) + 1
                pos = end
            out.append(text[pos:])
            text = "".join(out)
        return text, counts


_DEFAULT = Redactor()


def redact(text: str, patterns: Redactor | None = None) -> tuple[str, dict[str, int]]:
    """Text with secrets replaced by `[REDACTED:<type>]`, and how many of each type."""
    return (patterns or _DEFAULT).redact(text)
