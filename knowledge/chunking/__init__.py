"""Turning source files into chunks; dispatches by file kind (docs: headings, code: tree-sitter entities)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..records import Chunk, FileProblem, SourceFile
from .code import CODE_CHUNKER_VERSION
from .markdown import CHUNKER_VERSION as DOC_CHUNKER_VERSION
from .markdown import chunk_markdown

CHUNKER_VERSION = DOC_CHUNKER_VERSION * 100 + CODE_CHUNKER_VERSION


@dataclass(frozen=True, slots=True)
class Parsed:
    chunks: list[Chunk]
    problems: list[FileProblem]
    undescribed: bool  # a doc without a `description` (always False for code)


def chunk_source(source: SourceFile, max_tokens: int, count_tokens: Callable[[str], int]) -> Parsed:
    """Chunks of one file, by its kind."""
    if source.kind == "code":
        from .code import chunk_code  # tree-sitter loads only when code is indexed

        code = chunk_code(source, max_tokens, count_tokens)
        return Parsed(code.chunks, code.problems, False)
    doc = chunk_markdown(source, max_tokens, count_tokens)
    return Parsed(doc.chunks, doc.problems, not doc.meta.description)


__all__ = ["CHUNKER_VERSION", "Parsed", "chunk_source"]
