"""One result per entity or section: the parts a long function or section was split into come back as one result with
the full line range, never as two results that overlap; its text is the part that matched (with the entity's
signature and doc comment above it, and a marker where lines are left out), not every part's."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from .records import Chunk, group_key, is_part

__all__ = ["group_key", "head", "is_part", "matched", "merge", "signature", "whole"]


def _overlap(text: str, following: str) -> int:
    """Characters at the end of `text` that `following` starts with (split windows share an overlap)."""
    for size in range(min(len(text), len(following)), 0, -1):
        if text.endswith(following[:size]):
            return size
    return 0


def whole(parts: Sequence[Chunk]) -> tuple[Chunk, int, int]:
    """The parts of one entity or section as the entity: its first part (by line) and the union of their lines (the
    one rule search's results and locate's entities are made by)."""
    first = min(parts, key=lambda c: (c.line_start, c.line_end))
    return first, first.line_start, max(c.line_end for c in parts)


def merge(parts: Sequence[Chunk]) -> Chunk:
    """The parts of one entity or section as one chunk: the union of their lines, the text once."""
    ordered = sorted(parts, key=lambda c: (c.line_start, c.line_end))
    first, start, end = whole(ordered)
    if all(c.content.count("\n") == c.line_end - c.line_start for c in ordered):  # one content line per file line
        lines: dict[int, str] = {}
        for chunk in ordered:
            for offset, text in enumerate(chunk.content.split("\n")):
                lines.setdefault(chunk.line_start + offset, text)
        content = "\n".join(lines.get(n, "") for n in range(start, end + 1))
    else:  # long lines were cut into pieces: stitch the texts on their shared overlap
        content = first.content
        for chunk in ordered[1:]:
            content += ("" if (cut := _overlap(content, chunk.content)) else "\n") + chunk.content[cut:]
    return replace(first, id=group_key(first.id), line_start=start, line_end=end, content=content)


HEAD_LINES = 12  # the signature and doc comment read from an entity's first part, at most
_DECLARATION_END = re.compile(r"[:{]\s*(#.*|//.*)?$|=>\s*$")
_COMMENT_LINE = re.compile(r"\s*(/\*\*|\*|///|//!|//|#)")


def _signature_end(lines: list[str]) -> int:
    return next((i + 1 for i, line in enumerate(lines) if _DECLARATION_END.search(line)), 1)


def signature(text: str) -> str:
    """The signature of an entity: its lines up to the one that opens its body."""
    lines = text.split("\n")[:HEAD_LINES]
    return "\n".join(lines[: _signature_end(lines)])


def head(text: str) -> str:
    """The signature of an entity (up to the line that opens its body) and the doc comment right under it."""
    lines = text.split("\n")[:HEAD_LINES]
    end = _signature_end(lines)
    if end >= len(lines):
        return "\n".join(lines[:end])
    opening = lines[end].strip()
    quote = next((q for q in ('"""', "'''") if opening.startswith(q)), None)
    if quote is not None:  # a docstring: to its closing quotes
        closing = (
            end
            if opening.count(quote) >= 2
            else next((i for i in range(end + 1, len(lines)) if quote in lines[i]), None)
        )
        end = end if closing is None else closing + 1
    else:  # a comment block under the signature (Rust's //!, a JSDoc block)
        while end < len(lines) and _COMMENT_LINE.match(lines[end]):
            end += 1
    return "\n".join(lines[:end])


def matched(parts: Sequence[Chunk], best: Chunk) -> Chunk:
    """The entity `parts` make, as one result: the whole line range (so `show` and `--expand` reach all of it), and
    as its text the part that matched, `best`, under the entity's signature and doc comment, with a marker for the
    lines left out above and below it."""
    whole = merge(parts)
    if len(parts) < 2:
        return whole
    ordered = sorted(parts, key=lambda c: (c.line_start, c.line_end))
    first = ordered[0]
    pieces: list[str] = []
    if best.line_start > first.line_start:
        top = head(first.content)
        shown_to = first.line_start + top.count("\n")
        pieces.append(top)
        if best.line_start > shown_to + 1:
            pieces.append(f"    … lines {shown_to + 1}-{best.line_start - 1} left out")
    pieces.append(best.content.rstrip("\n"))
    if best.line_end < whole.line_end:
        where = f"{whole.path}:{whole.line_start}-{whole.line_end}"
        pieces.append(f"    … lines {best.line_end + 1}-{whole.line_end} left out (knowledge show {where})")
    return replace(whole, content="\n".join(pieces))
