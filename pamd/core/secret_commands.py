"""Passwords on command lines: the flags of the commands that take one (`mysql -pX`,
`redis-cli -a X`, `openssl … -passin pass:X`, `htpasswd -b file user X`, …).

A flag belongs to the command it follows anywhere in the same command (up to a newline, real
or JSON-escaped, or `|`, `;`, `&`), however long the options between them. Each command's
span is read once per command name, so a long line full of command words stays linear. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

# What ends a command: a newline (JSON-escaped too), a pipe, `;`, `&`, and a backtick (the end of
# a command quoted in Markdown: prose naming two commands must not lend one the other's flag).
_END = re.compile(r"\\n|[\n|;&`]")
# A flag's value: an optional (JSON-escaped) quote, then the value up to a space or quote.
_V = r"(\\?[\"']?)(?P<v>[^\s\"'`\\]+)"
_DUMMY = frozenset({"password", "changeme", "secret", "xxxxxxxx", "********", "redacted"})


def _value_ok(value: str) -> bool:
    """A password, not a template (`$PW`, `<pw>`), a flag, a number (a port) or a stand-in."""
    return (value[:1] not in "$<{%*[-" and not value.isdigit() and len(value) >= 3
            and value.lower() not in _DUMMY and not value.startswith("[REDACTED:"))


def _htpasswd(m: re.Match[str]) -> tuple[int, int] | None:
    """`htpasswd -b FILE USER PW`, `htpasswd -nb USER PW`: the password is the last argument."""
    group = "c" if "n" not in m.group("flags") else "b"
    if m.group(group) is None:
        return None
    return m.span(group) if _value_ok(m.group(group)) else None


Flag = tuple[re.Pattern[str], Callable[[re.Match[str]], "tuple[int, int] | None"] | None]


def _flags(*regexes: str) -> tuple[Flag, ...]:
    return tuple((re.compile(r), None) for r in regexes)


_MYSQL = _flags(rf" -p{_V}")
_MONGO = _flags(rf" -p(?:=| +){_V}")
# Command words, each with the flags that carry its password (the value is group `v`).
COMMANDS: dict[str, tuple[Flag, ...]] = {
    **dict.fromkeys(("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mariadb",
                     "mariadb-dump", "mariadb-admin"), _MYSQL),
    "curl": _flags(r" (?:-u|--user|--proxy-user|-U)(?:=| *)(\\?[\"']?)[^\s:\"'\\$]+:(?P<v>[^\s\"'`\\]+)"),
    "sshpass": _flags(rf" -p(?:=| +){_V}"),
    "redis-cli": _flags(rf" (?:-a|--pass)(?:=| +){_V}"),
    **dict.fromkeys(("mongosh", "mongo", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat",
                     "mongotop"), _MONGO),
    "htpasswd": ((re.compile(r" -(?P<flags>[a-zA-Z]*b[a-zA-Z]*)(?: +-[a-zA-Z]+)* +(?P<a>[^\s-]\S*)"
                             r" +(?P<b>[^\s-][^\s\\\"']*)(?: +(?P<c>[^\s-][^\s\\\"']*))?"), _htpasswd),),
    "openssl": _flags(r" -pass(?:in|out)? +\\?[\"']?pass:(?P<v>[^\s\"'`\\]+)", rf" -k +{_V}"),
    **dict.fromkeys(("sqlcmd", "bcp", "osql"), _flags(rf" -P(?:=| *){_V}")),
    **dict.fromkeys(("keytool", "jarsigner"), _flags(rf" -(?:src|dest|new)?(?:store|key)pass(?:=| +){_V}")),
    **dict.fromkeys(("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldappasswd", "ldapwhoami",
                     "ldapcompare", "ldapmodrdn"), _flags(rf" -w +{_V}")),
    **dict.fromkeys(("smbclient", "rpcclient", "smbmap", "smbget", "smbcacls"),
                    _flags(r" (?:-U|--user)(?:=| +)(\\?[\"']?)[^\s%\"'\\]+%(?P<v>[^\s\"'`\\]+)")),
    # Oracle's `user/password@db`.
    **dict.fromkeys(("sqlplus", "sqlldr", "expdp", "impdp", "rman", "exp", "imp"),
                    _flags(r"(?: +-\w+)* +[\w$#]+/(?P<v>[^\s/@'\"\\]+)@")),
    # `docker login -p X` (podman, helm registry, az acr, …), not `gh auth login -p https`.
    "login": _flags(rf" -p(?:=| +){_V}"),
}
_REGISTRY = re.compile(r"(?:\b|(?<=\\[nrt]))(?:docker|podman|buildah|skopeo|oras|nerdctl|registry|az|cf|acr) +$")
# A command's name is found by `str.find` of a literal it starts with (much faster than a regex
# of alternatives on long text), then read whole and checked against COMMANDS.
_LITERALS = ("mysql", "mariadb", "curl", "sshpass", "redis-cli", "mongo", "htpasswd", "openssl", "sqlcmd",
             "bcp", "osql", "keytool", "jarsigner", "ldap", "smb", "rpcclient", "login", "sqlplus", "sqlldr", "expdp",
             "impdp", "rman")
_WORD = re.compile(r"[\w\-]*")
# (After a JSON-escaped newline or tab too: a command in a tool call's stored arguments.)
TRIGGER = re.compile(r"(?:(?<![\w.\-])|(?<=\\[nrt]))(" + "|".join(map(re.escape, _LITERALS)) + r")[\w\-]*")


def _starts(text: str) -> Iterator[tuple[str, int, int]]:
    """(command, start, end) of each command word in `text`."""
    for lit in _LITERALS:
        at = text.find(lit)
        while at != -1:
            m = _WORD.match(text, at)
            end = m.end() if m else at + len(lit)
            word = text[at:end]
            before = text[at - 1 : at]
            if word in COMMANDS and (not before or not (before.isalnum() or before in "_.-")
                                     or text[at - 2 : at] in ("\\n", "\\t", "\\r")):
                yield word, at, end
            at = text.find(lit, end)


def spans(text: str) -> Iterator[tuple[int, int]]:
    """Where a password follows, on the same command, a command that takes one."""
    if " -" not in text and "@" not in text:  # every flag above starts ` -`; Oracle's has `@`
        return
    if not any(map(text.__contains__, _LITERALS)):
        return
    done: dict[str, int] = {}  # command -> end of the last command of that name read
    for word, start, after in sorted(_starts(text), key=lambda w: w[1]):
        if start < done.get(word, -1):
            continue
        if word == "login" and not _REGISTRY.search(text, max(0, start - 24), start):
            continue
        end_m = _END.search(text, after)
        end = end_m.start() if end_m else len(text)
        done[word] = end
        for regex, pick in COMMANDS[word]:
            for f in regex.finditer(text, after, end):
                if pick is not None:
                    span = pick(f)
                    if span:
                        yield span
                elif _value_ok(f.group("v")):
                    yield f.span("v")
