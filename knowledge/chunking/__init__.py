"""Turning source files into chunks; dispatches by file kind."""

from __future__ import annotations

from collections.abc import Callable

from ..records import SourceFile
from .markdown import CHUNKER_VERSION, DocMeta, ParsedDoc, chunk_markdown


def chunk_source(source: SourceFile, max_tokens: int, count_tokens: Callable[[str], int]) -> ParsedDoc:
    """Chunks of one file (docs only for now)."""
    return chunk_markdown(source, max_tokens, count_tokens)


__all__ = ["CHUNKER_VERSION", "DocMeta", "ParsedDoc", "chunk_source"]
