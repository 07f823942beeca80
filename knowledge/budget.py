"""Packing ranked hits into a token budget; pure, with the token counter passed in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .records import SearchHit, SearchResponse


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


def fit_printed(
    response: SearchResponse,
    printed: Callable[[SearchResponse], str],
    printed_hit: Callable[[SearchHit], str],
    count_tokens: Callable[[str], int],
) -> SearchResponse:
    """`response` as it will be printed, held to its budget: the printed text (envelope, keys, headers and all) is
    counted with the model's tokenizer, and while it is over, the worst result gives up its text, then its place.
    `tokens_used` is the count of what is printed, the number itself included (where its own digits make the count
    alternate between two values, the larger: never less than what is printed); each result's `tokens` is the count
    of its own printed part."""
    results = [replace(hit, tokens=count_tokens(printed_hit(hit))) for hit in response.results]
    omitted = response.omitted
    used = response.tokens_used
    tried: set[int] = set()
    for _ in range(len(results) * 2 + 3):
        candidate = replace(response, results=tuple(results), omitted=omitted, tokens_used=used)
        counted = count_tokens(printed(candidate))
        if counted <= response.budget:
            if counted == used or (counted < used and used <= response.budget and counted in tried):
                return candidate
            tried.add(used)
            used = counted  # print the count itself, then count again: its digits are tokens too
            continue
        if not results:
            break
        last = results[-1]
        if last.content is not None:
            stripped = replace(last, content=None)
            results[-1] = replace(stripped, tokens=count_tokens(printed_hit(stripped)))
        else:
            results.pop()
            omitted += 1
    return replace(response, results=tuple(results), omitted=omitted, tokens_used=used)
