"""Packing ranked hits into a token budget; pure, with the token counter passed in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .records import SearchHit


def metadata_text(hit: SearchHit) -> str:
    """The metadata of a hit as counted against the budget (what a reader gets besides content)."""
    return f"{hit.id} {hit.path}:{hit.line_start}-{hit.line_end} {hit.title} {hit.section} {hit.description}"


def pack(
    hits: Sequence[SearchHit], budget: int, count_tokens: Callable[[str], int]
) -> tuple[list[SearchHit], int, int]:
    """Best-first packing: a hit whose content does not fit is kept as metadata only if that fits.

    Returns (kept hits with `tokens` set, tokens used, hits left out).
    """
    kept: list[SearchHit] = []
    used = 0
    omitted = 0
    for hit in hits:
        meta_cost = count_tokens(metadata_text(hit))
        if hit.content is not None:
            full_cost = meta_cost + count_tokens(hit.content)
            if used + full_cost <= budget:
                kept.append(replace(hit, tokens=full_cost))
                used += full_cost
                continue
        if used + meta_cost <= budget:
            kept.append(replace(hit, content=None, tokens=meta_cost))
            used += meta_cost
        else:
            omitted += 1
    return kept, used, omitted
