"""A long code result's text narrowed to the lines that matched: the entity's signature and doc comment, then the run of
lines that holds the most of the question's words, inside a bound of tokens, with a marker where lines are left out
(the result keeps its whole line range, so `show` and `--expand` reach the rest). An agent reads where to look and
what is there, not a 300-line body (semble's token efficiency: docs/benchmarks.md §4f)."""

from __future__ import annotations

from collections.abc import Callable, Collection

from .lexical import terms
from .pieces import head, signature

TEXT_TOKENS = 200  # a result's text at most, about twenty lines of code: one screen
WHOLE_TOKENS = 250  # a text this long stays whole: cutting it would leave out a few lines for a `show` to fetch
MARKER_TOKENS = 24  # what the markers themselves may print
LEAST_WINDOW = 48  # below this much room for the body, the doc comment (then the signature) gives way


def focus(text: str, words: Collection[str], count_tokens: Callable[[str], int], where: str) -> str:
    """`text` if it fits WHOLE_TOKENS; else its head and its best-matching run of lines (`words`: the question's terms;
    `where`: `path:start-end`, named in the last marker)."""
    total = count_tokens(text)
    if total <= WHOLE_TOKENS:
        return text
    lines = text.split("\n")
    for top_text in (head(text), signature(text), lines[0]):  # a long doc comment, then a long signature, give way
        room = TEXT_TOKENS - MARKER_TOKENS - count_tokens(top_text)
        if room >= LEAST_WINDOW:
            break
    top = top_text.split("\n")
    body = lines[len(top) :]
    per_character = total / max(1, len(text))  # a line's tokens estimated from its length: one tokenizer call
    start, end = _best_run(body, set(words), [per_character * (len(line) + 1) for line in body], room)
    focused = _assemble(top, body, start, end, where)
    while end > start + 1 and count_tokens(focused) > TEXT_TOKENS:  # the estimate ran over: the run gives a line
        end -= 1
        focused = _assemble(top, body, start, end, where)
    return focused


def _assemble(top: list[str], body: list[str], start: int, end: int, where: str) -> str:
    shown = body[start:end]
    pieces = [*top]
    if start > 0:
        pieces.append(f"{_indent(shown[:1] or body[start:])}… {start} lines left out")
    pieces.extend(shown)
    if end < len(body):
        pieces.append(f"{_indent(shown[-1:] or top)}… {len(body) - end} lines left out (knowledge show {where})")
    return "\n".join(pieces)


def _indent(lines: list[str]) -> str:
    """A marker's indentation: the line's it stands beside, so it reads as part of the code or of the prose."""
    line = lines[0] if lines else ""
    return line[: len(line) - len(line.lstrip())]


def _best_run(body: list[str], words: set[str], costs: list[float], room: float) -> tuple[int, int]:
    """The run of lines [start, end) that fits `room` and holds the most of `words`, the earliest of equals; a line's
    worth is how many of the words it holds."""
    worth = [len(words.intersection(terms(line))) if _may_hold(line.lower(), words) else 0 for line in body]
    best = (0, 0, 0)  # worth, start, end
    start = held = 0
    used = 0.0
    for end in range(len(body)):
        used += costs[end]
        held += worth[end]
        while used > room and start <= end:
            used -= costs[start]
            held -= worth[start]
            start += 1
        if held > best[0] or (best[2] == 0 and start <= end):
            best = (held, start, end + 1)
    if best[2] == 0:
        return 0, 0
    held, start, end = best
    while end < len(body) and costs[end] <= room - sum(costs[start:end]):  # the run's room left to the lines after it
        end += 1
    return start, end


def _may_hold(lowered: str, words: set[str]) -> bool:
    """A cheap test before the line's terms are read: one of the words is in it somewhere."""
    return any(word in lowered for word in words)
