"""Secrets are redacted before anything is stored: at least 15 token formats, context kept."""

from __future__ import annotations

import pytest

from supervisor.redact import redact, redact_data

# Each sample is built from parts so no real-looking secret sits in the source as one string.
SAMPLES = {
    "anthropic_key": "ANTHROPIC_API_KEY is " + "sk-ant-api03-" + "Ab3dEf6hIj9kLmN0pQrStUvWxYz12345_-abcdef",
    "openai_key": "export OPENAI_KEY " + "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6",
    "github_token": "push with " + "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_pat": "token " + "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    "gitlab_token": "GL " + "glpat-" + "a1B2c3D4e5F6g7H8i9J0",
    "aws_access_key": "aws id " + "AKIA" + "IOSFODNN7EXAMPLE",
    "aws_secret_key": "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "slack_token": "slack " + "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack_webhook": "hook " + "https://hooks.slack.com/services/" + "T000/B000/XXXXXXXXXXXXXXXX",
    "google_api_key": "maps " + "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "google_oauth_token": "oauth " + "ya29." + "a0AfH6SMBx1y2z3A4b5C6d7E8f9G0h",
    "stripe_key": "stripe " + "sk_live_" + "51H8aBcDeFgHiJkLmNoPqRsT",
    "npm_token": "//registry.npmjs.org/:_authToken=" + "npm_" + "abcdefghijklmnopqrstuvwxyz0123456789",
    "huggingface_token": "HF " + "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "sendgrid_key": "mail " + "SG." + "abcdefghijklmnopqrstuv" + "." + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
    "jwt": "cookie " + "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer": "Authorization: Bearer " + "abcDEF123456ghiJKL789mno",
    "basic_auth_header": "Authorization: Basic " + "dXNlcjpwYXNzd29yZDEyMw==",
    "url_password": "git clone https://deploy:" + "s3cr3tP4ss" + "@git.example.com/repo.git",
    "secret_assignment": "DB_PASSWORD=" + "correct-horse-battery",
    "pem_private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdef\nQWERTYUIOP\n"
                       "-----END RSA PRIVATE KEY-----",
}

SECRET_PARTS = {
    "anthropic_key": "Ab3dEf6hIj9kLmN0pQrStUvWxYz12345",
    "openai_key": "A1b2C3d4E5f6G7h8I9j0",
    "github_token": "A1b2C3d4E5f6G7h8I9j0K1l2",
    "github_pat": "11ABCDEFG0123456789",
    "gitlab_token": "a1B2c3D4e5F6g7H8i9J0",
    "aws_access_key": "IOSFODNN7EXAMPLE",
    "aws_secret_key": "wJalrXUtnFEMI",
    "slack_token": "AbCdEfGhIjKlMnOpQrStUvWx",
    "slack_webhook": "XXXXXXXXXXXXXXXX",
    "google_api_key": "SyA1b2C3d4E5f6G7h8I9j0",
    "google_oauth_token": "a0AfH6SMBx1y2z3A4b5C6d7E8f9G0h",
    "stripe_key": "51H8aBcDeFgHiJkLmNoPqRsT",
    "npm_token": "abcdefghijklmnopqrstuvwxyz0123456789",
    "huggingface_token": "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "sendgrid_key": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
    "jwt": "dozjgNryP4J3jVmNHl0w5N",
    "bearer": "abcDEF123456ghiJKL789mno",
    "basic_auth_header": "dXNlcjpwYXNzd29yZDEyMw",
    "url_password": "s3cr3tP4ss",
    "secret_assignment": "correct-horse-battery",
    "pem_private_key": "MIIEpAIBAAKCAQEA1234567890abcdef",
}


def test_at_least_fifteen_formats_are_covered() -> None:
    assert len(SAMPLES) >= 15


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_format_is_redacted(name: str) -> None:
    out = redact(SAMPLES[name])
    assert SECRET_PARTS[name] not in out, out
    assert "[REDACTED:" in out


def test_context_is_kept() -> None:
    out = redact("Authorization: Bearer " + "abcDEF123456ghiJKL789mno")
    assert out.startswith("Authorization: Bearer [REDACTED:")
    out = redact("git clone https://deploy:" + "s3cr3tP4ss" + "@git.example.com/repo.git")
    assert out == "git clone https://deploy:[REDACTED:url_password]@git.example.com/repo.git"


@pytest.mark.parametrize("text", [
    "✻ Cultivating… (4s · ↓ 220 tokens)",
    "Do you want to proceed?\n❯ 1. Yes\n  2. No",
    "pip install scikit-learn && git push origin main",
    "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",
    "https://example.com/docs?page=2",
    "the token budget is fine; password policy documented in SECURITY.md",
])
def test_ordinary_agent_text_is_untouched(text: str) -> None:
    assert redact(text) == text


def test_redact_data_walks_nested_payloads() -> None:
    data = {"screen": {"text": "key " + "sk-ant-api03-" + "x" * 30}, "keys": ["1", "Enter"], "n": 3}
    out = redact_data(data)
    assert "x" * 30 not in out["screen"]["text"]
    assert out["keys"] == ["1", "Enter"] and out["n"] == 3


def test_redaction_is_idempotent() -> None:
    once = redact(SAMPLES["bearer"] + " " + SAMPLES["url_password"])
    assert redact(once) == once


# -- issue 15: 35 formats, rows split by the pane or the agent, key bodies without a header -------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from supervisor.redact import clip  # noqa: E402
from tests.reliability.secret_formats import key_body, leaks, samples  # noqa: E402

FORMATS = samples()


def test_at_least_thirty_formats() -> None:
    assert len(FORMATS) >= 30 and len({s.name for s in FORMATS}) == len(FORMATS)


@pytest.mark.parametrize("sample", FORMATS, ids=lambda s: s.name)
@pytest.mark.parametrize("width", [None, 20, 33, 60])
def test_each_format_is_redacted_whole_and_wrapped_by_the_pane(sample, width) -> None:
    if width is None:
        out = redact(sample.line)
    else:  # tmux wrapped the line at the pane's width (capture-pane without -J)
        text = "\n".join(sample.line[i:i + width] for i in range(0, len(sample.line), width))
        out = redact(text + "\nnext line", width=width)
        if len(text.rsplit("\n", 1)[-1]) < width:  # a full last row may be wrapped into "next": ambiguous
            assert out.endswith("\nnext line")  # the line after it is left alone
    assert leaks(out.replace("\n", ""), sample.secret) == [], out


@pytest.mark.parametrize("sample", FORMATS, ids=lambda s: s.name)
def test_each_format_is_redacted_when_the_agent_wraps_it_in_a_box(sample) -> None:
    pieces = [sample.line[i:i + 30].strip() for i in range(0, len(sample.line), 30)]
    text = "\n".join(f"  │ {p:<30} │" for p in pieces) + "\n  │ done                           │"
    out = redact(text)
    assert leaks(out, sample.secret) == [], out
    assert "│ done" in out


def test_a_key_body_whose_begin_line_scrolled_away_is_redacted() -> None:
    _begin, end, body = key_body()
    out = redact("\n".join(["$ cat id_rsa", *body[25:], end, "$ "]))
    assert not any(row in out for row in body) and out.count("[REDACTED:private_key_body]") == len(body) - 25
    assert out.startswith("$ cat id_rsa") and end in out
    # Without the END line too (the middle of a key): two or more base64-only rows.
    assert not any(row in redact("\n".join(body[5:9])) for row in body)
    # Prose, hashes and paths are not key bodies.
    plain = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\nsrc/supervisor/redact.py"
    assert redact(plain) == plain


def test_a_secret_split_over_rows_is_masked_in_every_string_of_the_event() -> None:
    key = FORMATS[0].line
    screen = {"text": key[:40] + "\n" + key[40:80] + "\n" + key[80:], "width": 40}
    out = redact_data({"screen": screen, "evidence": ["row 2: " + key[40:80]], "question": key[80:]})
    assert leaks(json_dumps(out), FORMATS[0].secret) == []


def test_clip_redacts_before_it_cuts() -> None:
    gh = next(s for s in FORMATS if s.name == "github_token")
    line = "x" * (200 - len("git push with ghp_") - 14) + gh.line  # 14 characters of the token before 200
    assert leaks(line[:200], gh.secret)  # cutting first leaves a fragment no rule knows
    assert leaks(clip(line, 200), gh.secret) == []
    assert leaks(clip(FORMATS[0].line + "y" * 300, 120, keep="tail"), FORMATS[0].secret) == []


def json_dumps(value: object) -> str:
    import json

    return json.dumps(value)


_WORDS = st.lists(st.sampled_from(["the", "agent", "ran", "tests", "│", "  ", "ok", "=", ":", "src/x.py", "42",
                                   "Allow?", "❯", "\n"]), max_size=30).map(" ".join)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_WORDS, st.sampled_from(FORMATS), _WORDS, st.integers(12, 120), st.booleans())
def test_fuzz_a_planted_secret_never_survives(before: str, sample, after: str, width: int, wrap: bool) -> None:
    text = f"{before} {sample.line} {after}"
    if wrap:
        rows = [r[i:i + width] for r in text.split("\n") for i in range(0, max(len(r), 1), width)]
        out = redact("\n".join(rows), width=width)
        flat = out.replace("\n", "")
    else:
        out = redact(text)
        flat = out
    assert leaks(flat, sample.secret) == [], out
    assert redact(out, width=width) == out or wrap  # stable once redacted (on one row)


def test_issued_credentials_name_a_service_token_but_not_a_dev_password() -> None:
    from supervisor.redact import issued_credentials

    assert issued_credentials("git clone https://ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij@github.com/a/b") == [
        "github_token"]
    assert issued_credentials("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE") == ["aws_access_key"]
    # a local database's password, a placeholder bearer value, a long random word: shapes, not issued tokens
    assert issued_credentials('psql "postgresql://postgres:postgres@localhost:5432/app"') == []
    assert issued_credentials('curl -H "Authorization: Bearer test-token-123456" localhost:3000') == []
    assert issued_credentials("git checkout 3f1c9a2e7d4b0a5c6e8f9d1b2a3c4e5f6a7b8c9d") == []
