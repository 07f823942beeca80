"""What one search runs with: the request's fields filled from the settings and the index's calibration, the
ranking policy, and the path, exclude and language filters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .api.request import SearchRequest
from .config import Settings
from .globs import glob_to_regex, matches_any
from .ranking import RankingPolicy
from .ranking import policy as policies
from .records import Chunk

EXACT_DEFAULT_K = 100  # exact mode lists occurrences, not the best few: the budget still caps what is returned


@dataclass(frozen=True, slots=True)
class SearchOptions:
    k: int
    threshold: float
    full_threshold: float
    budget: int
    metadata_only: bool = False
    files_only: bool = False  # one result per file, metadata only: where to look, not what is there
    exact: bool = False  # every line matching the query (grep.py): one result per line
    match: str = "word"  # with exact: word, substring or regex
    context: int = 0  # with exact: lines either side
    explain: bool = False
    expand: bool = False  # add the top code hit's callers and callees after the results, as the budget allows
    policy: RankingPolicy = field(default_factory=RankingPolicy)
    keep: Callable[[Chunk], bool] | None = None  # the request's path, exclude and language filters


def resolve_options(request: SearchRequest, settings: Settings, calibrated: tuple[float, float]) -> SearchOptions:
    """The one place a request's unasked fields are filled: request > settings > the index's calibration."""

    def pick(asked: float | None, configured: float | None, default: float) -> float:
        return asked if asked is not None else (configured if configured is not None else default)

    return SearchOptions(
        k=request.k or (EXACT_DEFAULT_K if request.exact else settings.k),
        threshold=pick(request.threshold, settings.threshold, calibrated[0]),
        full_threshold=pick(request.full_threshold, settings.full_threshold, calibrated[1]),
        budget=request.budget or settings.budget,
        explain=request.explain,
        expand=request.expand,
        metadata_only=request.metadata_only or request.files_only,
        files_only=request.files_only,
        exact=request.exact,
        match=request.match,
        context=request.context,
        policy=policies.DEFAULT_POLICY if settings.rank_rules else policies.DEFAULT_POLICY.plain(),
        keep=result_filter(request) if request.filtered else None,
    )


def result_filter(request: SearchRequest) -> Callable[[Chunk], bool]:
    """Whether a chunk passes the request's path globs, exclude globs and languages."""
    wanted = [glob_to_regex(p) for p in request.paths]
    unwanted = [glob_to_regex(p) for p in request.exclude]
    languages = {name.lower() for name in request.language}

    def keep(chunk: Chunk) -> bool:
        if wanted and not matches_any(chunk.path, wanted):
            return False
        if unwanted and matches_any(chunk.path, unwanted):
            return False
        return not languages or (chunk.language or "").lower() in languages

    return keep
