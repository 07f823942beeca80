"""One `locate` request answered over a repository's indexes: the issue read (issue.py), its evidence fused into
files (locate.py), each file with its evidence and entities, packed into the token budget as printed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .api.request import LocateRequest
from .config import Settings
from .globs import glob_to_regex, matches_any
from .issue import clip_paste, read_issue
from .kind import KindIndex
from .locate import LocatePolicy, Stage, locate
from .model_stages import Model, query_embedder, static_stage
from .records import LOCATE_SIGNALS, LocatedFile, LocateResponse

DEFAULT_K = 10
SURENESS = ("low", "medium", "high")
SURE = {signal.name: signal.sure for signal in LOCATE_SIGNALS}
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
    kept, used = packed(files, lambda shape: model.count_tokens(printed(shape)), budget)
    omitted = len(files) - len(kept)
    return LocateResponse(len(request.query), kept, used, budget, omitted, left_out, confidence(files))


def confidence(files: Sequence[LocatedFile]) -> str:
    """How sure the answer is: the surest signal that found its first file. "high": the text names the place (a
    frame, a path, a message found there); "medium": it names what is defined there; "low": only its words, meaning
    or history found it (the first file was right in 69%, 44% and 20% of such answers on swe-dev, where this was
    chosen, and in 56%, 53% and 44% on mswe-dev: docs/benchmarks.md §4g); "" with no file."""
    if not files:
        return ""
    return max((SURE[evidence.signal] for evidence in files[0].evidence), key=SURENESS.index, default="low")


def packed(
    files: Sequence[LocatedFile], cost: Callable[[LocatedFile], int], budget: int
) -> tuple[tuple[LocatedFile, ...], int]:
    """As many files as the budget holds, each in the lightest of its shapes it must take: while over, the worst file
    still in full gives up all but its first entity, then the worst not yet bare its entities; a file is dropped only
    when every file is bare (the -k asked for is kept while their paths and evidence fit). The best keep theirs
    longest, as search's results do (budget.fit_printed)."""
    ladders = [shapes(file) for file in files]
    costs = [[cost(shape) for shape in ladder] for ladder in ladders]
    level = [0] * len(files)
    kept = len(files)

    def used() -> int:
        return sum(costs[position][level[position]] for position in range(kept))

    while kept and used() > budget:
        for step in (1, 2):
            lighter = next((p for p in range(kept - 1, -1, -1) if level[p] < step), None)
            if lighter is not None:
                level[lighter] = step
                break
        else:
            kept -= 1
    return tuple(ladders[position][level[position]] for position in range(kept)), used()


def shapes(file: LocatedFile) -> list[LocatedFile]:
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
