"""The static stage's nearest rows, in memory: int8 rows with a float32 scale each (static_blocks.py), every row
scored exactly, a page of rows turned to float32 at a time (7 ms for 200k rows of 256 on these two cores, where the
float16 rows it replaces took a SIMD scan and a rescoring of its candidates); best first, ties in key order."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from . import ScoredKey

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SMALL_ROWS = 20_000  # below it the rows are also kept in float32 (20 MB at most) and scored by one product
SCORE_PAGE = 16_384  # rows turned to float32 at a time
SAMPLE_STEP = 16  # every 16th score bounds the k-th best from below (see at_least_the_k_best)


@dataclass(frozen=True)
class StaticRows:
    """Rows searched by inner product, keys ascending: row i is scales[i] * codes[i]."""

    keys: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float32]

    @property
    def dims(self) -> int:
        return int(self.codes.shape[1])

    def nearest(self, vector: npt.NDArray[np.float32], k: int) -> list[ScoredKey]:
        """The k rows of highest inner product, best first, ties in key order."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float32)
        if len(query) != self.dims or k <= 0 or not len(self.keys):
            return []
        scores = self._float32 @ query if len(self.keys) < SMALL_ROWS else self.scores(query)
        rows = at_least_the_k_best(scores, k)
        order = np.lexsort((rows, -scores[rows]))[:k]  # best first, ties in key order (rows are in key order)
        return [ScoredKey(int(self.keys[int(rows[i])]), float(scores[rows[i]])) for i in order]

    @cached_property
    def _float32(self) -> npt.NDArray[np.float32]:
        import numpy as np

        return np.asarray(self.codes, dtype=np.float32) * self.scales[:, None]

    def scores(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Every row's inner product with `query`, in float32, a page of rows at a time."""
        import numpy as np

        out = np.empty(len(self.keys), dtype=np.float32)
        for start in range(0, len(self.keys), SCORE_PAGE):
            out[start : start + SCORE_PAGE] = self.codes[start : start + SCORE_PAGE].astype(np.float32) @ query
        out *= self.scales
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
