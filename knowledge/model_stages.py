"""The model's stages a request is answered with, for search and locate alike: the model checked against what built
each index, the transformer's query embedder once vectors exist, and the static first stage where its rows are."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from .errors import IndexIncompatibleError
from .kind import KindIndex
from .store import Coverage, Manifest

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
