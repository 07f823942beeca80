"""Every frontend reaches every operation from its one row (server/operations.py) and its request's declaration: the
HTTP server and the daemon (their routes), the remote client, the MCP tools (their parameters, descriptions and what
is required) and the CLI (its commands' options). A backend that records what it was asked stands behind each."""

import asyncio
import json
import threading

import pytest
from click.testing import CliRunner

from knowledge.api.request import request_options, required_fields
from knowledge.cli import cli
from knowledge.client import RemoteBackend
from knowledge.server.daemon import DaemonServer
from knowledge.server.daemon_client import request as daemon_request
from knowledge.server.daemon_client import socket_path
from knowledge.server.http import KnowledgeHTTPServer
from knowledge.server.mcp import build_server
from knowledge.server.operations import OPERATIONS

TOKEN = "t0ken-for-tests-0123456789"

# what each operation is asked with (its required fields) and the CLI command that asks it, where one does; the
# others have commands of their own that work on the index in place (reindex-*, llms-txt)
ASKED = {
    "search": ({"query": "hooks"}, ["search", "hooks", "-k", "3", "--json"]),
    "locate": ({"query": "hooks fail"}, ["locate", "hooks fail", "-k", "3", "--json"]),
    "source": ({"path": "docs/a.md"}, ["show", "docs/a.md:2-4", "--json"]),
    "status": ({}, ["status", "--json"]),
    "docs_for_file": ({"path": "docs/a.md"}, None),
    "docs_for": ({"target": "KnowledgeBase.search"}, ["docs-for", "KnowledgeBase.search", "--json"]),
    "reindex": ({}, None),
    "llms_txt": ({}, None),
}


class Recorder:
    """A backend that answers with what it was asked: the operation, the request's type and its parameters."""

    def __init__(self):
        self.asked = []

    def call(self, operation, request):
        self.asked.append((operation, type(request).__name__, request.to_params()))
        return {"operation": operation, "params": request.to_params()}


@pytest.fixture
def http(tmp_path):
    backend = Recorder()
    httpd = KnowledgeHTTPServer(("127.0.0.1", 0), backend, TOKEN)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", backend
    httpd.shutdown()
    httpd.server_close()


def test_the_table_asks_every_operation():
    assert set(ASKED) == {operation.name for operation in OPERATIONS}


def test_http_and_the_remote_client_reach_every_operation_at_its_route(http, monkeypatch):
    url, backend = http
    remote = RemoteBackend(url, TOKEN)
    for operation in OPERATIONS:
        params, _ = ASKED[operation.name]
        answer = remote.call(operation.name, operation.request.from_params(params))
        assert answer == {"operation": operation.name, "params": params}
        assert backend.asked[-1] == (operation.name, operation.request.__name__, params)


def test_the_daemon_reaches_every_operation_at_its_route(tmp_path):
    folder = tmp_path / ".knowledge"
    folder.mkdir(mode=0o700)
    backend = Recorder()
    server = DaemonServer(socket_path(folder), backend, idle_seconds=60)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for operation in OPERATIONS:
            params, _ = ASKED[operation.name]
            answer = daemon_request(folder, "POST", operation.route, params)
            assert answer == {"operation": operation.name, "params": params}
            assert backend.asked[-1][:2] == (operation.name, operation.request.__name__)
    finally:
        server.shutdown()
        server.server_close()


def test_every_tool_is_made_from_its_row_and_reaches_its_operation():
    backend = Recorder()
    server = build_server(backend)
    tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    assert set(tools) == {operation.tool for operation in OPERATIONS if operation.tool}
    for operation in OPERATIONS:
        if not operation.tool:
            continue
        schema = tools[operation.tool].input_schema
        declared = {name: option for name, _, option in request_options(operation.request) if option.mcp}
        assert set(schema.get("properties", {})) == set(declared), operation.name
        for name, option in declared.items():
            assert schema["properties"][name]["description"] == option.help, (operation.name, name)
        assert set(schema.get("required", [])) == required_fields(operation.request) & set(declared), operation.name
        params, _ = ASKED[operation.name]
        asyncio.run(server.call_tool(operation.tool, params))
        assert backend.asked[-1] == (operation.name, operation.request.__name__, params)


def test_the_cli_reaches_each_operation_it_asks_with_its_request(http, git_repo):
    """The CLI builds the request object from its options and sends it as that object would be sent."""
    url, backend = http
    for operation in OPERATIONS:
        params, argv = ASKED[operation.name]
        if argv is None:
            continue
        backend.asked.clear()
        CliRunner().invoke(
            cli, ["-C", str(git_repo), *argv, "--remote", url], env={"KNOWLEDGE_TOKEN": TOKEN}, catch_exceptions=True
        )
        assert backend.asked, operation.name
        name, request, sent = backend.asked[0]
        assert (name, request) == (operation.name, operation.request.__name__)
        assert {key: sent[key] for key in params} == params
        if "format" in operation.request.__dataclass_fields__:
            assert "format" not in sent  # --json: the default format, not sent
            CliRunner().invoke(cli, ["-C", str(git_repo), *argv[:-1], "--remote", url], env={"KNOWLEDGE_TOKEN": TOKEN})
            assert backend.asked[-1][2]["format"] == "text", operation.name
    assert json.dumps(backend.asked)  # everything the CLI sent is JSON
