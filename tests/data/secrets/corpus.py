"""A corpus of secrets, and of look-alikes that are no secrets, as an agent's session shows them.

Every secret is fake and built at run time from a seed (no literal secret-shaped string sits
in the repository, so secret scanners on it stay quiet), in the shape its issuer gives it.
A case is the text as it appears (a command, a file, a tool's output), the fragments that must
not survive redaction, and the fragments that must (the key's name, the words around it).

`session_jsonl` lays the cases out as one Claude Code session: each case once as the output of
a tool (raw, multi-line) and once inside a tool call's arguments (JSON-escaped, as ingest stores
them), each message led by a marker (`zq0042`) to find it by.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import string
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def fake(prefix: str, n: int, alphabet: str = ALNUM, seed: str = "") -> str:
    """`prefix` and `n` characters of `alphabet`, the same for the same arguments."""
    digest = b"".join(hashlib.sha256(f"{prefix}|{seed}|{i}".encode()).digest() for i in range(n // 32 + 1))
    return prefix + "".join(alphabet[b % len(alphabet)] for b in digest[:n])


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


@dataclass(frozen=True)
class Case:
    family: str
    text: str
    secrets: tuple[str, ...] = ()  # fragments that must be gone
    keep: tuple[str, ...] = ()  # fragments that must stay (single-line, no quote or backslash)


def pem(kind: str, lines: int, seed: str, width: int = 64, headers: str = "") -> tuple[str, tuple[str, ...]]:
    """A key block of `kind` (`RSA PRIVATE KEY`, …) and its body lines."""
    body = [fake("", width, B64, f"{seed}{i}") for i in range(lines)] + [fake("", 20, B64, seed + "last") + "=="]
    block = f"-----BEGIN {kind}-----\n{headers}" + "\n".join(body) + f"\n-----END {kind}-----"
    return block, tuple(body)


def _password(seed: str, n: int = 14) -> str:
    """A password as people choose them: letters, digits and one of `!#%^*-_`."""
    core = fake("", n - 1, ALNUM, seed)
    return core[: n // 2] + "!#%^*-_"[len(seed) % 7] + core[n // 2 :]


def secrets() -> list[Case]:  # noqa: PLR0915 - one long list reads best as one list
    out: list[Case] = []

    def add(family: str, text: str, *frags: str, keep: tuple[str, ...] = ()) -> None:
        out.append(Case(family, text, tuple(frags), keep))

    # ---------------------------------------------------------------- private keys
    for kind, seed in (("RSA PRIVATE KEY", "rsa"), ("EC PRIVATE KEY", "ec"), ("DSA PRIVATE KEY", "dsa"),
                       ("PRIVATE KEY", "pkcs8"), ("ENCRYPTED PRIVATE KEY", "enc"),
                       ("OPENSSH PRIVATE KEY", "openssh")):
        block, body = pem(kind, 4, seed, 70 if "OPENSSH" in kind else 64)
        add("private-key", f"$ cat ~/.ssh/id_{seed}\n{block}\n$ ls", *body, keep=("ls",))
    block, body = pem("RSA PRIVATE KEY", 3, "legacy", headers="Proc-Type: 4,ENCRYPTED\n"
                      "DEK-Info: AES-128-CBC,2F1B3C4D5E6F708192A3B4C5D6E7F801\n\n")
    add("private-key", block, *body)
    block, body = pem("PGP PRIVATE KEY BLOCK", 3, "pgp", headers="Version: GnuPG v2\n\n")
    add("private-key", f"gpg --export-secret-keys --armor ops@corp.example\n{block}", *body)
    for version, seed in (("2", "ppk2"), ("3", "ppk3")):
        public = [fake("AAAAC3NzaC1lZDI1NTE5AAAAI", 39, B64, seed + "pub")]
        private = [fake("AAAAI", 40, B64, seed + "priv"), fake("", 12, B64, seed + "priv2") + "="]
        kdf = "" if version == "2" else "Key-Derivation: Argon2id\nArgon2-Memory: 8192\n"
        ppk = (f"PuTTY-User-Key-File-{version}: ssh-ed25519\nEncryption: none\n{kdf}"
               f"Comment: eddsa-key-20241130\nPublic-Lines: 1\n{public[0]}\n"
               f"Private-Lines: 2\n{private[0]}\n{private[1]}\nPrivate-MAC: {fake('', 64, HEX, seed)}")
        add("private-key", f"type C:\\keys\\deploy.ppk\n{ppk}", *private, keep=("Private-Lines", "Public-Lines"))
    # one-line (an env var echoed), and JSON-escaped in a service account's JSON
    block, body = pem("PRIVATE KEY", 3, "oneline")
    add("private-key", "echo $TLS_KEY\n" + block.replace("\n", " "), *body)
    block, body = pem("PRIVATE KEY", 5, "gcp")
    sa = {"type": "service_account", "project_id": "acme-prod-42",
          "private_key_id": fake("", 40, HEX, "gcpid"), "private_key": block + "\n",
          "client_email": "deployer@acme-prod-42.iam.gserviceaccount.com", "client_id": "104820175512098765432"}
    add("gcp-service-account", "$ cat sa.json\n" + json.dumps(sa, indent=2), *body,
        keep=("client_email", "deployer@acme-prod-42.iam.gserviceaccount.com"))
    # kubectl config view --raw: the client key is base64 of a key block; the certificate is public
    block, body = pem("RSA PRIVATE KEY", 4, "kubekey")
    key_data = b64(block + "\n")
    cert_data = b64(pem("CERTIFICATE", 4, "kubecert")[0] + "\n")
    sa_token = "eyJhbGciOiJSUzI1NiIsImtpZCI6" + fake("", 20, URLSAFE, "kt") + "." \
        + fake("eyJpc3MiOiJrdWJlcm5ldGVz", 60, URLSAFE, "kt2") + "." + fake("", 86, URLSAFE, "kt3")
    kube = ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: " + cert_data[:120]
            + "\n    server: https://10.0.0.1:6443\n  name: prod\ncontexts:\n- context:\n    cluster: prod\n"
            "    user: admin\n  name: prod\ncurrent-context: prod\nkind: Config\nusers:\n- name: admin\n"
            f"  user:\n    client-certificate-data: {cert_data}\n    client-key-data: {key_data}\n")
    add("kubernetes", f"$ kubectl config view --raw\n{kube}", key_data, *body,
        keep=("client-key-data", "client-certificate-data", cert_data[:60]))
    add("kubernetes", f"users:\n- name: ci\n  user:\n    token: {sa_token}\n", sa_token, keep=("token",))
    pw = _password("k8s")
    add("kubernetes", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n"
        f"  password: {b64(pw)}\n  username: {b64('app')}\n", b64(pw), keep=("password",))
    add("kubernetes", f"kubectl create secret generic db --from-literal=password={pw}x "
        "--from-literal=user=app", pw + "x", keep=("--from-literal=password=",))

    # ---------------------------------------------------------------- files and env vars
    pw = _password("netrc")
    add("netrc", f"$ cat ~/.netrc\nmachine api.heroku.com\n  login ops@corp.example\n  password {pw}\n",
        pw, keep=("machine api.heroku.com", "login ops@corp.example"))
    pw2 = _password("netrc2", 10)
    add("netrc", f"machine git.corp.example login deploy password {pw2}", pw2, keep=("login deploy",))
    for name, seed, n in (("DB_PASS", "dbpass", 12), ("SMTP_PASS", "smtp", 16), ("MYSQL_ROOT_PASSWORD", "myroot", 10),
                          ("REDIS_PASSWORD", "redispw", 20), ("ADMIN_PASSWD", "admpw", 9),
                          ("POSTGRES_PASSWORD", "pgpw", 11), ("RABBITMQ_DEFAULT_PASS", "rabbit", 12),
                          ("LDAP_BIND_PW", "ldap", 13), ("KEYSTORE_PASSPHRASE", "ks", 18)):
        value = _password(seed, n)
        add("env-password", f"{name}={value}", value, keep=(name,))
    add("env-password", "DB_PASS=hunter22", "hunter22", keep=("DB_PASS",))
    add("env-password", "SMTP_PASS='correct horse battery staple'", "correct horse battery staple",
        keep=("SMTP_PASS",))
    for name, seed in (("JWT_SECRET", "jwt"), ("SESSION_SECRET", "sess"), ("WEBHOOK_SECRET", "wh"),
                       ("AZURE_CLIENT_SECRET", "azcs"), ("NEXTAUTH_SECRET", "nextauth"),
                       ("DJANGO_SECRET_KEY", "dj")):
        value = fake("", 32, ALNUM + "-_~", seed)
        add("env-secret", f"export {name}={value}", value, keep=(name,))
    add("env-secret", "APP_SECRET=supersecretvalue", "supersecretvalue", keep=("APP_SECRET",))
    for name, value in (("GITHUB_TOKEN", fake("", 40, HEX, "ghtok")), ("SLACK_BOT_TOKEN", fake("", 30, ALNUM, "sbt")),
                        ("SENTRY_AUTH_TOKEN", fake("", 64, HEX, "sentry")),
                        ("CF_API_TOKEN", fake("", 40, URLSAFE, "cf")),
                        ("VAULT_TOKEN", fake("hvs.", 24, ALNUM, "vault")),
                        ("CIRCLE_TOKEN", fake("", 40, HEX, "circle")),
                        ("MAILGUN_API_KEY", fake("key-", 32, HEX, "mg")),
                        ("MISTRAL_API_KEY", fake("", 32, ALNUM, "mistral")),
                        ("COHERE_API_KEY", fake("", 40, ALNUM, "cohere")),
                        ("TWILIO_AUTH_TOKEN", fake("", 32, HEX, "twauth")),
                        ("HEROKU_API_KEY", "8f2c5e1a-3b4d-4c6e-9f0a-1b2c3d4e5f60")):
        add("env-token", f"{name}={value}", value, keep=(name,))
    env = {"DB_PASS": _password("envfile"), "SMTP_PASS": _password("envfile2"),
           "STRIPE_SECRET": fake("sk_live_", 40, ALNUM, "envstripe")}
    add("env-file", "$ cat .env\nNODE_ENV=production\nDB_HOST=db.internal\n"
        + "".join(f"{k}={v}\n" for k, v in env.items()) + "LOG_LEVEL=info\n",
        *env.values(), keep=("DB_HOST=db.internal", "LOG_LEVEL=info", "DB_PASS", "SMTP_PASS"))
    pw = _password("compose")
    add("env-file", f"services:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_PASSWORD={pw}\n"
        "      - POSTGRES_USER=app\n", pw, keep=("POSTGRES_USER=app", "POSTGRES_PASSWORD"))
    pw = _password("dockerrun")
    add("env-file", f"docker run -d -e MYSQL_ROOT_PASSWORD={pw} -p 3306:3306 mysql:8", pw,
        keep=("MYSQL_ROOT_PASSWORD", "mysql:8"))
    for key, seed, n in (("password", "yaml1", 7), ("password", "yaml2", 12), ("passwd", "yaml3", 10),
                         ("secret", "yaml4", 24), ("api_key", "yaml5", 32), ("token", "yaml6", 28),
                         ("client_secret", "yaml7", 30), ("passphrase", "yaml8", 16)):
        value = _password(seed, n)
        add("yaml", f"database:\n  host: db.internal\n  user: app\n  {key}: {value}\n  port: 5432\n", value,
            keep=(key, "host: db.internal", "port: 5432"))
    add("yaml", "smtp:\n  password: correcthorsebatterystaple\n", "correcthorsebatterystaple", keep=("password",))
    pw = _password("yamlq")
    add("yaml", f'  password: "{pw}"', pw, keep=("password",))
    add("json", json.dumps({"db": {"user": "app", "password": "hunter2!"}}), "hunter2!", keep=("password",))
    tok = fake("", 40, ALNUM, "jsontok")
    add("json", json.dumps({"auth": {"token": tok, "expires": 3600}}, indent=2), tok, keep=("expires",))

    # ---------------------------------------------------------------- connection strings
    pw = "p@ss" + fake("", 6, ALNUM, "urlat")
    add("url-password", f"DATABASE_URL=postgres://app:{pw}@db.internal:5432/prod", pw, pw[4:],
        keep=("postgres://app:", "db.internal:5432/prod"))
    pw = fake("", 10, ALNUM, "urlat2") + "@2024"
    add("url-password", f"git clone https://deploy:{pw}@git.corp.example/ops/infra.git", pw, pw[:10],
        keep=("git.corp.example/ops/infra.git",))
    for scheme, host, seed in (("postgresql", "db.internal:5432/app", "pg"), ("mysql", "mysql.internal/shop", "my"),
                               ("mongodb+srv", "cluster0.ab1cd.mongodb.net/prod", "mongo"),
                               ("redis", "cache.internal:6379/0", "redis"), ("rediss", "cache.internal:6380", "rediss"),
                               ("amqp", "mq.internal:5672/vhost", "amqp"), ("ftp", "files.corp.example/in", "ftp")):
        pw = _password(seed, 12)
        add("url-password", f"{scheme}://admin:{pw}@{host}", pw, keep=(host,))
    pw = _password("jdbc1")
    add("jdbc", f"jdbc:mysql://db:3306/shop?user=app&password={pw}&useSSL=true", pw, keep=("useSSL=true",))
    pw = _password("jdbc2")
    add("jdbc", f"jdbc:sqlserver://db.corp:1433;databaseName=crm;user=sa;password={pw};encrypt=true", pw,
        keep=("encrypt=true", "databaseName=crm"))
    pw = _password("jdbc3", 8)
    add("jdbc", f"jdbc:postgresql://db/app?user=app&password={pw}", pw)
    pw = _password("jdbc4", 9)
    add("jdbc", f"jdbc:oracle:thin:scott/{pw}@//ora.corp:1521/ORCL", pw, keep=("ora.corp:1521/ORCL",))
    pw = _password("odbc")
    add("odbc", "Driver={ODBC Driver 18 for SQL Server};Server=tcp:sql.corp,1433;Database=crm;"
        f"Uid=sa;Pwd={pw};Encrypt=yes;", pw, keep=("Encrypt=yes", "Uid=sa"))
    pw = _password("mssql")
    add("mssql", f"Server=sql.corp;Database=crm;User Id=sa;Password={pw};TrustServerCertificate=True;", pw,
        keep=("TrustServerCertificate=True",))
    pw = "Str0ng!Passw0rd"
    add("mssql", f'"ConnectionStrings": {{"Default": "Server=.;Database=app;User ID=sa;Password={pw}"}}', pw)
    pw = _password("libpq", 10)
    add("postgres", f"psql 'host=db.internal user=app password={pw} dbname=shop sslmode=require'", pw,
        keep=("dbname=shop",))
    pw = _password("pgpass", 10)
    add("postgres", f"$ cat ~/.pgpass\ndb.internal:5432:shop:app:{pw}\n", pw, keep=("db.internal:5432:shop:app:",))
    for text_of, seed in ((lambda p: f"PGPASSWORD={p} psql -h db -U app shop", "pgpw1"),
                          (lambda p: f"PGPASSWORD='{p}' pg_dump -h db shop > dump.sql", "pgpw2")):
        pw = _password(seed, 9)
        add("postgres", text_of(pw), pw, keep=("PGPASSWORD",))
    add("postgres", "PGPASSWORD=s3cret psql -h db", "s3cret", keep=("PGPASSWORD",))

    # ---------------------------------------------------------------- command lines
    cli = [
        ("redis-cli", "redis-cli -h cache.internal -p 6379 -a {} --no-auth-warning ping"),
        ("redis-cli", "redis-cli -a '{}' INFO"),
        ("redis-cli", "redis-cli --pass {} -h cache"),
        ("mongosh", "mongosh mongodb://db:27017/admin -u admin -p {}"),
        ("mongosh", "mongosh --host db -u admin -p '{}' --authenticationDatabase admin"),
        ("mysql", "mysql -h db -u root -p{} shop"),
        ("mysql", "mysql --user=root --password={} -e 'show databases'"),
        ("htpasswd", "htpasswd -b /etc/nginx/.htpasswd admin {}"),
        ("htpasswd", "htpasswd -bc .htpasswd deploy {}"),
        ("openssl", "openssl rsa -in server.key -out plain.key -passin pass:{}"),
        ("openssl", "openssl pkcs12 -export -in c.pem -inkey k.pem -out c.p12 -passout pass:{}"),
        ("openssl", "openssl enc -aes-256-cbc -salt -in db.sql -out db.enc -pass pass:{}"),
        ("openssl", "openssl enc -d -aes-256-cbc -in db.enc -k {}"),
        ("gpg", "gpg --batch --yes --passphrase {} --decrypt secrets.gpg"),
        ("gpg", "gpg --batch --passphrase='{}' -c backup.tar"),
        ("sqlcmd", "sqlcmd -S sql.corp -U sa -P {} -Q 'SELECT 1'"),
        ("keytool", "keytool -importkeystore -srckeystore a.p12 -srcstorepass {} -deststorepass x1y2z3w4"),
        ("ldap", "ldapsearch -x -H ldap://ldap.corp -D cn=admin,dc=corp -w {} '(uid=ann)'"),
        ("smbclient", "smbclient //files/share -U ann%{}"),
        ("sshpass", "sshpass -p {} ssh deploy@10.0.0.5"),
        ("docker", "docker login registry.corp -u ci -p {}"),
        ("curl", "curl -u admin:{} https://jenkins.corp/api/json"),
        ("wget", "wget --http-user=ci --http-password={} https://files.corp/x.tgz"),
        ("sqlplus", "sqlplus system/{}@//ora.corp:1521/ORCL"),
    ]
    for i, (family, cmd) in enumerate(cli):
        value = _password(f"cli{i}", 10 + i % 5)
        add("cli-" + family, cmd.format(value), value)
    # the flag far from its command (a long line of options)
    value = _password("farflag")
    opts = " ".join(f"--opt{i}=value{i}" for i in range(40))
    add("cli-mysql", f"mysql -h db.internal -u root {opts} -p{value} shop", value, keep=("shop",))
    add("cli-redis-cli", f"redis-cli -h cache {opts} -a {value} ping", value + "", keep=("ping",))

    # ---------------------------------------------------------------- HTTP
    tok = fake("", 40, HEX, "drf")
    add("http-auth", f"curl -H 'Authorization: Token {tok}' https://api.corp/v1/items", tok,
        keep=("Authorization: Token",))
    tok = fake("", 36, ALNUM, "bearer")
    add("http-auth", f"Authorization: Bearer {tok}", tok, keep=("Authorization: Bearer",))
    basic = b64("deploy:" + _password("basic"))
    add("http-auth", f"curl -H \"Authorization: Basic {basic}\" https://x", basic, keep=("Authorization: Basic",))
    tok = fake("", 32, ALNUM, "apikeyhdr")
    add("http-auth", f"Authorization: ApiKey {tok}", tok, keep=("Authorization: ApiKey",))
    tok = fake("", 40, ALNUM, "xauth")
    add("http-auth", f"curl -H 'X-Auth-Token: {tok}' https://x", tok, keep=("X-Auth-Token",))
    sess = fake("", 32, HEX, "cookie")
    add("cookie", f"Cookie: session={sess}; theme=dark", sess, keep=("theme=dark", "Cookie: session="))
    sid = fake("s%3A", 60, URLSAFE, "sid")
    add("cookie", f"Set-Cookie: connect.sid={sid}; Path=/; HttpOnly; Secure", sid,
        keep=("Path=/; HttpOnly; Secure", "connect.sid"))
    php = fake("", 26, string.ascii_lowercase + string.digits, "php")
    add("cookie", f"curl -b 'PHPSESSID={php}' https://shop.corp/cart", php, keep=("PHPSESSID",))
    js = fake("", 32, UPPER[:16] + UPPER[26:], "jsess")
    add("cookie", f"< Set-Cookie: JSESSIONID={js}; Path=/app", js, keep=("JSESSIONID",))
    gh = fake("", 48, URLSAFE, "ghsess")
    add("cookie", f"Cookie: _gh_sess=abc; user_session={gh}; logged_in=yes", gh, keep=("logged_in=yes",))

    # ---------------------------------------------------------------- webhooks and chat
    hook = "https://discord.com/api/webhooks/1183746291029384756/" + fake("", 68, URLSAFE, "discord")
    add("discord", f"curl -X POST -H 'Content-Type: application/json' -d @msg.json {hook}", hook[-68:],
        keep=("discord.com/api/webhooks",))
    hook2 = "https://discordapp.com/api/webhooks/998877665544332211/" + fake("", 68, URLSAFE, "discord2")
    add("discord", f"DISCORD_WEBHOOK={hook2}", hook2[-68:])
    bot = b64("1183746291029384756").rstrip("=") + "." + fake("", 6, URLSAFE, "db2") + "." \
        + fake("", 38, URLSAFE, "db3")
    add("discord", f"client.run('{bot}')", bot)
    for prefix, seed in (("xoxb-", "xoxb"), ("xoxp-", "xoxp")):
        tok = prefix + fake("", 12, string.digits, seed) + "-" + fake("", 13, string.digits, seed + "2") + "-" \
            + fake("", 24, ALNUM, seed + "3")
        add("slack", f"SLACK_TOKEN={tok}", tok)
    xapp = "xapp-1-A0" + fake("", 9, UPPER, "xapp") + "-" + fake("", 13, string.digits, "xapp2") + "-" \
        + fake("", 64, HEX, "xapp3")
    add("slack", f"socket mode: {xapp}", xapp)
    hook = "T0" + fake("", 9, UPPER, "sw") + "/B0" + fake("", 9, UPPER, "sw2") + "/" + fake("", 24, ALNUM, "sw3")
    add("slack", f"https://hooks.slack.com/services/{hook}", hook)
    tg = "6123456789:AA" + fake("", 33, URLSAFE, "tg")
    add("telegram", f"TELEGRAM_BOT_TOKEN={tg}", tg[11:])
    add("telegram", f"curl https://api.telegram.org/bot{tg}/sendMessage", tg[11:])

    # ---------------------------------------------------------------- cloud
    akid = fake("AKIA", 16, UPPER, "aws")
    asec = fake("", 40, B64, "awssec")
    add("aws", f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {akid}\n"
        f"aws_secret_access_key = {asec}\nregion = eu-west-1\n", akid, asec, keep=("region = eu-west-1",))
    add("aws", f"export AWS_ACCESS_KEY_ID={fake('ASIA', 16, UPPER, 'aws2')}\n"
        f"export AWS_SECRET_ACCESS_KEY={fake('', 40, B64, 'awssec2')}\n"
        f"export AWS_SESSION_TOKEN={fake('IQoJb3JpZ2luX2Vj', 300, B64, 'awsst')}",
        fake("ASIA", 16, UPPER, "aws2"), fake("", 40, B64, "awssec2"), fake("IQoJb3JpZ2luX2Vj", 300, B64, "awsst"))
    add("aws", json.dumps({"Credentials": {"AccessKeyId": fake("ASIA", 16, UPPER, "sts"),
                                           "SecretAccessKey": fake("", 40, B64, "stssec"),
                                           "SessionToken": fake("FwoGZXIvYXdzE", 200, B64, "ststok")}}, indent=4),
        fake("", 40, B64, "stssec"), fake("FwoGZXIvYXdzE", 200, B64, "ststok"))
    azkey = fake("", 86, B64, "az") + "=="
    add("azure", f"DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={azkey};"
        "EndpointSuffix=core.windows.net", azkey, keep=("AccountName=acmeprod",))
    sig = fake("", 43, ALNUM, "sas") + "%3D"
    add("azure", "https://acmeprod.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rl"
        f"&se=2026-12-31T00:00:00Z&st=2026-11-01T00:00:00Z&spr=https&sig={sig}", sig,
        keep=("acmeprod.blob.core.windows.net/backups",))
    add("azure", f"az storage blob list --account-name acmeprod --account-key {azkey}", azkey)
    add("digitalocean", f"doctl auth init -t {fake('dop_v1_', 64, HEX, 'do')}", fake("dop_v1_", 64, HEX, "do"))
    add("digitalocean", f"DIGITALOCEAN_ACCESS_TOKEN={fake('doo_v1_', 64, HEX, 'doo')}", fake("doo_v1_", 64, HEX, "doo"))
    add("heroku", f"heroku config:set API=1 --app x; HEROKU_API_KEY={fake('HRKU-', 60, URLSAFE, 'hrku')}",
        fake("HRKU-", 60, URLSAFE, "hrku"))
    add("gcp", f"?key={fake('AIza', 35, URLSAFE, 'gcpkey')}&q=x", fake("AIza", 35, URLSAFE, "gcpkey"))
    add("gcp", f"access_token: {fake('ya29.a0', 120, URLSAFE, 'ya29')}", fake("ya29.a0", 120, URLSAFE, "ya29"))

    # ---------------------------------------------------------------- CI and registries
    for prefix, n, alphabet, seed in (("ghp_", 36, ALNUM, "ghp"), ("gho_", 36, ALNUM, "gho"),
                                      ("ghs_", 36, ALNUM, "ghs"), ("ghu_", 36, ALNUM, "ghu"),
                                      ("github_pat_", 82, ALNUM + "_", "ghpat"), ("glpat-", 20, URLSAFE, "glpat"),
                                      ("npm_", 36, ALNUM, "npm"), ("dckr_pat_", 27, URLSAFE, "dckr"),
                                      ("CCIPAT_", 40, ALNUM + "_", "circle2"),
                                      ("pypi-AgEIcHlwaS5vcmc", 140, URLSAFE, "pypi"),
                                      ("shpat_", 32, HEX, "shopify"), ("lin_api_", 40, ALNUM, "linear"),
                                      ("glsa_", 41, ALNUM + "_", "grafana"), ("sntrys_", 80, ALNUM, "sentry2"),
                                      ("dapi", 32, HEX, "databricks"), ("bkua_", 40, HEX, "buildkite"),
                                      ("pul-", 40, HEX, "pulumi"), ("dp.st.prd.", 43, ALNUM, "doppler")):
        tok = fake(prefix, n, alphabet, seed)
        add("ci-token", f"echo {tok} | tool auth login --with-token", tok)
    tok = fake("ghs_", 36, ALNUM, "remote")
    add("ci-token", f"$ git remote -v\norigin\thttps://x-access-token:{tok}@github.com/acme/app.git (fetch)", tok,
        keep=("github.com/acme/app.git",))
    add("ci-token", f"//registry.npmjs.org/:_authToken={fake('npm_', 36, ALNUM, 'npmrc')}",
        fake("npm_", 36, ALNUM, "npmrc"))
    docker_auth = b64("ci-bot:" + fake("dckr_pat_", 27, URLSAFE, "dauth"))
    add("ci-token", json.dumps({"auths": {"ghcr.io": {"auth": docker_auth}}}), docker_auth)

    # ---------------------------------------------------------------- payment, mail, chat APIs
    for prefix, n, seed in (("sk_live_", 99, "stripe"), ("rk_live_", 99, "stripe2"), ("sk_test_", 24, "stripe3"),
                            ("whsec_", 32, "stripewh")):
        tok = fake(prefix, n, ALNUM, seed)
        add("payment", f"Stripe.api_key = '{tok}'" if "whsec" not in prefix else f"STRIPE_WEBHOOK_SECRET={tok}",
            tok)
    tw = fake("SK", 32, HEX, "twkey")
    add("payment", f"twilio api:core:messages:create --api-key {tw} --api-secret {fake('', 32, ALNUM, 'twsec')}",
        tw, fake("", 32, ALNUM, "twsec"))
    sg = "SG." + fake("", 22, URLSAFE, "sg") + "." + fake("", 43, URLSAFE, "sg2")
    add("payment", f"sendgrid key {sg}", sg)
    add("payment", f"square: {fake('sq0atp-', 22, URLSAFE, 'sq')}", fake("sq0atp-", 22, URLSAFE, "sq"))

    # ---------------------------------------------------------------- LLM keys
    for prefix, n, alphabet, seed in (("sk-", 48, ALNUM, "oai"), ("sk-proj-", 156, URLSAFE, "oaiproj"),
                                      ("sk-svcacct-", 100, URLSAFE, "oaisvc"),
                                      ("sk-ant-api03-", 95, URLSAFE, "ant"), ("sk-ant-admin01-", 95, URLSAFE, "antadm"),
                                      ("AIza", 35, URLSAFE, "gemini"), ("gsk_", 52, ALNUM, "groq"),
                                      ("hf_", 34, string.ascii_letters, "hf"), ("r8_", 37, ALNUM, "replicate"),
                                      ("xai-", 80, ALNUM, "xai"), ("pplx-", 48, ALNUM, "pplx")):
        tok = fake(prefix, n, alphabet, seed)
        add("llm-key", f"client = Client(api_key=\"{tok}\")", tok)
    tok = fake("sk-ant-api03-", 95, URLSAFE, "antenv")
    add("llm-key", f"ANTHROPIC_API_KEY={tok} claude -p hi", tok, keep=("claude -p hi",))

    # ---------------------------------------------------------------- JWT
    jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + b64(b'{"sub":"42","role":"admin"}').rstrip("=") + "." \
        + fake("", 43, URLSAFE, "jwt")
    add("jwt", f"localStorage.token = {jwt}", jwt)
    add("jwt", f"[tool result] {{\"access\": \"{jwt}x\", \"refresh\": \"{jwt}y\"}}", jwt)

    # ---------------------------------------------------------------- base64 and escaped forms
    env_blob = b64(f"DB_PASS={_password('b64env')}\nAPI_TOKEN={fake('', 32, ALNUM, 'b64tok')}\n")
    add("base64", f"echo {env_blob} | base64 -d > .env", env_blob)
    add("base64", f"secret: {b64(fake('ghp_', 36, ALNUM, 'b64ghp'))}", b64(fake("ghp_", 36, ALNUM, "b64ghp")))
    pw = _password("b64url")
    add("base64", f"DSN_B64={b64(f'postgres://app:{pw}@db/shop')}", b64(f"postgres://app:{pw}@db/shop"))
    block, body = pem("OPENSSH PRIVATE KEY", 3, "b64ssh", 70)
    add("base64", f"SSH_KEY_B64={b64(block)}", b64(block)[:80], b64(block)[200:280])
    # a tool's JSON output: newlines inside the string are `\n`
    pw = _password("jsonesc")
    out_json = json.dumps({"stdout": f"connecting...\nDB_PASS={pw}\nok\n", "exit": 0})
    add("json-escaped", out_json, pw, keep=("connecting...",))
    block, body = pem("EC PRIVATE KEY", 3, "jsonpem")
    add("json-escaped", json.dumps({"name": "tls", "key": block}), *body)
    tok = fake("xapp-1-", 60, ALNUM + "-", "jsonxapp")
    add("json-escaped", json.dumps({"env": [f"SLACK_APP_TOKEN={tok}", "PORT=3000"]}), tok, keep=("PORT=3000",))

    # ---------------------------------------------------------------- a realistic tool output
    pw, tok = _password("printenv"), fake("ghp_", 36, ALNUM, "printenv")
    add("tool-output", "$ printenv | sort\nHOME=/home/ci\nHOSTNAME=runner-7\n"
        f"GH_TOKEN={tok}\nPATH=/usr/local/bin:/usr/bin\nPGPASSWORD={pw}\nPWD=/work\nSHLVL=1\n",
        pw, tok, keep=("HOSTNAME=runner-7", "PWD=/work"))
    pw = _password("heroku")
    add("tool-output", "=== acme-prod Config Vars\nDATABASE_URL: "
        f"postgres://u1a2b3:{pw}@ec2-1-2-3-4.compute-1.amazonaws.com:5432/d9f8\nNODE_ENV: production\n"
        f"SECRET_KEY_BASE: {fake('', 128, HEX, 'skb')}\n", pw, fake("", 128, HEX, "skb"),
        keep=("NODE_ENV: production",))
    pw = _password("inspect")
    add("tool-output", json.dumps([{"Config": {"Env": [f"POSTGRES_PASSWORD={pw}", "PGDATA=/var/lib/pg"],
                                               "Image": "postgres:16"}}], indent=4), pw, keep=("PGDATA=/var/lib/pg",))
    # a file shown by Claude Code's Read tool (numbered lines) and by `cat -n`
    pw, tok = _password("readtool"), fake("", 40, URLSAFE, "readtool")
    add("tool-output", f"     1\u2192# production\n     2\u2192DB_PASS={pw}\n     3\u2192API_TOKEN={tok}\n"
        "     4\u2192DEBUG=false", pw, tok, keep=("DEBUG=false", "DB_PASS", "API_TOKEN"))
    pw = _password("catn")
    add("tool-output", f"     1\tmachine ci.corp\n     2\tlogin bot\n     3\tpassword {pw}\n", pw,
        keep=("machine ci.corp",))
    return out


def lookalikes() -> list[Case]:
    """Text that holds no secret: each must come through unchanged."""
    sha1 = hashlib.sha1(b"commit").hexdigest()
    sha256 = hashlib.sha256(b"file").hexdigest()
    sha512 = hashlib.sha512(b"file").hexdigest()
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA" + fake("", 40, B64, "png")
    cert, _ = pem("CERTIFICATE", 4, "lookcert")
    pub, _ = pem("PUBLIC KEY", 3, "lookpub")
    ssh_pub = fake("AAAAC3NzaC1lZDI1NTE5AAAAI", 43, B64, "sshpub")
    integrity = "sha512-" + b64(hashlib.sha512(b"pkg").digest())
    texts = [
        f"commit {sha1}\nAuthor: Ann <ann@corp.example>\n\n    fix login flow",
        f"git show {sha1[:7]} and git diff {sha1[:12]}..HEAD",
        "request id 3f2b8c1e-9a4d-4e6f-8b1a-2c3d4e5f6a7b and trace 9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
        f"sha256sum dist/app.tar.gz\n{sha256}  dist/app.tar.gz",
        f"sha512: {sha512}",
        f"image: ghcr.io/acme/app@sha256:{sha256}",
        f'"integrity": "{integrity}"',
        f"data:image/png;base64,{png}",
        "We rotate the password every 90 days and the token expires hourly.",
        "The password field is required; a token is sent by mail.",
        "echo \"$CR_PAT\" | docker login ghcr.io -u ann --password-stdin",
        "gpg --batch --passphrase-fd 0 --decrypt secrets.gpg",
        "openssl rsa -in k.pem -passin env:KEY_PASS -out plain.pem",
        "openssl pkcs12 -in c.p12 -passin file:/run/secrets/p12pass",
        "redis-cli -a \"$REDIS_PASSWORD\" ping",
        "mysql -u root -p shop",
        "mongosh -u admin -p --authenticationDatabase admin",
        "export GITHUB_TOKEN\nexport DB_PASS",
        "DB_PASS=\nSMTP_PASS=",
        "DB_PASS=${DB_PASS}\nJWT_SECRET=$JWT_SECRET",
        "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
        "password: ${DB_PASSWORD}",
        "api_key: <your-api-key>",
        "Authorization: Bearer <your-token>",
        "Authorization: Token $API_TOKEN",
        "OPENAI_API_KEY=your-api-key-here",
        "DB_PASS=changeme",
        "password: changeme",
        "SMTP_PASS=xxxxxxxx",
        "password: ********",
        "password = getpass.getpass()",
        "self.password = password",
        "  password: string;\n  token?: string;",
        "const user = { name, password: hashedPassword };",
        "password: str = Field(..., min_length=12)",
        "max_tokens: 4096, input_tokens: 3",
        "token_type: bearer\nexpires_in: 3600",
        "client-certificate-data: " + b64(cert + "\n"),
        cert,
        pub,
        f"ssh-ed25519 {ssh_pub} ann@laptop",
        "pk_live_51H8abcdEFGHijklMNOPqrstUVWXyz0123 is the publishable key",
        "aws sts get-caller-identity\n{\"Account\": \"123456789012\", \"Arn\": \"arn:aws:iam::123456789012:user/ann\"}",
        "Set-Cookie: theme=dark; Path=/; Max-Age=31536000",
        "root:x:0:0:root:/root:/bin/bash",
        "postgres://app@db.internal:5432/shop and https://example.com/a@b",
        "ssh git@github.com:org/repo.git",
        "PWD=/home/ann/projects2",
        "private_key_path: /etc/ssl/private/server.key",
        "export SSH_PRIVATE_KEY=~/.ssh/id_ed25519",
        "The header -----BEGIN OPENSSH PRIVATE KEY----- marks the private half.",
        "Private-Lines: the count of lines of the private part of a .ppk",
        "secret_key_base: String.duplicate(\"a\", 64)",
        "Ошибка: пароль неверный, токен истёк",
        # code and docs around password fields
        "    password: FilterOrBool = True,\n    include_password: ClassVar[bool] = False",
        ":param password: the user's password\n:type passphrase: :py:data:`str`",
        "username, password = credentials\nself._passphrase = passphrase",
        "    password: Database user password\n    token: Available after login",
        "Cookie: CUSTOMER=WILE_E_COYOTE; PART_NUMBER=ROCKET_LAUNCHER_0001",
        "| `sshpass -p X` reads it | `gh auth login -p https` picks the protocol |",
        "if self._username and self._password:\n    return True",
        "psql --password shop_production",
        "keytool -list -keystore ks.p12 -storepass:env KS_PASS",
        "ldapsearch -x -W -D cn=admin,dc=corp",
    ]
    out = []
    for text in texts:
        # what must stay: each line, or where it holds quotes (escaped in a call), its pieces
        frags = tuple(p.strip() for line in text.split("\n") for p in re.split(r"[\"\\]", line)
                      if len(p.strip()) >= 4)
        out.append(Case("look-alike", text, (), frags))
    return out


def marker(i: int) -> str:
    return f"zq{i:04d}"


def session_jsonl(cases: list[Case], start: datetime | None = None) -> bytes:
    """A Claude Code session holding each case twice: as a Bash call's output (raw) and inside
    the call (its arguments JSON-escaped as ingest stores them), each led by the case's marker."""
    t = start or datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    lines = []

    def rec(kind: str, content, n: int) -> None:
        ts = (t + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        lines.append(json.dumps({"type": kind, "sessionId": "corpus", "uuid": f"u{n}", "timestamp": ts,
                                 "isSidechain": False, "message": {"role": kind, "content": content}}))

    rec("user", "Set up the deploy and check the services; the config is in the repo.", 0)
    for i, case in enumerate(cases):
        m = marker(i)
        call = {"type": "tool_use", "id": f"t{i}", "name": "Bash",
                "input": {"command": f"# {m}\n{case.text}", "description": f"{m} run it"}}
        rec("assistant", [call], 3 * i + 1)
        rec("user", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{m}\n{case.text}"}], 3 * i + 2)
    return ("\n".join(lines) + "\n").encode()


def pieces(fragment: str) -> list[str]:
    """What of a secret must not be found: the whole of a short one; of a long one, every
    16 characters from its 9th on (so a part a cut left behind counts too, but not an
    issuer's prefix such as `sk-ant-api03-` that every such key shares)."""
    if len(fragment) < 32:
        return [fragment]
    return [fragment[i : i + 16] for i in range(8, len(fragment) - 15, 16)]


def leaked(case: Case, text: str) -> list[str]:
    """The fragments of `case`'s secrets that `text` still holds."""
    return [f for f in case.secrets if any(p in text for p in pieces(f))]


def lost(case: Case, text: str) -> list[str]:
    """The fragments of `case` to keep that `text` lacks."""
    return [f for f in case.keep if f not in text]
