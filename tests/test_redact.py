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
