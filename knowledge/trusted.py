"""What this user allowed a clone's tracked knowledge.toml to decide (`knowledge teams trust`): a shared store, lowered
secret protection. Kept in the user's config folder, one entry per clone, never in the repository."""

from __future__ import annotations

import json
from pathlib import Path

from .fs import atomic_write, user_config_dir

TRUSTED_STORES_FILE = "trusted-stores.json"  # {repository root: {"store": …, "protections": …}}


def _trust_file() -> Path:
    return user_config_dir() / TRUSTED_STORES_FILE


def _trusted() -> dict[str, dict[str, str]]:
    """{repository root: {"store": the store choice allowed, "protections": the lowered protections allowed}}; an
    entry of the first form, a bare store choice, still reads."""
    try:
        data = json.loads(_trust_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    entries: dict[str, dict[str, str]] = {}
    for root, entry in data.items():
        if isinstance(entry, str):
            entries[str(root)] = {"store": entry}
        elif isinstance(entry, dict):
            entries[str(root)] = {str(k): str(v) for k, v in entry.items() if isinstance(v, str)}
    return entries


def trusted_entry(root: Path) -> dict[str, str]:
    return _trusted().get(str(root.resolve()), {})


def trusted_store(root: Path) -> str | None:
    """The store URL this user allowed the repository at `root` to choose in its knowledge.toml, if any."""
    return trusted_entry(root).get("store")


def record_trust(root: Path, entry: dict[str, str]) -> None:
    trusted = _trusted()
    trusted[str(root.resolve())] = entry
    atomic_write(_trust_file(), json.dumps(trusted, indent=2, sort_keys=True) + "\n")
