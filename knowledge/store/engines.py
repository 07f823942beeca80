"""Which engine holds the indexes: the local one (SQLite + USearch under `.knowledge/`) by default, or a shared
PostgreSQL database (`store = "postgresql://…"`) where one index per repository, branch and kind lives.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .. import git
from ..errors import ConfigError, IndexNotFoundError, WriteRefusedError
from ..fs import symlinked_index_message
from . import INDEX_DIR, ChunkStore, Manifest, index_dir
from .local import LocalStore
from .local_files import remove_leftovers as remove_local_leftovers

if TYPE_CHECKING:
    from .local_snapshot import SnapshotInfo
    from .pg_memory import ServerMemory
    from .pg_schema import Connection, IndexTarget

DETACHED = "(detached)"


class BuildingStore(ChunkStore, Protocol):
    def publish(self) -> None:
        """Swap the new index in for the live one, atomically."""
        ...


class Engine(Protocol):
    def present(self, kind: str) -> bool:
        """Something of this kind is there (opening it says whether it is usable)."""
        ...

    def exists(self, kind: str) -> bool: ...

    def open(self, kind: str) -> ChunkStore: ...

    def manifest(self, kind: str) -> Manifest | None:
        """What the live index of `kind` was built with (model, variant, chunker, static table), read without
        opening it; None when there is none or it cannot be read."""
        ...

    def create(self, kind: str, manifest: Manifest) -> BuildingStore:
        """A new, empty index that replaces the live one when published."""
        ...

    def generation(self, kind: str) -> object:
        """Changes whenever a rebuild swaps a new index in (so open stores know to reopen)."""
        ...

    def remove_leftovers(self) -> None:
        """What killed writers left behind; call it holding the writer lock."""
        ...

    def describe(self) -> str: ...

    def memory(self) -> ServerMemory | None:
        """A shared server's buffer beside what its searches read; None for the local engine."""
        ...

    def export_snapshot(self, dest: Path, commit: str, manifest: Manifest) -> SnapshotInfo:
        """Every index in one file at `dest`, stamped with `commit` and the model of `manifest` (the caller holds the
        writer lock)."""
        ...

    def import_snapshot(self, info: SnapshotInfo, swap: Callable[[Callable[[], None]], None], max_bytes: int) -> None:
        """The snapshot `info` describes, checked, then moved in place by `swap` (which takes the writer lock)."""
        ...

    def origin(self) -> str:
        """Where the indexes came from: built here, imported from a snapshot of a commit, or a shared store."""
        ...


def manifest_of(stored: object) -> Manifest | None:
    """A stored manifest read back; None for what this version cannot read (a field it does not know, one missing)."""
    if not isinstance(stored, dict):
        return None
    try:
        return Manifest(**stored)
    except TypeError:
        return None


def check_index_folder(root: Path) -> None:
    """Refuse a `.knowledge` a commit could have planted: a symlink (every index file would land where it points) or
    a folder holding files git tracks (a link among them would be written through)."""
    folder = index_dir(root)
    if folder.is_symlink():
        raise WriteRefusedError(symlinked_index_message(folder))
    if not folder.is_dir():
        return
    try:
        tracked = [name for name in git.run_git(root, "ls-files", "-z", "--", INDEX_DIR).split("\0") if name]
    except (git.GitError, OSError):
        tracked = []  # outside git: nothing can be committed there
    if tracked:
        raise WriteRefusedError(
            f"{folder}: holds files tracked by git ({tracked[0]}); an index is never committed: run "
            f"`git rm -r --cached {INDEX_DIR}` and commit, then `knowledge reindex-all`"
        )
    _refuse_linked_files(folder)


def _refuse_linked_files(folder: Path) -> None:
    """Every index file is read and written in place: one that is a link (planted outside git, where nothing can be
    committed, to serve another project's index) is refused as a linked `.knowledge` is."""
    for entry in os.scandir(folder):
        if entry.is_symlink():
            raise WriteRefusedError(
                f"{folder / entry.name}: is a symlink (to {os.readlink(entry.path)}); knowledge reads its index only "
                f"from real files: remove it (`rm {folder / entry.name}`) and run `knowledge reindex-all`"
            )
        if entry.is_dir(follow_symlinks=False):
            _refuse_linked_files(Path(entry.path))


class LocalEngine:
    def __init__(self, root: Path) -> None:
        check_index_folder(root)
        self.root = root

    def present(self, kind: str) -> bool:
        return LocalStore.exists(self.root, kind) or (index_dir(self.root) / f"{kind}.meta.json").exists()

    def exists(self, kind: str) -> bool:
        return LocalStore.exists(self.root, kind)

    def open(self, kind: str) -> ChunkStore:
        try:
            return LocalStore.open(self.root, kind)
        except IndexNotFoundError:
            if git.repo_root(self.root) is None:  # not a repository: say so, not only how to index the folder
                raise IndexNotFoundError(
                    f"{self.root} is in no git repository and has no index: cd into a repository, or run "
                    "`knowledge reindex-all` to index this folder as it is"
                ) from None
            raise

    def manifest(self, kind: str) -> Manifest | None:
        try:  # `<kind>.meta.json`, written with every change beside the authoritative copy in SQLite
            stored = json.loads((index_dir(self.root) / f"{kind}.meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return manifest_of(stored.get("manifest") if isinstance(stored, dict) else None)

    def create(self, kind: str, manifest: Manifest) -> BuildingStore:
        return LocalStore.create(self.root, kind, manifest)

    def generation(self, kind: str) -> object:
        try:
            return (index_dir(self.root) / f"{kind}.sqlite").stat().st_ino
        except OSError:
            return -1

    def remove_leftovers(self) -> None:
        folder = index_dir(self.root)
        if folder.is_dir():
            remove_local_leftovers(folder)

    def memory(self) -> ServerMemory | None:
        return None

    def describe(self) -> str:
        return "local"

    def export_snapshot(self, dest: Path, commit: str, manifest: Manifest) -> SnapshotInfo:
        from .local_snapshot import export_index

        return export_index(self.root, dest, commit, manifest.model_id, manifest.model_fingerprint)

    def import_snapshot(self, info: SnapshotInfo, swap: Callable[[Callable[[], None]], None], max_bytes: int) -> None:
        from .local_snapshot import import_index

        import_index(self.root, info, swap, max_bytes)

    def origin(self) -> str:
        from .local_snapshot import read_origin

        return read_origin(self.root) or "built here"


def repository_identity(root: Path, configured: str) -> str:
    """`store_repository` when set, else the repository's first (root) commit: the same for every clone."""
    if configured:
        return configured
    if git.repo_root(root) is not None:
        try:
            roots = sorted(git.run_git(root, "rev-list", "--max-parents=0", "HEAD").split())
        except git.GitError:
            roots = []
        if roots:
            return roots[0]
    raise ConfigError(
        f"{root}: a shared store needs the repository's identity: make a first commit or set `store_repository`"
    )


class BranchReader:
    """The checked-out branch, read from the work tree's HEAD file on every call (a file read, no git process),
    so a long-running server follows `git checkout` / `git switch` at once."""

    def __init__(self, root: Path) -> None:
        try:
            self._head: Path | None = git.git_path(root, "HEAD") if git.repo_root(root) is not None else None
        except git.GitError:
            self._head = None

    def __call__(self) -> str:
        if self._head is None:
            return DETACHED
        try:
            text = self._head.read_text(encoding="utf-8").strip()
        except OSError:
            return DETACHED
        return text.removeprefix("ref: refs/heads/") if text.startswith("ref: refs/heads/") else DETACHED


class PostgresEngine:
    """Indexes of (repository, branch) in a shared PostgreSQL database; each open store has its own connection."""

    def __init__(self, root: Path, url: str, repository: str) -> None:
        self.root = root
        self.url = url
        self.repository = repository_identity(root, repository)
        self._branch = BranchReader(root)
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def _target(self, kind: str) -> IndexTarget:
        from .pg_schema import IndexTarget

        return IndexTarget(self.url, self.repository, self.branch, kind)

    @property
    def branch(self) -> str:
        return self._branch()

    def _shared(self) -> Connection:
        from .pg_schema import connect

        if self._conn is None or self._conn.closed:
            self._conn = connect(self.url)
        return self._conn

    def present(self, kind: str) -> bool:
        return self.exists(kind)

    def exists(self, kind: str) -> bool:
        from .pg_schema import live_index_id

        with self._lock:
            return live_index_id(self._shared(), self._target(kind)) is not None

    def open(self, kind: str) -> ChunkStore:
        from .pg_schema import connect
        from .postgres import PostgresStore

        return PostgresStore.open(self._target(kind), connect(self.url))

    def manifest(self, kind: str) -> Manifest | None:
        from .pg_schema import live_manifest

        with self._lock:
            return manifest_of(live_manifest(self._shared(), self._target(kind)))

    def create(self, kind: str, manifest: Manifest) -> BuildingStore:
        from .pg_schema import connect
        from .postgres import PostgresStore

        return PostgresStore.create(self._target(kind), connect(self.url), manifest)

    def generation(self, kind: str) -> object:
        from .pg_schema import live_index_id

        target = self._target(kind)
        with self._lock:
            return (target.branch, live_index_id(self._shared(), target))

    def remove_leftovers(self) -> None:
        from .pg_schema import remove_abandoned

        with self._lock:
            remove_abandoned(self._shared())

    def memory(self) -> ServerMemory | None:
        from .pg_memory import server_memory

        with self._lock:
            return server_memory(self._shared())

    def describe(self) -> str:
        from .pg_schema import redacted

        return f"{redacted(self.url)} (repository {self.repository[:12]}, branch {self.branch})"

    def export_snapshot(self, dest: Path, commit: str, manifest: Manifest) -> SnapshotInfo:
        raise ConfigError("export reads a local index; a shared store is one index for every clone already")

    def import_snapshot(self, info: SnapshotInfo, swap: Callable[[Callable[[], None]], None], max_bytes: int) -> None:
        raise ConfigError("import writes a local index; this repository's settings name a shared store")

    def origin(self) -> str:
        return "a shared store"


def engine_for(root: Path, store: str, repository: str = "") -> Engine:
    """The engine the `store` setting names ("" or "local": the local one)."""
    if store in {"", "local"}:
        return LocalEngine(root)
    return PostgresEngine(root, store, repository)
