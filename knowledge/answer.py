"""One search request answered over a repository's indexes: the stage each source answers with (model_stages.py:
the transformer's vectors, the static first stage, the lexical side alone), the search pipeline (search.py), and
what the answer leaves behind: the files it pointed at, for the fill to embed next, and the last drift run's notes on
its doc sections."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from . import drift_notes
from .api.request import SearchRequest
from .config import Settings
from .kind import KindIndex
from .model_stages import Model, query_embedder, static_stage
from .records import SearchResponse
from .search import resolve_options, search
from .store import index_dir
from .store.asked import record_asked


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


def _with_drift_notes(response: SearchResponse, root: Path, docs: Callable[[], KindIndex]) -> SearchResponse:
    if not any(hit.kind == "doc" for hit in response.results):
        return response
    notes = drift_notes.load(root, docs())
    if not notes:
        return response
    return replace(response, results=tuple(replace(h, drift=notes.get(h.id)) for h in response.results))
