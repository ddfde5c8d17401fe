"""Secret redaction: each known format, what must stay untouched, config patterns, properties."""

from __future__ import annotations

import base64
import hashlib
import json
import string
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pamd.core.config import defaults
from pamd.core.redact import Redactor, redact
from pamd.errors import PamdError

# Built at run time so no literal secret-shaped string sits in the repository
# (and secret scanners on this repo stay quiet).
ALNUM = string.ascii_letters + string.digits


def fake(prefix: str, n: int, alphabet: str = ALNUM, seed: str = "x") -> str:
    digest = hashlib.sha256((prefix + seed).encode()).digest() * 8
    return prefix + "".join(alphabet[b % len(alphabet)] for b in digest[:n])


AWS_ID = fake("AKIA", 16, string.ascii_uppercase + string.digits)
AWS_SECRET = fake("", 40, ALNUM + "/+")
GH = fake("ghp_", 36)
GH_PAT = fake("github_pat_", 60, ALNUM + "_")
OPENAI = fake("sk-proj-", 48, ALNUM + "_-")
OPENAI_OLD = fake("sk-", 48)
ANTHROPIC = fake("sk-ant-api03-", 80, ALNUM + "_-")
GOOGLE = fake("AIza", 35, ALNUM + "_-")
SLACK = fake("xoxb-", 40, string.digits) + "-" + fake("", 24)
JWT = ".".join([
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
    base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"A"}').decode().rstrip("="),
    fake("", 43, ALNUM + "_-"),
])
BEARER = fake("", 32, "0123456789abcdef")
BASIC = base64.b64encode(b"deploy-bot:" + fake("", 14).encode()).decode()
PEM = ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(fake("", 64, ALNUM + "+/", str(i))
                                                      for i in range(5))
       + "\n-----END RSA PRIVATE KEY-----")

STRIPE = fake("sk_live_", 99)
STRIPE_TEST = fake("sk_test_", 24, seed="t")
STRIPE_RESTRICTED = fake("rk_live_", 99, seed="r")
GITLAB = fake("glpat-", 20, ALNUM + "_-")
NPM = fake("npm_", 36)
HF = fake("hf_", 34, string.ascii_letters)
PYPI = "pypi-AgEIcHlwaS5vcmc" + fake("", 120, ALNUM + "_-", "p")
SENDGRID = "SG." + fake("", 22, ALNUM + "_-", "s1") + "." + fake("", 43, ALNUM + "_-", "s2")
SLACK_HOOK = "T0" + fake("", 8, string.ascii_uppercase + string.digits) + "/B0" \
    + fake("", 8, string.ascii_uppercase + string.digits, "b") + "/" + fake("", 24, seed="w")
AZURE = fake("", 86, ALNUM + "+/", "az") + "=="
DOCKER_AUTH = base64.b64encode(b"ci-bot:" + fake("", 20, seed="d").encode()).decode()
RAILS = fake("", 128, "0123456789abcdef", "rails")
AES = fake("", 64, "0123456789abcdef", "aes")

CASES = [
    ("aws-access-key", f"export AWS_ACCESS_KEY_ID={AWS_ID}", AWS_ID),
    ("aws-secret-key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("github-token", f"git clone https://{GH}@github.com/o/r", GH),
    ("github-token", f"token {GH_PAT} expires soon", GH_PAT),
    ("openai-key", f"OPENAI_API_KEY is {OPENAI}", OPENAI),
    ("openai-key", f"key: {OPENAI_OLD}.", OPENAI_OLD),
    ("openai-key", f"key: {fake('sk-', 32, '0123456789abcdef')}", fake("sk-", 32, "0123456789abcdef")),
    ("anthropic-key", f"use {ANTHROPIC} for claude", ANTHROPIC),
    ("google-api-key", f"?key={GOOGLE}&q=1", GOOGLE),
    ("slack-token", f"SLACK={SLACK}", SLACK),
    ("jwt", f"Authorization: Bearer {JWT}", JWT),
    ("token", f"Authorization: Bearer {BEARER}", BEARER),
    ("private-key", f"key file:\n{PEM}\ndone", PEM),
    ("password", f"curl -H 'Authorization: Basic {BASIC}' https://api.example.com", BASIC),
    ("password", f'{{"headers": {{"authorization": "basic {BASIC}"}}}}', BASIC),
    ("stripe-key", f"stripe: {STRIPE}", STRIPE),
    ("stripe-key", f"STRIPE_KEY={STRIPE_TEST}", STRIPE_TEST),
    ("stripe-key", f"Stripe::Key = '{STRIPE_RESTRICTED}'", STRIPE_RESTRICTED),
    ("gitlab-token", f"use {GITLAB} for CI", GITLAB),
    ("npm-token", f"//registry.npmjs.org/:_authToken={NPM}", NPM),
    ("huggingface-token", f"HF token: {HF}", HF),
    ("pypi-token", f"password = {PYPI}", PYPI),
    ("sendgrid-key", f"SENDGRID_API_KEY={SENDGRID}", SENDGRID),
    ("slack-webhook", f"curl -X POST https://hooks.slack.com/services/{SLACK_HOOK} -d @m.json",
     SLACK_HOOK),
    ("azure-key", f"DefaultEndpointsProtocol=https;AccountName=foo;AccountKey={AZURE};"
     "EndpointSuffix=core.windows.net", AZURE),
    ("password", f'{{"auths": {{"ghcr.io": {{"auth": "{DOCKER_AUTH}"}}}}}}', DOCKER_AUTH),
    ("password", json.dumps({"content": f'{{"auths": {{"r.io": {{"auth": "{DOCKER_AUTH}"}}}}}}'}),
     DOCKER_AUTH),
    ("secret", f"SECRET_KEY_BASE={RAILS}", RAILS),
    ("secret", f"  secret_key_base: {RAILS}", RAILS),
    ("secret", f"export ENCRYPTION_KEY={AES}", AES),
    ("secret", f'{{"MASTER_KEY": "{fake("", 44, ALNUM + "+/", "m")}"}}', fake("", 44, ALNUM + "+/", "m")),
]


@pytest.mark.parametrize(("kind", "text", "secret"), CASES)
def test_known_format_is_redacted(kind: str, text: str, secret: str) -> None:
    out, counts = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert counts[kind] == 1


def test_surrounding_text_survives() -> None:
    out, _ = redact(f"before {AWS_ID} after\n{PEM}\nthe end")
    assert out == "before [REDACTED:aws-access-key] after\n[REDACTED:private-key]\nthe end"


def test_truncated_private_key_block() -> None:
    cut = PEM[: PEM.index("-----END")]
    out, counts = redact(f"log:\n{cut}")
    assert counts == {"private-key": 1}
    assert "MII" not in out and fake("", 64, ALNUM + "+/", "3") not in out


def test_truncated_private_key_block_with_escaped_newlines() -> None:
    # A tool call's input is JSON text: the key's newlines are the two characters `\n`.
    args = json.dumps({"file_path": "/srv/app/deploy_key", "content": PEM})
    cut = args[: args.index("-----END")]
    out, counts = redact(f"[tool Write] {cut}")
    assert counts == {"private-key": 1}
    assert out == '[tool Write] {"file_path": "/srv/app/deploy_key", "content": "[REDACTED:private-key]\\n'
    out, counts = redact(f"[tool Write] {args}")  # the whole block, END line and all
    assert counts == {"private-key": 1} and out.endswith('"[REDACTED:private-key]"}')


def body(n: int, width: int = 64, seed: str = "") -> list[str]:
    return [fake("", width, ALNUM + "+/", seed + str(i)) for i in range(n)]


@pytest.mark.parametrize(
    "block",
    [
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body(4, 70))
        + "\n-----END OPENSSH PRIVATE KEY-----",
        # legacy encrypted PEM: header lines, a blank line, a short last line
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
        + "A1B2C3D4E5F60718293A4B5C6D7E8F90\n\n" + "\n".join(body(3)) + "\nAbC1==\n"
        "-----END RSA PRIVATE KEY-----",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\r\nVersion: GnuPG v2\r\n\r\n"
        + "\r\n".join(body(3)) + "\r\n=Ab1C\r\n-----END PGP PRIVATE KEY BLOCK-----",
        # newlines flattened to spaces (an env var echoed on one line)
        "-----BEGIN EC PRIVATE KEY----- " + " ".join(body(2)) + " -----END EC PRIVATE KEY-----",
    ],
)
def test_private_key_block_shapes(block: str) -> None:
    out, counts = redact(f"key:\n{block}\nkept after")
    assert (out, counts) == ("key:\n[REDACTED:private-key]\nkept after", {"private-key": 1})


@pytest.mark.parametrize(
    "text",
    [
        # a header in prose, in code, in a grep: no key body follows, nothing is a secret
        "The file starts with -----BEGIN OPENSSH PRIVATE KEY----- so it is the private one"
        " and we decided to rotate it on Monday 3 Dec and move deploys to the new CI runner",
        '[tool result] src/pem.py:10:BEGIN = "-----BEGIN PRIVATE KEY-----"\n'
        "src/pem.py:11:# TODO: fix the ECDSA branch, it crashes on P-384\n"
        "src/pem.py:12:def decode(blob):\n"
        'src/pem.py:20:END = "-----END PRIVATE KEY-----"\n'
        "tests/test_pem.py:4:def test_roundtrip(): ...",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----\nNote: paste the key here\n-----END RSA PRIVATE KEY-----",
        '{"content": "-----BEGIN PRIVATE KEY-----\\nTODO: load from vault\\n"}',
    ],
)
def test_private_key_header_without_body_is_kept(text: str) -> None:
    assert redact(text) == (text, {})


def test_truncated_private_key_block_keeps_the_text_after_it() -> None:
    lines = body(3)
    cut = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\nAbc"  # cut mid-line
    out, counts = redact(f"{cut}\n[log truncated]\nthen we rotated it on Monday")
    assert counts == {"private-key": 1}
    assert not any(line in out for line in lines)
    assert out.endswith("\n[log truncated]\nthen we rotated it on Monday")


@pytest.mark.parametrize(
    "number",
    [
        lambda n: f"{n:>6}\u2192",  # Claude Code's Read tool
        lambda n: f"{n:>6}\t",  # cat -n, nl
        lambda n: f"{n}:",  # grep -n
        lambda n: f"deploy.pem:{n}:",  # grep -rn
    ],
)
def test_private_key_with_line_numbers(number) -> None:
    lines = ["-----BEGIN RSA PRIVATE KEY-----", *body(3), "AbC1==", "-----END RSA PRIVATE KEY-----"]
    listing = "\n".join(number(i + 1) + line for i, line in enumerate(lines))
    out, counts = redact(f"{listing}\n{number(7)}kept after")
    assert (out, counts) == (f"{number(1)}[REDACTED:private-key]\n{number(7)}kept after",
                             {"private-key": 1})
    # cut short (a Read with a limit): the lines it has go, the note after it stays
    out, counts = redact("\n".join(number(i + 1) + line for i, line in enumerate(lines[:3]))
                         + "\n\n... (file truncated) kept")
    assert (out, counts) == (f"{number(1)}[REDACTED:private-key]\n\n... (file truncated) kept",
                             {"private-key": 1})


def test_private_key_with_short_body_lines() -> None:
    block = ("-----BEGIN PRIVATE KEY-----\n" + "\n".join(body(4, 32))
             + "\n-----END PRIVATE KEY-----")
    assert redact(f"{block}\nkept") == ("[REDACTED:private-key]\nkept", {"private-key": 1})


def test_assignment_in_json_escaped_text_ends_at_the_escaped_newline() -> None:
    # A file a tool call wrote is one JSON string: its newlines are the two characters `\n`.
    env = ("DB_PASSWORD=abc123xyz789\nDB_HOST=db.prod.internal\tDB_PORT=5432\r\n"
           "api_key: \"Zx81mQ29aLpQ7\"\nREDIS_URL=redis://:Redis5ecretPw@cache:6379/0\n"
           "CACHE_URL=redis://cache:6379\nADMIN_EMAIL=ops@corp.example\n"
           "password: Zx81mQ29aLpQ7\nLOG_LEVEL=info\n")
    out, counts = redact(f"[tool Write] {json.dumps({'file_path': '/app/.env', 'content': env})}")
    assert json.loads(out.removeprefix("[tool Write] "))["content"] == (
        "DB_PASSWORD=[REDACTED:password]\nDB_HOST=db.prod.internal\tDB_PORT=5432\r\n"
        'api_key: "[REDACTED:api-key]"\nREDIS_URL=redis://:[REDACTED:password]@cache:6379/0\n'
        "CACHE_URL=redis://cache:6379\nADMIN_EMAIL=ops@corp.example\n"
        "password: [REDACTED:password]\nLOG_LEVEL=info\n")
    assert counts == {"password": 3, "api-key": 1}


def test_connection_string_keeps_scheme_user_host() -> None:
    out, counts = redact("DATABASE_URL=postgres://app:S3cr3t-pw@db.internal:5432/prod")
    assert out == "DATABASE_URL=postgres://app:[REDACTED:password]@db.internal:5432/prod"
    assert counts == {"password": 1}
    out, counts = redact("redis://:Redis5ecretPw@cache:6379")  # no user part
    assert out == "redis://:[REDACTED:password]@cache:6379"
    assert counts == {"password": 1}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('password = "correct-horse-9"', 'password = "[REDACTED:password]"'),
        ("DB_PASSWORD=Zx81mQ29aLpQ7", "DB_PASSWORD=[REDACTED:password]"),
        ("api_key: 9f8e7d6c5b4a3f2e1d0c", "api_key: [REDACTED:api-key]"),
        ('{"access_token": "ya29.a0AfH6SMBx3"}', '{"access_token": "[REDACTED:token]"}'),
        ("client_secret => 'abcdefgh12345'", "client_secret => '[REDACTED:secret]'"),
        ("X-Api-Key: 5f4dcc3b5aa765d61d83", "X-Api-Key: [REDACTED:api-key]"),
        # A key glued to a word still counts when it starts with a capital:
        # camelCase, or capitals run together.
        ("export PGPASSWORD=Hunt3r2xyzQ", "export PGPASSWORD=[REDACTED:password]"),
        ('{"accessToken": "Zx9Yw8Vu7Ts6Rq5Po4nM"}', '{"accessToken": "[REDACTED:token]"}'),
        ('{"clientSecret": "Zx9Yw8Vu7Ts6Rq5Po4nM"}', '{"clientSecret": "[REDACTED:secret]"}'),
        ("dbPassword: 'Zx81mQ29'", "dbPassword: '[REDACTED:password]'"),
        ("refreshToken=Zx81mQ29aLpQ7", "refreshToken=[REDACTED:token]"),
        ('authToken: "Zx81mQ29aLpQ7"', 'authToken: "[REDACTED:token]"'),
        ("SLACKTOKEN=Zx81mQ29aLpQ7", "SLACKTOKEN=[REDACTED:token]"),
        ("myApiKey = Zx81mQ29aLpQ7", "myApiKey = [REDACTED:api-key]"),
        # not a path, a reference, a name or code: still secrets
        ("token: ya29.a0AfH6SMBx3", "token: [REDACTED:token]"),
        ('password: "correct.horse.battery9"', 'password: "[REDACTED:password]"'),
        ("secret = Zx81mQ29aLpQ7/abc", "secret = [REDACTED:secret]"),
        # base64 that starts with `/` (1 in 64) is no path; in quotes, capitals and
        # digits joined by `_` are a value, not an env-var name
        ('DB_PASSWORD="/xK9fj3kLm2"', 'DB_PASSWORD="[REDACTED:password]"'),
        ('api_key: "/9j4kLmN0pQrStUv8wX"', 'api_key: "[REDACTED:api-key]"'),
        ("ENCRYPTION_KEY=/9j4kLmN0pQrStUv8wXyZ12345678==", "ENCRYPTION_KEY=[REDACTED:secret]"),
        ("token: /9j4kLmN0pQ/rStUv8wX+yZ1", "token: [REDACTED:token]"),
        ('CLIENT_SECRET="ABCD_1234_EFGH_5678"', 'CLIENT_SECRET="[REDACTED:secret]"'),
        ('token: "X7K2_P9QZ_M3N8_R4T6"', 'token: "[REDACTED:token]"'),
    ],
)
def test_generic_assignments(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


NOT_SECRETS = [
    "We decided to rotate the password every 90 days; the token expires hourly.",
    "token = get_token_from_environment()",
    "token = Base.url_encode64(:crypto.strong_rand_bytes(24), padding: false)",
    "secret_key_base: String.duplicate(\"a\", 64)",
    "liveSocket = new LiveSocket('/live', Socket, {params: {_csrf_token: csrfToken}})",
    "password: str = Field(..., min_length=12)",
    "def check(password, token): return verify(password=password, token=token)",
    "DB_PASSWORD=${DB_PASSWORD}",
    "api_key = os.environ['OPENAI_API_KEY']",
    "secret: 'abc'",
    'password = "changeme"',
    "max_tokens: 100000, input_tokens: 3, cache_read_input_tokens: 11515",
    "commit 3b02a13f9c1e2d4b5a69788776655443322110aa",
    "git show 0498ae7 and e491783f",
    f"id {uuid.UUID(int=7)} and {uuid.UUID(int=2**127 + 12345)}",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    'logo = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"',
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "the task-force met at https://example.com/path?q=1 and http://localhost:8080",
    "pip install scikit-learn; from sklearn import sk-learn-compatible-estimator",
    "ssh git@github.com:org/repo.git",
    "Mypassword = 'not a key name'",
    "mypassword=Zx81mQ29aLpQ7 and slacktoken: Zx81mQ29aLpQ7",  # glued lowercase: not a key name
    "The password policy: rotate every 90 days. Token budget: 1200; tokens: 1200.",
    "maxTokens: 4096, showPassword: false, nextToken: null, hasSecret = true",
    "PWD=/srv/app1",
    # where a secret is, not the secret: paths, URI references, env-var names, code
    "private_key: /etc/ssl/private/server2.key",
    'private_key: "/etc/ssl/private/server2.key"',
    "SSH_PRIVATE_KEY=~/.ssh/id_rsa_deploy1",
    "tls_private_key = ./certs/tls2.key and pwd: ../build/out2/bin",
    "pwd: /home/user/projects2",
    "token: state.auth.token2",
    "refreshToken: response.data.refreshToken1",
    "token = os.environ.MY_TOKEN_2",
    "access_key=AWS_ACCESS_KEY_ID_2",
    'api_key: "OPENAI_API_KEY_V2"',
    'password: "/srv/app/secret2.txt", token: "/run/secrets/api_token2"',
    'access_key: "AWS_ACCESS_KEY_ID_2"',
    "passphrase: op://Private/ssh-key/passphrase1",
    "vault_token: vault:secret/data/ci#token2",
    "sk-learn-compatible-estimators-v2 and sk-1-2-release-notes",
    "Authorization: Bearer ${API_TOKEN}",
    "Authorization: Bearer <token>",
    'headers = {"Authorization": f"Bearer {token}"}',
    "the bearer token is sent in the Authorization header",
    "Bearer YOUR_ACCESS_TOKEN_HERE",
    "Ошибка: пароль неверный, токен истёк",
    "HTTP Basic authentication is configured in nginx",  # a word, not base64 of user:password
    "Authorization: Basic $(echo -n user:pass | base64)",
    f"Basic {base64.b64encode(b'no colon in here at all').decode()}",
    "basic usage: see README",
    f"Mybasic {base64.b64encode(b'user:not-a-header').decode()}",  # "basic" inside a word
    # near the prefixes of the formats above, not secrets
    "pk_live_51H8abcdEFGHijklMNOPqrstUVWXyz0123 is the publishable key; sk_live_... the secret",
    "STRIPE_PUBLISHABLE_KEY=pk_test_TYooMQauvdEDq54NiTphI7jx",
    "glpat-xxxxxxxxxxxxxxxxxxxx and npm_config_registry=https://registry.npmjs.org/",
    "from huggingface_hub import hf_hub_download; hf_transfer_enabled_for_all_the_models = 1",
    "pypi-publish action, see pypi-AgE... in the docs",
    "SG.Lee met SG.Tan at 9",
    "https://hooks.slack.com/services/XXX/YYY/ZZZ",
    "AccountKey=<your-account-key>;",
    '{"auths": {"ghcr.io": {"auth": "github"}}, "oauth": "dXNlcjpwYXNzd29yZDEyMw=="}',
    f"CACHE_KEY={hashlib.sha256(b'x').hexdigest()} IDEMPOTENCY_KEY={uuid.UUID(int=99)}",
    f"REQUEST_KEY={uuid.UUID(int=2**120 + 5)} GPG_KEY=E3FF2839C048B25C084DEBE9B26995E310250568",
    "PRIMARY_KEY=user_id SORT_KEY=created_at SSH_KEY=~/.ssh/id_ed25519_2",
    # names, not generated values: S3 object, routing, i18n and partition keys, paths, fixtures
    "S3_KEY=uploads/2024/11/report-final.pdf ROUTING_KEY=orders.created.v2.eu-west-1",
    "I18N_KEY=checkout.summary.total2.label PARTITION_KEY: tenant_id-2024-11-shard3",
    'export SSH_KEY=keys/deploy/id_ed25519_prod2; TEST_KEY = "test_fixture_2024_case_1"',
    'OBJECT_KEY="Reports/Q3-2024/Summary.v2.pdf"',
    f"commit {hashlib.sha1(b'y').hexdigest()} sha512 {hashlib.sha512(b'z').hexdigest()}",
    f"blob {base64.b64encode(hashlib.sha512(b'b').digest() * 3).decode()}",
    "cache_key = 'user:42:profile:v2' and partition_key: tenant_a1b2c3d4e5f6",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_not_mangled(text: str) -> None:
    assert redact(text) == (text, {})


def test_find_gives_spans_in_text_order() -> None:
    text = f"{GH} then {AWS_ID}"
    spans = Redactor().find(text)
    assert [(k, text[s:e]) for k, s, e in spans] == [("github-token", GH),
                                                     ("aws-access-key", AWS_ID)]


def test_specific_type_beats_generic_assignment() -> None:
    out, counts = redact(f"api_key = {OPENAI}")
    assert out == "api_key = [REDACTED:openai-key]"
    assert counts == {"openai-key": 1}


def test_counts_per_type() -> None:
    _, counts = redact(f"{AWS_ID} {AWS_ID} {GH}")
    assert counts == {"aws-access-key": 2, "github-token": 1}


# ---------------------------------------------------------------- config


def test_config_patterns_extend_builtins() -> None:
    config = {**defaults(), "redact": {"patterns": [
        {"name": "acme-token", "regex": r"acme_[0-9a-f]{24}"},
        {"name": "pin", "regex": r"PIN (\d{4,8})\b", "group": 1},
    ]}}
    r = Redactor.from_config(config)
    out, counts = r.redact(f"acme_{'ab12' * 6} and PIN 123456 and {GH}")
    assert out == "[REDACTED:acme-token] and PIN [REDACTED:pin] and [REDACTED:github-token]"
    assert counts == {"acme-token": 1, "pin": 1, "github-token": 1}
    assert Redactor.from_config(defaults()).redact("PIN 123456")[1] == {}


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        ({"name": "x"}, "array of tables"),
        ([{"name": "x"}], "a string `name` and a string `regex`"),
        ([{"name": "x", "regex": "(a"}], "bad regex"),
        ([{"name": "Bad Name", "regex": "a"}], "lowercase"),
        ([{"name": "x", "regex": "a", "group": 2}], "not a group"),
        ([{"name": "x", "regex": "a*"}], "empty string"),
        (["a"], "needs a string"),
    ],
)
def test_bad_config_patterns(patterns: object, message: str) -> None:
    with pytest.raises(PamdError, match=message):
        Redactor.from_config({"redact": {"patterns": patterns}})


# ---------------------------------------------------------------- properties

# (as it appears in text, the secret): an AWS secret key, a Bearer or Basic token only by what precedes it.
CONTEXTUAL = ("aws-secret-key", "token", "slack-webhook", "azure-key", "secret")
SECRETS = [(s, s) for kind, _, s in CASES
           if kind not in CONTEXTUAL and s not in (BASIC, DOCKER_AUTH)] + [
    (f"aws_secret_access_key={AWS_SECRET}", AWS_SECRET),
    (f"Bearer {BEARER}", BEARER),
    (f"Basic {BASIC}", BASIC),
    (f'"clientSecret": "{fake("", 20)}"', fake("", 20)),
    (f"PGPASSWORD='{fake('', 11, seed='pg')}'", fake("", 11, seed="pg")),
    (f"redis://:{fake('', 16, seed='r')}@cache:6379", fake("", 16, seed="r")),
    (f"https://hooks.slack.com/services/{SLACK_HOOK}", SLACK_HOOK),
    (f"AccountKey={AZURE}", AZURE),
    (f'"auth": "{DOCKER_AUTH}"', DOCKER_AUTH),
    (f"SECRET_KEY_BASE={RAILS}", RAILS),
    (f"ENCRYPTION_KEY={AES}", AES),
]
filler = st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
# Separators a secret realistically sits between (not glued to other word characters).
sep = st.sampled_from([" ", "\n", " = ", ": ", '"', "'", "(", ") ", ", ", "`"])


@given(st.lists(st.tuples(filler, sep, st.sampled_from(SECRETS), sep), max_size=5), filler)
@settings(max_examples=300)
def test_never_leaves_a_known_secret(parts: list, tail: str) -> None:
    text = "".join(f + a + s[0] + b for f, a, s, b in parts) + tail
    out, _ = redact(text)
    for _, _, (_, secret), _ in parts:
        assert secret not in out
    assert redact(out)[0] == out


@given(st.text(max_size=300))
@settings(max_examples=500)
def test_idempotent_on_any_text(text: str) -> None:
    once, _ = redact(text)
    assert redact(once) == (once, {})


words = st.sampled_from([
    "password", "token", "api_key", "secret", "=", ":", '"', "'", "://", "@", "user", "pa55word",
    "sk-", "ghp_", "AKIA", "eyJ", "-----BEGIN RSA PRIVATE KEY-----", "x" * 12, "Ab1" * 5, " ",
    "\n", "[REDACTED:token]", "ya29.a0AfH6SMBx3", "$HOME", "İ", "accessToken", "PGPASSWORD",
    "Bearer ", "redis://:", "\\n", "DB_PASS=", "mysql ", " -p", "redis-cli -a ", "login ", "password ",
    "Cookie: session=", "sig=", "&", "://u:p@ss@", "htpasswd -b f u ", "-passin pass:", "Private-Lines: 2\n",
    "Authorization: Token ", "`", "|", "sqlplus a/", "db:5432:shop:app:", "\u2192",
])


@given(st.lists(words, max_size=25).map("".join))
@settings(max_examples=500)
def test_idempotent_on_secretish_text(text: str) -> None:
    once, _ = redact(text)
    assert redact(once) == (once, {})


def test_a_key_line_after_a_json_escaped_newline_is_caught() -> None:
    """`…\\nAPP_KEY=<hex>` in a tool call's stored input (a `.env`
    written by Write, a heredoc in Bash) kept its value: the name's left edge was taken
    for the end of a word (the `n` of `\\n`)."""
    hexkey = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    b64 = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNb"
    for text in (f'{{"content": "A=1\\nAPP_KEY={hexkey}\\n"}}',
                 f'{{"command": "cat <<EOF\\nENCRYPTION_KEY={b64}\\nEOF"}}',
                 f'{{"content": "A=1\\tSIGNING_KEY={b64}"}}'):
        out, counts = redact(text)
        assert counts == {"secret": 1} and hexkey not in out and b64 not in out, out
    assert redact('{"content": "A=1\\nS3_KEY=uploads/2024/11/report-final.pdf"}')[1] == {}


def test_a_quoted_random_value_from_the_root_is_no_path() -> None:
    """A quoted base64 secret that starts with `/` and holds a
    second `/` (a quarter of those that start with `/`) was kept as a path, and a group
    key of letters and digits as an env-var name; a path or a name of words still is."""
    import base64
    import random

    rng = random.Random(9)
    values = [v for v in (base64.b64encode(rng.randbytes(24)).decode() for _ in range(40000))
              if v.startswith("/") and "/" in v[1:] and not set("+=") & set(v)]
    assert len(values) > 50
    kept = [v for v in values if not redact(f'DB_PASSWORD="{v}"')[1]]
    assert len(kept) <= len(values) // 50, kept  # was every one of them
    assert redact('SECRET="AB12_CD34_EF56_GH78"')[1] == {"secret": 1}
    for text in ('password: "/Users/Alice/Projects2/notes"', "pwd: /home/user/projects2",
                 'api_key: "OPENAI_API_KEY_V2"', 'token: "DB_HOST_NAME"', "private_key: /etc/ssl/private/server2.key"):
        assert redact(text)[1] == {}, text


def test_a_licence_key_of_capitals_and_digits_is_redacted_and_a_name_is_not() -> None:
    """`LICENSE_KEY="XK92_PL4Q_ZZ81"` kept its key (the `_KEY` rule wanted both
    cases and 20 characters; quoted or not it looked like an env-var name), and so did
    `license_key:` in YAML and product/serial keys in groups. Names of capitals, digits and
    words still stay."""
    key = fake("", 4, string.ascii_uppercase + string.digits, "a")  # built, not a literal
    keys = ["XK92_PL4Q_ZZ81", "XK92-PL4Q-ZZ81-7TQM", "XK92PL4QZZ817TQMA9", "AB12-CD34-EF56-GH78",
            "BCDFG-HJKMP-QRTVW-XY234-6789B", f"{key}-PL4Q-ZZ81-{key}"]
    for value in keys:
        for text in (f'LICENSE_KEY="{value}"', f"LICENSE_KEY={value}", f"PRODUCT_KEY={value}",
                     f'license_key: "{value}"', f"license_key = {value}",
                     f'{{"command": "echo LICENSE_KEY={value} >> .env"}}'):
            out, counts = redact(text)
            assert counts == {"secret": 1} and value not in out, text
    for text in ("LICENSE_KEY=LICENSE_KEY_V2", "LICENSE_KEY=ACME_PRO_LICENSE_2024", "I18N_KEY=ERR_404_NOT_FOUND",
                 "CONFIG_KEY=S3_BUCKET_2_KEY", "SIGNING_ALG_KEY=SHA256WITHRSA", "ENUM_KEY=HTTP2_TLS13_ONLY",
                 "HOTKEY_KEY=CTRL_SHIFT_F12", "TABLE_KEY=USERS_V2_2024_11_30", "token=PROD_V2_K8S_TOKEN",
                 "PARTITION_KEY=TENANT_2024_11_SHARD3", "access_key=AWS_S3_KEY_2", 'LICENSE_KEY="${LICENSE_KEY}"',
                 "license_key = settings.LICENSE_KEY", "license_key: str = Field(...)", "MAP_KEY=A1B2C3",
                 'license_key: "see LICENSE"', "LICENSE_KEY=2024-11-30-1200"):
        assert redact(text) == (text, {}), text


PW = fake("", 14, seed="cli")
TELEGRAM = "4766342777:AA" + fake("", 33, ALNUM + "_-", "tg")
AGE = "AGE-SECRET-KEY-1" + fake("", 58, "023456789ACDEFGHJKLMNPQRSTUVWXYZ", "age")


@pytest.mark.parametrize(("text", "expected"), [
    (f"mysql -u root -p{PW} shop", "mysql -u root -p[REDACTED:password] shop"),
    (f'mysqldump -uadmin -p"{PW}" db > dump.sql', 'mysqldump -uadmin -p"[REDACTED:password]" db > dump.sql'),
    (f"sshpass -p '{PW}' ssh deploy@10.0.0.5", "sshpass -p '[REDACTED:password]' ssh deploy@10.0.0.5"),
    ("sshpass -p raspberry ssh pi@host", "sshpass -p [REDACTED:password] ssh pi@host"),
    (f"docker login -u ci -p {PW} ghcr.io", "docker login -u ci -p [REDACTED:password] ghcr.io"),
    (f"helm registry login r.io -u a -p={PW}", "helm registry login r.io -u a -p=[REDACTED:password]"),
    (f"curl -s -u admin:{PW} https://api.example.com/v1", "curl -s -u admin:[REDACTED:password] https://api.example.com/v1"),
    (f"curl --user admin:{PW} https://x", "curl --user admin:[REDACTED:password] https://x"),
    (f"wget --password={PW} https://x", "wget --password=[REDACTED:password] https://x"),
    (f"mongodump --password {PW} --db shop", "mongodump --password [REDACTED:password] --db shop"),
    (f"psql -c 'select 1'; tool --password {PW}", "psql -c 'select 1'; tool --password [REDACTED:password]"),
    (f'{{"command": "psql -h db\\ntool --password {PW}"}}',
     '{"command": "psql -h db\\ntool --password [REDACTED:password]"}'),
    ("vpn --user ann --password 'hunterhunter'", "vpn --user ann --password '[REDACTED:password]'"),
    (f'{{"command": "mysql -uroot -p{PW} -e \\"show tables\\""}}',
     '{"command": "mysql -uroot -p[REDACTED:password] -e \\"show tables\\""}'),
    (f"curl https://api.telegram.org/bot{TELEGRAM}/getMe",
     "curl https://api.telegram.org/bot4766342777:[REDACTED:telegram-token]/getMe"),
    (f"AGE_KEY_FILE says {AGE}", "AGE_KEY_FILE says [REDACTED:age-key]"),
])
def test_a_password_on_a_command_line_and_bot_and_age_keys_are_redacted(text: str, expected: str) -> None:
    """An agent's Bash calls carry passwords as flags (`mysql -pX`, `curl -u
    user:X`, `sshpass -p X`, `docker login -p X`, `--password X`), and Telegram bot tokens
    and age keys appear in its files; all stayed in clear."""
    assert redact(text)[0] == expected


@pytest.mark.parametrize("text", [
    "docker run -p 8080:80 -p 5432:5432 app", "ssh -p 2222 deploy@host", "git log -p -3",
    "pytest -p no:cacheprovider -q", "mysql -u root -p shop", "mysql -p$MYSQL_PWD db",
    "gh auth login -p https -h github.com", "ssh -l login -p 2222 host", "curl -u admin: https://x",
    "curl -u $USER:$PASS https://x", "docker run -u 1000:1000 img", "docker run -u www-data:www-data img",
    "pass --password when prompted", "mysql --password --user root", "psql --password",
    "--password-file=/run/pw", "docker login --username ci --password-stdin",
    'curl -u "${USER}:${TOKEN}" https://x', "at 12:30:AA and 1234567890:AAbc",
    "psql --password postgres://app@db:5432/shop", "pg_dump -U app --password shop_prod > dump.sql",
    "createdb -h db --password tenant_42",
    "psql -h db " + "--set=a=b " * 60 + "--password shop_prod",  # far from psql, still psql's
    '{"command": "cd /srv\\npsql --password shop_prod"}',
])
def test_a_command_line_without_a_password_is_kept(text: str) -> None:
    assert redact(text) == (text, {})


def test_a_command_line_rule_reads_a_bounded_span_so_a_long_line_stays_linear() -> None:
    """`curl … -u`, `mysql … -p`, `sshpass … -p`, `login … -p` looked for
    the flag up to the line's end from every `curl`/`login` word: a one-line tool result (minified
    HTML, JSON) of 150 KB with many of them took 25-40 s per rule at ingest (0.007 s at 420e56a).
    The span between the command and its flag is bounded (240 characters)."""
    import re as _re

    from pamd.core.redact import BUILTIN

    for pattern in BUILTIN:
        assert not _re.search(r"\][*+]\?", pattern.regex.pattern), pattern.regex.pattern
    for text in (f"curl -s -u admin:{PW} https://x", f"mysql -h db -P 3306 -u root -p{PW} shop"):
        assert PW not in redact(text)[0]


@pytest.mark.parametrize("gap", [1, 40, 1000])
def test_a_flag_counts_however_far_from_its_command(gap: int) -> None:
    """A password flag 240 characters or more after its command (a long line of options) kept
    its value: the command was looked for in a bounded span before the flag."""
    opts = " ".join(f"--opt{i}=v{i}" for i in range(gap))
    for text in (f"mysql -h db {opts} -p{PW} shop", f"redis-cli -h cache {opts} -a {PW} ping",
                 f'{{"command": "cd /srv\\nopenssl rsa -in k.pem {opts} -passin pass:{PW}"}}'):
        out, counts = redact(text)
        assert PW not in out and counts == {"password": 1}, out[-200:]


@pytest.mark.parametrize("text", [
    "mysql -u root shop; pytest -pno:cacheprovider -q",
    "mysql -u root shop\nssh -p 2222 deploy@host",
    "| `sshpass -p X` reads it | `gh auth login -p https` picks the protocol |",
    "mysql -u root shop | grep -pattern x",
])
def test_a_flag_of_another_command_is_not_taken(text: str) -> None:
    """A command ends at a newline, `|`, `;`, `&` or a backtick: a later command's `-p` is its own."""
    assert redact(text) == (text, {})
