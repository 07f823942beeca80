"""Where the shipped static stage lives and how it is named: read on every hook run, so free of numpy."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from ..errors import ModelVerificationError

STATIC_VERSION = 2
SHIPPED = Path(__file__).resolve().parent / "data"
TABLE, TOKENIZER, INFO = "code-static.npz", "code-static.tokenizer.json", "code-static.json"
ISSUE_TABLE, ISSUE_INFO = "issue-static.npz", "issue-static.json"  # the issue side: rows that differ from TABLE's


def fingerprint_of(info: dict[str, Any]) -> str:
    return f"static{STATIC_VERSION}-{info['sha256'][:12]}"


@functools.cache
def shipped_fingerprint() -> str:
    """The shipped table's fingerprint from its record alone (loading the table checks the file against it)."""
    try:
        return fingerprint_of(json.loads((SHIPPED / INFO).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError) as exc:
        raise ModelVerificationError(f"{SHIPPED / INFO}: the static stage's record is unreadable ({exc})") from exc
