"""One search request answered over a repository's indexes: the model checked against what built them, the stage
each source answers with (the transformer's vectors, the static first stage, the lexical side alone), the search
pipeline (search.py), and what the answer leaves behind: the files it pointed at, for the fill to embed next, and
the last drift run's notes on its doc sections."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from . import drift_notes
from .api.request import SearchRequest
from .config import Settings
from .errors import IndexIncompatibleError
from .kind import KindIndex
from .records import SearchResponse
from .search import resolve_options, search
from .store import Coverage, Manifest, index_dir
from .store.asked import record_asked

if TYPE_CHECKING:
    import numpy as np


class QueryEmbedder(Protocol):
    def embed_query(self, text: str) -> np.ndarray: ...


class StaticStage(QueryEmbedder, Protocol):
    @property
    def fingerprint(self) -> str: ...


class Identity(Protocol):
    @property
    def fingerprint(self) -> str: ...


class Model(Protocol):
    """What answering asks of the model (model_access.ModelAccess): each part loaded only when needed."""

    def may_have_built(self, model_id: str, variant: str, fingerprint: str) -> bool: ...

    def mismatch(self, kind: str, manifest: Manifest) -> IndexIncompatibleError: ...

    def identity(self) -> Identity: ...

    def embedder(self) -> QueryEmbedder: ...

    def static(self) -> StaticStage | None: ...

    def issue_static(self) -> StaticStage | None: ...

    def count_tokens(self, text: str) -> int: ...


def answer(
    request: SearchRequest,
    sources: Sequence[KindIndex],
    model: Model,
    settings: Settings,
    is_stale: Callable[[str], bool],
    docs: Callable[[], KindIndex],
) -> SearchResponse:
    """The answer to `request` over `sources`; unasked fields fall back to the settings, then to the calibration of
    the first source. `docs` opens the docs index, read only when the answer holds doc sections."""
    coverages = [index.coverage() for index in sources]  # asked once a request: every step below reads these
    embed_query = None if request.exact else query_embedder(sources, model, coverages)
    stage = None if request.exact else static_stage(sources, model, coverages)
    manifest = sources[0].searched.manifest
    options = resolve_options(request, settings, (manifest.threshold, manifest.full_threshold))
    response = search(
        sources,
        embed_query,
        model.count_tokens,
        request.query,
        options,
        is_stale,
        stage.embed_query if stage is not None else None,
        coverages,
    )
    root = sources[0].root
    if response.dense_coverage < 1 and not request.exact:  # the fill gives these files their vectors next
        record_asked(index_dir(root), (hit.path for hit in response.results))
    return _with_drift_notes(response, root, docs)


def query_embedder(
    sources: Sequence[KindIndex], model: Model, coverages: Sequence[Coverage] | None = None
) -> Callable[[str], np.ndarray] | None:
    """The transformer's query embedder, once some source has vectors and every source's were made by this model
    (by name first: a mismatch is said before any model is built or loaded); None: no transformer is asked."""
    if not any(c.embedded for c in coverages or [index.coverage() for index in sources]):
        return None
    for index in sources:
        manifest = index.searched.manifest
        if not model.may_have_built(manifest.model_id, manifest.model_variant, manifest.fingerprint):
            raise model.mismatch(index.kind, manifest)
    fingerprint = model.identity().fingerprint
    for index in sources:
        if index.searched.manifest.model_fingerprint != fingerprint:
            raise model.mismatch(index.kind, index.searched.manifest)
    return model.embedder().embed_query


def static_stage(
    sources: Sequence[KindIndex], model: Model, coverages: Sequence[Coverage] | None = None
) -> StaticStage | None:
    """The static stage, for sources holding its rows; None when no source has any, or when a source's rows are
    another table's (until the next reindex rebuilds them)."""
    coverages = coverages or [index.coverage() for index in sources]
    if not any(c.static_rows for c in coverages):
        return None
    stage = model.static()
    if stage is not None and any(
        c.static_rows and index.searched.manifest.static_stage != stage.fingerprint
        for index, c in zip(sources, coverages, strict=True)
    ):
        return None
    return stage


def _with_drift_notes(response: SearchResponse, root: Path, docs: Callable[[], KindIndex]) -> SearchResponse:
    if not any(hit.kind == "doc" for hit in response.results):
        return response
    notes = drift_notes.load(root, docs())
    if not notes:
        return response
    return replace(response, results=tuple(replace(h, drift=notes.get(h.id)) for h in response.results))
