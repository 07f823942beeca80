"""A file's outline for drift: each entity's qualified name, kind, lines, declaration and body."""

from __future__ import annotations

from dataclasses import dataclass

from .entities import Entity, flatten, walk
from .languages import language_of, parse_bytes, parser


@dataclass(frozen=True, slots=True)
class Definition:
    """One entity of a file as drift compares them across commits."""

    name: str  # qualified: `Parent.name`, or `name`
    kind: str
    start: int  # 1-based lines, inclusive
    end: int
    signature: str  # the first line, whitespace collapsed
    body: str


def _signature(lines: list[str], name: str) -> str:
    """The declaration: from the line naming the entity (past decorators) to where its body opens."""
    first = next((n for n, line in enumerate(lines[:8]) if name in line), 0)
    taken: list[str] = []
    for line in lines[first : first + 8]:
        taken.append(line.strip())
        if line.rstrip().endswith((":", "{", ";", "=>", "do")) or (line.strip().endswith(")") and len(taken) > 1):
            break
    return " ".join(" ".join(taken).split())


def outline(path: str, text: str) -> list[Definition]:
    """The entities of `path` holding `text` (empty for unsupported languages or files that do not parse)."""
    spec = language_of(path, text)
    if spec is None:
        return []
    src = parse_bytes(spec, text)
    tree = parser(spec).parse(src)
    if tree.root_node.has_error:
        return []
    entities: list[Entity] = []
    try:
        walk(tree.root_node, spec, src, None, entities)
    except RecursionError:
        return []
    lines = text.split("\n")
    return [
        Definition(
            name=f"{e.parent}.{e.name}" if e.parent else e.name,
            kind=e.kind,
            start=e.start + 1,
            end=e.end + 1,
            signature=_signature(lines[e.start : e.end + 1], e.name),
            body="\n".join(lines[e.start : e.end + 1]),
        )
        for e in flatten(entities)
        if e.name
    ]
