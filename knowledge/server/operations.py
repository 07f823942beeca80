"""Every operation the API serves, declared once: its name (its route: api/operations.route_of), its request (the
parameters' declaration, which validates them), its handler and the formats its answer is sent in
(server/answers.py), and its MCP tool. The HTTP server's and the daemon's routes (http.py), both backends' one call
(backend.py, client.py), the MCP tools (mcp.py) and `knowledge mcp --help` are made from this table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..api import request as asked
from ..api.operations import route_of
from ..api.request import Declared, required_fields
from ..errors import KnowledgeError
from ..records import LOCATE_SIGNALS, JsonObject
from . import answers
from .answers import Form


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    request: type[Declared]  # its parameters' one declaration (api/request.py: types, bounds, help)
    handler: Callable[[answers.Served, Any, Form], JsonObject]
    forms: Mapping[str, Form]  # the formats it answers in: "json" always; "text" where the CLI prints it
    tool: str = ""  # its MCP tool's name; "": not a tool
    doc: str = ""  # the tool's description
    writes: bool = False  # it changes the index (the tool's annotations say so)

    @property
    def route(self) -> str:
        return route_of(self.name)

    @property
    def takes_get(self) -> bool:
        """It changes nothing and its request holds with nothing asked (status, llms_txt): it may also be a GET
        without a body."""
        if self.writes or required_fields(self.request):
            return False
        try:
            self.request()
        except KnowledgeError:
            return False
        return True


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
    "`get_source`), and `confidence`: low when nothing the text names put the first file there, only its words and "
    "meaning. The question is not echoed; all of it fits the token budget. When the trace runs through a library the "
    'repository uses: `scope` "all" adds the installed dependencies the text points into (a frame or path inside '
    'one, its name), at the version installed, each file named by its source ("click==8.1.7:click/core.py"); `dep` '
    "asks one dependency."
)

OPERATIONS = (
    Operation("search", asked.SearchRequest, answers.search, answers.SEARCH_FORMS, "search", SEARCH_DOC),
    Operation("locate", asked.LocateRequest, answers.locate, answers.LOCATE_FORMS, "locate", LOCATE_DOC),
    Operation(
        "source", asked.SourceRequest, answers.source, answers.SOURCE_FORMS, "get_source",
        "Exact current lines of a repository file (1-based, inclusive), by path and range or by a result's id. "
        "A dependency's result is read by its id or its named path (`click==8.1.7:click/core.py`) at that version. "
        "Paths outside the repository are refused.",
    ),
    Operation(
        "status", asked.StatusRequest, answers.status, answers.STATUS_FORMS, "status",
        "The index: model, counts, the commit it reflects, files that changed since, skipped files.",
    ),
    Operation(
        "docs_for_file", asked.DocsForFileRequest, answers.docs_for_file, answers.HITS_FORMS, "docs_for_file",
        "Doc sections that mention a file path (or its name): metadata only, no embedding, cheap.",
    ),
    Operation(
        "docs_for", asked.DocsForRequest, answers.docs_for, answers.HITS_FORMS, "docs_for",
        "Doc sections that refer to code before you change it: `target` is a file path, `path:LINE` (the entity at "
        "that line) or a symbol (`KnowledgeBase.search`). Metadata only, no embedding, cheap.",
    ),
    Operation(
        "reindex", asked.ReindexRequest, answers.reindex, answers.REINDEX_FORMS, "reindex",
        "Bring the index up to date with the files: changes only, or a full rebuild with full=true (slow).",
        writes=True,
    ),
    Operation("llms_txt", asked.LlmsTxtRequest, answers.llms_txt, answers.LLMS_TXT_FORMS),
)  # fmt: skip
BY_NAME = {operation.name: operation for operation in OPERATIONS}
