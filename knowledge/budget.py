"""Packing ranked hits into a token budget; pure, with the token counter passed in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .records import SearchHit


def metadata_text(hit: SearchHit) -> str:
    """The metadata of a hit as counted against the budget (what a reader gets besides content)."""
    return f"{hit.id} {hit.path}:{hit.line_start}-{hit.line_end} {hit.title} {hit.section} {hit.description}"


def pack(
    hits: Sequence[SearchHit],
    budget: int,
    count_tokens: Callable[[str], int],
    spare_text: Sequence[str | None] | None = None,
) -> tuple[list[SearchHit], int, int]:
    """Best-first packing: a hit whose content does not fit is kept as metadata only if that fits. Then what the budget
    has left goes to `spare_text` (the text of hits that came without it), best first, as long as each fits whole.

    Returns (kept hits with `tokens` set, tokens used, hits left out).
    """
    kept: list[SearchHit] = []
    spares: list[str | None] = []
    used = 0
    omitted = 0
    for position, hit in enumerate(hits):
        meta_cost = count_tokens(metadata_text(hit))
        spare = spare_text[position] if spare_text is not None else None
        if hit.content is not None:
            full_cost = meta_cost + count_tokens(hit.content)
            if used + full_cost <= budget:
                kept.append(replace(hit, tokens=full_cost))
                spares.append(None)
                used += full_cost
                continue
            spare = None  # it was offered its text and that did not fit
        if used + meta_cost <= budget:
            kept.append(replace(hit, content=None, tokens=meta_cost))
            spares.append(spare)
            used += meta_cost
        else:
            omitted += 1
    for position, (hit, spare) in enumerate(zip(kept, spares, strict=True)):
        if spare is not None and used + (cost := count_tokens(spare)) <= budget:
            kept[position] = replace(hit, content=spare, tokens=hit.tokens + cost)
            used += cost
    return kept, used, omitted
