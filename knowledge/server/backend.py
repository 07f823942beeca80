"""The operations every frontend serves (HTTP, MCP, remote CLI), as JSON-ready dicts in the `--json` schema.

LocalBackend answers from a warm KnowledgeBase; knowledge.client.RemoteBackend forwards the same calls over HTTP.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from ..api.request import (
    DocsForFileRequest,
    DocsForRequest,
    LocateRequest,
    ReindexRequest,
    SearchRequest,
    SourceRequest,
    StatusTextRequest,
    from_params,
)
from ..budget import fit_printed
from ..dependency_kbs import ScopedSearch
from ..errors import KnowledgeError
from ..kb import KnowledgeBase
from ..records import SearchResponse
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
from ..render.locate import locate_to_dict, locate_to_text, located_text

if TYPE_CHECKING:
    from ..records import JsonObject

MAX_SOURCE_LINES = 5_000


class Backend(Protocol):
    def search(self, params: JsonObject) -> JsonObject: ...

    def search_text(self, params: JsonObject) -> JsonObject: ...

    def locate(self, params: JsonObject) -> JsonObject: ...

    def locate_text(self, params: JsonObject) -> JsonObject: ...

    def source(self, params: JsonObject) -> JsonObject: ...

    def status(self) -> JsonObject: ...

    def status_text(self, params: JsonObject) -> JsonObject: ...

    def docs_for_file(self, params: JsonObject) -> JsonObject: ...

    def docs_for(self, params: JsonObject) -> JsonObject: ...

    def reindex(self, params: JsonObject) -> JsonObject: ...

    def llms_txt(self) -> JsonObject: ...


class LocalBackend:
    """Serves one KnowledgeBase; the embedder is loaded once and shared by all threads."""

    def __init__(self, kb: KnowledgeBase, warm: bool = True) -> None:
        """`warm`: a long-running process keeps in memory what makes later queries faster (not worth it for one)."""
        self.kb = kb
        if warm:
            kb.keep_warm()
        self._reindex_lock = threading.Lock()
        self._scoped = ScopedSearch(kb)

    def search(self, params: JsonObject) -> JsonObject:
        """The JSON answer, held to its budget as printed (the widest JSON form: `search --json`'s)."""
        response = self._answer(SearchRequest.from_params(params))
        return search_to_dict(fit_printed(response, search_json, hit_json, self.kb.model.count_tokens))

    def search_text(self, params: JsonObject) -> JsonObject:
        """What `knowledge search` prints, held to its budget as printed, so a warm CLI call needs neither click nor
        the records to print it."""
        request = SearchRequest.from_params(params)

        def printed(response: SearchResponse) -> str:
            return response_to_text(response, request.files_only, request.exact)

        response = fit_printed(self._answer(request), printed, hit_text, self.kb.model.count_tokens)
        return {"text": printed(response)}

    def _answer(self, request: SearchRequest) -> SearchResponse:
        """The repository's answer, or its dependencies' at the versions installed (`dep`, `scope`), each naming its
        source."""
        return self._scoped.search(request)

    def locate(self, params: JsonObject) -> JsonObject:
        """Where to change for an issue: the `locate --json` answer, held to its budget as printed."""
        return locate_to_dict(self._scoped.locate(LocateRequest.from_params(params)))

    def locate_text(self, params: JsonObject) -> JsonObject:
        response = self._scoped.locate(LocateRequest.from_params(params), printed=located_text)
        return {"text": locate_to_text(response)}

    def source(self, params: JsonObject) -> JsonObject:
        text = self._scoped.source(from_params(SourceRequest, params))
        if len(text.lines) > MAX_SOURCE_LINES:
            raise KnowledgeError(f"{text.path}: {len(text.lines)} lines; ask for at most {MAX_SOURCE_LINES}")
        return source_to_dict(text)

    def status(self) -> JsonObject:
        return status_to_dict(self.kb.status())

    def status_text(self, params: JsonObject) -> JsonObject:
        """What `knowledge status` prints, rendered here (no trip through its JSON form), and whether an index
        exists (the command's exit status)."""
        report = self.kb.status()
        return {"text": status_to_text(report, from_params(StatusTextRequest, params).verbose), "exists": report.exists}

    def docs_for_file(self, params: JsonObject) -> JsonObject:
        return hits_to_dict(self.kb.docs_for_file(from_params(DocsForFileRequest, params).path))

    def docs_for(self, params: JsonObject) -> JsonObject:
        return hits_to_dict(self.kb.docs_for(from_params(DocsForRequest, params).target))

    def llms_txt(self) -> JsonObject:
        return {"text": self.kb.llms_txt()["llms.txt"]}

    def reindex(self, params: JsonObject) -> JsonObject:
        request = from_params(ReindexRequest, params)
        with self._reindex_lock:
            report = self.kb.reindex_all() if request.full else self.kb.reindex_changes(worktree=request.worktree)
        # as the CLI's reindex does: the chunks' vectors follow in a detached fill (child.py: the installed knowledge)
        filling = bool(report.chunks_pending) and self.kb.embed_in_background()
        return {"format_version": 1, **report_to_dict(report), "filling": filling}
