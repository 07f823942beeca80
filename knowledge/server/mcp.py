"""`knowledge mcp`: MCP tools over a Backend (a warm local KnowledgeBase, or a remote `knowledge serve`).

Uses the official `mcp` SDK (v2's MCPServer); stdio by default, streamable HTTP with --http.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..api.request import LlmsTxtRequest, request_options, required_fields
from ..errors import KnowledgeError
from .backend import Backend
from .operations import OPERATIONS, Operation

KEYWORD = inspect.Parameter.KEYWORD_ONLY

if TYPE_CHECKING:
    from ..records import JsonObject

INSTRUCTIONS = """Search this repository's documentation by meaning. Start with `search`: results come ranked by
cosine similarity, strong matches carry their text and weaker ones metadata only (path, section, line range), all
inside a token budget. Follow a metadata result with `get_source` for its exact lines. Given a task or an issue,
`locate` answers which files (and functions) to change, with the evidence for each. `docs_for` finds the doc
sections that refer to a file, a line's function or a symbol before you change it. Cite results as
path:line_start-line_end."""


def _call(operation: Callable[[], JsonObject]) -> JsonObject:
    """An operation's answer as the object its JSON schema documents (the tool's structured result, and its text the
    same JSON); a lone surrogate of an undecodable file name arrives as U+FFFD. Our errors become tool errors the
    agent can read (not opaque crashes)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        answer = _without_surrogates(operation())
    except KnowledgeError as exc:
        raise ToolError(str(exc)) from exc
    assert isinstance(answer, dict)
    return answer


def _tool(backend: Backend, operation: Operation) -> Callable[..., JsonObject]:
    """A tool whose parameters, their types and descriptions are made from its request's one declaration; the
    request validates what the agent sends, as for every frontend, and goes to the backend as the object it is."""
    from typing import Annotated, cast

    from pydantic import Field

    described = cast("Any", Annotated)  # built at run time from the declaration: a type checker cannot follow

    as_mcp: dict[type, Any] = {bool: bool, int: int, float: float, str: str, tuple: list[str]}
    request = operation.request
    parameters = []
    required = required_fields(request)
    for field_name, kind, option in request_options(request):
        if not option.mcp:
            continue
        default: Any = inspect.Parameter.empty
        if field_name in required:
            annotation = as_mcp[kind]
        else:
            default = None if kind is tuple else request.__dataclass_fields__[field_name].default
            annotation = as_mcp[kind] | None if default is None else as_mcp[kind]
        described_as = described[annotation, Field(description=option.help)]
        parameters.append(inspect.Parameter(field_name, KEYWORD, default=default, annotation=described_as))

    def tool(**arguments: Any) -> JsonObject:  # noqa: ANN401 - JSON values, checked by the request
        asked = {key: value for key, value in arguments.items() if value is not None}
        return _call(lambda: backend.call(operation.name, request.from_params(asked)))

    tool.__name__ = operation.tool
    tool.__signature__ = inspect.Signature(parameters, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": dict[str, Any]}
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

    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    for operation in OPERATIONS:
        if operation.tool:
            annotations = writes if operation.writes else read_only
            server.tool(name=operation.tool, description=operation.doc, annotations=annotations)(
                _tool(backend, operation)
            )

    @server.resource("knowledge://llms.txt", name="llms.txt", mime_type="text/markdown")
    def llms_txt() -> str:
        """The project's docs, one line each (llmstxt.org): title, path and what each is about, from front matter."""
        return str(backend.call("llms_txt", LlmsTxtRequest())["text"])

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
