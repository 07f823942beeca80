"""KnowledgeBase: the facade every frontend uses; holds settings and one warm embedder."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from . import git
from .config import Settings, load_settings
from .corpus import KINDS, candidate_paths, read_source
from .embedding import Embedder, load_embedder, model_spec
from .errors import IndexLockedError, KnowledgeError, PathOutsideRepositoryError
from .fs import is_locked
from .git import repo_root
from .indexer import (
    ProgressCallback,
    changed_by_content,
    index_fingerprint,
    reindex_all,
    reindex_changes,
    selection_fingerprint,
)
from .lexical import LexicalIndex, lexical_path
from .records import FileProblem, IndexReport, IndexStatus, SearchHit, SearchResponse, SourceText
from .search import SearchOptions, search
from .store import IndexStore, index_dir, lock_path, locked

EmbedderFactory = Callable[[Settings], Embedder]


def _default_factory(on_step: Callable[[str], None] | None) -> EmbedderFactory:
    return lambda settings: load_embedder(settings.model, settings.home, settings.model_variant, on_step)


class KnowledgeBase:
    """The knowledge base of one repository (or folder)."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder_factory: EmbedderFactory | None = None,
        on_model_step: Callable[[str], None] | None = None,
    ) -> None:
        self.root = root
        self.settings = settings
        self._factory = embedder_factory or _default_factory(on_model_step)
        self._embedder: Embedder | None = None
        self._store_cache: dict[str, tuple[tuple[int, int, int], IndexStore]] = {}
        self._lexical_index: dict[str, LexicalIndex] = {}

    @classmethod
    def open(
        cls,
        path: Path,
        overrides: dict[str, object] | None = None,
        embedder_factory: EmbedderFactory | None = None,
        on_model_step: Callable[[str], None] | None = None,
    ) -> KnowledgeBase:
        """The knowledge base for the git work tree holding `path` (or `path` itself outside git)."""
        path = path.resolve()
        if not path.is_dir():
            raise KnowledgeError(f"{path}: not a directory")
        root = repo_root(path) or path
        settings, _ = load_settings(root, overrides)
        return cls(root, settings, embedder_factory, on_model_step)

    def stores(self) -> list[IndexStore]:
        """Every kind's index that exists (docs always: it names the one command to run when missing)."""
        return [self.store(kind) for kind in KINDS if kind == "docs" or IndexStore.exists(self.root, kind)]

    def is_stale(self, path: str) -> bool:
        """True when `path` differs on disk from what its index holds."""
        for store in self.stores():
            if path in store.files:
                return store.file_changed(path)
        return True

    def store(self, kind: str = "docs") -> IndexStore:
        """The current index of `kind`, reopened only when a writer has replaced its metadata since the last call."""
        meta = IndexStore.paths(self.root, kind)[1]
        try:
            info = meta.stat()
            identity = (info.st_ino, info.st_mtime_ns, info.st_size)
        except OSError:
            identity = None
        cached = self._store_cache.get(kind)
        if cached is not None and identity is not None and cached[0] == identity:
            return cached[1]
        store = IndexStore.open(self.root, kind)
        if identity is not None:
            self._store_cache[kind] = (identity, store)
        return store

    def source(self, path: str, start: int | None = None, end: int | None = None) -> SourceText:
        """Exact current lines of a file in the repository (1-based, inclusive); refuses paths outside it."""
        rel = self.relative_path(path, self.root)
        target = (self.root / rel).resolve()
        if not target.is_relative_to(self.root) or rel.split("/")[0] == ".git":
            raise PathOutsideRepositoryError(f"{path}: outside the repository root {self.root}")
        if not target.is_file():
            raise KnowledgeError(f"{path}: no such file in {self.root}")
        if target.stat().st_size > self.settings.max_file_bytes:
            raise KnowledgeError(f"{path}: larger than max_file_bytes ({self.settings.max_file_bytes:,})")
        try:
            lines = target.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise KnowledgeError(f"{path}: not valid UTF-8 text (byte {exc.start})") from exc
        first = max(1, start or 1)
        last = min(len(lines), end or len(lines))
        if start is not None and first > len(lines):
            raise KnowledgeError(f"{path}: line {first} is past the end ({len(lines)} lines)")
        return SourceText(
            path=rel, line_start=first, line_end=last, total_lines=len(lines), lines=tuple(lines[first - 1 : last])
        )

    def source_of_chunk(self, chunk_id: str) -> SourceText:
        """The current lines of the file range a chunk was indexed from."""
        for store in self.stores():
            for chunk in store.chunks.values():
                if chunk.id == chunk_id:
                    return self.source(chunk.path, chunk.line_start, chunk.line_end)
        raise KnowledgeError(f"{chunk_id}: no chunk with this id in the index")

    def docs_for_file(self, path: str) -> list[SearchHit]:
        """Doc sections that mention `path` (or its file name): metadata only, no embedding needed."""
        rel = self.relative_path(path, self.root)
        name = rel.rsplit("/", 1)[-1]
        hits: list[SearchHit] = []
        for chunk in self.store().chunks.values():
            if chunk.path == rel:
                continue
            exact = rel in chunk.content
            if exact or name in chunk.content:
                hits.append(
                    SearchHit(
                        id=chunk.id,
                        path=chunk.path,
                        kind=chunk.kind,
                        score=1.0 if exact else 0.5,
                        title=chunk.title,
                        description=chunk.description,
                        section=chunk.section,
                        line_start=chunk.line_start,
                        line_end=chunk.line_end,
                        content=None,
                        tokens=0,
                        commit=chunk.commit,
                    )
                )
        return sorted(hits, key=lambda h: (-h.score, h.path, h.line_start))

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._factory(self.settings)
        return self._embedder

    def default_thresholds(self) -> tuple[float, float]:
        spec = model_spec(self.settings.model)
        return spec.threshold, spec.full_threshold

    def reindex_all(self, on_progress: ProgressCallback | None = None) -> IndexReport:
        """Rebuild the whole index; unchanged chunks reuse cached vectors."""
        return reindex_all(self.root, self.settings, self.embedder, self.default_thresholds(), on_progress)

    def reindex_changes(
        self, paths: list[str] | None = None, worktree: bool = False, on_progress: ProgressCallback | None = None
    ) -> IndexReport:
        """Re-index what changed since the indexed commit (or exactly `paths`, repository-relative)."""
        return reindex_changes(
            self.root, self.settings, self.embedder, self.default_thresholds(), paths, worktree, on_progress
        )

    def relative_path(self, path: str | Path, base: Path | None = None) -> str:
        """`path` (absolute, or relative to `base`) as a repository-relative POSIX path; refuses escapes."""
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = (base or Path.cwd()) / candidate
        resolved = Path(os.path.normpath(candidate))  # lexical: a deleted path must still resolve
        try:
            return resolved.relative_to(self.root).as_posix()
        except ValueError:
            raise PathOutsideRepositoryError(f"{path}: outside the repository root {self.root}") from None

    def needs_catch_up(self) -> bool:
        """Cheap check (one `git rev-parse`, one stat pass) whether the index trails HEAD or the files."""
        if not IndexStore.exists(self.root, "docs"):
            return True
        head = git.head_commit(self.root) if git.repo_root(self.root) is not None else None
        for store in self.stores():
            if store.manifest.selection != selection_fingerprint(self.settings) or store.manifest.commit != head:
                return True
            for rel in store.files:
                try:
                    info = (self.root / rel).stat()
                except OSError:
                    return True
                if store.stats.get(rel) != [info.st_mtime_ns, info.st_size]:
                    return True
        return False

    def catch_up(self) -> IndexReport | None:
        """Bring the index up to date if it trails; None (and almost no work) when it is current."""
        if not self.needs_catch_up():
            return None
        return self.reindex_changes(worktree=True)

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        threshold: float | None = None,
        full_threshold: float | None = None,
        budget: int | None = None,
        metadata_only: bool = False,
        explain: bool = False,
        kind: str = "all",
        expand: bool = False,
    ) -> SearchResponse:
        """Ranked doc sections for `query`; None arguments fall back to settings, then to the index's calibration."""
        if not query.strip():
            raise KnowledgeError("the query is empty")
        wanted = KINDS if kind == "all" else (kind,)
        if kind not in {"all", *KINDS}:
            raise KnowledgeError(f"kind: {kind!r} is not one of all, {', '.join(KINDS)}")
        stores = [self.store(name) for name in wanted if name == "docs" or IndexStore.exists(self.root, name)]
        for store in stores:
            store.check_compatible(index_fingerprint(self.embedder))
        manifest = stores[0].manifest
        options = SearchOptions(
            k=k or self.settings.k,
            threshold=threshold
            if threshold is not None
            else (self.settings.threshold if self.settings.threshold is not None else manifest.threshold),
            full_threshold=full_threshold
            if full_threshold is not None
            else (
                self.settings.full_threshold if self.settings.full_threshold is not None else manifest.full_threshold
            ),
            budget=budget or self.settings.budget,
            explain=explain,
            expand=expand,
            metadata_only=metadata_only,
        )
        sources = [(store, self._lexical(store)) for store in stores]
        return search(sources, self.embedder, query, options, self.is_stale)

    def _lexical(self, store: IndexStore) -> LexicalIndex | None:
        """The lexical side, synced to `store`; None (dense only) while a writer holds the lock mid-sync."""
        index = self._lexical_index.get(store.kind)
        if index is None:
            index = self._lexical_index[store.kind] = LexicalIndex(lexical_path(index_dir(self.root), store.kind))
        if index.generation() != store.generation:
            try:
                with locked(self.root, timeout=0.5):
                    index.sync(store.chunks, store.generation)
            except IndexLockedError:
                return None
        return index

    def status(self) -> IndexStatus:
        """What is indexed, with which model, how old, and what was skipped."""
        base = {"root": str(self.root), "index_dir": str(index_dir(self.root))}
        if not IndexStore.exists(self.root, "docs"):
            return IndexStatus(
                **base, exists=False, model=None, dims=None, files=0, chunks=0, built_at=None, age_seconds=None
            )
        stores = self.stores()
        store = stores[0]
        built = time.mktime(time.strptime(store.manifest.built_at, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        return IndexStatus(
            **base,
            exists=True,
            model=f"{store.manifest.model_id} ({store.manifest.model_variant})",
            dims=store.manifest.dims,
            files=sum(len(s.files) for s in stores),
            chunks=sum(len(s.chunks) for s in stores),
            built_at=store.manifest.built_at,
            age_seconds=round(time.time() - built, 1),
            skipped=tuple(p for s in stores for p in s.skipped),
            thresholds={"threshold": store.manifest.threshold, "full_threshold": store.manifest.full_threshold},
            kinds={s.kind: {"files": len(s.files), "chunks": len(s.chunks)} for s in stores},
            **self._freshness(stores),
        )

    def _freshness(self, stores: list[IndexStore]) -> dict[str, object]:
        head = git.head_commit(self.root) if git.repo_root(self.root) is not None else None
        behind: int | None = None
        commit = stores[0].manifest.commit
        if head and commit and git.commit_exists(self.root, commit):
            behind = git.commits_between(self.root, commit, head)
        changed: set[str] = set()
        for store in stores:
            problem_paths = {p.path for p in store.skipped}
            changed |= {p for p in changed_by_content(self.root, self.settings, store) if p not in problem_paths}
        return {
            "commit": commit,
            "head": head,
            "commits_behind": behind,
            "changed_files": tuple(sorted(changed)),
            "reindex_running": is_locked(lock_path(self.root)),
        }

    def lint(self) -> list[FileProblem]:
        """Docs that lack a `description` or cannot be read: one problem per file."""
        from .chunking.markdown import split_front_matter

        problems: list[FileProblem] = []
        for rel in candidate_paths(self.root, self.settings):
            source = read_source(self.root, rel, self.settings)
            if isinstance(source, FileProblem):
                problems.append(source)
                continue
            data, _, _, problem = split_front_matter(source)
            if problem is not None:
                problems.append(problem)
            elif not str(data.get("description") or "").strip():
                problems.append(FileProblem(rel, "no `description` in front matter"))
        return problems
