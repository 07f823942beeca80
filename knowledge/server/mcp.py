"""`knowledge mcp`: MCP tools over a Backend (a warm local KnowledgeBase, or a remote `knowledge serve`).

Uses the official `mcp` SDK (v2's MCPServer); stdio by default, streamable HTTP with --http.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import KnowledgeError
from ..render.base import escaped_json
from ..request import LocateRequest, Request, SearchRequest, request_options
from .backend import Backend

KEYWORD = inspect.Parameter.KEYWORD_ONLY

if TYPE_CHECKING:
    from ..records import JsonObject

INSTRUCTIONS = """Search this repository's documentation by meaning. Start with `search`: results come ranked by
cosine similarity, strong matches carry their text and weaker ones metadata only (path, section, line range), all
inside a token budget. Follow a metadata result with `get_source` for its exact lines. Given a task or an issue,
`locate` answers which files (and functions) to change, with the evidence for each. `docs_for` finds the doc
sections that refer to a file, a line's function or a symbol before you change it. Cite results as
path:line_start-line_end."""

SEARCH_DOC = """Find the doc sections and code that answer a natural-language question (or name), best first,
inside a token budget: everything returned, counted in the model's tokens, fits it. Results whose text does not fit
come back as metadata only (path and lines: follow them with `get_source`).
Returns the versioned JSON of `knowledge search --json`: results with score, path, section, line_start, line_end,
content (null when under the full-content threshold), tokens, plus tokens_used, budget and omitted."""


def _call(operation: Callable[[], JsonObject]) -> str:
    """JSON text of an operation; our errors become tool errors the agent can read (not opaque crashes)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return escaped_json(json.dumps(operation(), ensure_ascii=False))
    except KnowledgeError as exc:
        raise ToolError(str(exc)) from exc


LOCATE_DOC = """Where to change for an issue or task: give the text as filed (title, description, tracebacks, code; any
length). Returns the files most likely to need the change, best first, each with its evidence (frame: a traceback
frame; path: the text names the file or module; name: a symbol the text uses is defined there; message: a quoted
error message is written there; words; meaning; history: past commits like this text changed it) and its entities
(functions, classes, sections with their lines: follow them with `get_source`). The question is not echoed; all of
it fits the token budget."""


def _request_tool(
    answer: Callable[[JsonObject], JsonObject], request: type[Request], question: str, name: str
) -> Callable[..., str]:
    """A tool whose parameters and their descriptions are made from its request's one declaration."""
    from typing import Annotated, cast

    from pydantic import Field

    described = cast("Any", Annotated)  # built at run time from the declaration: a type checker cannot follow

    as_mcp: dict[type, Any] = {bool: bool, int: int | None, float: float | None, str: str, tuple: list[str] | None}
    parameters = [inspect.Parameter("query", KEYWORD, annotation=described[str, Field(description=question)])]
    for field_name, kind, option in request_options(request):
        if option.mcp:
            default = None if kind is tuple else request.__dataclass_fields__[field_name].default
            annotation = described[as_mcp[kind], Field(description=option.help)]
            parameters.append(inspect.Parameter(field_name, KEYWORD, default=default, annotation=annotation))

    def tool(**arguments: Any) -> str:  # noqa: ANN401 - JSON values, checked by the request
        return _call(lambda: answer({key: value for key, value in arguments.items() if value is not None}))

    tool.__name__ = name
    tool.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": str}
    return tool


def build_server(backend: Backend) -> Any:  # noqa: ANN401 - mcp.server.mcpserver.MCPServer
    """An MCPServer exposing search, locate, get_source, status, docs_for_file, docs_for and reindex over `backend`."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp_types import ToolAnnotations
    except ImportError as exc:
        raise KnowledgeError(
            f"knowledge mcp needs the MCP SDK ({exc}); fix: pip install 'mcp>=2.0,<3' "
            "(the `mcp` extra: pip install -e '.[mcp]' in a checkout, 'repo-knowledge[mcp]' from an index)"
        ) from exc

    from ..version import __version__

    server = MCPServer(name="knowledge", instructions=INSTRUCTIONS, version=__version__)
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    question = "What you want to know, in plain words or with identifiers."
    search = _request_tool(lambda params: backend.search(params), SearchRequest, question, "search")
    server.tool(name="search", description=SEARCH_DOC, annotations=read_only)(search)
    issue = "The issue or task text as filed: title, description, tracebacks, code."
    locate = _request_tool(lambda params: backend.locate(params), LocateRequest, issue, "locate")
    server.tool(name="locate", description=LOCATE_DOC, annotations=read_only)(locate)

    @server.tool(annotations=read_only)
    def get_source(
        path: str | None = None, start: int | None = None, end: int | None = None, id: str | None = None
    ) -> str:
        """Exact current lines of a repository file (1-based, inclusive), by path and range or by a result's id.

        Paths outside the repository are refused."""
        return _call(lambda: backend.source({"path": path, "start": start, "end": end, "id": id}))

    @server.tool(annotations=read_only)
    def status() -> str:
        """The index: model, counts, the commit it reflects, files that changed since, skipped files."""
        return _call(backend.status)

    @server.tool(annotations=read_only)
    def docs_for_file(path: str) -> str:
        """Doc sections that mention a file path (or its name): metadata only, no embedding, cheap."""
        return _call(lambda: backend.docs_for_file({"path": path}))

    @server.tool(annotations=read_only)
    def docs_for(target: str) -> str:
        """Doc sections that refer to code before you change it: `target` is a file path, `path:LINE` (the entity
        at that line) or a symbol (`KnowledgeBase.search`). Metadata only, no embedding, cheap."""
        return _call(lambda: backend.docs_for({"target": target}))

    @server.tool(
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        )
    )
    def reindex(full: bool = False) -> str:
        """Bring the index up to date with the files: changes only, or a full rebuild with full=true (slow)."""
        return _call(lambda: backend.reindex({"full": full}))

    @server.resource("knowledge://llms.txt", name="llms.txt", mime_type="text/markdown")
    def llms_txt() -> str:
        """The project's docs, one line each (llmstxt.org): title, path and what each is about, from front matter."""
        return str(backend.llms_txt()["text"])

    return server


def bearer_guard(app: Any, token: str) -> Any:  # noqa: ANN401 - ASGI applications
    """An ASGI wrapper that answers 401 to every HTTP request without the right bearer token (as `knowledge serve`)."""
    from .auth import bearer_ok

    async def guarded(scope: JsonObject, receive: Any, send: Any) -> None:  # noqa: ANN401
        if scope["type"] == "http":
            headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
            if not bearer_ok(headers.get("authorization"), token):
                body = b'{"error": "missing or wrong bearer token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def run_http(server: Any, host: str, port: int, token: str) -> None:  # noqa: ANN401 - mcp MCPServer
    """Streamable HTTP with the bearer check in front; the SDK's own Host/Origin guard stays behind it."""
    import uvicorn

    app = bearer_guard(server.streamable_http_app(host=host), token)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()


def run_stdio(server: Any) -> None:  # noqa: ANN401 - mcp MCPServer
    """Serve over stdio, each request line read through `_repaired` first: a lone surrogate escape (`"\\ud800"`, valid
    JSON, no UTF-8) makes the SDK's reader drop the line without a reply, so it arrives as U+FFFD instead."""
    import threading

    original = os.dup(0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)

    def pump() -> None:
        with os.fdopen(original, "rb") as source, os.fdopen(write_end, "wb") as sink:
            for line in source:
                sink.write(_repaired(line))
                sink.flush()

    threading.Thread(target=pump, name="knowledge-mcp-stdin", daemon=True).start()
    server.run("stdio")


def _repaired(line: bytes) -> bytes:
    """`line` as is, unless its JSON holds a lone surrogate: then the same message with each one as U+FFFD."""
    if b"\\ud" not in line.lower():
        return line
    try:
        message = json.loads(line)
        text = json.dumps(_without_surrogates(message), ensure_ascii=True)
    except (ValueError, RecursionError):
        # not JSON, or nested past Python's stack (5,000 deep killed this reader, and so the server): the line as is,
        # and the SDK's own parse answers it
        return line
    return text.encode("ascii") + b"\n"


def _without_surrogates(value: object) -> object:
    if isinstance(value, str):
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value
