"""Which engine holds an index: the local one (SQLite + USearch under `.knowledge/`) is the default."""

from __future__ import annotations

from pathlib import Path

from . import ChunkStore, Manifest, index_dir
from .local import LocalStore
from .local import remove_leftovers as remove_local_leftovers


def store_exists(root: Path, kind: str) -> bool:
    return LocalStore.exists(root, kind)


def open_store(root: Path, kind: str) -> ChunkStore:
    return LocalStore.open(root, kind)


def create_store(root: Path, kind: str, manifest: Manifest) -> LocalStore:
    """A new, empty index that replaces the live one when published."""
    return LocalStore.create(root, kind, manifest)


def remove_leftovers(root: Path) -> None:
    """Files killed writers left in the index folder; call it holding the writer lock."""
    folder = index_dir(root)
    if folder.is_dir():
        remove_local_leftovers(folder)
