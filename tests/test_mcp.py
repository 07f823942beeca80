"""The MCP server over stdio, driven by the official SDK's own client, with the real MiniLM model."""

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from knowledge.fs import user_cache_dir
from knowledge.kb import KnowledgeBase

from .conftest import commit

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
            source = await session.call_tool("get_source", {"path": "docs/hooks.md", "start": 6, "end": 6})
            outside = await session.call_tool("get_source", {"path": "../../etc/passwd"})
            return tools, search, source, outside


def text_of(result):
    return "".join(part.text for part in result.content if getattr(part, "type", "") == "text")


def test_mcp_stdio_tools(git_repo, monkeypatch):
    home = os.environ.get("KNOWLEDGE_TEST_MODEL_HOME") or str(user_cache_dir())
    monkeypatch.setenv("KNOWLEDGE_HOME", home)
    monkeypatch.setenv("KNOWLEDGE_MODEL", "all-MiniLM-L6-v2")
    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    KnowledgeBase.open(git_repo).reindex_all()
    env = {"KNOWLEDGE_HOME": home, "KNOWLEDGE_MODEL": "all-MiniLM-L6-v2", "PATH": os.environ["PATH"]}
    tools, search, source, outside = asyncio.run(session_calls(git_repo, env))
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == {"search", "get_source", "status", "docs_for_file", "reindex"}
    assert by_name["search"].annotations.read_only_hint is True
    assert by_name["reindex"].annotations.read_only_hint is False
    assert "budget" in by_name["search"].description
    data = json.loads(text_of(search))
    assert data["format_version"] == 1
    assert data["results"][0]["path"] == "docs/hooks.md"
    assert json.loads(text_of(source))["lines"] == ["# Git hooks"]
    assert outside.is_error
    assert "outside the repository root" in text_of(outside)
