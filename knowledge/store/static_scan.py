"""The static stage's nearest rows, in memory: every row scored exactly, or for a big index a scan of each row's head in
a rotated basis, then the best candidates scored exactly.

A million rows of 256 float32 numbers are 1 GB, and one matrix-vector product over them reads all of it: ~50 ms on
these machines, bound by memory. Rotated into the principal axes of the rows (an orthogonal basis: every inner product
is kept), the first HEAD_DIMS numbers of a row carry most of its weight, so a product over those alone ranks the rows
nearly as the whole row does, reading three eighths of the memory; the CANDIDATES_PER_RESULT x k best of that scan are
then scored on their whole rotated rows. Measured on a million generated SciFact sections (docs/benchmarks.md §0a).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import ScoredKey

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

HEAD_SCAN_MIN_ROWS = 200_000  # below it every row is scored exactly (~10 ms at 200k rows); the answer is then exact
HEAD_DIMS = 96  # of 256: 80% of the rows' second moment on the static stage's rows
CANDIDATES_PER_RESULT = 40  # rows scored whole for each result asked
BASIS_SAMPLE_ROWS = 65_536  # the rotation comes from the first rows read
SAMPLE_STEP = 16  # every 16th score bounds the k-th best from below (see at_least_the_k_best)


@dataclass(frozen=True)
class StaticRows:
    """Rows searched by inner product. `basis` is None for exact rows: `head` then holds each whole row."""

    keys: list[int]
    head: npt.NDArray[np.float32]
    tail: npt.NDArray[np.float32] | None = None
    basis: npt.NDArray[np.float32] | None = None

    @property
    def dims(self) -> int:
        return int(self.head.shape[1] + (0 if self.tail is None else self.tail.shape[1]))

    def nearest(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        """The k rows of highest inner product, best first, ties in key order; exact unless rotated."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float32)
        if len(query) != self.dims or k <= 0:
            return []
        if self.basis is None or self.tail is None:
            rows, scores = np.arange(len(self.keys)), self.head @ query
        else:
            query = query @ self.basis
            width = self.head.shape[1]
            rows = at_least_the_k_best(self.head @ query[:width], CANDIDATES_PER_RESULT * k)
            scores = self.head[rows] @ query[:width] + self.tail[rows] @ query[width:]
        best = at_least_the_k_best(scores, k)
        rows, scores = rows[best], scores[best]
        order = np.lexsort((rows, -scores))[:k]  # best first, ties in key order (rows are in key order)
        return [ScoredKey(self.keys[int(rows[i])], float(scores[i])) for i in order]


def exact_rows(keys: list[int], matrix: npt.NDArray[np.float32]) -> StaticRows:
    return StaticRows(keys, matrix)


def rotated_rows(pages: Iterable[tuple[list[int], npt.NDArray[np.float32]]], count: int, dims: int) -> StaticRows:
    """Rows read a page at a time straight into their rotated head and tail, so their 1 GB is held once; the basis
    comes from the first BASIS_SAMPLE_ROWS rows."""
    import numpy as np

    width = min(HEAD_DIMS, dims)
    head = np.empty((count, width), dtype=np.float32)
    tail = np.empty((count, dims - width), dtype=np.float32)
    keys: list[int] = []
    waiting: list[npt.NDArray[np.float32]] = []
    moment = np.zeros((dims, dims), dtype=np.float64)
    basis: npt.NDArray[np.float32] | None = None
    placed = 0
    for page_keys, page in pages:
        keys.extend(page_keys)
        waiting.append(page)
        if basis is None:
            moment += page.T @ page
            if len(keys) < min(count, BASIS_SAMPLE_ROWS):
                continue
            basis = principal_axes(moment)
        for block in waiting:
            if placed + len(block) > len(head):  # another process added rows since the count
                head = np.concatenate([head, np.empty((placed + len(block) - len(head), width), np.float32)])
                tail = np.concatenate([tail, np.empty((placed + len(block) - len(tail), dims - width), np.float32)])
            turned = block @ basis
            head[placed : placed + len(block)] = turned[:, :width]
            tail[placed : placed + len(block)] = turned[:, width:]
            placed += len(block)
        waiting = []
    if basis is None:  # fewer rows than counted: score them exactly
        return exact_rows(keys, np.concatenate(waiting) if waiting else np.zeros((0, dims), np.float32))
    return StaticRows(keys, head[:placed], tail[:placed], basis)


def principal_axes(moment: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    """An orthogonal basis from the rows' second moment (the sum of their outer products), its axes of the most
    weight first (columns)."""
    import numpy as np

    weights, axes = np.linalg.eigh(moment)
    basis: npt.NDArray[np.float32] = np.ascontiguousarray(axes[:, np.argsort(-weights)], dtype=np.float32)
    return basis


def at_least_the_k_best(scores: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Positions (ascending) holding the k best scores and every score tied with the k-th, without partitioning every
    score: the k-th best of every SAMPLE_STEP-th score is a floor under the k-th best of all (those k sampled scores
    are scores too), so the scores at or above it hold the k best, ties included; only those few are partitioned."""
    import numpy as np

    if not 0 < k < len(scores):
        return np.arange(len(scores))
    sample = scores[::SAMPLE_STEP]
    pool = np.flatnonzero(scores >= np.partition(sample, len(sample) - k)[len(sample) - k]) if len(sample) > k else None
    if pool is None or len(pool) > len(scores) // 2:
        pool = np.arange(len(scores))
    kth = np.partition(scores[pool], len(pool) - k)[len(pool) - k]
    chosen: npt.NDArray[np.intp] = pool[scores[pool] >= kth]
    return chosen
