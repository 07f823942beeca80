"""What `knowledge status` reports: model, counts, coverage, embedding ETA, skipped files and redactions, and how
fresh the index is against git (the commit it reflects, HEAD, files changed since, a reindex running)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import git
from .fs import is_locked
from .kind import KindIndex
from .records import IndexStatus
from .store import Coverage, embed_lock_path, index_dir, lock_path

if TYPE_CHECKING:
    from .store.engines import Engine


@dataclass(frozen=True, slots=True)
class Freshness:
    commit: str | None
    head: str | None
    commits_behind: int | None
    relation: str | None
    changed_files: tuple[str, ...]
    reindex_running: bool


def freshness(root: Path, indexes: list[KindIndex], head: str | None) -> Freshness:
    behind: int | None = None
    relation: str | None = None
    commit = indexes[0].commit
    if head and commit:
        if commit == head:
            behind, relation = 0, "at HEAD"
        elif not git.commit_exists(root, commit):
            relation = "unknown to git (history rewritten)"
        elif git.is_ancestor(root, commit, head):
            behind = git.commits_between(root, commit, head)
            relation = f"{behind} commit(s) behind HEAD"
        else:  # a reset, rebase or force-pull moved HEAD off the indexed commit's line
            relation = "not at HEAD: history moved (reset, rebase or pull) since it was indexed"
    changed: set[str] = set()
    for index in indexes:
        problem_paths = {p.path for p in index.store.problems()}
        changed |= {p for p in index.changed_by_content() if p not in problem_paths}
    running = is_locked(lock_path(root)) or is_locked(embed_lock_path(root))
    return Freshness(commit, head, behind, relation, tuple(sorted(changed)), running)


def no_index_status(root: Path, store: str) -> IndexStatus:
    return IndexStatus(
        root=str(root), index_dir=str(index_dir(root)), store=store, exists=False, model=None, dims=None, files=0,
        chunks=0, built_at=None, age_seconds=None,
    )  # fmt: skip


def _filled(coverage: Coverage) -> int:
    """Chunks with a vector once the fill commits what it has embedded (its progress counts from the chunks that were
    pending when it started)."""
    progress = coverage.progress
    if progress is None:
        return coverage.embedded
    return max(coverage.embedded, min(coverage.chunks, coverage.chunks - progress.total + progress.done))


def index_status(
    root: Path, engine: Engine, indexes: list[KindIndex], head: str | None, fill: bool = True
) -> IndexStatus:
    """The status of existing `indexes` (every kind present) in `engine` (which says where they came from and, for a
    shared server, its buffer beside what its searches read); `fill` is the setting (false: first stage only)."""
    store, memory = engine.describe(), engine.memory()
    manifest = indexes[0].store.manifest
    built = time.mktime(time.strptime(manifest.built_at, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    summaries = {index.kind: index.store.summary() for index in indexes}
    problems = [p for s in summaries.values() for p in s.problems]
    coverages = {index.kind: index.coverage() for index in indexes}
    total = sum(c.chunks for c in coverages.values())
    embedded = sum(c.embedded for c in coverages.values())
    filling = is_locked(embed_lock_path(root))  # a progress record a killed fill left behind is no ETA
    etas = [
        c.progress.eta_seconds
        for c in coverages.values()
        if filling and c.progress and c.progress.eta_seconds is not None
    ]
    # what the fill has embedded, its batch in flight included: coverage itself moves only as batches are committed
    done = sum(_filled(c) if filling else c.embedded for c in coverages.values())
    fresh = freshness(root, indexes, head)
    return IndexStatus(
        root=str(root),
        index_dir=str(index_dir(root)),
        store=store,
        origin=engine.origin(),
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
        fill_progress=round(done / total, 4) if filling and total and done > embedded else None,
        embedding_stopped=total > embedded and not filling,
        static_coverage=0.0 if total == 0 else round(sum(c.static for c in coverages.values()) / total, 4),
        static_stage=manifest.static_stage,
        fill=fill,
        commit=fresh.commit,
        head=fresh.head,
        commits_behind=fresh.commits_behind,
        commit_relation=fresh.relation,
        changed_files=fresh.changed_files,
        reindex_running=fresh.reindex_running,
        buffer_bytes=None if memory is None else memory.buffer_bytes,
        searched_bytes=None if memory is None else memory.searched_bytes,
    )
