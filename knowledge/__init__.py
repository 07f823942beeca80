"""knowledge: a local-first knowledge base over a repository's docs, searched with real sentence embeddings."""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import KnowledgeError
from .kb import KnowledgeBase
from .records import IndexReport, SearchHit, SearchResponse

__all__ = ["IndexReport", "KnowledgeBase", "KnowledgeError", "SearchHit", "SearchResponse", "__version__"]
