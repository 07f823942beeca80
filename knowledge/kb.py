"""KnowledgeBase: the facade every frontend uses. It owns one KindIndex per kind and loads the model only when
something must be embedded (or a query must be, once vectors exist)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

from . import drift_notes, git, history, serving
from .answer import answer
from .api.request import LocateRequest, SearchRequest
from .chunking import CHUNKER_VERSION
from .config import Settings, load_settings
from .corpus import KINDS
from .dependencies import installed_api
from .doc_lint import lint_docs
from .docs_for import by_meaning, docs_for, meaning_query
from .drift import find_drift
from .embed_pass import EmbedResult, embed_in_background, embed_pending, fill_mismatch, fill_scope, waiting
from .embedding import TokenCounter, model_spec
from .errors import IndexCorruptError, IndexIncompatibleError, IndexNotFoundError, KnowledgeError, ModelUnavailableError
from .findability import measure as measure_findability
from .fs import file_lock
from .git import recently_changed, repo_root
from .indexer import Indexer, ProgressCallback, merge_reports, open_cache
from .kind import KindIndex
from .llms_txt import LLMS_FULL, LLMS_TXT, doc_entries, render_llms_full, render_llms_txt
from .locate_answer import answer_locate
from .model_access import EmbedderFactory, ModelAccess, default_variant
from .path_gate import resolve_inside
from .records import (
    Chunk,
    DriftItem,
    FileProblem,
    FindabilityReport,
    IndexReport,
    IndexStatus,
    LocatedFile,
    LocateResponse,
    SearchHit,
    SearchResponse,
    SourceText,
)
from .render.locate import located_json
from .status import index_status, no_index_status
from .store import lock_path
from .store.engines import Engine, engine_for
from .tree_chunks import EstimatedCounter, tree_chunks


class KnowledgeBase:
    """The knowledge base of one repository (or folder)."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder_factory: EmbedderFactory | None = None,
        on_model_step: Callable[[str], None] | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.root = root
        self.settings = settings
        self.model = ModelAccess(settings, embedder_factory, on_model_step)
        self._indexes: dict[str, tuple[object, KindIndex]] = {}
        self._engine = engine
        self._warm = False

    @property
    def engine(self) -> Engine:
        """Where the indexes live (opened on first use: a shared store connects only when needed)."""
        if self._engine is None:
            self._engine = engine_for(self.root, self.settings.store, self.settings.store_repository)
        return self._engine

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
        settings, sources = load_settings(root, overrides)
        if sources["model_variant"] != "default":
            return cls(root, settings, embedder_factory, on_model_step)
        try:  # the engine that says which variant its index was built with is the one the knowledge base uses
            engine: Engine | None = engine_for(root, settings.store, settings.store_repository)
        except KnowledgeError:
            engine = None  # said again, on first use of the index
        settings = replace(settings, model_variant=default_variant(root, settings, engine))
        return cls(root, settings, embedder_factory, on_model_step, engine)

    # ---- the indexes ------------------------------------------------------------------------------------------
    def index(self, kind: str) -> KindIndex:
        """The kind's index, reopened only when a rebuild has swapped a new one in."""
        generation = self.engine.generation(kind)
        cached = self._indexes.get(kind)
        if cached is not None and cached[0] == generation:
            return cached[1]
        if cached is not None:
            cached[1].store.close()
        index = KindIndex(self.root, self.settings, kind, self.engine.open(kind))
        if self._warm:
            index.store.keep_warm(wait=False)
        self._indexes[kind] = (generation, index)
        return index

    def keep_warm(self, wait: bool = False) -> None:
        """This knowledge base serves a long-running process (server, daemon, MCP): its stores keep in memory what
        makes queries faster, now and after every rebuild; built in the background unless `wait`."""
        self._warm = True
        for kind in KINDS:  # start now what the first query would otherwise start
            if kind not in self._indexes and self.engine.exists(kind):
                with contextlib.suppress(KnowledgeError):  # the first query reports it
                    self.index(kind)
        for _, index in self._indexes.values():
            index.store.keep_warm(wait)

    def indexes(self, kinds: tuple[str, ...] = KINDS) -> list[KindIndex]:
        """Every existing index of `kinds`; when none exists, opening the first says which command to run."""
        present = [k for k in kinds if self.engine.present(k)]
        return [self.index(kind) for kind in present or kinds[:1]]

    def _head(self) -> str | None:
        return git.head_commit(self.root) if git.repo_root(self.root) is not None else None

    def default_thresholds(self) -> tuple[float, float]:
        spec = model_spec(self.settings.model)
        return spec.threshold, spec.full_threshold

    def _indexer(self, on_progress: ProgressCallback | None) -> Indexer:
        return Indexer(
            self.root,
            self.settings,
            self.model.identity(),
            self.default_thresholds(),
            self.model.counter,
            on_progress,
            self.engine,
            self.model.static,
            self.model.static_fingerprint,
        )

    @contextlib.contextmanager
    def writer_lock(self) -> Iterator[None]:
        with file_lock(lock_path(self.root)):
            self.engine.remove_leftovers()  # no other writer can be mid-write now: whatever is half-written is stale
            yield

    # ---- indexing ---------------------------------------------------------------------------------------------
    def reindex_all(self, on_progress: ProgressCallback | None = None, embed: bool = True) -> IndexReport:
        """A clean index of every kind, searchable as soon as the chunks are in; then (if `embed`) the vectors."""
        started = time.monotonic()
        with self.writer_lock():
            indexer = self._indexer(on_progress)
            commit = self._head()
            reports = [indexer.rebuild(kind, commit)[1] for kind in KINDS]
            if self.settings.history:
                history.keep(self.root, self.settings)
        result = self.embed_pending(on_progress, compact=True) if embed else None
        return self.completed(merge_reports(reports, started), result)

    def reindex_changes(
        self,
        paths: list[str] | None = None,
        worktree: bool = False,
        on_progress: ProgressCallback | None = None,
        embed: bool = True,
    ) -> IndexReport:
        """Re-index what changed since the indexed commit (or exactly `paths`, repository-relative)."""
        started = time.monotonic()
        with self.writer_lock():
            commit = self._head()
            reports = [self._update_kind(kind, paths, worktree, commit, on_progress) for kind in KINDS]
            if self.settings.history:
                history.keep(self.root, self.settings)
        result = self.embed_pending(on_progress) if embed and any(r.chunks_pending for r in reports) else None
        return self.completed(merge_reports(reports, started), result)

    def _update_kind(
        self,
        kind: str,
        paths: list[str] | None,
        worktree: bool,
        commit: str | None,
        on_progress: ProgressCallback | None,
    ) -> IndexReport:
        try:
            index = self.index(kind)
        except (IndexNotFoundError, IndexCorruptError, IndexIncompatibleError):
            return self._indexer(on_progress).rebuild(kind, commit)[1]
        manifest = index.store.manifest
        if not self.model.may_have_built(manifest.model_id, manifest.model_variant, manifest.fingerprint):
            return self._indexer(on_progress).rebuild(kind, commit)[1]
        # A new chunker, static rows of another table, or chunks without one (an upgrade): rebuild, even if no file
        # changed; the vectors come from the cache
        table, coverage = self.model.static_fingerprint(), index.coverage()
        rows_missing = index.store.keeps_static and bool(table) and coverage.static_rows < coverage.chunks
        stale_static = (manifest.static_stage != table and coverage.static_rows > 0) or rows_missing
        if manifest.chunker_version != CHUNKER_VERSION or stale_static:
            return self._indexer(on_progress).rebuild(kind, commit)[1]
        targets = set(paths) if paths is not None else index.changed_since_index(commit, worktree)
        if not targets and commit == index.commit:
            coverage = index.coverage()
            pending = coverage.chunks - coverage.embedded
            return IndexReport(0, 0, 0, 0, 0, chunks_pending=pending, dense_coverage=coverage.ratio)
        indexer = self._indexer(on_progress)
        if not indexer.compatible(index.store):  # another model or chunker: rebuild (vectors come from the cache)
            return indexer.rebuild(kind, commit)[1]
        return indexer.update(index, targets, commit)

    def embed_pending(self, on_progress: ProgressCallback | None = None, compact: bool = False) -> EmbedResult:
        """Embed every chunk still without a vector; returns at once if another process is already on it."""
        stores = [index.store for index in self.indexes() if index.coverage().embedded < index.coverage().chunks]
        if not self.settings.fill or (not stores and not compact):  # `fill = false`: the first stage only
            return EmbedResult()
        mismatch = self.fill_mismatch()
        if mismatch is not None:  # before any model is loaded or built
            raise IndexIncompatibleError(mismatch)
        stores = stores or [index.store for index in self.indexes()]
        cache = open_cache(self.settings, self.model.identity())
        try:
            return embed_pending(
                self.root,
                stores,
                self.model.embedder,
                cache,
                self.writer_lock,
                on_progress,
                compact_at_end=compact,
                first=recently_changed(self.root),
                in_scope=fill_scope(self.settings),
            )
        finally:
            if cache is not None:
                cache.close()

    def completed(self, report: IndexReport, embedded: EmbedResult | None = None) -> IndexReport:
        """`report` with what the embedding step did and the coverage now."""
        coverages = [index.coverage() for index in self.indexes()]
        total = sum(c.chunks for c in coverages)
        done = sum(c.embedded for c in coverages)
        return replace(
            report,
            chunks_embedded=embedded.embedded if embedded else report.chunks_embedded,
            chunks_reused=report.chunks_reused + (embedded.reused if embedded else 0),
            chunks_pending=waiting(self.settings, [index.store for index in self.indexes()], total - done),
            dense_coverage=1.0 if total == 0 else round(done / total, 4),
            seconds=round(report.seconds + (embedded.seconds if embedded else 0.0), 3),
        )

    def embed_in_background(self) -> bool:
        """Start a detached `knowledge embed` for pending chunks; False when one already runs, `fill` is off, or an
        index was built by another model than the one the fill would load (a test's embedder, a changed setting)."""
        if not self.settings.fill or self.fill_mismatch(configured=True) is not None:
            return False
        return embed_in_background(self.root, self.settings.model, self.settings.model_variant)

    def fill_mismatch(self, configured: bool = False) -> str | None:
        """Why no fill may write into these indexes (embed_pass.fill_mismatch); `configured`: the fill a detached
        `knowledge embed` runs, with the configured model, whatever this process embeds with."""
        built = None if configured else self.model.may_have_built
        return fill_mismatch([index.store for index in self.indexes()], self.settings, built)

    def needs_catch_up(self) -> bool:
        """Cheap check (one `git rev-parse`, one stat pass) whether the index trails HEAD or the files."""
        if not self.engine.exists("docs"):
            return True
        head = self._head()
        for index in self.indexes():
            if index.selection_changed() or index.commit != head or index.stat_changed():
                return True
        return False

    def catch_up(self) -> IndexReport | None:
        """Bring the index up to date if it trails; None (and almost no work) when it is current."""
        if not self.needs_catch_up():
            return None
        return self.reindex_changes(worktree=True)

    # ---- reading ----------------------------------------------------------------------------------------------
    def search(self, request: SearchRequest | str, **fields: object) -> SearchResponse:
        """Ranked chunks for `request` (or a query and SearchRequest fields); unasked fields fall back to settings,
        then to the index's calibration."""
        if isinstance(request, str):
            request = SearchRequest(request, **fields)  # type: ignore[arg-type]
        kinds = KINDS if request.kind == "all" else (request.kind,)
        sources = self.indexes(kinds)
        return answer(request, sources, self.model, self.settings, self.is_stale, lambda: self.index("docs"))

    def locate(
        self, request: LocateRequest | str, printed: Callable[[LocatedFile], str] = located_json, **fields: object
    ) -> LocateResponse:
        """The files to change for an issue or task text, best first, as many as the budget holds `printed`."""
        if isinstance(request, str):
            request = LocateRequest(request, **fields)  # type: ignore[arg-type]
        past = partial(history.files_like, self.root) if self.settings.history else None
        return answer_locate(request, self.indexes(KINDS), self.settings, self.model, printed, past)

    # ---- docs that check themselves -----------------------------------------------------------------------------
    def _code_chunks(self) -> dict[int, Chunk]:
        return self.index("code").all_chunks() if self.engine.present("code") else {}

    def drift(self, since: str | None = None) -> list[DriftItem]:
        """Doc sections whose referenced code moved on, and references that no longer resolve (worst first).
        The whole-history answer is kept in `.knowledge/drift.json` so search results can carry it."""
        if not self.engine.present("docs"):  # no index here (a pre-commit hook in any repository): read the files
            chunks = tree_chunks(self.root, self.settings, self._counter_or_estimate(), self._head())
            return find_drift(self.root, chunks["docs"], chunks["code"], since, installed_api(self.root))
        docs = self.index("docs")
        items = find_drift(self.root, docs.all_chunks(), self._code_chunks(), since, installed_api(self.root))
        if since is None:
            drift_notes.save(self.root, docs, items)
        return items

    def _counter_or_estimate(self) -> Callable[[], TokenCounter]:
        """The model's tokenizer when it is installed, else an estimate that never cuts larger than it would."""
        try:
            self.model.counter()
        except ModelUnavailableError:
            return EstimatedCounter
        return self.model.counter

    def docs_for(self, target: str) -> list[SearchHit]:
        """Doc sections referring to a file (`PATH`), the entity at a line (`PATH:LINE`) or a symbol; metadata only."""
        docs = self.index("docs")
        known = set(docs.store.files()) | {
            p for p in (target.rpartition(":")[0], target) if p and isinstance(resolve_inside(self.root, p), Path)
        }
        code = self._code_chunks()
        found = docs_for(target, docs.all_chunks(), code, known)
        query = None if found else meaning_query(target, code, known)  # nothing names it: what it does, by meaning
        about = self.search(query, kind="docs", metadata_only=True).results if query else ()
        return found or by_meaning(about, query or "")

    def findability(self) -> FindabilityReport:
        """Each doc's description and section titles asked as queries: where does the doc itself rank?"""
        sources = self.indexes(("docs",))
        embedder = self.model.embedder() if any(i.coverage().embedded for i in sources) else None
        cache = open_cache(self.settings, self.model.identity())
        try:
            return measure_findability(sources, self.settings, embedder, cache, self.model.count_tokens)
        finally:
            if cache is not None:
                cache.close()

    def is_stale(self, path: str) -> bool:
        """True when `path` differs on disk from what its index holds."""
        index = next((i for i in self.indexes() if i.store.file(path) is not None), None)
        return True if index is None else index.is_stale(path)

    def source(self, path: str, start: int | None = None, end: int | None = None) -> SourceText:
        """Exact current lines of a file in the repository (1-based, inclusive); refuses paths outside it."""
        return serving.source(self.root, self.settings, path, start, end)

    def source_of_chunk(self, chunk_id: str) -> SourceText:
        """The current lines of the file range a chunk was indexed from."""
        return serving.source_of_chunk(self.root, self.settings, self.indexes(), chunk_id)

    def docs_for_file(self, path: str) -> list[SearchHit]:
        """Doc sections that refer to or mention `path` (a file, or `PATH:LINE`): metadata only, no model needed."""
        file, _, line = str(path).rpartition(":")
        at = f":{line}" if line.isdigit() and file else ""
        return self.docs_for(self.relative_path(file if at else path, self.root) + at)

    def relative_path(self, path: str | Path, base: Path | None = None) -> str:
        """`path` (absolute, or relative to `base`) as a repository-relative POSIX path; refuses escapes."""
        return serving.relative_path(self.root, path, base)

    def status(self) -> IndexStatus:
        """What is indexed, with which model, how old, how much is embedded, and what was skipped."""
        if not self.engine.exists("docs"):
            if self.settings.store == "local" and repo_root(self.root) is None:
                self.engine.open("docs")  # says the folder is in no git repository, as search and locate do
            return no_index_status(self.root, self.engine.describe())
        return index_status(self.root, self.engine, self.indexes(), self._head(), self.settings.fill)

    def llms_txt(self, full_budget: int | None = None) -> dict[str, str]:
        """`llms.txt` (and `llms-full.txt` within `full_budget` tokens) from the docs' front matter: file -> text."""
        entries = doc_entries(self.root, self.settings)
        out = {LLMS_TXT: render_llms_txt(self.root, entries)}
        if full_budget is not None:
            out[LLMS_FULL] = render_llms_full(self.root, entries, full_budget, self.model.count_tokens)[0]
        return out

    def lint(self) -> list[FileProblem]:
        """Docs that lack a `description` or cannot be read: one problem per file."""
        return lint_docs(self.root, self.settings)
