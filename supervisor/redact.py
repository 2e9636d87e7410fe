"""Secret redaction. Everything the supervisor stores (journal lines, screens, verifier
output, judge requests) passes through :func:`redact` first.

Each rule replaces the secret part with ``[REDACTED:<name>]`` and keeps the context
(``Authorization: Bearer [REDACTED:bearer]``) so a reader still sees what happened.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_RULES: list[tuple[str, re.Pattern[str], int]] = []
"""(name, pattern, group to replace; 0 = whole match)."""


def _rule(name: str, pattern: str, group: int = 0, flags: int = 0) -> None:
    _RULES.append((name, re.compile(pattern, flags), group))


# Order matters: specific formats first, generic ones last.
_rule(
    "pem_private_key",
    r"-----BEGIN ((?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?)-----"
    r"[\s\S]*?(?:-----END \1-----|\Z)",
)
_rule("anthropic_key", r"\bsk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_\-]{20,}")
_rule("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")
_rule("github_token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}")
_rule("github_pat", r"\bgithub_pat_[A-Za-z0-9_]{40,}")
_rule("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}")
_rule("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")
_rule(
    "aws_secret_key",
    r"(?i)(aws_secret_access_key|aws_session_token|secret_access_key)(\s*[=:]\s*[\"']?)([A-Za-z0-9/+=]{30,})",
    3,
)
_rule("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")
_rule("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+")
_rule("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}")
_rule("google_oauth_token", r"\bya29\.[0-9A-Za-z_\-]{20,}")
_rule("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}")
_rule("npm_token", r"\bnpm_[A-Za-z0-9]{36}")
_rule("pypi_token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{20,}")
_rule("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}")
_rule("twilio_key", r"\bSK[0-9a-fA-F]{32}\b")
_rule("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")
_rule("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")
_rule("bearer", r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/\-]{12,}=*)", 2)
_rule("basic_auth_header", r"(?i)(authorization:\s*basic\s+)([A-Za-z0-9+/]{8,}=*)", 2)
_rule("url_password", r"([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)([^\s@/]{1,256})(@)", 2)
_rule(
    "secret_assignment",
    r"(?i)\b([A-Za-z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|passwd|pwd|access[_-]?key|private[_-]?key|client[_-]?secret)"
    r"[A-Za-z0-9_]*)(\s*[=:]\s*[\"']?)([^\s\"',;]{8,})",
    3,
)

_MARK = "[REDACTED:"


def _replacer(name: str, group: int) -> Callable[[re.Match[str]], str]:
    def repl(m: re.Match[str]) -> str:
        if group == 0:
            return f"[REDACTED:{name}]"
        whole = m.group(0)
        start, end = m.start(group) - m.start(0), m.end(group) - m.start(0)
        secret = whole[start:end]
        if secret.startswith(_MARK):
            return whole
        return whole[:start] + f"[REDACTED:{name}]" + whole[end:]

    return repl


_COMPILED = [(name, pat, _replacer(name, group)) for name, pat, group in _RULES]
_QUICK = re.compile(
    r"sk-|gh[pousr]_|github_pat_|glpat-|AKIA|ASIA|ABIA|ACCA|xox|hooks\.slack|AIza|ya29\.|_live_|_test_|npm_|pypi-|hf_|SK|SG\.|eyJ"
    r"|bearer|basic|://|PRIVATE KEY|secret|token|passw|pwd|key",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not text or not _QUICK.search(text):
        return text
    for _name, pat, repl in _COMPILED:
        text = pat.sub(repl, text)
    return text


def redact_data(value: Any) -> Any:
    """Redact every string inside JSON-able data (dicts, lists, strings)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


def rule_names() -> list[str]:
    return [name for name, _pat, _g in _RULES]
