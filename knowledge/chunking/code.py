"""Source code: one chunk per function, method and class (tree-sitter), line chunks for everything else.

The languages are in `languages`, the entity walk in `entities`; this module assembles the chunks. Each entity
keeps its name, kind, parent class, decorators, whether it is exported, its exact 1-based line range and the names
it calls. Entities over the token limit are split with their name and parent kept; a class whose methods are chunks
of their own is chunked as its header. Files in other languages, and files that do not parse, fall back to line
windows sized in model tokens.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..lexical import name_words
from ..records import CONTAINERS, Chunk, FileProblem, SourceFile
from .entities import Entity, declared_names, find_entities, first_error_line, flatten
from .ids import unique_chunk_id
from .languages import language_of, parse_bytes, parser

CODE_CHUNKER_VERSION = 22  # 21: names as words only where they hide their word breaks; 22: C++ export macros
OVERLAP_LINES = 2
# The model reads a code chunk's header line and its leading lines within this many tokens (signature, doc comment,
# first statements); the chunk's range, text and lexical terms stay whole. Fewer tokens for the transformer, so the
# fill completes sooner (docs/benchmarks.md §0a: the ranking gate with the default model, and the speed).
EMBED_HEAD_TOKENS = 192
# Measured on CoSQA through this chunker (bench/code_bench.py, MiniLM): nDCG@10 0.5819 with "N: " line prefixes in
# the embedded text, 0.5869 without. Line ranges stay in the metadata either way.
LINE_NUMBERS_IN_EMBEDDING = False


@dataclass(frozen=True, slots=True)
class ParsedCode:
    chunks: list[Chunk]
    problems: list[FileProblem]


_HIDDEN_WORD_BREAK = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")


def _spelled(name: str, parent: str) -> str:
    """The end of an entity's header line: its name and its class's as words, when one of them joins words without
    a separator (`appendChildren`, `FromRequest`): the model's sub-word tokens do not break there, and the words are
    what a question uses. A snake_case name already shows its words; spelling it again only re-weights the text."""
    if not _HIDDEN_WORD_BREAK.search(name) and not _HIDDEN_WORD_BREAK.search(parent):
        return "\n"
    words = name_words(name)
    if not words:
        return "\n"
    words += ["of", *name_words(parent)] if parent else []
    return f": {' '.join(words)}\n"


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{start + n + 1}: {line}" for n, line in enumerate(lines))


def _head(lines: list[str], limit: int, count_tokens: Callable[[str], int]) -> list[str]:
    """The leading lines that fit `limit` tokens (the first line always)."""
    if sum(map(len, lines)) + len(lines) <= limit:  # a line never has more tokens than characters
        return lines
    used = 0
    for end, line in enumerate(lines):
        used += count_tokens(line) + 1
        if used > limit and end > 0:
            return lines[:end]
    return lines


def _line_windows(
    first: int, last: int, lines: list[str], limit: int, count_tokens: Callable[[str], int]
) -> list[tuple[int, int]]:
    """Inclusive [start, end] windows of lines first..last within `limit` tokens, overlapping OVERLAP_LINES."""
    # A line never has more tokens than characters: when that bound fits, nothing needs counting; when the counted
    # lines fit, the window is the whole range (what the loop below would find, without walking it).
    body = lines[first : last + 1]
    prefixes = 4 * len(body)
    if sum(len(line) for line in body) + prefixes <= limit or sum(map(count_tokens, body)) + prefixes <= limit:
        return [(first, last)]
    windows: list[tuple[int, int]] = []
    start = first
    while start <= last:
        end, used = start, 0
        while end <= last:
            cost = count_tokens(lines[end]) + 4  # the line number prefix
            if used + cost > limit and end > start:
                break
            used += cost
            end += 1
        windows.append((start, end - 1))
        if end > last:
            break
        start = max(start + 1, end - OVERLAP_LINES)
    return windows


def chunk_code(source: SourceFile, max_tokens: int, count_tokens: Callable[[str], int]) -> ParsedCode:
    """Entity chunks for a supported language, line chunks otherwise or on a parse error."""
    lines = source.text.split("\n")
    spec = language_of(source.path, source.text)
    language = spec.name if spec else PurePosixPath(source.path).suffix.lstrip(".") or "text"
    problems: list[FileProblem] = []
    entities: list[Entity] = []
    declared: dict[int, list[str]] = {}
    if spec is not None:
        src = parse_bytes(spec, source.text)
        tree = parser(spec).parse(src)
        # tree-sitter recovers around a syntax error (in C an unknown macro is one): what parsed cleanly keeps its
        # entities, the code around the error becomes line chunks. Dropping every entity of such a file left 43 of
        # libuv's 104 files and 14 of fmtlib's 15 as line chunks only.
        if tree.root_node.has_error:
            bad = first_error_line(tree.root_node)
            problems.append(
                FileProblem(source.path, f"syntax error near line {bad}; the code around it indexed as line chunks")
            )
        try:
            find_entities(tree, spec, src, source, entities)
        except RecursionError:  # nesting deeper than the walk can follow: the file still gets line chunks
            entities.clear()
            problems[:] = [FileProblem(source.path, "nested too deeply to parse; indexed as line chunks")]
        if spec.names:
            declared = declared_names(tree.root_node, spec, src, entities)
    chunks: list[Chunk] = []
    used_ids: set[str] = set()
    covered = [False] * len(lines)

    def emit(entity: Entity | None, start: int, end: int, kind: str, owner: str = "") -> None:
        name = entity.name if entity else ""
        parent = entity.parent if entity else owner
        header = f"{source.path} ({language}) {kind} {name}" + (f" in {parent}" if parent else "")
        header += _spelled(name, parent)
        budget = max(32, max_tokens - count_tokens(header) - 2)
        windows = _line_windows(start, end, lines, budget, count_tokens)
        qualified = f"{parent}.{name}" if parent and name else name
        base = f"{source.path}#{qualified or f'L{start + 1}'}"
        for part, (first, last) in enumerate(windows):
            chunk_id = unique_chunk_id(base, part, used_ids)
            body = lines[first : last + 1]
            read = _head(body, EMBED_HEAD_TOKENS - count_tokens(header) - 2, count_tokens)  # 2: special tokens
            embed_text = header + (_numbered(read, first) if LINE_NUMBERS_IN_EMBEDDING else "\n".join(read))
            chunks.append(
                Chunk(
                    id=chunk_id,
                    path=source.path,
                    kind="code",
                    title=qualified or parent or PurePosixPath(source.path).name,
                    description="",
                    section=kind,
                    line_start=first + 1,
                    line_end=last + 1,
                    content="\n".join(body),
                    embed_text=embed_text,
                    content_hash=hashlib.sha256(embed_text.encode("utf-8")).hexdigest(),
                    language=language,
                    symbol=name,
                    symbol_kind=kind if entity else "",
                    parent=parent,
                    decorators=entity.decorators if entity else (),
                    exported=entity.exported if entity else None,
                    calls=tuple(sorted(entity.calls)) if entity else (),
                    names=tuple(name for line in range(first, last + 1) for name in declared.get(line, ())),
                )
            )

    owner: list[str] = [""] * len(lines)  # the innermost container around each line, for the lines between members
    for entity in flatten(entities):  # outer containers come before their inner ones
        end = entity.end
        if entity.children and entity.kind in CONTAINERS:
            end = max(entity.start, min(child.start for child in entity.children) - 1)  # the header only
            owner[end + 1 : entity.end + 1] = [entity.name] * (entity.end - end)
        emit(entity, entity.start, end, entity.kind)
        for line in range(entity.start, end + 1):
            covered[line] = True
    # What no entity holds (imports, constants, fields between methods, code around a syntax error) is chunked as
    # runs of lines, split where the enclosing container changes; a run of braces and blank lines says nothing.
    gap_kind = "module" if spec is not None and not problems else "lines"
    gap_start = None
    for line in range(len(lines) + 1):
        inside_gap = line < len(lines) and not covered[line]
        if gap_start is not None and (not inside_gap or owner[line] != owner[gap_start]):
            first, last = gap_start, line - 1
            while first <= last and not lines[first].strip():
                first += 1
            while last >= first and not lines[last].strip():
                last -= 1
            if first <= last and any(ch.isalnum() for text in lines[first : last + 1] for ch in text):
                emit(None, first, last, gap_kind, owner[first])
            gap_start = None
        if inside_gap and gap_start is None:
            gap_start = line
    chunks.sort(key=lambda c: (c.line_start, c.line_end))
    return ParsedCode(chunks, problems)
