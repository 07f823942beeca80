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
    """Best-first packing that degrades, never drops while it can: first every hit's metadata, best first, as far as
    the budget goes; then text, best first, to each hit whose text still fits whole (a hit whose text does not fit
    stays as metadata); then what is left goes to `spare_text` (the text of hits that came without it), best first.

    Returns (kept hits with `tokens` set, tokens used, hits left out).
    """
    costs = [count_tokens(metadata_text(hit)) for hit in hits]
    placed: list[int] = []
    used = 0
    for position, cost in enumerate(costs):
        if used + cost <= budget:
            placed.append(position)
            used += cost
    kept: list[SearchHit] = []
    spares: list[str | None] = []
    for position in placed:
        hit, meta_cost = hits[position], costs[position]
        spare = spare_text[position] if spare_text is not None else None
        if hit.content is not None:
            text_cost = count_tokens(hit.content)
            if used + text_cost <= budget:
                kept.append(replace(hit, tokens=meta_cost + text_cost))
                spares.append(None)
                used += text_cost
                continue
            spare = None  # it was offered its text and that did not fit
        kept.append(replace(hit, content=None, tokens=meta_cost))
        spares.append(spare)
    for position, (hit, spare) in enumerate(zip(kept, spares, strict=True)):
        if spare is not None and used + (cost := count_tokens(spare)) <= budget:
            kept[position] = replace(hit, content=spare, tokens=hit.tokens + cost)
            used += cost
    return kept, used, len(hits) - len(placed)


HEAVY_KEEP = 3  # of a long `called_by` / `calls` list, the first few stay (the count of the rest is said)


def fit_printed(
    response: SearchResponse,
    printed: Callable[[SearchResponse], str],
    printed_hit: Callable[[SearchHit], str],
    count_tokens: Callable[[str], int],
) -> SearchResponse:
    """`response` as it will be printed, held to its budget: the printed text (envelope, keys, headers and all) is
    counted with the model's tokenizer, and while it is over, the answer degrades one step at a time, never drops a
    result while a lighter form of the answer would fit: the worst result with text gives up its text (the best keep
    theirs longest), then the worst result with a long caller or callee list keeps its first few and a count, and only
    then does the worst result give up its place. An answer is empty only when not even one result's metadata fits.
    `tokens_used` is the count of what is printed, the number itself included (where its own digits make the count
    alternate between two values, the larger: never less than what is printed); each result's `tokens` is the count
    of its own printed part."""
    results = [replace(hit, tokens=count_tokens(printed_hit(hit))) for hit in response.results]
    over_budget = response.over_budget
    used = response.tokens_used

    def lighter() -> bool:
        """One step down the ladder; False when nothing is left to give up."""
        nonlocal over_budget
        for position in range(len(results) - 1, -1, -1):  # long caller/callee lists first: their first few stay
            trimmed = _trimmed(results[position])
            if trimmed is not None:
                results[position] = _recounted(trimmed, printed_hit, count_tokens)
                return True
        for position in range(len(results) - 1, -1, -1):  # then the worst result not yet a line: text, then line
            hit = results[position]
            if not hit.thin:
                lighter_hit = replace(hit, content=None) if hit.content is not None else _thinned(hit)
                results[position] = _recounted(lighter_hit, printed_hit, count_tokens)
                return True
        if results:
            results.pop()
            over_budget += 1
            return True
        return False

    tried: set[int] = set()
    for _ in range(len(results) * 4 + 4):
        candidate = replace(
            response,
            results=tuple(results),
            omitted=response.omitted - response.over_budget + over_budget,
            over_budget=over_budget,
            tokens_used=used,
        )
        counted = count_tokens(printed(candidate))
        if counted <= response.budget:
            if counted == used or (counted < used and used <= response.budget and counted in tried):
                return candidate
            tried.add(used)
            used = counted  # print the count itself, then count again: its digits are tokens too
            continue
        if not lighter():
            break
    return replace(
        response,
        results=tuple(results),
        omitted=response.omitted - response.over_budget + over_budget,
        over_budget=over_budget,
        tokens_used=used,
    )


def _recounted(
    hit: SearchHit, printed_hit: Callable[[SearchHit], str], count_tokens: Callable[[str], int]
) -> SearchHit:
    return replace(hit, tokens=count_tokens(printed_hit(hit)))


def _thinned(hit: SearchHit) -> SearchHit:
    """`hit` as its line alone: where it is and what it is."""
    return replace(
        hit,
        thin=True,
        content=None,
        more_callers=(hit.more_callers or 0) + len(hit.called_by or ()) or None,
        more_calls=(hit.more_calls or 0) + len(hit.calls or ()) or None,
        called_by=None,
        calls=None,
        explain=None,
    )


def _trimmed(hit: SearchHit) -> SearchHit | None:
    """`hit` with its long `called_by` / `calls` lists cut to their first few (the rest counted); None when neither
    is long."""
    callers, callees = hit.called_by or (), hit.calls or ()
    if len(callers) <= HEAVY_KEEP and len(callees) <= HEAVY_KEEP:
        return None
    return replace(
        hit,
        called_by=callers[:HEAVY_KEEP] if hit.called_by is not None else None,
        calls=callees[:HEAVY_KEEP] if hit.calls is not None else None,
        more_callers=(hit.more_callers or 0) + max(0, len(callers) - HEAVY_KEEP) or hit.more_callers,
        more_calls=(hit.more_calls or 0) + max(0, len(callees) - HEAVY_KEEP) or hit.more_calls,
    )
