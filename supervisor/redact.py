"""Secret redaction. Everything the supervisor stores (journal lines, screens, verifier
output, judge requests) passes through :func:`redact` first.

Each rule replaces the secret part with ``[REDACTED:<name>]`` and keeps the context
(``Authorization: Bearer [REDACTED:bearer]``) so a reader still sees what happened.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

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
_rule("azure_storage_key", r"(?i)(\bAccountKey\s*=\s*)([A-Za-z0-9+/]{30,}={0,2})", 2)
_rule("azure_shared_access_key", r"(?i)(\bSharedAccessKey\s*=\s*)([A-Za-z0-9+/]{30,}={0,2})", 2)
_rule("azure_sas_signature", r"([?&;]sig=)([A-Za-z0-9%+/=]{16,})", 2)
_rule("discord_webhook", r"https://(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+")
_rule("discord_bot_token", r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}")
_rule("mailgun_key", r"\bkey-[0-9a-f]{32}\b|\b[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}\b")
_rule("telegram_bot_token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b")
_rule("digitalocean_token", r"\bdo[por]_v1_[a-f0-9]{64}\b")
_rule("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")
_rule("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b")
_rule("vault_token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}")
_rule("age_secret_key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b")
_rule("postman_key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b")
_rule("groq_key", r"\bgsk_[A-Za-z0-9]{40,}")
_rule("replicate_token", r"\br8_[A-Za-z0-9]{30,}")
_rule("xai_key", r"\bxai-[A-Za-z0-9]{40,}")
_rule("square_token", r"\b(?:sq0atp|sq0csp)-[0-9A-Za-z_\-]{22,43}\b|\bEAAA[A-Za-z0-9_\-+=]{56,}")
_rule("newrelic_key", r"\bNRAK-[A-Z0-9]{27}\b")
_rule("grafana_token", r"\bgl(?:sa|c)_[A-Za-z0-9_=+/\-]{32,}")
_rule("linear_key", r"\blin_api_[A-Za-z0-9]{40}\b")
_rule("planetscale_password", r"\bpscale_(?:pw|tkn|oauth)_[A-Za-z0-9_\-.]{32,}")
# A URL's password may itself hold '@' or '/': it runs to the last '@' before the host.
_rule("url_password", r"([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)(\S{1,256})(@[^\s@/]+)", 2)
_rule(
    "cli_flag_secret",
    r"(?i)((?<![\w-])--?(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token)(?:=|\s+))"
    r"([\"']?)([^\s\"']{8,})",
    3,
)
_rule(
    "secret_assignment",
    r"(?i)\b([A-Za-z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|passwd|pwd|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|credentials?|(?<![A-Za-z])pass(?![A-Za-z])|(?<![A-Za-z])pw(?![A-Za-z]))"
    r"[A-Za-z0-9_]*)([\"']?\s*[=:]\s*[\"']?)([^\s\"',;]{8,})",
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
    r"|bearer|basic|://|PRIVATE KEY|secret|token|pass|pwd|pw|key|sig=|sq0|EAAA|hv[sbr]\.|do[por]_v1|shp|dapi|gsk_|r8_"
    r"|xai-|NRAK|gl(?:sa|c)_|lin_api|pscale|cred|PMAK"
    r"|\.[A-Za-z0-9_\-]{6}\.|:AA|-[0-9a-f]{8}-",
    re.IGNORECASE,
)


# Where a terminal row ends and the next begins, borders and indentation are layout, not text.
_BORDERS = ("│", "┃", "║")


def _row_tail(row: str) -> str:
    """The row without trailing blanks and a box border."""
    tail = row.rstrip(" \t")
    return tail[:-1].rstrip(" \t") if tail.endswith(_BORDERS) else tail


def _short_box_row(row: str) -> bool:
    """A row inside a box whose text stops before the border (padding): not wrapped."""
    tail = row.rstrip(" \t")
    return tail.endswith(_BORDERS) and tail[:-1].endswith("  ")


def _head_len(row: str) -> int:
    """How many leading characters are indentation or a box border."""
    head = row.lstrip(" \t")
    if head.startswith(_BORDERS):
        head = head[1:].lstrip(" \t")
    return len(row) - len(head)

_TOKEN = r"[A-Za-z0-9_\-+/=.%@:?&;]"
"""Characters a secret (or the URL around it) is made of; a row boundary between two of them may
be inside one token."""
_TOKEN_CHAR = re.compile(_TOKEN)


def _redact_across_rows(text: str, found: set[str], width: int | None) -> str:
    """Both readings of a continuation row that starts with blanks: an agent indented it (the blanks
    are layout), or the line broke at a space before a long token (one blank is text)."""
    text = _redact_joined(text, found, width, keep_space=False)
    text = _redact_joined(text, found, width, keep_space=True)
    # A secret ending at a row end would run into a next row that starts a new line; read again
    # joining only rows whose next row starts with a random-looking token.
    text = _redact_joined(text, found, width, keep_space=False, only_random=True)
    return _redact_joined(text, found, width, keep_space=True, only_random=True)


# A row's leading piece that looks like the rest of a key: letters and digits, or mixed case.
_RANDOMISH = re.compile(r"(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9_\-+/.%]{6,}={0,2}"
                        r"|(?=.*[a-z])(?=.*[A-Z])[A-Za-z_\-+/.%]{10,}={0,2}")


def _redact_joined(text: str, found: set[str], width: int | None, *, keep_space: bool,
                   only_random: bool = False) -> str:
    """Redact secrets split over rows: a pane wraps a long token at its width (capture-pane
    without ``-J``) and agents wrap their own output (often indented, or inside a box). Rows
    are joined where a token runs across the row end, the rules run on the joined text, and
    each secret that crossed a boundary is masked in every row it touches (the rows stay).

    Rows join where the pane wrapped a full-width row (``width`` known) or the next row is an
    indented or boxed continuation. A match runs on into the next row when the pane wrapped there
    (the token goes on), when the secret is not recognisable without that row, or when what it
    takes from that row looks random: a secret that ends at the end of an agent's row does not
    swallow the next row's first word."""
    rows = text.split("\n")
    starts = [0]
    for row in rows[:-1]:
        starts.append(starts[-1] + len(row) + 1)
    # (start, end) of each row's kept part in the original text, and whether it joins the next row.
    keep = [[st, st + len(row)] for st, row in zip(starts, rows, strict=True)]
    joins = [False] * len(rows)
    indented = spaced = False
    # A full row (the pane's width) may be tmux's wrap; without a width only indented rows join.
    full = width - 1 if width else len(text) + 1
    for i in range(len(rows) - 1):
        if width is not None and len(rows[i]) >= width and rows[i + 1].strip():
            # tmux wrapped this full row: the next row goes on with the same line, blanks included
            # (or a line exactly as wide as the pane ended there: only_random reads it that way).
            lead = _LEAD_TOKEN.match(rows[i + 1])
            if only_random and not (lead and _RANDOMISH.match(lead.group())):
                continue
            joins[i] = True
            spaced = spaced or rows[i + 1][:1] in (" ", "\t")
            continue
        tail = _row_tail(rows[i])
        head_len = _head_len(rows[i + 1])
        if not tail or head_len >= len(rows[i + 1]) or not _TOKEN_CHAR.match(tail[-1]) \
                or not _TOKEN_CHAR.match(rows[i + 1][head_len]):
            continue
        if head_len == 0 and len(rows[i]) < full:
            continue  # neither the pane's wrap nor an indented continuation: a new line
        if _short_box_row(rows[i]):
            continue  # a boxed row padded before its border: its line ended there
        lead = _LEAD_TOKEN.match(rows[i + 1], head_len)
        if only_random and not (lead and _RANDOMISH.match(lead.group())):
            continue
        indented = indented or head_len > 0
        joins[i] = True
        keep[i][1] = starts[i] + len(tail)
        # keep_space: the first continuation of a block keeps one blank (the agent broke its line
        # at a space); later ones are hard breaks inside one long token. Or the row ended in a
        # blank (kept, or trimmed: one short of the pane's width).
        ended_blank = rows[i][-1:] in (" ", "\t") or (width is not None and len(rows[i]) == width - 1)
        broke_at_space = head_len > 0 and not (i > 0 and joins[i - 1])
        space = keep_space and (broke_at_space or ended_blank)
        spaced = spaced or space
        keep[i + 1][0] = starts[i + 1] + head_len - (1 if space and head_len else 0)
        if space and not head_len:
            keep[i][1] = starts[i] + len(tail) + 1  # the blank after the row's text (or past it)
    if not any(joins) or (keep_space and not (indented or spaced)):
        return text  # nothing to join (or the same joins as the other reading)
    # The joined text, as segments of the original: (joined start, original start, length).
    segments: list[tuple[int, int, int]] = []
    parts: list[str] = []
    j = 0
    for i, (a, b) in enumerate(keep):
        segments.append((j, a, b - a))
        parts.append(text[a:b])
        j += b - a
        if i < len(rows) - 1 and not joins[i]:
            parts.append("\n")
            j += 1
    joined = "".join(parts)
    if not _QUICK.search(joined):
        return text

    def original(pos: int, end: bool) -> tuple[int, int]:
        """(segment index, original offset) of a joined position (``end``: exclusive end)."""
        for k, (js, os_, n) in enumerate(segments):
            if js <= pos < js + n or (end and pos == js + n):
                return k, os_ + pos - js
        return -1, -1

    masks: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []  # joined spans already claimed by an earlier (more specific) rule
    for name, pat, group in _RULES:
        for m in pat.finditer(joined):
            js, je = m.span(group)
            if je <= js or joined[js:je].startswith(_MARK) or any(js < b and a < je for a, b in taken):
                continue
            taken.append((js, je))
            k1, o1 = original(js, False)
            k2, o2 = original(je, True)
            if k1 < 0 or k2 < 0:
                continue
            if k1 == k2:  # on one row, but maybe only found with the next row's context (a URL's host)
                masks.append((o1, o2, name))
                continue
            masks.append((o1, segments[k1][1] + segments[k1][2], name))
            for k in range(k1 + 1, k2 + 1):
                seg_js, seg_os, seg_n = segments[k]
                piece_end = (je - seg_js) if k == k2 else seg_n
                wrapped = width is not None and len(rows[k - 1]) >= width  # tmux's wrap: one token
                complete = pat.match(joined, m.start(0), segments[k - 1][0] + segments[k - 1][2]) is not None
                if not wrapped and complete and not _RANDOMISH.fullmatch(joined[seg_js:seg_js + piece_end]):
                    break
                masks.append((seg_os, seg_os + piece_end, name))
    out = text
    last = len(text) + 1
    for a, b, name in sorted(set(masks), reverse=True):
        b = min(b, last)  # overlapping a mask already applied: mask what is left of it
        if b <= a:
            continue
        found.add(text[a:b])
        out = out[:a] + f"[REDACTED:{name}]" + out[b:]
        last = a
    return out


_B64_LINE = re.compile(r"[ \t]*(?:[│┃║][ \t]*)?([A-Za-z0-9+/]{4,}={0,2})[ \t]*(?:[│┃║][ \t]*)?")
_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")


def _redact_key_bodies(text: str, found: set[str]) -> str:
    """Redact private-key bodies whose ``BEGIN`` line has scrolled away: runs of base64-only rows
    (at least 100 characters over 2+ rows, one of them 40+ long, mixing cases and digits), or
    any base64 rows right above an ``END ... PRIVATE KEY`` line."""
    rows = text.split("\n")
    spans = [_B64_LINE.fullmatch(row) for row in rows]
    changed = False
    i = 0
    while i < len(rows):
        if spans[i] is None:
            i += 1
            continue
        k = i
        while k < len(rows) and spans[k] is not None:
            k += 1
        body = "".join(m.group(1) for m in spans[i:k] if m is not None)
        ends_key = k < len(rows) and _KEY_END.search(rows[k]) is not None
        mixed = any(c.isupper() for c in body) and any(c.islower() for c in body) and any(c.isdigit() for c in body)
        long_run = k - i >= 2 and len(body) >= 100 and any(len(m.group(1)) >= 40 for m in spans[i:k] if m)
        if mixed and (long_run or (ends_key and len(body) >= 16)):
            for r in range(i, k):
                m = spans[r]
                assert m is not None
                found.add(m.group(1))
                rows[r] = rows[r][: m.start(1)] + "[REDACTED:private_key_body]" + rows[r][m.end(1):]
            changed = True
        i = k
    return "\n".join(rows) if changed else text


_LEAD_TOKEN = re.compile(_TOKEN + "+")


def _redact_scrolled_head(text: str, found: set[str]) -> str:
    """A screen's first rows may continue a secret whose start scrolled away (nothing names it
    any more): leading rows that are one random-looking token each (12+ characters mixing letters
    and digits), and such a token starting the first other row, are masked."""
    rows = text.split("\n")
    for i, row in enumerate(rows):
        start = _head_len(row)
        m = _LEAD_TOKEN.match(row, start)
        token = m.group() if m else ""
        if len(token) < 12 or not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
            break
        assert m is not None
        found.add(token)
        rows[i] = row[:start] + "[REDACTED:scrolled_fragment]" + row[m.end():]
        if _row_tail(row) != row[: m.end()].rstrip():
            break  # more text after the token on this row: the secret ended here
    return "\n".join(rows)


def redact(text: str, *, width: int | None = None) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``: secrets on
    one row, secrets split over rows (``width``: the pane's, when ``text`` is a screen), and
    private-key bodies without their header."""
    return _redact(text, set(), width)


def _redact(text: str, found: set[str], width: int | None = None) -> str:
    """:func:`redact`, adding to ``found`` the row fragments of secrets that were split over rows
    or were key bodies (another string of the same event may hold one such fragment alone).
    Never raises: text this module fails on is withheld whole rather than stored unredacted."""
    try:
        return _redact_unguarded(text, found, width)
    except Exception:  # noqa: BLE001 - a bug here must neither stop the supervisor nor leak
        logger.exception("redaction failed on a %d-character text; it is withheld", len(text))
        return "[REDACTED:redaction_failed]"


def _redact_unguarded(text: str, found: set[str], width: int | None) -> str:
    if not text:
        return text
    if "\n" in text:
        text = _redact_key_bodies(text, found)
        text = _redact_across_rows(text, found, width)
        if width:
            text = _redact_scrolled_head(text, found)
    if not _QUICK.search(text):
        return text
    for _name, pat, repl in _COMPILED:
        text = pat.sub(repl, text)
    return text


def clip(text: str, limit: int, *, keep: str = "head") -> str:
    """Redact, then cut to ``limit`` characters (``keep="tail"``: the last ones). Cutting first
    can leave a fragment of a secret no rule recognises any more."""
    text = redact(text)
    if len(text) <= limit:
        return text
    return text[:limit] if keep == "head" else text[-limit:]


_FRAGMENT_MIN = 6
"""Fragments shorter than this are not searched for in sibling strings (too common to mean a secret)."""


def redact_data(value: Any) -> Any:
    """Redact every string inside JSON-able data (dicts, lists, strings). A secret split over a
    screen's rows is masked in every string of ``value``: an observation's evidence or question
    may quote one row of it, too short for any rule on its own."""
    found: set[str] = set()
    out = _walk(value, lambda s, width=None: _redact(s, found, width))
    fragments = sorted((f for f in found if len(f) >= _FRAGMENT_MIN), key=len, reverse=True)
    if not fragments:
        return out

    def scrub(s: str, _width: int | None = None) -> str:
        for f in fragments:
            if f in s:
                s = s.replace(f, "[REDACTED:fragment]")
        return s

    return _walk(out, scrub)


def _walk(value: Any, fn: Callable[..., str]) -> Any:
    """Apply ``fn`` to every string; a screen's ``text`` (a dict with an integer ``width``) gets the width."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        width = value.get("width")
        if isinstance(width, int) and not isinstance(width, bool) and isinstance(value.get("text"), str):
            return {k: fn(v, width) if k == "text" else _walk(v, fn) for k, v in value.items()}
        return {k: _walk(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, fn) for v in value]
    return value
