"""A container (class, interface, struct, trait, impl, module, …) answers as a container: its declaration, then an
outline of its members (kind, name, lines; nested ones indented), read from the index when the answer is made. The
index and the ranking are untouched: only the answer's text grows from the declaration's one line to something an
agent can act on."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .records import CONTAINERS, Chunk, group_key, is_part

MAX_MEMBERS = 16  # an answer's outline longer than this is cut, with the count of what was left out and `show`
MAX_LEADING = 40  # lines of doc comment and attributes read above a declaration, at most
# A comment line (`#`, `//`, `///`, `/*`, ` * `, `*/`, `--`, `;;`) or an attribute or annotation line (`@Override`,
# `#[derive(Debug)]`, C#'s `[Obsolete]`) on a line of its own.
_LEADING = re.compile(r"\s*(#|//|/\*|\*|--|;;|@\w|\[[A-Z]\w*(\(.*\))?\]\s*$)")


def is_container(chunk: Chunk) -> bool:
    return chunk.kind == "code" and chunk.symbol_kind in CONTAINERS


def answer_text(chunk: Chunk, same_file: Iterable[Chunk], text: str | None = None) -> str:
    """`text` (default: `chunk`'s own), and for a container the outline of its members among `same_file` (the chunks
    of its file): the entities whose parent it is, and theirs in turn, indented."""
    text = chunk.content if text is None else text
    if not is_container(chunk):
        return text
    by_parent: dict[str, list[Chunk]] = {}
    ends: dict[str, int] = {}  # an entity's last line over all its parts: an outline names its whole range
    for other in same_file:
        entity = group_key(other.id)
        ends[entity] = max(ends.get(entity, 0), other.line_end)
        if other.symbol and other.parent and not is_part(other.id) and other.id != chunk.id:
            by_parent.setdefault(other.parent, []).append(other)
    lines: list[str] = []

    def outline(name: str, depth: int, seen: frozenset[str]) -> None:
        for member in sorted(by_parent.get(name, ()), key=lambda c: c.line_start):
            kind = f"{member.symbol_kind} " if member.symbol_kind else ""
            end = max(member.line_end, ends.get(member.id, 0))
            lines.append(f"{'  ' * depth}{kind}{member.symbol}  {member.line_start}-{end}")
            if member.symbol_kind in CONTAINERS and member.symbol not in seen:
                outline(member.symbol, depth + 1, seen | {member.symbol})

    outline(chunk.symbol, 1, frozenset({chunk.symbol}))
    if not lines:
        return text
    where = f"{chunk.path}:{chunk.line_start}-{max(ends.get(chunk.id, 0), chunk.line_end)}"
    more = [f"  … {len(lines) - MAX_MEMBERS} more (knowledge show {where})"] if len(lines) > MAX_MEMBERS else []
    qualified = f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
    return text.rstrip("\n") + f"\n\nmembers of {qualified}:\n" + "\n".join(lines[:MAX_MEMBERS] + more)


def leading_lines(chunk: Chunk, same_file: Sequence[Chunk]) -> tuple[int, str]:
    """The doc comment and attributes right above `chunk`'s first line that another chunk of its file holds (a Ruby
    or Go comment, a C comment block, annotations): (their first line, their text), or (its own first line, "").
    A result never starts below its doc comment; the index and the ranking are untouched."""
    if chunk.kind != "code":
        return chunk.line_start, ""
    text: dict[int, str] = {}
    for other in same_file:
        if other.line_end < chunk.line_start and other.line_end >= chunk.line_start - MAX_LEADING:
            for offset, line in enumerate(other.content.split("\n")):
                text.setdefault(other.line_start + offset, line)
        elif other.line_start < chunk.line_start <= other.line_end and other.id != chunk.id:
            for offset, line in enumerate(other.content.split("\n")[: chunk.line_start - other.line_start]):
                text.setdefault(other.line_start + offset, line)
    start = chunk.line_start
    while start - 1 in text and start > chunk.line_start - MAX_LEADING and _LEADING.match(text[start - 1]):
        start -= 1
    return start, "".join(text[n] + "\n" for n in range(start, chunk.line_start))
