"""The static stage's nearest rows, in memory: float16 rows (static_blocks.py) scored exactly.

A big index's rows are first narrowed by an exact SIMD scan in float16 (vectors.exact_best_rows: 20 ms for 200k rows
on one core, where numpy, which has no float16 kernel, takes 80) to the best CANDIDATES_PER_RESULT x k + SLACK; those
are scored again in float32 from the same rows and ordered best first, ties in key order. When the last candidate
comes within rounding of the k-th best, rows beyond the candidates might tie it: then every row is scored (the answer
is always the exact one)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from . import ScoredKey

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SCAN_MIN_ROWS = 20_000  # below it the rows are kept in float32 too and every row is scored (under a millisecond)
CANDIDATES_PER_RESULT = 4
CANDIDATE_SLACK = 64
# The scan and the rescoring compute the same products (float16 rows, the question rounded to float16 too) summed in
# another order: candidates prove the k best only when the last is below the k-th by more than that rounding.
SUMMATION_ERROR = 1e-4
SCORE_PAGE = 16_384  # rows turned to float32 at a time when every row is scored
SAMPLE_STEP = 16  # every 16th score bounds the k-th best from below (see at_least_the_k_best)


@dataclass(frozen=True)
class StaticRows:
    """Rows searched by inner product, keys ascending."""

    keys: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float16]

    @property
    def dims(self) -> int:
        return int(self.matrix.shape[1])

    def nearest(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        """The k rows of highest inner product, best first, ties in key order."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float16).astype(np.float32)  # as the rows are stored
        if len(query) != self.dims or k <= 0 or not len(self.keys):
            return []
        rows, scores = self._candidates(query, k)
        best = at_least_the_k_best(scores, k)
        rows, scores = rows[best], scores[best]
        order = np.lexsort((rows, -scores))[:k]  # best first, ties in key order (rows are in key order)
        return [ScoredKey(int(self.keys[int(rows[i])]), float(scores[i])) for i in order]

    def _candidates(
        self, query: npt.NDArray[np.float32], k: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        import numpy as np

        from .vectors import exact_best_rows

        wanted = CANDIDATES_PER_RESULT * k + CANDIDATE_SLACK
        if len(self.keys) < SCAN_MIN_ROWS:
            return np.arange(len(self.keys)), self._float32 @ query
        if wanted < len(self.keys):
            rows = np.sort(exact_best_rows(self.matrix, query.astype(np.float16), wanted))
            scores = self.matrix[rows].astype(np.float32) @ query
            kth = float(np.partition(scores, len(scores) - k)[len(scores) - k]) if len(scores) > k else None
            if kth is not None and scores.min() < kth - SUMMATION_ERROR * max(1.0, abs(kth)):
                return rows, scores
        return np.arange(len(self.keys)), self.scores(query)

    @cached_property
    def _float32(self) -> npt.NDArray[np.float32]:
        """A small set's rows in float32, made once: every row scored by one matrix product (20 MB at most)."""
        import numpy as np

        return np.asarray(self.matrix, dtype=np.float32)

    def scores(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Every row's inner product with `query`, in float32, a page of rows at a time."""
        import numpy as np

        out = np.empty(len(self.keys), dtype=np.float32)
        for start in range(0, len(self.keys), SCORE_PAGE):
            out[start : start + SCORE_PAGE] = self.matrix[start : start + SCORE_PAGE].astype(np.float32) @ query
        return out


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
