"""The MCP server over stdio, driven by the official SDK's own client, with the real MiniLM model."""

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from knowledge.kb import KnowledgeBase

from .conftest import commit, model_home

pytestmark = pytest.mark.model
FIXTURES = Path(__file__).parent / "fixtures" / "docs"


async def session_calls(repo: Path, env: dict[str, str]):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "knowledge", "-C", str(repo), "mcp"], env=env)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            search = await session.call_tool("search", {"query": "how do I install the git hook", "k": 3})
            issue = "The git hook is not installed\n\nRunning `knowledge hooks install` leaves no hook behind."
            located = await session.call_tool("locate", {"query": issue, "k": 2, "budget": 300})
            source = await session.call_tool("get_source", {"path": "docs/hooks.md", "start": 6, "end": 6})
            outside = await session.call_tool("get_source", {"path": "../../etc/passwd"})
            resources = await session.list_resources()
            llms = await session.read_resource("knowledge://llms.txt")
            return tools, search, located, source, outside, resources, llms


def text_of(result):
    return "".join(part.text for part in result.content if getattr(part, "type", "") == "text")


def test_mcp_stdio_tools(git_repo, monkeypatch):
    home = str(model_home())
    monkeypatch.setenv("KNOWLEDGE_HOME", home)
    monkeypatch.setenv("KNOWLEDGE_MODEL", "all-MiniLM-L6-v2")
    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    KnowledgeBase.open(git_repo).reindex_all()
    env = {"KNOWLEDGE_HOME": home, "KNOWLEDGE_MODEL": "all-MiniLM-L6-v2", "PATH": os.environ["PATH"]}
    tools, search, located, source, outside, resources, llms = asyncio.run(session_calls(git_repo, env))
    assert [str(r.uri) for r in resources.resources] == ["knowledge://llms.txt"]
    assert "- [Git hooks](docs/hooks.md): " in llms.contents[0].text
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == {"search", "locate", "get_source", "status", "docs_for_file", "docs_for", "reindex"}
    assert {"query", "k", "budget", "paths", "exclude"} <= set(by_name["locate"].input_schema["properties"])
    answer = json.loads(text_of(located))
    assert answer["files"][0]["path"] == "docs/hooks.md"
    assert answer["tokens_used"] <= 300
    assert "query" not in answer
    assert by_name["search"].annotations.read_only_hint is True
    assert by_name["reindex"].annotations.read_only_hint is False
    assert "budget" in by_name["search"].description
    data = json.loads(text_of(search))
    assert data["format_version"] == 2
    assert search.structured_content == data  # the object itself, as documented (not {"result": "<its JSON>"})
    assert located.structured_content == answer
    assert by_name["search"].output_schema["type"] == "object"
    assert data["results"][0]["path"] == "docs/hooks.md"
    assert json.loads(text_of(source))["lines"] == ["# Git hooks"]
    assert outside.is_error
    assert "outside the repository root" in text_of(outside)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_mcp_over_http_refuses_requests_without_the_token(git_repo, tmp_path):
    import subprocess
    import time
    import urllib.error
    import urllib.request

    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    token = "mcp-test-token-0123456789"
    env = {
        **os.environ,
        "KNOWLEDGE_HOME": str(model_home()),
        "KNOWLEDGE_MODEL": "all-MiniLM-L6-v2",
        "KNOWLEDGE_TOKEN": token,
    }
    without = {k: v for k, v in env.items() if k != "KNOWLEDGE_TOKEN"}
    refused = subprocess.run(
        [sys.executable, "-m", "knowledge", "-C", str(git_repo), "mcp", "--http"],
        env=without,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    assert "needs a token" in refused.stderr
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "knowledge", "-C", str(git_repo), "mcp", "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}}

    def post(body, headers):
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/mcp",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status = post(initialize, {})
                break
            except OSError:
                assert time.monotonic() < deadline, "mcp --http did not start"
                time.sleep(0.2)
        assert status == 401
        assert post(call, {}) == 401
        assert post(initialize, {"Authorization": "Bearer wrong-token-0123456789"}) == 401
        assert post(initialize, {"Authorization": f"Bearer {token}"}) == 200
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_help_names_every_tool_the_server_serves():
    """Issue 69: `knowledge mcp --help` named five tools and omitted `locate` and `docs_for`, which it serves."""
    from click.testing import CliRunner

    from knowledge.cli import cli
    from knowledge.server.operations import OPERATIONS

    tools = [op.tool for op in OPERATIONS if op.tool]
    shown = " ".join(CliRunner().invoke(cli, ["mcp", "--help"], terminal_width=400).output.split())
    assert f"with the tools {', '.join(tools)}." in shown
    assert {"locate", "docs_for"} <= set(tools)
