"""Each operation's handler, and the formats its answer is sent in: what server/operations.py's rows carry.

A handler takes what a local backend serves (`Served`), the request object as made by its frontend (in one process
nothing is serialised) and the format asked for (`Form`); the format says how one piece of the answer is printed (what
the budget counts while packing) and what goes back (the versioned JSON, or the text the CLI prints)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..budget import fit_printed
from ..errors import KnowledgeError
from ..render import (
    hit_json,
    hit_text,
    hits_to_dict,
    report_to_dict,
    response_to_text,
    search_json,
    search_to_dict,
    source_to_dict,
    status_to_dict,
    status_to_text,
)
from ..render.locate import locate_to_dict, locate_to_text, located_json, located_text

if TYPE_CHECKING:
    from ..api.request import (
        DocsForFileRequest,
        DocsForRequest,
        LlmsTxtRequest,
        LocateRequest,
        ReindexRequest,
        SearchRequest,
        SourceRequest,
        StatusRequest,
    )
    from ..dependency_kbs import ScopedSearch
    from ..kb import KnowledgeBase
    from ..records import JsonObject

MAX_SOURCE_LINES = 5_000


@dataclass(frozen=True, slots=True)
class Served:
    """What a local backend answers from: one knowledge base, asked with its dependencies in scope."""

    kb: KnowledgeBase
    scoped: ScopedSearch
    reindex_lock: threading.Lock


@dataclass(frozen=True, slots=True)
class Form:
    """One format of an answer: `sent(answer, request)` is what goes back; `piece` prints one result or file as the
    format does (the budget packs by it) and `printed(answer, request)` the whole answer (the budget counts it)."""

    sent: Callable[[Any, Any], JsonObject]
    piece: Callable[[Any], str] | None = None
    printed: Callable[[Any, Any], str] | None = None


def as_text(printed: Callable[[Any, Any], str], piece: Callable[[Any], str] | None = None) -> Form:
    """The text form: the printed answer, sent as `{"text": …}`."""
    return Form(lambda answer, request: {"text": printed(answer, request)}, piece, printed)


def _searched(answer: Any, request: SearchRequest) -> str:  # noqa: ANN401 - a SearchResponse
    return response_to_text(answer, request.files_only, request.exact)


SEARCH_FORMS = {
    "json": Form(lambda answer, _: search_to_dict(answer), hit_json, lambda answer, _: search_json(answer)),
    "text": as_text(_searched, hit_text),
}
LOCATE_FORMS = {
    "json": Form(lambda answer, _: locate_to_dict(answer), located_json),
    "text": as_text(lambda answer, _: locate_to_text(answer), located_text),
}
STATUS_FORMS = {
    "json": Form(lambda report, _: status_to_dict(report)),
    "text": Form(lambda report, asked: {"text": status_to_text(report, asked.verbose), "exists": report.exists}),
}
SOURCE_FORMS = {"json": Form(lambda text, _: source_to_dict(text))}
HITS_FORMS = {"json": Form(lambda hits, _: hits_to_dict(hits))}
REINDEX_FORMS = {"json": Form(lambda done, _: {"format_version": 1, **report_to_dict(done[0]), "filling": done[1]})}
LLMS_TXT_FORMS = {"json": Form(lambda text, _: {"text": text})}


def search(served: Served, request: SearchRequest, form: Form) -> JsonObject:
    """The repository's answer, or its dependencies' at the versions installed, held to its budget as printed."""
    assert form.piece is not None
    assert form.printed is not None
    printed = form.printed
    response = fit_printed(
        served.scoped.search(request),
        lambda answer: printed(answer, request),
        form.piece,
        served.kb.model.count_tokens,
    )
    return form.sent(response, request)


def locate(served: Served, request: LocateRequest, form: Form) -> JsonObject:
    """Where to change for an issue, as many files as the budget holds as printed."""
    assert form.piece is not None
    return form.sent(served.scoped.locate(request, printed=form.piece), request)


def source(served: Served, request: SourceRequest, form: Form) -> JsonObject:
    text = served.scoped.source(request)
    if len(text.lines) > MAX_SOURCE_LINES:
        raise KnowledgeError(f"{text.path}: {len(text.lines)} lines; ask for at most {MAX_SOURCE_LINES}")
    return form.sent(text, request)


def status(served: Served, request: StatusRequest, form: Form) -> JsonObject:
    return form.sent(served.kb.status(), request)


def docs_for_file(served: Served, request: DocsForFileRequest, form: Form) -> JsonObject:
    return form.sent(served.kb.docs_for_file(request.path), request)


def docs_for(served: Served, request: DocsForRequest, form: Form) -> JsonObject:
    return form.sent(served.kb.docs_for(request.target), request)


def reindex(served: Served, request: ReindexRequest, form: Form) -> JsonObject:
    kb = served.kb
    with served.reindex_lock:
        report = kb.reindex_all() if request.full else kb.reindex_changes(worktree=request.worktree)
    # as the CLI's reindex does: the chunks' vectors follow in a detached fill (child.py: the installed knowledge)
    filling = bool(report.chunks_pending) and kb.embed_in_background()
    return form.sent((report, filling), request)


def llms_txt(served: Served, request: LlmsTxtRequest, form: Form) -> JsonObject:
    return form.sent(served.kb.llms_txt()["llms.txt"], request)
