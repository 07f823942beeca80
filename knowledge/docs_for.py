"""Docs for code: the doc sections that refer to a file, to the entity at a line, or to a symbol (metadata only)."""

from __future__ import annotations

from .records import Chunk, SearchHit
from .references import distinctive, split


def _qualified(chunk: Chunk) -> str:
    return f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def parse_target(target: str, known_paths: set[str]) -> tuple[str | None, int | None, str | None]:
    """(path, line, symbol) of `PATH`, `PATH:LINE`, `PATH:SYMBOL` or `SYMBOL`."""
    if target in known_paths:
        return target, None, None
    path, _, rest = target.rpartition(":")
    if path in known_paths:
        return (path, int(rest), None) if rest.isdigit() else (path, None, rest)
    return None, None, target


def docs_for(target: str, docs: dict[int, Chunk], code: dict[int, Chunk], known_paths: set[str]) -> list[SearchHit]:
    """Sections referring to `target`, strongest tie first: a link or path to the file, a name of its entities."""
    path, line, symbol = parse_target(target, known_paths | {c.path for c in code.values()})
    entities = [c for c in code.values() if c.symbol and (path is None or c.path == path)]
    if line is not None:
        around = [c for c in entities if c.line_start <= line <= c.line_end]
        entities = sorted(around, key=lambda c: c.line_end - c.line_start)[:1]
    if symbol is not None:
        entities = [c for c in entities if symbol in {_qualified(c), c.symbol}]
    names = {_qualified(c) for c in entities} | ({symbol} if symbol else set())
    # A bare name in a doc (`status`) ties it to a method only when that method was asked for (by line or name):
    # for a whole file, only top-level entities and qualified names count.
    # A bare name asked for (`reindex_changes`) matches as written; a method found by line matches by its bare name
    # only when that name is distinctive (`reindex_changes`, not `search`).
    if symbol is not None and "." not in symbol:
        shorts = {symbol}
    elif line is not None:
        shorts = {c.symbol for c in entities if not c.parent or distinctive(c.symbol)}
    else:
        shorts = {c.symbol for c in entities if not c.parent}
    hits: dict[str, SearchHit] = {}
    for chunk in docs.values():
        best: tuple[float, str] | None = None
        for reference in chunk.references:
            kind, named, ref_line = split(reference)
            score = 0.0
            if kind in {"link", "path"} and path is not None and named == path:
                near = line is None or ref_line is None or any(c.line_start <= ref_line <= c.line_end for c in entities)
                score = 1.0 if near else 0.7
            elif kind == "symbol" and (named in names or (_short(named) in shorts and "." not in named)):
                score = 1.0 if named in names else 0.8
            if score and (best is None or score > best[0]):
                best = (score, reference)
        if best is None and path is not None and symbol is None and chunk.path != path:
            if path in chunk.content:
                best = (0.5, f"mentions {path}")
            elif path.rsplit("/", 1)[-1] in chunk.content:
                best = (0.4, f"mentions {path.rsplit('/', 1)[-1]}")
        if best is not None:
            hits[chunk.id] = SearchHit(
                id=chunk.id,
                path=chunk.path,
                kind=chunk.kind,
                score=best[0],
                title=chunk.title,
                description=chunk.description,
                section=chunk.section,
                line_start=chunk.line_start,
                line_end=chunk.line_end,
                content=None,
                tokens=0,
                commit=chunk.commit,
                reference=best[1],
            )
    return sorted(hits.values(), key=lambda h: (-(h.score or 0), h.path, h.line_start))
