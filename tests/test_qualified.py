"""Qualified names as a query form: `Command.invoke`, `Framework::Helpers`, `net::Socket::close`,
`App\\Session\\Store` answer with the definition their qualifiers name, among others of the same last name, through
the CLI and the HTTP backend alike."""

import json

import pytest
from click.testing import CliRunner

from knowledge.api.request import SearchRequest
from knowledge.cli import cli
from knowledge.kb import KnowledgeBase
from knowledge.ranking.query import asked_names, qualified_names
from knowledge.server.backend import LocalBackend

from .conftest import HashingEmbedder, commit

FILES = {
    # three `invoke` methods, as in a CLI library: the asked one is neither first in the file nor alone
    "src/cli/core.py": (
        "class Context:\n    def invoke(self, callback):\n        return callback(self)\n\n\n"
        "class Command:\n    def invoke(self, ctx):\n        return ctx.invoke(self.callback)\n"
    ),
    "src/cli/testing.py": "class CliRunner:\n    def invoke(self, cli, args):\n        return cli.main(args)\n",
    "src/cli/other.py": "class Command:\n    def run(self):\n        return 1\n",
    # two nested Ruby `Helpers` modules
    "lib/framework/base.rb": (
        "module Framework\n  module Helpers\n    def escape_html(text)\n      text\n    end\n  end\nend\n"
    ),
    "lib/widgets/helpers.rb": (
        "module Widgets\n  module Helpers\n    def render_widget(w)\n      w\n    end\n  end\nend\n"
    ),
    # two C++ `close` methods in two namespaces
    "src/net/socket.cpp": (
        "namespace net {\nclass Socket {\n public:\n  void close() {\n    fd_ = -1;\n  }\n  int fd_;\n};\n}\n"
    ),
    "src/io/file.cpp": (
        "namespace io {\nclass File {\n public:\n  void close() {\n    handle_ = 0;\n  }\n  int handle_;\n};\n}\n"
    ),
    # a class exported through a macro, as C++ libraries declare them, beside another `log`
    "include/mylib/logger.h": (
        "#pragma once\n#include <string>\nnamespace mylib {\nclass MYLIB_API logger {\npublic:\n"
        "  explicit logger(std::string name) : name_(name) {}\n  void log(int level) {\n    last_ = level;\n  }\n"
        "private:\n  std::string name_;\n  int last_;\n};\n}\n"
    ),
    "include/mylib/sink.h": "#pragma once\nnamespace mylib {\nclass sink {\npublic:\n  void log(int level) {}\n};\n}\n",
    # two PHP `Store` classes in two namespaces
    "src/Cache/Store.php": (
        "<?php\nnamespace App\\Cache;\n\nclass Store\n{\n    public function get($key) { return null; }\n}\n"
    ),
    "src/Session/Store.php": (
        "<?php\nnamespace App\\Session;\n\nclass Store\n{\n    public function start() { return true; }\n}\n"
    ),
}


@pytest.fixture
def kb(git_repo):
    commit(git_repo, FILES)
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    return kb


@pytest.mark.parametrize(
    ("query", "path", "symbol"),
    [
        ("Command.invoke", "src/cli/core.py", "invoke"),
        ("Context.invoke", "src/cli/core.py", "invoke"),
        ("CliRunner.invoke", "src/cli/testing.py", "invoke"),
        ("core.Command", "src/cli/core.py", "Command"),  # a module qualifier narrows to the file
        ("other.Command", "src/cli/other.py", "Command"),
        ("Framework::Helpers", "lib/framework/base.rb", "Helpers"),
        ("Widgets::Helpers", "lib/widgets/helpers.rb", "Helpers"),
        ("net::Socket::close", "src/net/socket.cpp", "close"),
        ("io::File::close", "src/io/file.cpp", "close"),
        ("mylib::logger::log", "include/mylib/logger.h", "log"),  # `class MYLIB_API logger` is the class `logger`
        ("mylib::sink::log", "include/mylib/sink.h", "log"),
        ("App\\Session\\Store", "src/Session/Store.php", "Store"),  # `App` names no scope here: passed over
        ("App\\Cache\\Store", "src/Cache/Store.php", "Store"),
        ("where is `Command.invoke` defined", "src/cli/core.py", "invoke"),
    ],
)
def test_a_qualified_name_answers_with_the_definition_its_qualifiers_name(kb, query, path, symbol):
    top = kb.search(query, kind="code").results[0]
    assert (top.path, top.symbol) == (path, symbol)
    if query == "Command.invoke":
        assert top.parent == "Command"
        assert top.explain is None
        explained = kb.search(query, kind="code", explain=True).results
        assert explained[0].explain["rule_defines"] > max(h.explain["rule_defines"] for h in explained[1:])


def test_the_cli_and_http_answer_a_qualified_name_alike(kb):
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["-C", str(kb.root), "search", "Command.invoke", "--kind", "code", "--json"],
        obj={"embedder_factory": lambda s: HashingEmbedder()},
    )
    assert result.exit_code == 0, result.output
    on_cli = json.loads(result.stdout)["results"]
    assert (on_cli[0]["path"], on_cli[0]["parent"], on_cli[0]["symbol"]) == ("src/cli/core.py", "Command", "invoke")
    over_http = LocalBackend(kb).call("search", SearchRequest("Command.invoke", kind="code"))["results"]
    assert [h["id"] for h in json.loads(json.dumps(over_http))] == [h["id"] for h in on_cli]


def test_qualified_forms_are_read_in_every_spelling():
    assert qualified_names("Command.invoke") == {"invoke": [frozenset({"command"})]}
    assert qualified_names("Framework::Helpers") == {"helpers": [frozenset({"framework"})]}
    assert qualified_names("League\\Flysystem\\Filesystem") == {"filesystem": [frozenset({"league", "flysystem"})]}
    assert qualified_names("Foo.Bar#baz") == {"baz": [frozenset({"foo", "bar"})]}
    assert asked_names("fmt::format") == {"format"}
    # inside a topic `A::B` says what it is about, not which definition is wanted; a dotted name is asked, as it was
    assert asked_names("how fmt::format and fmt::print work") == set()
    assert asked_names("writes with std::make_unique") == {"makeunique"}  # a code-shaped part, as before
    assert asked_names("Same as attr.asdict, except that") == {"asdict"}
    assert qualified_names("how are routes registered") == {}


def test_exact_mode_answers_a_qualified_name_no_line_spells_with_the_definition_it_names(kb):
    helpers = kb.search("Framework::Helpers", exact=True).results
    assert [(h.path, h.match_line, h.symbol) for h in helpers] == [("lib/framework/base.rb", 2, "Helpers")]
    invoke = kb.search("Command.invoke", exact=True).results
    assert [(h.path, h.match_line, h.parent) for h in invoke] == [("src/cli/core.py", 7, "Command")]  # `def invoke`
    assert kb.search("Widgets::Nothing", exact=True).results == ()
    # where the name is written, exact mode is grep -w, line for line (docs/benchmarks.md §4d): its uses only
    commit(kb.root, {"src/cli/main.py": "def run(cmd, ctx):\n    return Command.invoke(cmd, ctx)\n"})
    kb.reindex_changes()
    assert [(h.path, h.match_line) for h in kb.search("Command.invoke", exact=True).results] == [("src/cli/main.py", 2)]


def test_a_private_name_asked_by_its_spelling_is_answered_by_its_definition(git_repo):
    """569400d: `Server._serve` ranked `Server.serve` first (names were compared without their underscores, so
    `_serve` and `serve` were one name)."""
    source = (
        "class Server:\n    def serve(self, sockets=None):\n        return self._serve(sockets)\n\n"
        "    def _serve(self, sockets=None):\n        self.startup(sockets)\n\n"
        "    def startup(self, sockets):\n        return sockets\n"
    )
    commit(git_repo, {"app/server.py": source})
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    for query, first in (
        ("Server._serve", "_serve"),
        ("_serve", "_serve"),
        ("Server.serve", "serve"),
        ("serve", "serve"),
    ):
        assert kb.search(query, kind="code", threshold=0).results[0].symbol == first, query
