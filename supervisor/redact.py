"""Secret redaction. Everything the supervisor stores (journal lines, screens, verifier
output, judge requests) passes through :func:`redact` first.

Each rule replaces the secret part with ``[REDACTED:<name>]`` and keeps the context
(``Authorization: Bearer [REDACTED:bearer]``) so a reader still sees what happened.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from supervisor.regexes import compiled

logger = logging.getLogger(__name__)

_RULES: list[tuple[str, re.Pattern[str], int]] = []
"""(name, pattern, group to replace; 0 = whole match)."""


def _rule(name: str, pattern: str, group: int = 0, flags: int = 0) -> None:
    """A rule on RE2 (linear in the text: a 60k-character screen full of ``://`` costs what its
    length does); none of them needs backtracking."""
    rx = compiled(pattern, flags)
    assert rx.engine == "re2", f"redaction rule {name} needs backtracking"
    _RULES.append((name, cast("re.Pattern[str]", rx), group))


# Order matters: specific formats first, generic ones last.
_rule(
    "pem_private_key",
    r"-----BEGIN ((?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?)-----"
    r"[\s\S]*?(?:-----END (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----|\Z)",
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
# Authorization headers of any scheme ("token", "Digest", "AWS4-HMAC-SHA256", none at all)
_rule("authorization_header", r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?(?:[A-Za-z0-9_\-]+\s+)?)([^\s\"',;]{6,})", 2)
_rule("webhook_secret", r"\bwhsec_[A-Za-z0-9+/=_\-]{16,}")
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
# Passwords on command lines: `mysql -pPASS`, `sshpass -p PASS`, `ldapsearch -w PASS`, `curl -u user:PASS`
_rule("mysql_password", r"(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mariadb|mariadb-dump)\b"
                        r"[^\n|;&]*?\s-p)([^\s\"'|;&]+)", 2)
_rule("sshpass_password", r"(\bsshpass\s+(?:-[A-Za-z]\s+)*-p\s*)([^\s\"'|;&]+)", 2)
_rule("ldap_password", r"(\bldap[a-z]*\b[^\n|;&]*?\s-w\s+)([^\s\"'|;&]+)", 2)
_rule("user_password", r"((?:^|[\s\"'])(?:-u|--user|--proxy-user)(?:=|\s+)[\"']?[^\s:\"'/@]+:)([^\s\"'@]+)", 2)
# .netrc (`machine H login U password P`), .pgpass (`host:port:db:user:password`), docker's "auth"
_rule("netrc_password", r"(?i)(\bpassword\s+)([^\s\"'`]{4,})", 2)
_rule("pgpass_line", r"((?:^|\s)[A-Za-z0-9_.*\-]+:(?:\d+|\*):[^\s:]+:[^\s:]+:)(\S+)", 2)
_rule("docker_auth", r"(?i)(\"(?:auth|identitytoken|registrytoken)\"\s*:\s*\")([^\"\s]{4,})", 2)
_rule(
    "cli_flag_secret",
    r"(?i)((?:^|[^\w-])--?(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token)(?:=|\s+))"
    r"([\"']?)([^\s\"']{8,})",
    3,
)
_rule(
    "cli_flag_password",
    r"(?i)((?:^|[^\w-])--?(?:password|passwd)(?:=|\s+))([\"']?)([^\s\"'-][^\s\"']*)",
    3,
)
_rule(
    "secret_assignment",
    r"(?i)\b((?:[A-Za-z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|passwd|pwd|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|credentials?)[A-Za-z0-9_]*|(?:[A-Za-z0-9_]*[0-9_])?(?:pass|pw)(?:[0-9_][A-Za-z0-9_]*)?))"
    r"([\"']?\s*[=:]\s*[\"']?)([^\s\"',;]{8,})",
    3,
)
# A password of any length: `PGPASSWORD=abc`, `password: hunter2`, `"pass": "x1"`
_rule(
    "password_assignment",
    r"(?i)\b((?:[A-Za-z0-9_]*(?:passw(?:or)?d|passwd|pwd)[A-Za-z0-9_]*|(?:[A-Za-z0-9_]*[0-9_])?pass(?:[0-9_][A-Za-z0-9_]*)?))"
    r"([\"']?\s*[=:]\s*[\"']?)([^\s\"',;\[]{1,7})(?:[\s\"',;]|$)",
    3,
)
# Anything else that looks like a key: a long token mixing cases and digits with high entropy
_rule("high_entropy_token", r"(?:^|[^A-Za-z0-9_+/=\-])([A-Za-z0-9_\-+=]{24,200})(?:[^A-Za-z0-9_+/=\-]|$)", 1)



_ISSUED = frozenset({
    "pem_private_key", "anthropic_key", "openai_key", "github_token", "github_pat", "gitlab_token", "aws_access_key",
    "aws_secret_key", "slack_token", "slack_webhook", "google_api_key", "google_oauth_token", "stripe_key",
    "npm_token", "pypi_token", "huggingface_token", "twilio_key", "sendgrid_key", "jwt", "webhook_secret",
    "azure_storage_key", "azure_shared_access_key", "discord_webhook", "discord_bot_token", "mailgun_key",
    "telegram_bot_token", "digitalocean_token", "shopify_token", "databricks_token", "vault_token",
    "age_secret_key", "postman_key", "groq_key", "replicate_token", "xai_key", "square_token", "newrelic_key",
    "grafana_token", "linear_key", "planetscale_password"})
"""Rules for credentials a service issues, each known by its own shape (``ghp_…``, ``sk-ant-…``, ``AKIA…``, a
private key): written out in a command, it is a secret there. Generic shapes (a password in a URL, a long
random word, any ``Bearer`` value) are not among them: a dev database's ``postgres:postgres@localhost``
or a test's placeholder token is no credential."""


assert {name for name, _, _ in _RULES} >= _ISSUED, _ISSUED - {name for name, _, _ in _RULES}


def issued_credentials(text: str) -> list[str]:
    """The names of the issued credentials (:data:`_ISSUED`) written out in ``text``."""
    return [name for name, pat, _ in _rules_for(text) if name in _ISSUED and pat.search(text)]


def _rule_set() -> Any:
    """Every rule in one RE2 set: one linear scan of a text says which rules match it at all."""
    import re2

    opts = re2.Options()
    opts.log_errors = False
    opts.max_mem = 256 << 20
    rs = re2.Set.SearchSet(opts)
    for _name, pat, _group in _RULES:
        rs.Add(cast(Any, pat).rx_pattern)
    rs.Compile()
    return rs


_SET = _rule_set()


def _rules_for(text: str) -> list[tuple[str, re.Pattern[str], int]]:
    """The rules that match somewhere in ``text`` (a screen is scanned by those few only)."""
    return [_RULES[i] for i in sorted(_SET.Match(text) or ())]


_MARK = "[REDACTED:"


_ID_PREFIX = re.compile(r"^[a-z]{1,16}_")


def _random_looking(token: str) -> bool:
    """A token no rule names that still looks like a key: upper and lower case letters and digits,
    not hex, and about as varied as random text (Shannon entropy of 4 bits a character or more:
    words, identifiers and paths fall well below)."""
    body = _ID_PREFIX.sub("", token)  # the supervisor's own ids: `obs_01M8GW...` (a word, then a ULID)
    if not (any(c.isupper() for c in body) and any(c.islower() for c in body)
            and sum(c.isdigit() for c in body) >= 2):
        return False
    counts = Counter(token)
    n = len(token)
    return -sum(k / n * math.log2(k / n) for k in counts.values()) >= 4.0


def _password_word(value: str) -> bool:
    """After a bare ``password`` (a .netrc line): a value with a digit, a capital after its first
    letter or a sign, not an English word ("password reset", "password is required")."""
    return (any(c.isdigit() for c in value) or any(c.isupper() for c in value[1:])
            or any(not c.isalnum() for c in value)) and not value.startswith(("[", "(", "<", "*"))


_ACCEPT: dict[str, Callable[[str], bool]] = {"high_entropy_token": _random_looking, "netrc_password": _password_word}
"""Rules whose match is a secret only if this says so (the generic token rule)."""


def _replacer(name: str, group: int) -> Callable[[re.Match[str]], str]:
    def repl(m: re.Match[str]) -> str:
        if group == 0:
            return f"[REDACTED:{name}]"
        whole = m.group(0)
        start, end = m.start(group) - m.start(0), m.end(group) - m.start(0)
        secret = whole[start:end]
        if secret.startswith(_MARK) or (name in _ACCEPT and not _ACCEPT[name](secret)):
            return whole
        return whole[:start] + f"[REDACTED:{name}]" + whole[end:]

    return repl


_COMPILED = [(name, pat, _replacer(name, group)) for name, pat, group in _RULES]
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                        "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]")
"""Zero-width, joiner, bidi-control and other invisible characters: an agent's output (or an
attacker) can put them inside a key, which then matches no rule."""


def _redact_invisible(text: str, found: set[str]) -> str:
    """Secrets with invisible characters inside: the rules run on the text without them, and each
    secret found is masked in the original text (invisible characters and all)."""
    keep = [i for i, ch in enumerate(text) if not _INVISIBLE.match(ch)]
    clean = "".join(text[i] for i in keep)
    masks: list[tuple[int, int, str]] = []
    for name, pat, group in _rules_for(clean):
        for m in pat.finditer(clean):
            a, b = m.span(group)
            if b <= a or clean[a:b].startswith(_MARK) or (name in _ACCEPT and not _ACCEPT[name](clean[a:b])):
                continue
            oa, ob = keep[a], keep[b - 1] + 1
            if any(_INVISIBLE.match(ch) for ch in text[oa:ob]):
                masks.append((oa, ob, name))
    out, last = text, len(text) + 1
    for a, b, name in sorted(set(masks), reverse=True):
        b = min(b, last)
        if b <= a:
            continue
        found.add(text[a:b])
        out = out[:a] + f"[REDACTED:{name}]" + out[b:]
        last = a
    return out


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
    # A secret ending at a row end would run into a next row that starts a new line; read again
    # joining only rows whose next row starts with a random-looking token. Every reading looks at
    # the text as it is (one reading's mask must not hide from another a secret it alone sees), and
    # the masks of all of them are applied together.
    masks: list[tuple[int, int, str]] = []
    for keep_space, only_random in ((False, False), (True, False), (False, True), (True, True)):
        _redact_joined(text, found, width, keep_space=keep_space, only_random=only_random, collect=masks)
    return _apply_masks(text, masks, found)


def _apply_masks(text: str, masks: list[tuple[int, int, str]], found: set[str]) -> str:
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


# A row's leading piece that looks like the rest of a key: letters and digits, or mixed case.
_RANDOMISH = re.compile(r"(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9_\-+/.%]{6,}={0,2}"
                        r"|(?=.*[a-z])(?=.*[A-Z])[A-Za-z_\-+/.%]{10,}={0,2}")


def _redact_joined(text: str, found: set[str], width: int | None, *, keep_space: bool,
                   only_random: bool = False, collect: list[tuple[int, int, str]] | None = None) -> str:
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
    rules = _rules_for(joined)

    def original(pos: int, end: bool) -> tuple[int, int]:
        """(segment index, original offset) of a joined position (``end``: exclusive end)."""
        for k, (js, os_, n) in enumerate(segments):
            if js <= pos < js + n or (end and pos == js + n):
                return k, os_ + pos - js
        return -1, -1

    masks: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []  # joined spans already claimed by an earlier (more specific) rule
    for name, pat, group in rules:
        for m in pat.finditer(joined):
            js, je = m.span(group)
            if je <= js or joined[js:je].startswith(_MARK) or any(js < b and a < je for a, b in taken):
                continue
            if name in _ACCEPT and not _ACCEPT[name](joined[js:je]):
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
    if collect is not None:
        collect.extend(masks)
        return text
    return _apply_masks(text, masks, found)


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


def _direct_secrets(text: str) -> dict[str, str]:
    """Each secret (4+ characters) the rules find in ``text`` read as it is, by rule name: the
    readings across rows may claim a row's first word for a secret on the row above and so hide a
    secret that stands on its own row; these are masked wherever they still are."""
    out: dict[str, str] = {}
    for name, pat, group in _rules_for(text):
        for m in pat.finditer(text):
            secret = m.group(group)
            if secret and len(secret) >= 4 and not secret.startswith(_MARK) \
                    and not (name in _ACCEPT and not _ACCEPT[name](secret)):
                out.setdefault(secret, name)
    return out


def _redact_unguarded(text: str, found: set[str], width: int | None) -> str:
    if not text:
        return text
    if _INVISIBLE.search(text):
        text = _redact_invisible(text, found)
    if "\n" in text:
        direct = _direct_secrets(text)
        text = _redact_key_bodies(text, found)
        text = _redact_across_rows(text, found, width)
        if width:
            text = _redact_scrolled_head(text, found)
        for secret in sorted(direct, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, f"[REDACTED:{direct[secret]}]")
    wanted = {name for name, _p, _g in _rules_for(text)}
    for name, pat, repl in _COMPILED:
        if name in wanted:
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
