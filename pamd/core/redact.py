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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pamd.core import secret_commands
from pamd.core.config import RedactPattern, Settings, settings
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
Finder = Callable[[str], Iterable[tuple[str | None, int, int]]]


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


# Words and types that stand where a password's value would in code, schemas and prose.
_NOT_VALUES = frozenset({
    "str", "string", "bool", "boolean", "int", "integer", "number", "bytes", "any", "nil", "object",
    "required", "optional", "hidden", "masked", "empty", "unset", "prompt", "secretstr", "text",
    "varchar", "yes", "no", "on", "off", "todo", "tbd", "omitted", "protected", "sensitive",
})
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_CAMEL = re.compile(r"[a-z]+(?:[A-Z][a-z]+)+\d*")
_LOWER_WORD = re.compile(r"[a-z]+")
_DOC_FIELD = re.compile(r"(?::(?:param|type|arg|ivar|var)|@param)\s+$")
_LINE_END = re.compile(r"[ \t]*(?:$|[\r\n]|\\[rn]|#)")


def _password_word(value: str, after: str, between: str) -> bool:
    """A password that does not look generated (`hunter2`, `correcthorse`, `iVs-Cov`), told
    from code, schemas and prose: not an identifier (`new_password`, `hashedPassword`), a type
    (`str`, `SecretBytes`, `Annotated`), a capitalised word (`password: Database user`), a
    name before `,` or `)` (an argument), or a lowercase word assigned in code (`pw = creds`)
    or followed by more words."""
    low, sep = value.lower(), between.rstrip()[-1:]
    if len(value) < 6 or low in _NOT_VALUES or _SNAKE.fullmatch(value) or _CAMEL.fullmatch(value) \
            or "pass" in low or "pwd" in low or value[0] in ":@-" or value.isalpha() and value[0].isupper():
        return False
    if after[:1] and after[:1] in ",)" or after[:1] == ";" and sep == ":":  # `f(password=pw, …)`, `password: pw;`
        return False
    if not _LOWER_WORD.fullmatch(value.rstrip(".!?")):
        return True
    # a lowercase word is a value only where the line ends (YAML, .env), not in a sentence or code
    return value[-1] not in ".!?" and not (sep == "=" and between.endswith(" ")) and bool(_LINE_END.match(after))


def _assigned(bare_min: int, loose: bool = False) -> Check:
    def check(m: re.Match[str], text: str) -> bool:
        value = text[m.start(2) : m.end(2)]  # as written (`m` may be of the lowercased text)
        if _caps_key(value):  # a licence key of capitals and digits is no env-var name
            return True
        if not _real(value) or _reference(value, bool(m.group(1))):
            return False
        if text.startswith("(", m.end(2)):  # `token = Base.url_encode64(...)`: a call, not a value
            return False
        between = text[m.start() : m.start(2)]
        if m.group(1):  # quoted literals are values by construction (a short one: unless code)
            return len(value) >= 8 or loose and len(value) >= 6 \
                and _password_word(value, "", between.removesuffix(m.group(1)))
        # Bare ones must look generated, or `token = get_token_from_environment()` would be
        # redacted; a password (`loose`) may be a word when code and prose are ruled out.
        if len(value) >= bare_min and _mixed(value):
            return True
        # (on the key's line, not a docstring's field: `:param password: the user's`)
        return loose and "\n" not in between and not _DOC_FIELD.search(text, max(0, m.start() - 12), m.start()) \
            and _password_word(value, text[m.end(2) : m.end(2) + 4], between)
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
    # the command this flag is part of: back to a newline (`\n` in JSON too), `|`, `;`, `&`, a backtick
    # (within 64 KB: a line of thousands of flags stays fast)
    at, floor = m.start(), max(0, m.start() - (1 << 16))
    escaped = text.rfind("\\n", floor, at)
    begin = max(max(text.rfind(c, floor, at) for c in "\n|;&`") + 1, escaped + 2 if escaped >= 0 else 0, floor)
    command = text[begin:at]
    if spaced and _PG_CLIENT.search(command):
        return False
    return _cli_password(m, text) and not (spaced and value.isalpha() and value.islower())


def _flag_secret(m: re.Match[str], text: str) -> bool:
    value = m.group(2)
    return _real(value) and not _reference(value, False) and (_mixed(value) or _random(m, text))


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
    # Instead of `regex` (then only its trigger): a function giving (type or None, start, end)
    # for rules that read more than one regex can say (a command's flags, a cookie header).
    finder: Finder | None = None


def _p(name: str, regex: str, group: int = 0, check: Check | None = None,
       not_after: str = r"\w", lower: bool = False, needs: str = "") -> Pattern:
    return Pattern(name, re.compile(regex), group, check, not_after, lower, needs)


# A backslash inside a value: an escaped backslash, or one that does not end the
# value (`\"`, `\'`, `\n`, `\t`, `\r` end it, as the character they stand for would).
_ESCAPED = r"\\\\|\\(?![\"'nrt\\])"


def _assignment(name: str, keys: str, needs: str, bare_min: int = 12, loose: bool = False) -> Pattern:
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
        # A bare value also ends at `&name=` (the next parameter of a URL's query).
        rf"(\\?[\"']|)((?<=[\"'])(?:[^\"'\s\[\\]|{_ESCAPED}){{6,}}"
        rf"(?=\\?[\"'])|(?<![\"'])(?:[^\s\"'`\[,;(){{}}<>\\&]|&(?![\w.\-]+=)|{_ESCAPED}){{6,}})",
        2,
        check=_assigned(bare_min, loose),
        # Not glued to a word, unless the key starts a new one with a capital
        # (camelCase `clientSecret`, run-together capitals `SLACKTOKEN`).
        not_after="[A-Za-z0-9](?![A-Z])",
        lower=True,
        needs=needs,
    )


# An UPPER_CASE variable whose last part names a secret: `DB_PASS`, `SMTP_PASSWORD`, `LDAP_BIND_PW`,
# `PGPASSWORD`, `JWT_SECRET`, `GITHUB_TOKEN`. (Not `PWD`, the shell's working directory.)
_ENV_TRIGGER = re.compile(r"(?:PASS(?:WORD|WD|PHRASE)?|PWD?|SECRET|TOKEN)(?=(?:\\?[\"'])?=)")
# (After a JSON escape too: `\n`, or `\u2192`, the arrow of a numbered listing.)
_ENV_NAME_END = re.compile(r"(?:(?<![\w$.\-])|(?<=\\[nrt])|(?<=\\u[0-9a-fA-F]{4}))[A-Z][A-Z0-9_]*$")
_ENV_WHOLE = re.compile(r"(?:[A-Z0-9]+_)*[A-Z0-9]*(?:PASSWORD|PASSWD|PASSPHRASE)"
                        r"|(?:[A-Z0-9]+_)+(?:PASS|PWD?|SECRET|TOKEN)")
_ENV_VALUE = re.compile(r"(\\?[\"'])((?:(?!\1).){1,200}?)\1|([^\s\"'`\\]+)")


def _env_secrets(text: str) -> Iterator[tuple[str | None, int, int]]:
    """`NAME=value` where NAME says it holds a password, a secret or a token: in a shell or a
    `.env` file the value is a literal whatever its shape (`DB_PASS=hunter22`,
    `SMTP_PASS='correct horse battery staple'`), unless it is a reference (`$X`, `${X}`, a
    path), empty, or a stand-in (`changeme`, `xxxxxxxx`)."""
    if "=" not in text or not any(map(text.__contains__, ("PASS", "PW", "SECRET", "TOKEN"))):
        return
    for m in _ENV_TRIGGER.finditer(text):
        name = _ENV_NAME_END.search(text, max(0, m.start() - 64), m.end())
        if name is None or not _ENV_WHOLE.fullmatch(name.group(0)):
            continue
        at = text.index("=", m.end()) + 1
        v = _ENV_VALUE.match(text, at)
        if v is None:
            continue
        quoted = v.group(2) is not None
        start, end = v.span(2) if quoted else v.span(3)
        value = text[start:end]
        if len(value) < 4 or not _real(value) or value.lower() in _NOT_VALUES or value.isdigit() \
                or value.startswith("[REDACTED:") or _REFERENCE.match(value) \
                or _ROOT_PATH.fullmatch(value) and not _interleaved(value) or _ENV_NAME.fullmatch(value):
            continue
        last = name.group(0).rsplit("_", 1)[-1]
        yield ("token" if last.endswith("TOKEN") else "secret" if last.endswith("SECRET") else "password",
               start, end)


# A cookie header's pairs, `curl -b`/`--cookie`'s: a value that looks generated is a session.
_COOKIE = re.compile(r"(?:(?:set-)?cookie\\?[\"']?[ \t]*:|(?<![\w-])(?:-b|--cookie)[ =])[ \t]*([^\r\n]*)",
                     re.IGNORECASE)
_COOKIE_PAIR = re.compile(r"([\w.\-%$]+)=([^;,\s\"'\\]+)")


def _cookies(text: str) -> Iterator[tuple[str | None, int, int]]:
    if "ookie" not in text and "OOKIE" not in text and " -b" not in text:
        return
    for m in _COOKIE.finditer(text):
        for pair in _COOKIE_PAIR.finditer(text, m.start(1), m.end(1)):
            value = pair.group(2)
            if len(value) >= 16 and _real(value) and (_mixed(value) or len(value) >= 24) \
                    and not _WORDS_NAME.fullmatch(value) and not _ENV_NAME.fullmatch(value) \
                    and pair.group(1).lower() not in ("path", "domain", "expires", "max-age", "samesite"):
                yield None, pair.start(2), pair.end(2)


# `.pgpass`: `host:port:database:user:password`, a whole line (found from the port's `:`).
_PGPASS = re.compile(r":(?:\d{1,5}|\*):[\w*\-]+:[\w*\-]+:([^\s\\\"':]+)(?=$|\n|\\[nr])")
_PGPASS_HOST = re.compile(r"(?:^|(?<=\n)|(?<=\\n))[\w.*\-]+$")


def _pgpass(text: str) -> Iterator[tuple[str | None, int, int]]:
    for m in _PGPASS.finditer(text):
        if _PGPASS_HOST.search(text, max(0, m.start() - 256), m.start()) and _real(m.group(1)):
            yield None, m.start(1), m.end(1)


# Issuers' prefixed tokens: Docker, CircleCI, Shopify, Linear, Grafana, Sentry, Buildkite, Heroku, Groq,
# Replicate, xAI, Perplexity, Stripe webhooks, Vault, Doppler, Square, DigitalOcean, Pulumi, Databricks,
# (Twilio: below). The regex runs only where one of the prefixes is (`in` finds a literal far faster than a
# regex of alternatives does).
_PREFIXES = ("dckr_pat_", "CCIPAT_", "shpat_", "shpss_", "shpca_", "shppa_", "lin_api_", "glsa_", "glc_",
             "sntrys_", "sntryu_", "bkua_", "HRKU-", "gsk_", "r8_", "xai-", "pplx-", "whsec_", "hvs.", "hvb.",
             "dp.", "sq0atp-", "sq0csp-", "_v1_", "pul-", "dapi")
_PREFIXED = re.compile(
    r"(?<![\w\-.])(?:(?:dckr_pat_|CCIPAT_|shp(?:at|ss|ca|pa)_|lin_api_|gl(?:sa|c)_|sntr[yu]s_|bkua_|HRKU-"
    r"|gsk_|r8_|xai-|pplx-|whsec_|hv[sb]\.|dp\.(?:st|ct|sa|pt|scim|audit)\.|sq0(?:atp|csp)-|do[opr]_v1_)"
    r"[A-Za-z0-9_\-.]{20,}|pul-[0-9a-f]{40}|dapi[0-9a-f]{32})")


# A token-shaped secret lies in one run without whitespace: text without a run that long (most
# prose) skips the rules that look for one.
_RUN_32 = re.compile(r"(?<!\S)\S{32}")


def _prefixed(text: str) -> Iterator[tuple[str | None, int, int]]:
    if any(map(text.__contains__, _PREFIXES)):
        for m in _PREFIXED.finditer(text):
            if _random(m, text):
                yield None, m.start(), m.end()


# A long run of base64: when it decodes to text, the secrets in that text make it a secret
# (`client-key-data:` in a kubeconfig is a key block in base64, a `.env` piped to `base64 -d`).
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{32,}={0,2}")


def _base64_secrets(text: str) -> Iterator[tuple[str | None, int, int]]:
    if not _RUN_32.search(text):
        return
    for m in _BASE64_RUN.finditer(text):
        run = m.group(0).rstrip("=")
        if run.isdigit() or run.islower() or run.isupper():  # hex, a word: not base64 of text
            continue
        try:
            plain = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)[:1 << 16].decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if sum(c.isprintable() or c in "\n\r\t" for c in plain) >= 0.95 * len(plain):
            inner = _INNER.find(plain)
            if inner:
                yield inner[0][0], m.start(), m.end()


# A Discord bot token: the bot's id (digits) in base64, `.`, 6 characters, `.`, 27 to 40. Found
# from its middle part (a `.` is found fast, a pattern starting with a class is not).
_DISCORD_TAIL = re.compile(r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}(?![\w\-])")
_DISCORD_HEAD = re.compile(r"(?<![\w\-])[MNO][A-Za-z0-9]{23,27}$")


def _discord_bot(text: str) -> Iterator[tuple[str | None, int, int]]:
    # No gate on a 59-character run: finding the tail's `.` costs less than finding the run.
    for m in _DISCORD_TAIL.finditer(text):
        head = _DISCORD_HEAD.search(text, max(0, m.start() - 28), m.start())
        if head is None:
            continue
        try:
            if base64.b64decode(head.group(0) + "=" * (-len(head.group(0)) % 4)).isdigit():
                yield None, head.start(), m.end()
        except (binascii.Error, ValueError):
            continue


# Between a key block's lines: newlines (real or JSON-escaped), blank lines, spaces;
# then a line may carry a listing's line number: Claude Code's Read tool (`     3→`),
# `cat -n`/`nl` (`     3<tab>`), `grep -n` (`3:`, `file:3:`, `file-3-`), blank lines too.
_PEM_SEP = r"(?:[ \t\r\n]|\\+[rn])+"  # (`\\n`: JSON inside JSON, a JSON file a tool call wrote)
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
    # PuTTY's key file: the lines after `Private-Lines: N` (its public lines are public).
    _p("private-key", rf"Private-Lines: \d+{_PEM_SEP}([A-Za-z0-9+/=]{{4,}}(?=[\s\\]|$)"
       rf"(?:{_PEM_SEP}[A-Za-z0-9+/=]{{4,}}(?=[\s\\]|$))*)", 1, not_after=""),
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
    _p("slack-token", r"x(?:ox[baprse]|app|oxe\.xox[bp])-[0-9A-Za-z][0-9A-Za-z\-]{8,}"),
    _p("discord-webhook", r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/([A-Za-z0-9_\-]{60,})", 1,
       not_after=r"[\w.\-]"),
    Pattern("discord-token", _DISCORD_TAIL, finder=_discord_bot),
    # Issuers' prefixed tokens: Docker, CircleCI, Shopify, Linear, Grafana, Sentry, Buildkite, Heroku,
    # Groq, Replicate, xAI, Perplexity, Stripe webhooks, Vault, Doppler, Square, DigitalOcean.
    Pattern("api-token", _PREFIXED, finder=_prefixed),
    _p("api-token", r"SK[0-9a-f]{32}(?![0-9A-Za-z])"),  # Twilio's API key
    # A signed URL's signature (Azure SAS, S3, GCS presigned) and its session token.
    _p("token", r"[?&](?:sig|x-amz-signature|x-goog-signature)=([a-z0-9%+/=_.\-]{16,})",
       1, not_after="", lower=True, needs="sig"),
    _p("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # `Authorization: Bearer <token>`: an opaque token (a JWT or a known format wins above).
    _p("token", r"bearer[ \t]+([a-z0-9\-._~+/]{16,}=*)(?![a-z0-9\-._~+/=])", 1,
       check=_bearer, lower=True),
    # `Authorization: Basic <base64 of user:password>` (curl -u, HTTP headers).
    _p("password", r"asic[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", 1,
       check=_basic, not_after=""),
    # scheme://user:password@host (or scheme://:password@host): only the password goes.
    # (No backslash either: in JSON-escaped text `\n` ends the URL.)
    # The password may hold an unencoded `@`: it runs to the last `@` before the host.
    _p("password", r"://[^\s:/@'\"\[\]<>\\]*:([^\s/'\"\[\]<>\\]+)@[^\s/@'\"\\]", 1,
       check=_url_password, not_after=""),
    # Oracle's `user/password@db` in a thin JDBC URL or `userid=` (sqlplus and co: secret_commands).
    _p("password", r"thin:[\w$#]+/([^\s/@'\"\\]+)@", 1, check=_url_password),
    _p("password", r"userid=[\w$#]+/([^\s/@'\"\\]+)@", 1, check=_url_password),
    # `.netrc`: `machine HOST login USER password PW`, on one line or several.
    _p("password", rf"login[ \t]+[^\s\\]+(?:[ \t]+|{_PEM_LINE})password[ \t]+([^\s\\\"']+)", 1,
       check=_url_password),
    # `.pgpass`: `host:port:database:user:password`.
    Pattern("password", _PGPASS, finder=_pgpass),
    # `Authorization: <scheme> <credentials>` (Token, ApiKey, Negotiate, …; Basic and Bearer above).
    _p("token", r"authorization\\?[\"']?\s*[:=]\s*\\?[\"']?(?!basic\b|bearer\b|digest\b)[a-z][\w\-]*[ \t]+"
       r"([^\s\"'\\,;]{8,})", 1, check=_bearer, lower=True, needs="authorization"),
    Pattern("password", secret_commands.TRIGGER, finder=lambda t: ((None, s, e) for s, e in secret_commands.spans(t))),
    Pattern("secret", _ENV_TRIGGER, finder=_env_secrets),
    Pattern("cookie", _COOKIE, finder=_cookies),
    # On a command line (an agent's Bash calls): `--password X` / `--password=X` (not
    # `--password-stdin`), curl's `-u user:X`, mysql's `-pX` (a bare `-p` asks for it),
    # `sshpass -p X` and a registry's login `-p X` (not ssh's port, nor gh's protocol).
    _p("password", r"--(?:[a-z]+-)*(?:password|passwd|passphrase|pass)(?:=| +)(\\?[\"']?)([^\s\"'`\\]{4,})",
       2, check=_flag_password),
    # `--api-key X`, `--client-secret X`, `--account-key X`, `--token X`: a generated value.
    _p("secret", r"--(?:[a-z]+-)*(?:secret|token|api-?key|account-key|access-key|secret-key|auth-key)"
       r"(?:=| +)(\\?[\"']?)([^\s\"'`\\]{12,})", 2, check=_flag_secret),
    # Passwords are short: a bare one counts from 8 characters (not `pwd`, also
    # the shell's working directory).
    _assignment("password", "pass(?:word|wd|phrase)", "pass", 8, loose=True),
    _assignment("password", "pwd", "pwd", loose=True),
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
    Pattern("secret", _BASE64_RUN, finder=_base64_secrets),
)


class Redactor:
    """A set of secret patterns; built-ins first, a brain's own after them."""

    def __init__(self, patterns: Iterable[Pattern] = BUILTIN) -> None:
        self.patterns = tuple(patterns)

    @classmethod
    def from_config(cls, config: Settings | Mapping[str, Any]) -> Redactor:
        """Built-ins plus `[[redact.patterns]]` tables: name, regex, optional group."""
        extra = settings(config).redact.patterns or []
        if not isinstance(extra, list):
            raise PamdError("pamd.toml: [redact] patterns must be an array of tables",
                            'write [[redact.patterns]] with name = "…" and regex = "…"')
        own: list[Pattern] = []
        for i, item in enumerate(extra):
            where = f"pamd.toml: redact.patterns[{i}]"
            # an item that is no table (a string) comes through the settings as it was written
            if not isinstance(item, RedactPattern) or not isinstance(item.name, str) \
                    or not isinstance(item.regex, str) or not item.name or not item.regex:
                raise PamdError(f"{where}: needs a string `name` and a string `regex`",
                                "see docs/neurotag.md#redaction")
            name, group = item.name, item.group
            if not re.fullmatch(r"[a-z0-9][a-z0-9\-]*", name):
                raise PamdError(f"{where}: name {name!r} must be lowercase letters, digits, -",
                                "it becomes the placeholder [REDACTED:name]")
            try:
                regex = re.compile(item.regex)
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
            if pat.finder is not None:
                for name, start, end in pat.finder(text):
                    if end > start and not text.startswith("[REDACTED:", start) \
                            and not any(start < e and s < end for s, e in taken):
                        taken.append((start, end))
                        found.append((name or pat.name, start, end))
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
# What decoded base64 is searched with (base64 inside base64 is not unwrapped again).
_INNER = Redactor(BUILTIN[:-1])


def redact(text: str, patterns: Redactor | None = None) -> tuple[str, dict[str, int]]:
    """Text with secrets replaced by `[REDACTED:<type>]`, and how many of each type."""
    return (patterns or _DEFAULT).redact(text)
