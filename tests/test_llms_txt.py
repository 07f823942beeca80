"""`knowledge llms-txt`: every doc with its description, llmstxt.org layout, `--check` for hooks, served over HTTP."""

import json
import threading
import urllib.request

from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.kb import KnowledgeBase

from .conftest import HashingEmbedder, commit

DOCS = {
    "README.md": "---\ndescription: A tool that answers questions about a repository.\n---\n# Acme\n\nHello.\n",
    "docs/usage.md": "---\ndescription: Every command with real output.\n---\n# Usage\n\nRun it.\n",
    "docs/api/http.md": "---\ntitle: HTTP API\ndescription: Routes and tokens.\n---\n# Routes\n\nGET /x\n",
    "docs/bare.md": "# Bare\n\nNo front matter.\n",
    "src/app.py": "def main():\n    return 1\n",
}
OBJ = {"embedder_factory": lambda s: HashingEmbedder()}


def run(root, *args):
    return CliRunner().invoke(cli, ["-C", str(root), *args], obj=OBJ)


def test_llms_txt_lists_every_doc_with_its_description_in_the_llmstxt_layout(git_repo):
    commit(git_repo, DOCS)
    result = run(git_repo, "llms-txt")
    assert result.exit_code == 0, result.output
    assert (git_repo / "llms.txt").read_text() == (
        "# Acme\n\n"
        "> A tool that answers questions about a repository.\n\n"
        "## Project\n\n"
        "- [Acme](README.md): A tool that answers questions about a repository.\n\n"
        "## docs\n\n"
        "- [Bare](docs/bare.md)\n"
        "- [Usage](docs/usage.md): Every command with real output.\n\n"
        "## docs/api\n\n"
        "- [HTTP API](docs/api/http.md): Routes and tokens.\n"
    )


def test_check_fails_when_a_description_changed_and_passes_after_regeneration(git_repo):
    commit(git_repo, DOCS)
    assert run(git_repo, "llms-txt").exit_code == 0
    commit(git_repo, {"llms.txt": (git_repo / "llms.txt").read_text()})
    assert run(git_repo, "llms-txt", "--check").exit_code == 0
    commit(git_repo, {"docs/usage.md": DOCS["docs/usage.md"].replace("Every command", "Each command")})
    stale = run(git_repo, "llms-txt", "--check")
    assert stale.exit_code == 1
    assert "llms.txt: out of date with the docs' front matter; run `knowledge llms-txt`" in stale.stderr
    assert "Every command" in (git_repo / "llms.txt").read_text()  # --check writes nothing
    assert run(git_repo, "llms-txt").exit_code == 0
    assert run(git_repo, "llms-txt", "--check").exit_code == 0


def test_llms_full_holds_the_docs_text_within_the_budget(git_repo):
    commit(git_repo, {**DOCS, "docs/long.md": "---\ndescription: Long.\n---\n# Long\n\n" + "word " * 3000 + "\n"})
    assert run(git_repo, "llms-txt", "--full", "--budget", "1000").exit_code == 0
    full = (git_repo / "llms-full.txt").read_text()
    assert "Run it." in full
    assert "GET /x" in full
    assert full.count("word") < 1000
    assert "## Left out of this file (token budget)\n\n- [Long](docs/long.md): Long.\n" in full


def test_serve_answers_llms_txt_as_text(git_repo):
    from knowledge.server.backend import LocalBackend
    from knowledge.server.http import KnowledgeHTTPServer

    commit(git_repo, DOCS)
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    server = KnowledgeHTTPServer(("127.0.0.1", 0), LocalBackend(kb), "t" * 24)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        request = urllib.request.Request(f"{url}/llms.txt", headers={"Authorization": "Bearer " + "t" * 24})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
            assert response.read().decode() == kb.llms_txt()["llms.txt"]
        api = urllib.request.Request(f"{url}/v1/llms-txt", headers={"Authorization": "Bearer " + "t" * 24})
        with urllib.request.urlopen(api, timeout=10) as response:
            assert json.loads(response.read())["text"].startswith("# Acme\n")
    finally:
        server.shutdown()
