"""Which engine holds an index: the local one (SQLite + USearch under `.knowledge/`) is the default."""

from __future__ import annotations

from pathlib import Path

from . import ChunkStore, Manifest
from .local import LocalStore


def store_exists(root: Path, kind: str) -> bool:
    return LocalStore.exists(root, kind)


def open_store(root: Path, kind: str) -> ChunkStore:
    return LocalStore.open(root, kind)


def create_store(root: Path, kind: str, manifest: Manifest) -> LocalStore:
    """A new, empty index that replaces the live one when published."""
    return LocalStore.create(root, kind, manifest)
