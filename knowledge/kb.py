"""KnowledgeBase: the facade every frontend uses. It owns one KindIndex per kind and loads the model only when
something must be embedded (or a query must be, once vectors exist)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from . import git
from .chunking import CHUNKER_VERSION
from .config import Settings, load_settings
from .corpus import KINDS, candidate_paths, read_source, redactor
from .docs_for import docs_for
from .drift import find_drift
from .embedding import model_spec
from .errors import (
    IndexCorruptError,
    IndexIncompatibleError,
    IndexNotFoundError,
    KnowledgeError,
    PathOutsideRepositoryError,
)
from .findability import TOP
from .findability import evaluate as evaluate_findability
from .fs import atomic_write, file_lock, is_locked
from .git import repo_root
from .indexer import EmbedResult, Indexer, ProgressCallback, embed_pending, model_fingerprint_of, open_cache
from .kind import KindIndex
from .llms_txt import LLMS_FULL, LLMS_TXT, doc_entries, render_llms_full, render_llms_txt
from .model_access import EmbedderFactory, ModelAccess
from .path_gate import resolve_inside, servable
from .records import (
    Chunk,
    DriftItem,
    FileProblem,
    FindabilityReport,
    IndexReport,
    IndexStatus,
    SearchHit,
    SearchResponse,
    SourceText,
)
from .request import SearchRequest
from .search import resolve_options, search
from .store import embed_lock_path, index_dir, lock_path
from .store.engines import Engine, engine_for

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DRIFT_FILE = "drift.json"


@dataclass(frozen=True, slots=True)
class _Freshness:
    commit: str | None
    head: str | None
    commits_behind: int | None
    relation: str | None
    changed_files: tuple[str, ...]
    reindex_running: bool


def _merge(reports: list[IndexReport], started: float) -> IndexReport:
    pending = sum(r.chunks_pending for r in reports)
    return IndexReport(
        files_indexed=sum(r.files_indexed for r in reports),
        chunks_total=sum(r.chunks_total for r in reports),
        chunks_embedded=0,
        chunks_reused=sum(r.chunks_reused for r in reports),
        files_removed=sum(r.files_removed for r in reports),
        skipped=tuple(p for r in reports for p in r.skipped),
        warnings=tuple(p for r in reports for p in r.warnings),
        undescribed=tuple(p for r in reports for p in r.undescribed),
        seconds=round(time.monotonic() - started, 3),
        chunks_pending=pending,
        dense_coverage=min((r.dense_coverage for r in reports), default=1.0),
    )


def default_variant(root: Path, model: str) -> str:
    """The variant when no setting names one: what an existing index of this model was built with (an upgrade
    never invalidates an index), else the model's default."""
    spec = model_spec(model)
    for kind in KINDS:
        try:
            manifest = json.loads((index_dir(root) / f"{kind}.meta.json").read_text(encoding="utf-8"))["manifest"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if manifest.get("model_id") == spec.name and manifest.get("model_variant") in {"fp32", "int8"}:
            return str(manifest["model_variant"])
    return spec.default_variant


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
        self.model = ModelAccess(settings, embedder_factory, on_model_step)
        self._indexes: dict[str, tuple[object, KindIndex]] = {}
        self._engine: Engine | None = None
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
        if sources["model_variant"] == "default":
            settings = replace(settings, model_variant=default_variant(root, settings.model))
        return cls(root, settings, embedder_factory, on_model_step)

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
        )

    @contextlib.contextmanager
    def _writer_lock(self) -> Iterator[None]:
        with file_lock(lock_path(self.root)):
            self.engine.remove_leftovers()  # no other writer can be mid-write now: whatever is half-written is stale
            yield

    # ---- indexing ---------------------------------------------------------------------------------------------
    def reindex_all(self, on_progress: ProgressCallback | None = None, embed: bool = True) -> IndexReport:
        """A clean index of every kind, searchable as soon as the chunks are in; then (if `embed`) the vectors."""
        started = time.monotonic()
        with self._writer_lock():
            indexer = self._indexer(on_progress)
            commit = self._head()
            reports = [indexer.rebuild(kind, commit)[1] for kind in KINDS]
        result = self.embed_pending(on_progress, compact=True) if embed else None
        return self.completed(_merge(reports, started), result)

    def reindex_changes(
        self,
        paths: list[str] | None = None,
        worktree: bool = False,
        on_progress: ProgressCallback | None = None,
        embed: bool = True,
    ) -> IndexReport:
        """Re-index what changed since the indexed commit (or exactly `paths`, repository-relative)."""
        started = time.monotonic()
        with self._writer_lock():
            commit = self._head()
            reports = [self._update_kind(kind, paths, worktree, commit, on_progress) for kind in KINDS]
        result = self.embed_pending(on_progress) if embed and any(r.chunks_pending for r in reports) else None
        return self.completed(_merge(reports, started), result)

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
        if manifest.chunker_version != CHUNKER_VERSION:  # a new chunker: rebuild, even if no file changed
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
        if not stores and not compact:
            return EmbedResult()
        stores = stores or [index.store for index in self.indexes()]
        cache = open_cache(self.settings, self.model.identity())
        try:
            return embed_pending(
                self.root, stores, self.model.embedder, cache, self._writer_lock, on_progress, compact_at_end=compact
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
            chunks_pending=total - done,
            dense_coverage=1.0 if total == 0 else round(done / total, 4),
            seconds=round(report.seconds + (embedded.seconds if embedded else 0.0), 3),
        )

    def embed_in_background(self) -> bool:
        """Start a detached `knowledge embed` for pending chunks; False when one is already running."""
        if is_locked(embed_lock_path(self.root)):
            return False
        log = index_dir(self.root) / "logs" / "embed.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            subprocess.Popen(
                [sys.executable, "-m", "knowledge", "-C", str(self.root), "embed", "--quiet"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                env={**os.environ},
            )
        return True

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
        if not request.exact and any(index.coverage().embedded for index in sources):
            for index in sources:  # by name first: a mismatch is said before any model is built or loaded
                manifest = index.store.manifest
                if not self.model.may_have_built(manifest.model_id, manifest.model_variant, manifest.fingerprint):
                    raise self._model_mismatch(index)
            fingerprint = self.model.identity().fingerprint
            for index in sources:
                if model_fingerprint_of(index.store.manifest.fingerprint) != fingerprint:
                    raise self._model_mismatch(index)
            embed_query = self.model.embedder().embed_query
        else:
            embed_query = None
        manifest = sources[0].store.manifest
        options = resolve_options(request, self.settings, (manifest.threshold, manifest.full_threshold))
        response = search(sources, embed_query, self.model.count_tokens, request.query, options, self.is_stale)
        notes = self._drift_notes() if any(hit.kind == "doc" for hit in response.results) else {}
        if not notes:
            return response
        return replace(response, results=tuple(replace(h, drift=notes.get(h.id)) for h in response.results))

    # ---- docs that check themselves -----------------------------------------------------------------------------
    def _code_chunks(self) -> dict[int, Chunk]:
        return self.index("code").all_chunks() if self.engine.present("code") else {}

    def drift(self, since: str | None = None) -> list[DriftItem]:
        """Doc sections whose referenced code moved on, and references that no longer resolve (worst first).
        The whole-history answer is kept in `.knowledge/drift.json` so search results can carry it."""
        docs = self.index("docs")
        items = find_drift(self.root, docs.all_chunks(), self._code_chunks(), since)
        if since is None:
            notes: dict[str, str] = {}
            for item in items:
                notes.setdefault(item.chunk_id, item.summary)
            path = index_dir(self.root) / DRIFT_FILE
            with contextlib.suppress(OSError):
                atomic_write(path, json.dumps({"commit": docs.commit, "version": docs.store.version(), "notes": notes}))
        return items

    def _drift_notes(self) -> dict[str, str]:
        """chunk id -> drift summary, from the last `drift` run if the docs index has not moved since."""
        try:
            data = json.loads((index_dir(self.root) / DRIFT_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        docs = self.index("docs")
        if data.get("commit") != docs.commit or data.get("version") != docs.store.version():
            return {}
        return dict(data.get("notes", {}))

    def docs_for(self, target: str) -> list[SearchHit]:
        """Doc sections referring to a file (`PATH`), the entity at a line (`PATH:LINE`) or a symbol; metadata only."""
        docs = self.index("docs")
        known = set(docs.store.files()) | {
            p for p in (target.rpartition(":")[0], target) if p and isinstance(resolve_inside(self.root, p), Path)
        }
        return docs_for(target, docs.all_chunks(), self._code_chunks(), known)

    def findability(self) -> FindabilityReport:
        """Each doc's description and section titles asked as queries: where does the doc itself rank?"""
        cache = open_cache(self.settings, self.model.identity())
        embedder = self.model.embedder() if any(i.coverage().embedded for i in self.indexes(("docs",))) else None

        def embed_query(text: str) -> npt.NDArray[np.float32]:
            assert embedder is not None
            key = "query:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
            known = cache.get_many([key]).get(key) if cache is not None else None
            if known is not None:
                return known
            vector = embedder.embed_query(text)
            if cache is not None:
                cache.put_many({key: vector})
            return vector

        sources = self.indexes(("docs",))
        manifest = sources[0].store.manifest
        request = SearchRequest("findability", kind="docs", k=TOP, threshold=-1.0, metadata_only=True, budget=50_000)
        options = resolve_options(request, self.settings, (manifest.threshold, manifest.full_threshold))
        count = self.model.count_tokens

        def ranked(query: str) -> list[str]:
            answer = search(sources, embed_query if embedder else None, count, query, options, lambda p: False)
            return [hit.path for hit in answer.results]

        try:
            return evaluate_findability(sources[0].all_chunks(), ranked)
        finally:
            if cache is not None:
                cache.close()

    def _model_mismatch(self, index: KindIndex) -> IndexIncompatibleError:
        manifest = index.store.manifest
        built = f"{manifest.model_id} {manifest.model_variant}"
        wanted = f"{model_spec(self.settings.model).name} {self.settings.model_variant}"
        if built == wanted:  # same names, other weights or export: the fingerprint differs
            return IndexIncompatibleError(
                f"this index ({index.kind}) was built with another build of {built}; run `knowledge reindex-all`"
            )
        return IndexIncompatibleError(
            f"this index ({index.kind}) was built with {built}, but the settings ask for {wanted}; run "
            f"`knowledge reindex-all` to switch to {wanted} (its vectors are computed again), or set model = "
            f'"{manifest.model_id}" and model_variant = "{manifest.model_variant}" to keep this index'
        )

    def is_stale(self, path: str) -> bool:
        """True when `path` differs on disk from what its index holds."""
        for index in self.indexes():
            if index.store.file(path) is not None:
                return index.is_stale(path)
        return True

    def source(self, path: str, start: int | None = None, end: int | None = None) -> SourceText:
        """Exact current lines of a file in the repository (1-based, inclusive); refuses paths outside it."""
        rel = self.relative_path(path, self.root)
        target = self.readable(rel)
        if target.stat().st_size > self.settings.max_file_bytes:
            raise KnowledgeError(f"{path}: larger than max_file_bytes ({self.settings.max_file_bytes:,})")
        try:
            text = target.read_bytes().decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
            if self.settings.redact_secrets:
                text = redactor(self.settings.secret_patterns).redact(text).text
            # The chunker's rule (split on \n only), so line numbers agree: U+2028, U+0085 and \f are not line ends.
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
        except UnicodeDecodeError as exc:
            raise KnowledgeError(f"{path}: not valid UTF-8 text (byte {exc.start})") from exc
        first = max(1, start or 1)
        last = min(len(lines), end or len(lines))
        if start is not None and first > len(lines):
            raise KnowledgeError(f"{path}: line {first} is past the end ({len(lines)} lines)")
        return SourceText(
            path=rel, line_start=first, line_end=last, total_lines=len(lines), lines=tuple(lines[first - 1 : last])
        )

    def readable(self, rel: str) -> Path:
        """The file `rel` names, through the one path gate for serving; raises with a one-line reason otherwise."""
        checked = servable(self.root, rel, self.settings.secret_files, git.repo_root(self.root) is not None)
        if isinstance(checked, Path):
            return checked
        if not checked.perimeter and "missing" in checked.reason:
            raise KnowledgeError(f"{rel}: no such file in {self.root}")
        error = PathOutsideRepositoryError if checked.perimeter else KnowledgeError
        raise error(f"{rel}: {checked.reason}")

    def source_of_chunk(self, chunk_id: str) -> SourceText:
        """The current lines of the file range a chunk was indexed from."""
        for index in self.indexes():
            chunk = index.store.chunk_by_id(chunk_id)
            if chunk is None:
                continue
            if not index.is_stale(chunk.path):
                return self.source(chunk.path, chunk.line_start, chunk.line_end)
            # The file changed since indexing: its current lines over the same range (clamped), said plainly.
            if not (self.root / chunk.path).exists():
                raise KnowledgeError(f"{chunk.path}: deleted since indexing; run `knowledge reindex-from-changes`")
            whole = self.source(chunk.path)
            last = min(chunk.line_end, whole.total_lines)
            first = min(chunk.line_start, last) if last else 1
            current = self.source(chunk.path, first, last) if last else whole
            note = f"{chunk.path} changed since it was indexed; these are its current lines {first}-{last}"
            return replace(current, note=note)
        raise KnowledgeError(f"{chunk_id}: no chunk with this id in the index")

    def docs_for_file(self, path: str) -> list[SearchHit]:
        """Doc sections that refer to or mention `path` (a file, or `PATH:LINE`): metadata only, no model needed."""
        file, _, line = str(path).rpartition(":")
        if line.isdigit() and file:
            return self.docs_for(f"{self.relative_path(file, self.root)}:{line}")
        return self.docs_for(self.relative_path(path, self.root))

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

    def status(self) -> IndexStatus:
        """What is indexed, with which model, how old, how much is embedded, and what was skipped."""
        root, folder, store = str(self.root), str(index_dir(self.root)), self.engine.describe()
        if not self.engine.exists("docs"):
            return IndexStatus(
                root=root, index_dir=folder, store=store, exists=False, model=None, dims=None, files=0, chunks=0,
                built_at=None, age_seconds=None,
            )  # fmt: skip
        indexes = self.indexes()
        manifest = indexes[0].store.manifest
        built = time.mktime(time.strptime(manifest.built_at, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        summaries = {index.kind: index.store.summary() for index in indexes}
        problems = [p for s in summaries.values() for p in s.problems]
        coverages = {index.kind: index.coverage() for index in indexes}
        total = sum(c.chunks for c in coverages.values())
        embedded = sum(c.embedded for c in coverages.values())
        etas = [c.progress.eta_seconds for c in coverages.values() if c.progress and c.progress.eta_seconds is not None]
        fresh = self._freshness(indexes)
        return IndexStatus(
            root=root,
            index_dir=folder,
            store=store,
            exists=True,
            model=f"{manifest.model_id} ({manifest.model_variant})",
            dims=manifest.dims,
            files=sum(s.files for s in summaries.values()),
            chunks=total,
            built_at=manifest.built_at,
            age_seconds=round(time.time() - built, 1),
            skipped=tuple(p for p in problems if not p.is_redaction),
            redactions=tuple(p for p in problems if p.is_redaction),
            thresholds={"threshold": manifest.threshold, "full_threshold": manifest.full_threshold},
            kinds={
                kind: {"files": s.files, "chunks": s.chunks, "embedded": coverages[kind].embedded}
                for kind, s in summaries.items()
            },
            dense_coverage=1.0 if total == 0 else round(embedded / total, 4),
            chunks_pending=total - embedded,
            embedding_eta_seconds=sum(etas) if etas else None,
            commit=fresh.commit,
            head=fresh.head,
            commits_behind=fresh.commits_behind,
            commit_relation=fresh.relation,
            changed_files=fresh.changed_files,
            reindex_running=fresh.reindex_running,
        )

    def _freshness(self, indexes: list[KindIndex]) -> _Freshness:
        head = self._head()
        behind: int | None = None
        relation: str | None = None
        commit = indexes[0].commit
        if head and commit:
            if commit == head:
                behind, relation = 0, "at HEAD"
            elif not git.commit_exists(self.root, commit):
                relation = "unknown to git (history rewritten)"
            elif git.is_ancestor(self.root, commit, head):
                behind = git.commits_between(self.root, commit, head)
                relation = f"{behind} commit(s) behind HEAD"
            else:  # a reset, rebase or force-pull moved HEAD off the indexed commit's line
                relation = "not at HEAD: history moved (reset, rebase or pull) since it was indexed"
        changed: set[str] = set()
        for index in indexes:
            problem_paths = {p.path for p in index.store.problems()}
            changed |= {p for p in index.changed_by_content() if p not in problem_paths}
        running = is_locked(lock_path(self.root)) or is_locked(embed_lock_path(self.root))
        return _Freshness(commit, head, behind, relation, tuple(sorted(changed)), running)

    def llms_txt(self, full_budget: int | None = None) -> dict[str, str]:
        """`llms.txt` (and `llms-full.txt` within `full_budget` tokens) from the docs' front matter: file -> text."""
        entries = doc_entries(self.root, self.settings)
        out = {LLMS_TXT: render_llms_txt(self.root, entries)}
        if full_budget is not None:
            out[LLMS_FULL] = render_llms_full(self.root, entries, full_budget, self.model.count_tokens)[0]
        return out

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
