"""A durable cache of judge responses, keyed by the sha256 of the full canonical request.

The key covers everything that can change the answer: model, prompt version, system
prompt, tools, temperature, max tokens, and the user message (screen text, hint,
history). So a replay or an eval of a recorded run sends the same request, finds the
same entry, and gets the same verdict with no HTTP call and no cost: that is what keeps
``decide`` + judge deterministic and free on replay.

Storage: one small JSON file per entry under ``Settings.cache_dir / "judge"``, fanned out by
the first two hex digits, written to a temp file and renamed so a crash never leaves a
torn entry and concurrent writers (live run + eval) cannot corrupt each other. Only valid
verdicts are stored; failures are never cached (a retry later may succeed). Not DuckDB
on purpose: the cache must work while a notebook holds the warehouse.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_FORMAT_VERSION = 1


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(request: dict[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON of a request."""
    return hashlib.sha256(canonical_json(request).encode("utf-8", "surrogatepass")).hexdigest()


class JudgeCache:
    """Get/put response records by request hash. Unreadable entries count as misses."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format_version") != CACHE_FORMAT_VERSION:
            return None
        if data.get("request_hash") != key or not isinstance(data.get("response"), dict):
            return None
        return data["response"]

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        """Store ``response`` for ``key`` atomically; the request is kept beside it for audits
        (its screen text was redacted before it was sent, like everything the journal stores)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"format_version": CACHE_FORMAT_VERSION, "request_hash": key, "request": request,
                  "response": response}
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(canonical_json(record))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        if not self.root.exists():
            return 0
        return sum(1 for _ in self.root.glob("??/*.json"))
