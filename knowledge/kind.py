"""KindIndex: the one owner of a kind's index (docs or code): its store, the commit it reflects and its freshness."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from . import git
from .callgraph import CallGraph, StoredEntities
from .config import Settings
from .corpus import candidate_paths
from .path_gate import Refusal, resolve_inside
from .records import Chunk
from .store import ChunkStore, Coverage, SearchSide

FILES_KEPT = 4096  # files whose chunks a process keeps between answers (a warm daemon's working set, not the index)
# What makes a folder a project of its own in a monorepo: a call by name looks there first (callgraph.py)
PROJECT_MANIFESTS = (
    "pyproject.toml", "setup.py", "package.json", "go.mod", "Cargo.toml", "pom.xml", "build.gradle",
    "build.gradle.kts", "build.sbt", "composer.json", "Gemfile", "mix.exs", "Package.swift", "stack.yaml",
)  # fmt: skip


def selection_fingerprint(settings: Settings) -> str:
    """Changes when the set of indexed files could change without any commit (globs, size cap)."""
    text = repr(
        (settings.include, settings.exclude, settings.code_include, settings.code_exclude, settings.max_file_bytes)
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_digest(root: Path, rel: str) -> str:
    """sha256 of the file as indexing reads it; "" for what indexing refuses (links out, devices) or cannot read."""
    path = resolve_inside(root, rel)
    if isinstance(path, Refusal):
        return ""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


class KindIndex:
    """One kind's index as the use cases see it."""

    def __init__(self, root: Path, settings: Settings, kind: str, store: ChunkStore) -> None:
        self.root = root
        self.settings = settings
        self.kind = kind
        self.store = store
        self._graph: tuple[str, CallGraph, dict[int, Chunk]] | None = None
        self._stored: tuple[str, CallGraph] | None = None
        self._projects: dict[str, str] = {}  # folder -> its project's folder
        self._files: tuple[str, OrderedDict[str, list[Chunk]]] = ("", OrderedDict())
        self._files_lock = threading.Lock()
        self._generated: tuple[object, dict[str, bool]] = ("", {})  # path -> git's attributes mark it generated

    @property
    def searched(self) -> SearchSide:
        """The store as searching sees it: search, retrieval, grep, locate and serving ask it nothing else."""
        return self.store

    @property
    def commit(self) -> str | None:
        return self.store.commit()

    def coverage(self) -> Coverage:
        return self.store.coverage()

    def selection_changed(self) -> bool:
        return self.store.manifest.selection != selection_fingerprint(self.settings)

    # ---- freshness: the one place that decides what changed --------------------------------------------------
    def changed_by_content(self) -> set[str]:
        """Every path whose content differs from what is indexed: the fallback when git history cannot tell."""
        files = self.store.files()
        candidates = set(candidate_paths(self.root, self.settings, self.kind))
        known = set(files) | {p.path for p in self.store.problems()}
        changed = {p for p in known if p not in candidates}
        for rel in candidates:
            facts = files.get(rel)
            if facts is None or file_digest(self.root, rel) != facts.content_hash:
                changed.add(rel)
        return changed

    def changed_since_index(self, head: str | None, worktree: bool) -> set[str]:
        """Paths to re-index: the diff from the stored commit to `head` (plus work-tree changes if asked)."""
        stored = self.commit
        if stored is None or head is None or self.selection_changed() or not git.commit_exists(self.root, stored):
            return self.changed_by_content()
        paths = git.changed_paths(self.root, stored, head) if stored != head else set()
        if worktree:
            paths |= git.worktree_changes(self.root)
        return paths

    def is_stale(self, path: str) -> bool:
        """True when `path` on disk is no longer what was indexed (edited, deleted or unreadable)."""
        facts = self.store.file(path)
        return facts is None or file_digest(self.root, path) != facts.content_hash

    def stat_changed(self) -> bool:
        """Cheap check (one stat per file) whether any indexed file was touched since it was read."""
        for rel, facts in self.store.files().items():
            try:
                info = (self.root / rel).stat()
            except OSError:
                return True
            if (info.st_mtime_ns, info.st_size) != (facts.mtime_ns, facts.size):
                return True
        return False

    # ---- derived views: read by key where the engine keeps them, else built once per version ----------------------
    def _loaded(self) -> tuple[CallGraph, dict[int, Chunk]]:
        version = self.store.version()
        if self._graph is None or self._graph[0] != version:
            chunks = self.store.all_chunks()
            self._graph = (version, CallGraph(list(chunks.values()), self.project_of), chunks)
        return self._graph[1:]

    def call_graph(self) -> CallGraph:
        """Who calls what. Where the engine keeps the calls table (the local one), a graph that reads the rows it
        is asked about; otherwise (the shared store) one built from every chunk once per index version."""
        if not self.store.keeps_calls():
            return self._loaded()[0]
        version = self.store.version()
        if self._stored is None or self._stored[0] != version:
            self._stored = (version, CallGraph(StoredEntities(self.store, self.chunks_in), self.project_of))
        return self._stored[1]

    def project_of(self, path: str) -> str:
        """The folder of the project `path` belongs to: the nearest above it holding a project's manifest
        (`pyproject.toml`, `package.json`, `go.mod`, ...); "" for the repository's root or a file of no project."""
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        if folder not in self._projects:
            holds = any((self.root / folder / name).is_file() for name in PROJECT_MANIFESTS)
            self._projects[folder] = folder if holds or not folder else self.project_of(folder)
        return self._projects[folder]

    def chunks_in(self, path: str) -> list[Chunk]:
        """The chunks of one file, in key order (by path, through the store's index), the files asked lately kept
        while the index does not change (a warm process answers from them; FILES_KEPT bounds them)."""
        version = self.store.version()
        with self._files_lock:  # a server's threads share it
            if self._files[0] != version:
                self._files = (version, OrderedDict())
            kept = self._files[1]
            if path in kept:
                kept.move_to_end(path)
                return kept[path]
        chunks = self.store.chunks_of_path(path)
        with self._files_lock:
            kept[path] = chunks
            if len(kept) > FILES_KEPT:
                kept.popitem(last=False)
        return chunks

    def marked_generated(self, paths: Iterable[str]) -> set[str]:
        """Which of `paths` git's attributes mark generated or vendored (`linguist-generated`): git is asked once
        per index version and commit for the paths not asked before (a warm process asks nothing twice)."""
        wanted = list(dict.fromkeys(paths))
        version = (self.store.version(), self.store.commit())
        with self._files_lock:
            if self._generated[0] != version:
                self._generated = (version, {})
            known = self._generated[1]
            asked = [path for path in wanted if path not in known]
        if asked:
            marked = git.marked_generated(self.root, asked)
            with self._files_lock:
                known.update((path, path in marked) for path in asked)
        return {path for path in wanted if known.get(path)}

    def chunk_at(self, path: str, line: int) -> Chunk | None:
        return next((c for c in self.chunks_in(path) if c.line_start == line), None)

    def all_chunks(self) -> dict[int, Chunk]:
        """Every chunk (drift, docs-for and findability read them all; no answer of search or locate does)."""
        return self.store.all_chunks()

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        """One chunk by its id, through the store's index of ids."""
        return self.store.chunk_by_id(chunk_id)
