"""Docs for code: the doc sections that refer to a file, to the entity at a line, or to a symbol (metadata only)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from .records import Chunk, SearchHit, hit_of, is_part
from .references import distinctive, is_history, split


def _qualified(chunk: Chunk) -> str:
    return f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol


def _module_qualified(chunk: Chunk) -> set[str]:
    """`pkg.mod.Class.method`, `mod.Class.method`: the names a doc writes with the module's dotted path in front
    (`src/pkg/mod.py` is `pkg.mod`; a package's `__init__` is the package)."""
    parts = chunk.path.rsplit(".", 1)[0].split("/")
    if parts and parts[0] in {"src", "lib"}:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    public = [part for part in parts if not part.startswith("_")]  # `pkg._impl.f`, re-exported as `pkg.f`
    return {".".join([*p[start:], _qualified(chunk)]) for p in (parts, public) for start in range(len(p))}


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


_SUMMARY = re.compile(r'(?:"""|\'\'\'|/\*\*?|//+|#+)\s*([^\n*"\']{8,}?)(?:\.\s|\.?$|"""|\*/)', re.MULTILINE)


def _entities(target: str, code: dict[int, Chunk], known_paths: set[str]) -> tuple[str | None, list[Chunk]]:
    """The path and the entities `target` names: the one at a line, the ones of a symbol, or a file's."""
    path, line, symbol = parse_target(target, known_paths | {c.path for c in code.values()})
    # an entity split in parts is one entity: its first part stands for it (a long `Config.load` was two, so no doc
    # was looked for by meaning)
    entities = [c for c in code.values() if c.symbol and not is_part(c.id) and (path is None or c.path == path)]
    if line is not None:
        around = [c for c in entities if c.line_start <= line <= c.line_end]
        entities = sorted(around, key=lambda c: c.line_end - c.line_start)[:1]
    if symbol is not None:
        entities = [c for c in entities if symbol in {_qualified(c), c.symbol}]
    return path, entities


def meaning_query(target: str, code: dict[int, Chunk], known_paths: set[str]) -> str | None:
    """For a function or class no doc names: what it does, in words (its name split, its doc comment's first
    sentence), to find the section that documents it by its behaviour. None for a whole file or nothing found."""
    path, entities = _entities(target, code, known_paths)
    if len(entities) != 1 or (path is not None and target == path):
        return None
    entity = entities[0]
    words = " ".join(part.lower() for part in re.split(r"(?<=[a-z0-9])(?=[A-Z])|_+", entity.symbol) if part)
    summary = _SUMMARY.search(entity.content)
    return f"{words}: {summary.group(1).strip()}" if summary else words


def by_meaning(hits: Iterable[SearchHit], query: str) -> list[SearchHit]:
    """Search results for `meaning_query`, as docs-for answers: tied by `about: QUERY`, a changelog's entries last."""
    found = [replace(hit, reference=f"about: {query}") for hit in hits]
    return sorted(found, key=lambda hit: is_history(hit.path, hit.section))


def docs_for(target: str, docs: dict[int, Chunk], code: dict[int, Chunk], known_paths: set[str]) -> list[SearchHit]:
    """Sections referring to `target`, strongest tie first: a link or path to the file, a name of its entities."""
    path, line, symbol = parse_target(target, known_paths | {c.path for c in code.values()})
    _, entities = _entities(target, code, known_paths)
    names = {_qualified(c) for c in entities} | ({symbol} if symbol else set())
    names |= {full for c in entities for full in _module_qualified(c)}
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
            named = named.removesuffix("()") if kind == "symbol" else named
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
            hits[chunk.id] = hit_of(chunk, score=best[0], reference=best[1])
    # A changelog's entries come after the sections that document the target; among equals, a section whose own
    # heading names it (a section about the symbol) before one that mentions it in a list.
    asked = {_short(n).lower() for n in names} | (
        {path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()} if path else set()
    )

    def about(hit: SearchHit) -> bool:
        heading = hit.section.rsplit(" > ", 1)[-1].lower()
        return any(name and name in heading for name in asked)

    return sorted(
        hits.values(),
        key=lambda h: (is_history(h.path, h.section), -(h.score or 0), not about(h), h.path, h.line_start),
    )
