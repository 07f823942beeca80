"""One `locate` request answered over a repository's indexes: the issue read (issue.py), its evidence fused into
files (locate.py), each file with its evidence and entities, packed into the token budget as printed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .answer import Model, query_embedder, static_stage
from .api.request import LocateRequest
from .config import Settings
from .globs import glob_to_regex, matches_any
from .issue import clip_paste, read_issue
from .kind import KindIndex
from .locate import LocatePolicy, Stage, locate
from .records import LocatedFile, LocateResponse

DEFAULT_K = 10
History = Callable[[Sequence[str]], list[tuple[str, float, str]]]


def answer_locate(
    request: LocateRequest,
    sources: Sequence[KindIndex],
    settings: Settings,
    model: Model,
    printed: Callable[[LocatedFile], str],
    history: History | None = None,
) -> LocateResponse:
    """The files to change for `request.query`, best first, as many as `request.budget` (or the settings') holds
    when each is printed by `printed` (the widest form the caller prints)."""
    budget = request.budget or settings.budget
    coverages = [index.coverage() for index in sources]  # asked once a request
    stage = static_stage(sources, model, coverages)
    dense = query_embedder(sources, model, coverages)
    issue_side = model.issue_static() if stage is not None else None
    meaning: list[Stage] = [("static", issue_side.embed_query)] if issue_side is not None else []
    meaning += [("dense", dense)] if dense is not None else []
    text, left_out = clip_paste(request.query)
    issue = read_issue(text)
    files = locate(
        sources, issue, request.k or DEFAULT_K, LocatePolicy(), meaning, history, _path_filter(request), coverages
    )
    kept, used = [], 0
    for position, file in enumerate(files):
        for shape in _shapes(file):
            cost = model.count_tokens(printed(shape))
            if used + cost <= budget:
                kept.append(shape)
                used += cost
                break
        else:
            return LocateResponse(len(request.query), tuple(kept), used, budget, len(files) - position, left_out)
    return LocateResponse(len(request.query), tuple(kept), used, budget, 0, left_out)


def _shapes(file: LocatedFile) -> list[LocatedFile]:
    """A file as printed in full, then with its first entity and evidence only, then its path and evidence kinds."""
    first = replace(file, entities=file.entities[:1], evidence=file.evidence[:2])
    bare = replace(file, entities=(), evidence=tuple({e.signal: replace(e, detail="") for e in file.evidence}.values()))
    return [file, first, bare]


def _path_filter(request: LocateRequest) -> Callable[[str], bool] | None:
    if not request.filtered:
        return None
    wanted = [glob_to_regex(p) for p in request.paths]
    unwanted = [glob_to_regex(p) for p in request.exclude]
    return lambda path: (not wanted or matches_any(path, wanted)) and not (unwanted and matches_any(path, unwanted))
