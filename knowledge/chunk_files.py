"""Reading and chunking many files, on every core: the model-free part of indexing that makes an index searchable.

Workers are forked, so each inherits the token counter factory; each returns the chunks of its files together with
their lexical terms, which are the other costly part of the first phase.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .chunking import chunk_source
from .config import Settings
from .corpus import read_source
from .lexical import chunk_text, terms

if TYPE_CHECKING:
    from .embedding import TokenCounter
from .records import Chunk, FileProblem, Progress
from .secrets import redaction_note
from .store import FileFacts

PARALLEL_FROM_FILES = 64  # below this, forking costs more than it saves
FILES_PER_TASK = 32
TASKS_AHEAD = 4  # per worker: batches chunked or being chunked ahead of the one the store is writing


@dataclass(slots=True)
class Chunked:
    chunks: list[Chunk] = field(default_factory=list)
    lexical: list[str] = field(default_factory=list)  # the lexical terms of each chunk, space-separated
    files: list[FileFacts] = field(default_factory=list)
    skipped: list[FileProblem] = field(default_factory=list)
    warnings: list[FileProblem] = field(default_factory=list)
    undescribed: list[str] = field(default_factory=list)

    @classmethod
    def merged(cls, batches: Iterable[Chunked]) -> Chunked:
        out = cls()
        for batch in batches:
            out.extend(batch)
        return out

    def extend(self, other: Chunked) -> None:
        self.chunks += other.chunks
        self.lexical += other.lexical
        self.files += other.files
        self.skipped += other.skipped
        self.warnings += other.warnings
        self.undescribed += other.undescribed


@dataclass(frozen=True, slots=True)
class _Job:
    root: Path
    settings: Settings
    kind: str
    commit: str | None


_counter_factory: Callable[[], TokenCounter] | None = None  # set before forking; workers inherit it
_counter: TokenCounter | None = None


def _chunk_paths(job: _Job, paths: Sequence[str]) -> Chunked:
    global _counter
    out = Chunked()
    for rel in paths:
        source = read_source(job.root, rel, job.settings, job.kind)
        if isinstance(source, FileProblem):
            out.skipped.append(source)
            continue
        if _counter is None:
            assert _counter_factory is not None
            _counter = _counter_factory()
        prime = getattr(_counter, "prime", None)
        if prime is not None:
            prime(source.text.split("\n"))
        try:
            parsed = chunk_source(source, _counter.max_tokens, _counter.count_tokens)
        except Exception as exc:  # one bad file must never stop the run
            out.skipped.append(FileProblem(rel, f"could not be chunked: {type(exc).__name__}: {exc}"))
            continue
        out.warnings.extend(parsed.problems)
        out.warnings.extend(FileProblem(rel, redaction_note(line, kind)) for line, kind in source.redactions)
        if not parsed.chunks and job.kind == "docs":
            out.warnings.append(FileProblem(rel, "empty: no text to index"))
        if parsed.undescribed:
            out.undescribed.append(rel)
        out.files.append(FileFacts(rel, source.content_hash, source.stat[0], source.stat[1]))
        for chunk in parsed.chunks:
            out.chunks.append(replace(chunk, commit=job.commit))
            out.lexical.append(" ".join(terms(chunk_text(chunk))))
    return out


def chunk_batches(
    root: Path,
    settings: Settings,
    kind: str,
    paths: Sequence[str],
    commit: str | None,
    counter: Callable[[], TokenCounter],
    on_progress: Callable[[Progress], None] | None = None,
) -> Iterator[Chunked]:
    """The chunks of `paths` a batch of files at a time, in path order, as soon as each batch is ready."""
    global _counter_factory, _counter
    import multiprocessing  # here, not at the top: a hook run that changes nothing never needs it
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    paths = sorted(paths)
    job = _Job(root, settings, kind, commit)
    stage = f"reading {kind}"
    workers = min(os.cpu_count() or 1, 8)
    _counter_factory = counter
    parts = [paths[start : start + FILES_PER_TASK] for start in range(0, len(paths), FILES_PER_TASK)]
    if workers < 2 or len(paths) < PARALLEL_FROM_FILES or "fork" not in multiprocessing.get_all_start_methods():
        _counter = None
        last = 0.0
        done = 0
        for part in parts:
            yield _chunk_paths(job, part)
            done += len(part)
            now = time.monotonic()
            if on_progress is not None and (now - last > 0.1 or done >= len(paths)):
                last = now
                on_progress(Progress(stage, done, len(paths)))
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # forked children must not share a thread pool
    results: dict[int, Chunked] = {}
    done = 0
    following = 0  # the next batch to hand out: batches leave in path order whatever order they finish in
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        running: dict[Future[Chunked], int] = {}
        submitted = 0
        while following < len(parts):
            # Only a window of batches ahead of the consumer: the workers chunk faster than a store writes, and a
            # batch handed out must not stay held (a million chunks held at once cost GBs).
            while submitted < len(parts) and submitted - following < workers * TASKS_AHEAD:
                running[pool.submit(_chunk_paths, job, parts[submitted])] = submitted
                submitted += 1
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                n = running.pop(future)
                results[n] = future.result()
                done += len(parts[n])
                if on_progress is not None:
                    on_progress(Progress(stage, done, len(paths)))
            while following in results:
                yield results.pop(following)
                following += 1
