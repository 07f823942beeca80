"""knowledge: a local-first knowledge base over a repository's docs, searched with real sentence embeddings.

The public names load on first use, so `import knowledge.cli` (a warm daemon call) does not import the index stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .errors import KnowledgeError
    from .kb import KnowledgeBase
    from .records import IndexReport, SearchHit, SearchResponse

_LAZY = {
    "KnowledgeError": "errors",
    "KnowledgeBase": "kb",
    "IndexReport": "records",
    "SearchHit": "records",
    "SearchResponse": "records",
}


def __getattr__(name: str) -> Any:  # noqa: ANN401
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)


__all__ = ["IndexReport", "KnowledgeBase", "KnowledgeError", "SearchHit", "SearchResponse", "__version__"]
