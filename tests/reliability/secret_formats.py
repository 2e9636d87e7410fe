"""Credential formats for redaction tests, generated from a seeded RNG at test time, so no
real-looking secret sits in the source. Each format gives the line a person or an agent would
see, and the secret part that must never reach storage."""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


@dataclass(frozen=True)
class Sample:
    name: str
    line: str
    """What is printed (one logical line; the pane may wrap it)."""
    secret: str
    """The part that must not be stored anywhere."""


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    out = "".join(rng.choice(alphabet) for _ in range(n))
    # at least one upper, lower and digit where the alphabet has them (real keys look random)
    if any(c.isupper() for c in alphabet) and any(c.islower() for c in alphabet) and n >= 3:
        out = "A" + "z" + "7" + out[3:]
    return out


def samples(seed: int = 15) -> list[Sample]:
    rng = random.Random(seed)
    r = lambda alphabet, n: _r(rng, alphabet, n)  # noqa: E731
    s: list[Sample] = []

    def add(name: str, before: str, secret: str, after: str = "") -> None:
        s.append(Sample(name, before + secret + after, secret))

    add("anthropic_key", "ANTHROPIC_API_KEY is sk-ant-api03-", r(ALNUM + "_-", 93), " (set)")
    add("openai_key", "export OPENAI_API_KEY=sk-proj-", r(ALNUM, 48))
    add("github_token", "git push with ghp_", r(ALNUM, 36))
    add("github_pat", "token github_pat_", r(ALNUM + "_", 82))
    add("gitlab_token", "GITLAB glpat-", r(ALNUM, 20))
    add("aws_access_key", "aws id AKIA", r(string.ascii_uppercase + string.digits, 16), " ok")
    add("aws_secret_key", "aws_secret_access_key = ", r(B64, 40))
    add("slack_token", "slack xoxb-", r(string.digits, 12) + "-" + r(string.digits, 13) + "-" + r(ALNUM, 24))
    add("slack_webhook", "hook https://hooks.slack.com/services/", "T" + r(ALNUM, 8) + "/B" + r(ALNUM, 8) + "/"
        + r(ALNUM, 24))
    add("google_api_key", "maps key AIza", r(ALNUM + "_-", 35))
    add("stripe_key", "stripe sk_live_", r(ALNUM, 24))
    add("npm_token", "//registry.npmjs.org/:_authToken=npm_", r(ALNUM, 36))
    add("huggingface_token", "HF_TOKEN=hf_", r(ALNUM, 34))
    add("sendgrid_key", "mail SG.", r(ALNUM, 22) + "." + r(ALNUM, 43))
    add("jwt", "cookie eyJ", r(ALNUM, 30) + ".eyJ" + r(ALNUM, 40) + "." + r(ALNUM + "_-", 43))
    add("bearer", "Authorization: Bearer ", r(ALNUM, 40))
    add("basic_auth", "Authorization: Basic ", base64.b64encode(("admin:" + r(ALNUM, 18)).encode()).decode())
    add("url_password_at_slash", "DATABASE_URL=postgres://app:", "p@ss/" + r(ALNUM, 14), "@db.internal:5432/app")
    add("db_pass", "DB_PASS=", r(ALNUM, 16))
    add("json_password", '{"user": "app", "password": "', r(ALNUM, 14), '"}')
    add("cli_flag_token", "deploy --token ", r(ALNUM, 30), " --env prod")
    add("azure_storage_key", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=", r(B64, 86) + "==",
        ";EndpointSuffix=core.windows.net")
    add("azure_sas", "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sig=",
        r(ALNUM, 40) + "%3D")
    add("discord_bot_token", "DISCORD bot ", "M" + r(ALNUM, 25) + "." + r(ALNUM, 6) + "." + r(ALNUM + "_-", 38))
    add("discord_webhook", "notify https://discord.com/api/webhooks/", r(string.digits, 18) + "/" + r(ALNUM + "_-", 68))
    add("mailgun_key", "MAILGUN key-", r(HEX, 32))
    add("telegram_bot_token", "bot ", r(string.digits, 10) + ":AA" + r(ALNUM + "_-", 33))
    add("digitalocean_token", "DO dop_v1_", r(HEX, 64))
    add("shopify_token", "shop shpat_", r(HEX, 32))
    add("databricks_token", "dbx dapi", r(HEX, 32))
    add("vault_token", "VAULT_TOKEN hvs.", r(ALNUM, 90))
    add("age_secret_key", "AGE-SECRET-KEY-1", r(string.ascii_uppercase + string.digits, 58))
    add("postman_key", "postman PMAK-", r(HEX, 24) + "-" + r(HEX, 34))
    add("groq_key", "GROQ gsk_", r(ALNUM, 52))
    add("google_oauth_token", "oauth ya29.", r(ALNUM + "_-", 60))
    # issue 24: formats (and classes of them) that used to be stored
    add("short_password", "PGPASSWORD=", r(ALNUM, 6), " psql")
    add("short_url_password", "redis://default:", r(ALNUM, 5), "@cache:6379/0")
    add("netrc", "machine api.example.com login deploy password ", r(ALNUM, 10))
    add("docker_auth", '{"auths": {"ghcr.io": {"auth": "',
        base64.b64encode(("deploy:" + r(ALNUM, 12)).encode()).decode(), '"}}}')
    add("mysql_p", "mysql -uroot -p", r(ALNUM, 10), " app_production")
    add("curl_user", "curl -u admin:", r(ALNUM, 10), " https://api.example.com/v1")
    add("authorization_token", "Authorization: token ", r(HEX, 40))
    add("pgpass", "db.internal:5432:app:appuser:", r(ALNUM, 12))
    add("ldapsearch_w", "ldapsearch -x -D cn=admin,dc=example -w ", r(ALNUM, 10), " -b dc=example")
    add("sshpass", "sshpass -p ", r(ALNUM, 10), " ssh deploy@host")
    add("webhook_secret", "signing secret whsec_", r(ALNUM, 32))
    head, tail = r(ALNUM, 10), r(ALNUM, 26)
    s.append(Sample("github_token_zero_width", f"git push with ghp_{head}\u200b{tail}", head + tail))
    head, tail = r(ALNUM, 8), r(ALNUM, 40)
    s.append(Sample("openai_key_bidi", f"key sk-\u2066{head}\u2069{tail}", head + tail))
    add("high_entropy_token", "session ", r(ALNUM, 32), " expires in 1h")
    return s


def key_body(seed: int = 15, lines: int = 40, width: int = 64) -> tuple[str, str, list[str]]:
    """A private key's BEGIN line, END line and body rows (random base64, not a real key)."""
    rng = random.Random(seed)
    body = [_r(rng, B64, width) for _ in range(lines - 1)] + [_r(rng, B64, width // 2) + "=="]
    return "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", body


def fragments(secret: str, n: int = 12) -> list[str]:
    """Every ``n``-character window of ``secret`` (all of it when shorter): none may be stored."""
    if len(secret) <= n:
        return [secret]
    return [secret[i:i + n] for i in range(len(secret) - n + 1)]


def leaks(text: str, secret: str, n: int = 12) -> list[str]:
    return [f for f in fragments(secret, n) if f in text]
