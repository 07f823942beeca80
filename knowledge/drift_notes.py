"""Drift notes on search results: the last whole-history `drift` run is kept in `.knowledge/drift.json` (chunk id ->
summary) and used while the docs index has not moved since."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from .fs import atomic_write
from .kind import KindIndex
from .records import DriftItem
from .store import index_dir

DRIFT_FILE = "drift.json"


def save(root: Path, docs: KindIndex, items: list[DriftItem]) -> None:
    notes: dict[str, str] = {}
    for item in items:
        notes.setdefault(item.chunk_id, item.summary)
    with contextlib.suppress(OSError):
        atomic_write(
            index_dir(root) / DRIFT_FILE,
            json.dumps({"commit": docs.commit, "version": docs.store.version(), "notes": notes}),
        )


def load(root: Path, docs: KindIndex) -> dict[str, str]:
    """chunk id -> drift summary, from the last `drift` run if the docs index has not moved since."""
    try:
        data = json.loads((index_dir(root) / DRIFT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if data.get("commit") != docs.commit or data.get("version") != docs.store.version():
        return {}
    return dict(data.get("notes", {}))
