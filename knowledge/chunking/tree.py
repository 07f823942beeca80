"""The tree-sitter side of chunking: the node type we read, a node's text, parsers per grammar. The only module that
imports tree-sitter."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol


class Node(Protocol):
    """The part of tree_sitter.Node the chunker reads."""

    @property
    def type(self) -> str: ...
    @property
    def children(self) -> Sequence[Node]: ...
    @property
    def named_children(self) -> Sequence[Node]: ...
    @property
    def parent(self) -> Node | None: ...
    @property
    def prev_sibling(self) -> Node | None: ...
    @property
    def start_byte(self) -> int: ...
    @property
    def end_byte(self) -> int: ...
    @property
    def start_point(self) -> tuple[int, int]: ...
    @property
    def end_point(self) -> tuple[int, int]: ...
    @property
    def has_error(self) -> bool: ...
    @property
    def is_missing(self) -> bool: ...
    def child_by_field_name(self, name: str, /) -> Node | None: ...


class Tree(Protocol):
    @property
    def root_node(self) -> Node: ...


class Parser(Protocol):
    def parse(self, source: bytes, /) -> Tree: ...


_PARSERS: dict[str, Parser] = {}


def parser_for(module: str, function: str) -> Parser:
    """A parser for the grammar that `module.function()` returns, built once per process."""
    key = f"{module}.{function}"
    if key not in _PARSERS:
        import tree_sitter

        grammar = importlib.import_module(module)
        _PARSERS[key] = tree_sitter.Parser(tree_sitter.Language(getattr(grammar, function)()))
    return _PARSERS[key]


def node_text(node: Node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def has_child(node: Node, types: set[str], text: bytes | None = None, src: bytes = b"") -> bool:
    for child in node.children:
        if child.type in types and (text is None or text in src[child.start_byte : child.end_byte]):
            return True
    return False
