"""Every operation the API serves, declared once: its name (the Backend method), HTTP method and route, its request
(the parameters' declaration, which also validates them) and its MCP tool. The HTTP server's routes (http.py), the
daemon's and the remote client's dispatch (resolve.py, client.py) and the MCP tools (mcp.py) are made from this
table. Standard library only: the launcher's warm path imports it."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import LOCATE_SIGNALS
from .request import (
    Declared,
    DocsForFileRequest,
    DocsForRequest,
    LocateRequest,
    ReindexRequest,
    SearchRequest,
    SourceRequest,
    StatusTextRequest,
)


@dataclass(frozen=True, slots=True)
class Operation:
    name: str  # the Backend method that answers it
    method: str  # GET: no parameters; POST: a JSON object of parameters
    route: str
    request: Declared | None = None  # its parameters' one declaration (api/request.py: types, bounds, help); None: none
    tool: str = ""  # its MCP tool's name; "": not a tool
    doc: str = ""  # the tool's description
    writes: bool = False  # it changes the index (the tool's annotations say so)


SEARCH_DOC = """Find the doc sections and code that answer a natural-language question (or name), best first,
inside a token budget: everything returned, counted in the model's tokens, fits it. Results whose text does not fit
come back as metadata only (path and lines: follow them with `get_source`).
Returns the versioned JSON of `knowledge search --json`: results with score, path, section, line_start, line_end,
content (null when under the full-content threshold), tokens, plus tokens_used, budget and omitted.
To ask how a library the repository uses works, at the version installed (not the one you remember): `dep` (one
dependency, e.g. "click"), `scope` "deps" (every installed dependency) or "all" (the repository and them); each such
result names its `source` ("click==8.1.7")."""

LOCATE_DOC = (
    "Where to change for an issue or task: give the text as filed (title, description, tracebacks, code; any "
    "length). Returns the files most likely to need the change, best first, each with its evidence ("
    + "; ".join(f"{signal.name}: {signal.says}" for signal in LOCATE_SIGNALS)
    + ") and its entities (functions, classes, sections, each with its whole line range: follow them with "
    "`get_source`). The question is not echoed; all of it fits the token budget."
)

OPERATIONS = (
    Operation("search", "POST", "/v1/search", SearchRequest, "search", SEARCH_DOC),
    Operation("search_text", "POST", "/v1/search-text", SearchRequest),
    Operation("locate", "POST", "/v1/locate", LocateRequest, "locate", LOCATE_DOC),
    Operation("locate_text", "POST", "/v1/locate-text", LocateRequest),
    Operation(
        "source", "POST", "/v1/source", SourceRequest, "get_source",
        "Exact current lines of a repository file (1-based, inclusive), by path and range or by a result's id. "
        "A dependency's result is read by its id or its named path (`click==8.1.7:click/core.py`) at that version. "
        "Paths outside the repository are refused.",
    ),
    Operation(
        "status", "GET", "/v1/status", None, "status",
        "The index: model, counts, the commit it reflects, files that changed since, skipped files.",
    ),
    Operation(
        "docs_for_file", "POST", "/v1/docs-for-file", DocsForFileRequest, "docs_for_file",
        "Doc sections that mention a file path (or its name): metadata only, no embedding, cheap.",
    ),
    Operation(
        "docs_for", "POST", "/v1/docs-for", DocsForRequest, "docs_for",
        "Doc sections that refer to code before you change it: `target` is a file path, `path:LINE` (the entity at "
        "that line) or a symbol (`KnowledgeBase.search`). Metadata only, no embedding, cheap.",
    ),
    Operation(
        "reindex", "POST", "/v1/reindex", ReindexRequest, "reindex",
        "Bring the index up to date with the files: changes only, or a full rebuild with full=true (slow).",
        writes=True,
    ),
    Operation("status_text", "POST", "/v1/status-text", StatusTextRequest),
    Operation("llms_txt", "GET", "/v1/llms-txt"),
)  # fmt: skip
BY_NAME = {operation.name: operation for operation in OPERATIONS}
