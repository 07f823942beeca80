"""One request record for every frontend, resolved against the settings once."""

import pytest

from knowledge.api.request import SearchRequest
from knowledge.errors import KnowledgeError
from knowledge.kb import KnowledgeBase
from knowledge.server.backend import LocalBackend

from .conftest import HashingEmbedder, commit


def test_unasked_fields_stay_out_of_the_parameters():
    assert SearchRequest("hooks").to_params() == {"query": "hooks"}
    assert SearchRequest("hooks", k=3, expand=True).to_params() == {"query": "hooks", "k": 3, "expand": True}
    assert SearchRequest.from_params({"query": "hooks", "k": 3, "budget": None}) == SearchRequest("hooks", k=3)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"query": "x", "k": 0}, "k: expected an integer from 1 to 100"),
        ({"query": "x", "k": 4_000_000_000_000_000_000}, "k: expected an integer from 1 to 100"),
        ({"query": "x", "kind": ["docs"]}, "kind: "),
        ({"query": "x", "threshold": "high"}, "threshold: expected a number"),
        ({"query": "x", "limit": 3}, "unknown search parameter"),
        ({"query": "   "}, "the query is empty"),
        ({"query": "x" * 70_000}, "at most 64,000"),
        ({"query": "x", "expand": "yes"}, "expand: expected true or false"),
    ],
)
def test_bad_parameters_get_one_clear_error(params, message):
    with pytest.raises(KnowledgeError, match=message):
        SearchRequest.from_params(params)


def test_repository_setting_for_k_holds_over_the_api(git_repo):
    sections = "".join(f"## Part {n}\n\nhooks are installed in part {n}\n\n" for n in range(8))
    commit(git_repo, {"knowledge.toml": "k = 2\n", "docs/a.md": f"# Hooks\n\n{sections}"})
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    answer = LocalBackend(kb).call("search", SearchRequest("hooks installed", threshold=0))
    assert len(answer["results"]) == 2
    assert len(LocalBackend(kb).call("search", SearchRequest("hooks installed", threshold=0, k=5))["results"]) == 5


def test_filters_come_as_lists_and_are_bounded():
    request = SearchRequest.from_params(
        {"query": "x", "paths": ["src/**"], "exclude": ["tests/**"], "language": ["py"]}
    )
    assert (request.paths, request.exclude, request.language) == (("src/**",), ("tests/**",), ("py",))
    assert request.to_params()["paths"] == ["src/**"]
    assert SearchRequest.from_params(request.to_params()) == request
    with pytest.raises(KnowledgeError, match="paths: expected a list of non-empty strings"):
        SearchRequest.from_params({"query": "x", "paths": "src/**"})
    with pytest.raises(KnowledgeError, match="exclude: at most 20 entries"):
        SearchRequest.from_params({"query": "x", "exclude": ["a"] * 21})


def test_request_globs_have_the_settings_limits_and_run_in_linear_time():
    import time

    from knowledge.globs import glob_to_regex

    request = SearchRequest(query="q", paths=("**?" * 10,))
    started = time.monotonic()
    assert glob_to_regex(request.paths[0]).fullmatch("a/" * 5000 + "b")
    assert time.monotonic() - started < 1
    with pytest.raises(KnowledgeError, match="at most 200"):
        SearchRequest(query="q", exclude=("*" * 201,))


def test_one_declaration_makes_every_frontend():
    """Each SearchRequest option is a `knowledge search` flag, an MCP parameter (with its help) and, when marked
    warm, parsed by the launcher: nothing to add anywhere else."""
    import asyncio

    from knowledge.api.request import request_options
    from knowledge.cli.search import search_command
    from knowledge.launcher import warm_search_params
    from knowledge.server.mcp import build_server

    class Echo:
        def call(self, operation, request):
            return request.to_params()

    cli_flags = {flag for param in search_command.params for flag in getattr(param, "opts", ())}
    tools = asyncio.run(build_server(Echo()).list_tools())
    schema = next(tool for tool in tools if tool.name == "search").input_schema["properties"]
    for name, kind, option in request_options():
        assert set(option.flags) <= cli_flags, name
        assert (name in schema) == option.mcp, name
        if option.mcp:
            assert schema[name]["description"] == option.help
        if option.warm:
            flag = option.flags[-1]
            argv = ["search", "q", flag] + ([] if kind is bool else ["3" if kind is int else "docs"])
            assert name in warm_search_params(argv)[0], name


def test_a_text_option_refuses_a_value_that_is_not_text():
    """569400d: a free-text `str` option took any JSON value (a list, an object, a number)."""
    import pytest

    from knowledge.api.request import SearchRequest
    from knowledge.errors import KnowledgeError

    for bad in ([1, 2], {"a": 1}, 3):
        with pytest.raises(KnowledgeError, match=r"match: expected a string|match: .* is not one of"):
            SearchRequest.from_params({"query": "x", "match": bad})
    with pytest.raises(KnowledgeError, match="kind: expected a string"):
        SearchRequest.from_params({"query": "x", "kind": ["docs"]})


def test_a_str_option_refuses_anything_but_a_string_in_every_request():
    from knowledge.api.request import request_options, required_fields
    from knowledge.server.operations import BY_NAME, OPERATIONS

    def from_params(request, params):
        return request.from_params(params)

    requests = {operation.request for operation in OPERATIONS}
    checked = 0
    for request in requests:
        given = {name: "x" for name in required_fields(request)}
        for name, kind, _ in request_options(request):
            if kind is str:
                for wrong in (5, ["x"], {"a": 1}, True):
                    with pytest.raises(KnowledgeError, match=f"{name}: expected a"):
                        from_params(request, given | {name: wrong})
                checked += 1
    assert checked >= 6  # query twice, kind, match, path, id, target among them
    with pytest.raises(KnowledgeError, match="target: expected a non-empty string"):
        from_params(BY_NAME["docs_for"].request, {"target": "  "})
    with pytest.raises(KnowledgeError, match="end \\(3\\) is before start \\(9\\)"):
        from_params(BY_NAME["source"].request, {"path": "a.py", "start": 9, "end": 3})
    with pytest.raises(KnowledgeError, match="unknown reindex parameter"):
        from_params(BY_NAME["reindex"].request, {"everything": True})
