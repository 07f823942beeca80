"""The chunks of the working tree read straight from the files, for questions that need no index (drift in a
repository that has none, as a pre-commit hook in anyone's repository runs it). Without an installed model, chunk
sizes are estimated: a model's word pieces are never fewer than a text's words and punctuation marks, so sections cut
by the estimate are never larger than the model would have cut them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from .chunk_files import Chunked, chunk_batches
from .config import Settings
from .corpus import candidate_paths
from .embedding import TokenCounter
from .records import Chunk

_PIECES = re.compile(r"\w+|[^\w\s]")
ESTIMATED_MAX_TOKENS = 256  # the smallest limit of the models knowledge runs (MiniLM)


class EstimatedCounter:
    """Words and punctuation marks: what stands in for a model's tokenizer when none is installed."""

    max_tokens = ESTIMATED_MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        return len(_PIECES.findall(text))


def tree_chunks(
    root: Path, settings: Settings, counter: Callable[[], TokenCounter], commit: str | None
) -> dict[str, dict[int, Chunk]]:
    """kind -> {position: chunk} of every indexable file as it is on disk."""
    out: dict[str, dict[int, Chunk]] = {}
    for kind in ("docs", "code"):
        chunked = Chunked.merged(
            chunk_batches(root, settings, kind, candidate_paths(root, settings, kind), commit, counter)
        )
        out[kind] = dict(enumerate(chunked.chunks))
    return out
