"""Docs that check themselves: references, drift (real git history), docs-for (CLI = HTTP = MCP) and findability."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.kb import KnowledgeBase
from knowledge.references import extract, from_front_matter
from knowledge.server.backend import LocalBackend
from knowledge.server.http import KnowledgeHTTPServer

from .conftest import HashingEmbedder, commit, git

ROOT = Path(__file__).parent.parent

APP = '''def load_config(path):
    """Read the settings."""
    return open(path).read()


def save(record):
    return record


def helper():
    return 1


def stable_fn():
    return 2
'''
GUIDE = """---
description: How the app loads, saves and helps.
---
# Guide

## Loading

Call `load_config` with a path.

## Saving

Records go through `save()`.

## Utilities

See [the utilities](../src/util.py).

## Helper

`helper()` returns one.

## Stable

`stable_fn` never changes.
"""


def open_kb(root):
    return KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder())


def head(root):
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()


def test_references_are_links_paths_symbols_and_front_matter():
    text = (
        "See [usage](../docs/usage.md#search) and [site](https://x.org), `knowledge/kb.py:40`, `KnowledgeBase.search`,"
        " `reindex_changes()`, `PATH`, `true` and `--json`.\n```\n`not_this` [nor](this.md)\n```\n"
    )
    assert extract(text, "guides/intro.md") == (
        "link:docs/usage.md",
        "path:knowledge/kb.py:40",
        "symbol:KnowledgeBase.search",
        "symbol:reindex_changes()",
    )
    assert from_front_matter({"files": ["src/app.py", "/etc/x"], "code": "lib/a.go"}) == (
        "link:src/app.py",
        "link:etc/x",
        "link:lib/a.go",
    )


@pytest.fixture
def drifted(git_repo):
    """Docs and code, then: a signature change, a rename, a move, and a change made together with its doc."""
    commit(git_repo, {"src/app.py": APP, "src/util.py": "def tidy():\n    return 0\n", "docs/guide.md": GUIDE}, "start")
    commits = {"start": head(git_repo)}
    commit(git_repo, {"src/app.py": APP.replace("load_config(path)", "load_config(path, strict=False)")}, "strict")
    commits["signature"] = head(git_repo)
    commit(git_repo, {"src/app.py": APP.replace("load_config(path)", "load_config(path, strict=False)")
                      .replace("def save(record)", "def store(record)")}, "rename save")  # fmt: skip
    commits["rename"] = head(git_repo)
    git(git_repo, "mv", "src/util.py", "src/tools.py")
    git(git_repo, "commit", "-qm", "move util")
    commits["move"] = head(git_repo)
    app = (git_repo / "src/app.py").read_text().replace("return 1", "return 1 + 0")
    commit(
        git_repo, {"src/app.py": app, "docs/guide.md": GUIDE.replace("returns one.", "returns one, plainly.")}, "tog"
    )
    commits["together"] = head(git_repo)
    return git_repo, commits


def by_section(items):
    return {item.section.rsplit(" > ", 1)[-1]: item for item in items}


def test_drift_names_each_change_with_its_commit(drifted):
    root, commits = drifted
    kb = open_kb(root)
    kb.reindex_all()
    items = by_section(kb.drift())
    assert set(items) == {"Loading", "Saving", "Utilities"}  # Helper moved with its code; Stable never changed
    loading = items["Loading"]
    assert loading.status == "changed"
    assert "signature changed" in loading.summary
    assert "strict=False" in loading.summary
    assert [c for c, _ in loading.commits] == [commits["signature"]]  # not the later commits to other functions
    assert items["Saving"].status == "broken"
    assert items["Saving"].summary == "`save` was renamed to `store`"
    assert [c for c, _ in items["Saving"].commits] == [commits["rename"]]
    assert items["Utilities"].status == "broken"
    assert items["Utilities"].summary == "src/util.py moved to src/tools.py"
    assert [c for c, _ in items["Utilities"].commits] == [commits["move"]]
    assert all(item.section_commit == commits["start"] for item in items.values())

    since = by_section(kb.drift(since=commits["rename"]))
    assert set(since) == {"Utilities"}  # only the move came after the rename

    result = CliRunner().invoke(cli, ["-C", str(root), "drift", "--json"], obj={"embedder_factory": None})
    assert result.exit_code == 1  # broken references: like lint
    data = json.loads(result.stdout)
    assert (data["broken"], data["changed"]) == (2, 1)
    hits = kb.search("load_config with a path", kind="docs", threshold=-1).results
    loading_hit = next(h for h in hits if h.section.endswith("Loading"))
    assert loading_hit.drift == loading.summary
    assert next(h for h in hits if h.section.endswith("Stable")).drift is None


def test_no_drift_when_docs_and_code_move_together(git_repo):
    commit(git_repo, {"src/app.py": APP, "src/util.py": "def tidy():\n    return 0\n", "docs/guide.md": GUIDE})
    commit(git_repo, {"src/app.py": APP.replace("def save(record)", "def store(record)"),
                      "docs/guide.md": GUIDE.replace("`save()`", "`store()`")})  # fmt: skip
    git(git_repo, "mv", "src/app.py", "src/main.py")
    commit(git_repo, {"docs/guide.md": GUIDE.replace("`save()`", "`store()`") + "\nCode: [main](../src/main.py).\n"})
    kb = open_kb(git_repo)
    kb.reindex_all()
    assert kb.drift() == []
    result = CliRunner().invoke(cli, ["-C", str(git_repo), "drift"], obj={"embedder_factory": None})
    assert result.exit_code == 0
    assert result.output.startswith("No drift")


def test_drift_survives_rebase_rename_and_delete(drifted):
    """After each git event the hooks handle, the incrementally updated index drifts exactly as a fresh one."""
    root, _ = drifted
    kb = open_kb(root)
    kb.reindex_all()

    def check():
        kb.reindex_changes()
        fresh = root.parent / "fresh"
        subprocess.run(["rm", "-rf", str(fresh)], check=True)
        subprocess.run(["git", "clone", "-q", str(root), str(fresh)], check=True)
        other = open_kb(fresh)
        other.reindex_all()
        keyed = [(i.path, i.section, i.reference, i.status, i.summary, i.commits) for i in kb.drift()]
        assert keyed == [(i.path, i.section, i.reference, i.status, i.summary, i.commits) for i in other.drift()]
        return keyed

    git(root, "mv", "docs/guide.md", "docs/manual.md")
    git(root, "commit", "-qm", "rename the guide")
    assert {k[0] for k in check()} == {"docs/manual.md"}
    git(root, "checkout", "-q", "-b", "topic", "HEAD~1")
    commit(root, {"src/extra.py": "def extra():\n    return 3\n"}, "extra")
    git(root, "rebase", "-q", "main")
    assert any(k[1].endswith("Saving") for k in check())
    git(root, "rm", "-q", "src/app.py")
    git(root, "commit", "-qm", "delete app")
    keyed = check()
    assert any(k[3] == "broken" and "load_config" in k[4] for k in keyed)


def _serve(kb):
    httpd = KnowledgeHTTPServer(("127.0.0.1", 0), LocalBackend(kb), "t0ken-for-tests-0123456789")
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def _http(httpd, body):
    import urllib.request

    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1/docs-for"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Authorization", "Bearer t0ken-for-tests-0123456789")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


async def _mcp(repo, targets):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {"PATH": os.environ["PATH"], "KNOWLEDGE_HOME": os.environ["KNOWLEDGE_HOME"]}
    params = StdioServerParameters(command=sys.executable, args=["-m", "knowledge", "-C", str(repo), "mcp"], env=env)
    out = []
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for target in targets:
                result = await session.call_tool("docs_for", {"target": target})
                out.append(json.loads("".join(p.text for p in result.content if getattr(p, "type", "") == "text")))
    return out


def test_docs_for_by_symbol_and_line_on_the_project_itself(tmp_path):
    project = tmp_path / "project"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(project)], check=True)
    kb = open_kb(project)
    kb.reindex_all(embed=False)
    line = next(n for n, text in enumerate((project / "knowledge/kb.py").read_text().split("\n"), 1)
                if "def reindex_changes(" in text)  # fmt: skip
    targets = ["KnowledgeBase.search", f"knowledge/kb.py:{line}", "knowledge/kb.py"]
    cli_answers = []
    for target in targets:
        result = CliRunner().invoke(cli, ["-C", str(project), "docs-for", target, "--json"], obj={})
        assert result.exit_code == 0, result.output
        cli_answers.append(json.loads(result.stdout))
    by_symbol, by_line, by_file = ([h["reference"] for h in a["results"]] for a in cli_answers)
    assert "symbol:KnowledgeBase.search" in by_symbol
    assert any(r.endswith("reindex_changes") for r in by_line)
    assert "symbol:KnowledgeBase.search" in by_file
    assert "symbol:status" not in by_file  # the command's name, not KnowledgeBase.status
    httpd = _serve(kb)
    try:
        assert [_http(httpd, {"target": t}) for t in targets] == cli_answers
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert asyncio.run(_mcp(project, targets)) == cli_answers


def test_findability_lists_planted_duplicates(git_repo):
    topics = ["hooks git commit", "token budget", "vector index", "model weights", "server token", "json output",
              "config precedence", "secret redaction", "branch switch", "call graph"]  # fmt: skip
    files = {}
    for n, topic in enumerate(topics):
        words = " ".join(f"{w}{n}" for w in topic.split())
        files[f"docs/d{n}.md"] = (
            f"---\ndescription: {words} explained\n---\n# Doc {n}\n\n## {words}\n\nAll about {words}.\n"
        )
    files["docs/copy0.md"] = files["docs/d0.md"].replace("# Doc 0", "# Copy 0")
    files["docs/copy3.md"] = files["docs/d3.md"].replace("# Doc 3", "# Copy 3")
    commit(git_repo, files)
    kb = open_kb(git_repo)
    kb.reindex_all()
    report = kb.findability()
    lost = {p.doc: p for p in report.lost}
    assert {"docs/d0.md", "docs/copy0.md"} & set(lost)
    assert {"docs/d3.md", "docs/copy3.md"} & set(lost)
    planted = {"docs/d0.md", "docs/copy0.md", "docs/d3.md", "docs/copy3.md"}
    assert set(lost) <= planted
    for doc, probe in lost.items():
        twin = {"docs/d0.md": "docs/copy0.md", "docs/copy0.md": "docs/d0.md", "docs/d3.md": "docs/copy3.md"}.get(
            doc, "docs/d3.md"
        )
        assert twin in probe.outranked_by
    assert report.description.queries == 12
    assert report.description.recall_at_5 == 1.0
    result = CliRunner().invoke(
        cli, ["-C", str(git_repo), "eval", "--json"], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["description"]["recall_at_1"] == report.description.recall_at_1


def test_drift_shows_each_commit_as_its_first_line(git_repo):
    commit(git_repo, {"src/app.py": APP, "src/util.py": "def tidy():\n    return 0\n", "docs/guide.md": GUIDE})
    message = "Loading takes strict\nwhich a second line explains without a blank line\n\nand a body " + "x " * 80
    commit(git_repo, {"src/app.py": APP.replace("load_config(path)", "load_config(path, strict=False)")}, message)
    kb = open_kb(git_repo)
    kb.reindex_all()
    loading = by_section(kb.drift())["Loading"]
    assert [subject for _, subject in loading.commits] == ["Loading takes strict"]
    shown = CliRunner().invoke(cli, ["-C", str(git_repo), "drift"], obj={"embedder_factory": None}).output
    assert "Loading takes strict\n" in shown
    assert "second line" not in shown
    assert "body" not in shown


def test_drift_annotates_the_doc_lines_for_github_and_sarif(drifted):
    root, _ = drifted
    indexed = CliRunner().invoke(
        cli, ["-C", str(root), "reindex-all", "--no-vectors"], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    assert indexed.exit_code == 0, indexed.output
    assert open_kb(root).status().dense_coverage == 0  # CI needs no vectors for drift
    github = CliRunner().invoke(cli, ["-C", str(root), "drift", "--format", "github"], obj={"embedder_factory": None})
    assert github.exit_code == 1
    lines = github.output.splitlines()
    saving = next(line for line in lines if "renamed" in line)
    item = by_section(open_kb(root).drift())["Saving"]
    assert saving.startswith(f"::error file=docs/guide.md,line={item.line_start},endLine={item.line_end},title=")
    assert saving.endswith("::`save` was renamed to `store`")
    assert any(line.startswith("::warning file=docs/guide.md,line=") for line in lines)  # code changed after its doc
    sarif = json.loads(
        CliRunner().invoke(cli, ["-C", str(root), "drift", "--format", "sarif"], obj={"embedder_factory": None}).stdout
    )
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"broken-reference", "changed-reference"}
    located = next(r for r in results if "renamed" in r["message"]["text"])["locations"][0]["physicalLocation"]
    assert located == {
        "artifactLocation": {"uri": "docs/guide.md"},
        "region": {"startLine": item.line_start, "endLine": item.line_end},
    }


def test_drift_in_a_repository_with_no_index_and_no_model_reads_the_files(git_repo, monkeypatch):
    """What the knowledge-drift pre-commit hook does in anyone's repository: no index is built, no model is needed
    (chunk sizes are estimated), and the answer is the one an index gives."""
    from knowledge.errors import ModelUnavailableError
    from knowledge.model_access import ModelAccess

    commit(
        git_repo,
        {
            "docs/a.md": "---\ndescription: a\n---\n# A\n\nSee [the parser](../src/parser.py) and `parse_config`.\n",
            "src/parser.py": "def parse_config(p):\n    return p\n",
        },
    )
    git(git_repo, "rm", "-q", "src/parser.py")
    git(git_repo, "commit", "-qm", "parser gone")

    def no_model(self):
        raise ModelUnavailableError("no weights installed")

    monkeypatch.setattr(ModelAccess, "counter", no_model)
    unindexed = KnowledgeBase.open(git_repo).drift()
    assert not (git_repo / ".knowledge").exists()
    assert {(item.path, item.status) for item in unindexed} == {("docs/a.md", "broken")}
    assert any("src/parser.py was deleted" in item.summary for item in unindexed)
    monkeypatch.undo()
    indexed = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    indexed.reindex_all(embed=False)
    assert [(i.path, i.status, i.summary) for i in indexed.drift()] == [
        (i.path, i.status, i.summary) for i in unindexed
    ]


def test_a_changelog_is_history_apart_and_fails_nothing_unless_asked(drifted, monkeypatch):
    """CHANGES.md names the API as it was (`save`, renamed since): listed apart, exit 0 by default; the setting
    `drift_changelogs` makes it fail again. A doc section that names `save` still fails."""
    root, _ = drifted
    changes = "# Changes\n\n## 1.2.0\n\n- `load_config` reads [the utilities](src/util.py).\n"
    guide = GUIDE.replace("Records go through `save()`.", "").replace("See [the utilities](../src/util.py).", "")
    commit(root, {"CHANGES.md": changes, "docs/guide.md": guide})
    kb = open_kb(root)
    kb.reindex_all()
    items = kb.drift()
    history = [item for item in items if item.history]
    assert {item.path for item in history} == {"CHANGES.md"}
    assert not any(item.status == "broken" for item in items if not item.history)
    run = CliRunner().invoke(cli, ["-C", str(root), "drift"], obj={"embedder_factory": None})
    assert run.exit_code == 0, run.output
    assert "history (changelogs name old APIs by design; they fail nothing):" in run.output
    data = json.loads(CliRunner().invoke(cli, ["-C", str(root), "drift", "--json"]).stdout)
    assert data["history"] == len(history)
    assert data["broken"] == 0
    monkeypatch.setenv("KNOWLEDGE_DRIFT_CHANGELOGS", "true")
    assert CliRunner().invoke(cli, ["-C", str(root), "drift"]).exit_code == 1


def test_a_label_link_is_no_broken_file_and_a_part_that_starts_in_a_code_block_keeps_its_references(git_repo):
    from knowledge.references import in_fence

    body = "# Guide\n\n## Use\n\n```python\nx = 1\n```\n\nSee `~pkg.mod.Thing` and [filtering](filtering).\n"
    lines = body.split("\n")
    assert in_fence(lines[:5])  # after the opening fence
    assert extract("x = 1\n```\n\nSee {class}`~pkg.mod.Thing`.", "docs/g.md", fenced=True) == ("symbol:pkg.mod.Thing",)
    commit(git_repo, {"docs/g.md": body, "src/pkg/mod.py": "class Thing:\n    pass\n", "LICENSE.md": "MIT\n"})
    kb = open_kb(git_repo)
    kb.reindex_all()
    assert kb.drift() == []  # `filtering` is a MyST label, never a file
    hits = kb.docs_for("Thing")
    assert [h.path for h in hits] == ["docs/g.md"]  # `pkg.mod.Thing` names src/pkg/mod.py's Thing


def test_docs_for_finds_the_section_that_documents_a_function_by_what_it_does(git_repo):
    """No doc names `resolve_envvar_value`; the section about values from environment variables documents it: found
    by meaning (its name in words and its docstring's first sentence), tied by `about: …`."""
    docs = {
        "docs/options.md": "---\ndescription: Options.\n---\n# Options\n\n## Values from environment variables\n\n"
        "An option takes its value from an environment variable when the command line leaves it out.\n\n"
        "## Prompting\n\nAn option can prompt the user for input.\n",
        "src/core.py": 'class Option:\n    def resolve_envvar_value(self, ctx):\n        """Find the value in the '
        'environment variable named by the option."""\n        return ctx\n',
    }
    commit(git_repo, docs)
    kb = open_kb(git_repo)
    kb.reindex_all()
    hits = kb.docs_for("src/core.py:3")
    assert hits[0].section == "Options > Values from environment variables"
    assert hits[0].reference.startswith("about: resolve envvar value: Find the value in the environment variable")
    assert kb.docs_for("src/core.py") == []  # a whole file is asked by its references only


def test_docs_for_a_long_method_no_doc_names_falls_back_to_meaning(git_repo):
    """569400d: `docs-for Config.load` answered "No doc section refers to it" for a method long enough to be split
    in parts (two entities by that name, so no search by meaning), where usage.md promises the fallback."""
    steps = "\n".join(f"        self.value_{n} = read_setting('{n}')" for n in range(80))
    commit(
        git_repo,
        {
            "app/config.py": "class Config:\n    def load(self):\n"
            '        """Read the settings file into the config."""\n'
            f"{steps}\n        return self\n",
            "docs/settings.md": "---\ndescription: settings\n---\n# Settings\n\n## Reading the settings file\n\n"
            "The config reads the settings file when it loads.\n",
        },
    )
    kb = open_kb(git_repo)
    kb.reindex_all()
    assert len([c for c in kb.index("code").store.chunks_of_path("app/config.py") if c.symbol == "load"]) > 1
    found = kb.docs_for("Config.load")
    assert found
    assert found[0].path == "docs/settings.md"
    assert found[0].reference.startswith("about: load")


def test_drift_runs_no_textconv_or_filter_driver_the_repository_configures(drifted, tmp_path):
    """Security round four: `git blame` (and a diff's numstat) ran a textconv driver the repository's config named."""
    root, _ = drifted
    marker = tmp_path / "ran"
    driver = f"touch {marker} && cat"
    (root / ".gitattributes").write_text("* diff=conv filter=conv\n")
    git(root, "config", "diff.conv.textconv", driver)
    git(root, "config", "filter.conv.clean", driver)
    git(root, "config", "filter.conv.smudge", driver)
    git(root, "add", ".gitattributes")
    marker.unlink(missing_ok=True)  # `git add` itself runs the clean filter: only what knowledge runs counts
    git(root, "commit", "-qm", "attributes")
    marker.unlink(missing_ok=True)
    kb = open_kb(root)
    kb.reindex_all()
    assert by_section(kb.drift())
    result = CliRunner().invoke(cli, ["-C", str(root), "drift", "--json"], obj={"embedder_factory": None})
    assert result.exit_code in (0, 1), result.output
    assert not marker.exists()
