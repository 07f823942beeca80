"""What both engines rank and fill by, declared once: BM25's constants and its floor for a common term, how equal
scores are ordered, and the order the fill gives chunks their transformer vectors in. The local engine and
PostgreSQL each say it in their own SQL; tests/test_store_contract.py holds both to `fill_key` and `tie_key`."""

from __future__ import annotations

import math

from ..quiet import QUIET_PATH, is_quiet

BM25_K1, BM25_B = 1.2, 0.75  # FTS5's bm25() defaults: the local engine's SQLite scores with these, so must the others
IDF_FLOOR = 1e-6  # FTS5's: a term in more than half the chunks still counts, barely
QUIET_PATTERN = QUIET_PATH.pattern  # the quiet-path rule, case-insensitive, as both engines' SQL runs it

# The fill's order, first to last: the project's own working code before tests, examples and vendored code (the
# quiet-path rule), then exported entities, then other named ones, then the rest; by key within each.
FILL_ORDER = ("quiet path last", "exported first", "named before unnamed", "key")


def idf(rows: int, found: int) -> float:
    """BM25's inverse document frequency of a term in `found` of `rows` chunks."""
    return max(math.log((rows - found + 0.5) / (found + 0.5)), IDF_FLOOR)


def tie_key(score: float, key: int) -> tuple[float, int]:
    """The order of scored chunks: the higher score first, the smaller key on a tie."""
    return (-score, key)


def fill_key(path: str, exported: bool, symbol: str, key: int) -> tuple[bool, int, int]:
    """Where a chunk waiting for its vector comes in the fill (FILL_ORDER)."""
    return (is_quiet(path), 0 if exported else 1 if symbol else 2, key)
