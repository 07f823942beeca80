"""One team never stalls or breaks another on the shared store (issue 51, medium 3): two team roles on a real
PostgreSQL; team B takes every lock key it can name and inserts rows with ids of its choosing, and team A's
reindex-all and reindex-from-changes still finish, with its own ids."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest

from knowledge.store.pg_locks import take_lock
from knowledge.store.pg_schema import StoreUnavailableError, connect

from .conftest import commit, git, model_home
from .test_postgres_store import DOCS, as_role, clone, owner_sets_up, run_cli


@pytest.fixture
def teams(git_repo, tmp_path, postgres_url):
    """The owner's setup: two team roles, A granted a repository (indexed by A), B granted one of its own."""
    commit(git_repo, DOCS)
    team_a, team_b, repository = owner_sets_up(git_repo, postgres_url)
    owner = {"KNOWLEDGE_STORE": postgres_url}
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit(other, {"docs/b.md": "---\ndescription: B.\n---\n# B\nTeam B's notes.\n"})
    assert run_cli(other, owner, "teams", "grant", team_b)[0] == 0
    clone_a = clone(git_repo, tmp_path / "clone_a")
    code, out = run_cli(clone_a, {"KNOWLEDGE_STORE": as_role(postgres_url, team_a)}, "reindex-all", "--quiet")
    assert code == 0, out
    return {
        "a": as_role(postgres_url, team_a),
        "b": as_role(postgres_url, team_b),
        "clone_a": clone_a,
        "other": other,
        "repository": repository,
        "owner": postgres_url,
    }


def knowledge_as(url, root, *args, timeout=120):
    """A's command in its own process, bounded: a wait without end fails the test instead of hanging it."""
    env = {**os.environ, "KNOWLEDGE_STORE": url, "KNOWLEDGE_NO_DAEMON": "1", "KNOWLEDGE_FILL": "0"}
    env |= {"KNOWLEDGE_HOME": str(model_home()), "KNOWLEDGE_MODEL": "all-MiniLM-L6-v2"}
    command = [sys.executable, "-P", "-m", "knowledge", "-C", str(root), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def test_team_b_holding_every_lock_key_it_can_name_never_stalls_team_a(teams):
    """569400d: advisory locks on A's index ids (the writer's key was the bare id; ids are sequential) or on A's
    publish key (a hash of repository and branch, both readable) made A's reindex hang with no timeout."""
    with psycopg.connect(teams["owner"], autocommit=True) as admin:
        top = admin.execute("SELECT coalesce(max(id), 0) + 50 FROM knowledge_indexes").fetchone()[0]
    with psycopg.connect(teams["b"], autocommit=True) as squatter:
        for key in range(1, top):
            squatter.execute("SELECT pg_advisory_lock(%s)", (key,))
            squatter.execute("SELECT pg_advisory_lock(7411, %s)", (key,))
        squatter.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (f"{teams['repository']}\nmain",))
        commit(teams["clone_a"], {"docs/new.md": "---\ndescription: new\n---\n# New\nA new page.\n"})
        changed = knowledge_as(teams["a"], teams["clone_a"], "reindex-from-changes", "--quiet", timeout=90)
        assert changed.returncode == 0, changed.stderr
        rebuilt = knowledge_as(teams["a"], teams["clone_a"], "reindex-all", "--quiet", timeout=90)
        assert rebuilt.returncode == 0, rebuilt.stderr
        # B never learns A's lock keys: the rows that hold them are invisible to B
        seen = squatter.execute("SELECT count(*) FROM knowledge_indexes WHERE repository = %s", (teams["repository"],))
        assert seen.fetchone()[0] == 0


def test_ids_and_keys_are_generated_only_so_team_b_cannot_squat_team_as_next_ones(teams):
    """569400d: B inserting rows with explicit ids (knowledge_indexes.id, knowledge_chunks.key) made A's next index
    fail with a duplicate key, and the error told B which of A's ids exist."""
    code, out = run_cli(teams["other"], {"KNOWLEDGE_STORE": teams["b"]}, "reindex-all", "--quiet")
    assert code == 0, out
    with psycopg.connect(teams["b"], autocommit=True) as conn:
        own = conn.execute("SELECT id, repository FROM knowledge_indexes LIMIT 1").fetchone()
        for sql, params in (
            (
                "INSERT INTO knowledge_indexes (id, repository, branch, kind, manifest) "
                "VALUES (%s, %s, 'x', 'docs', '{}')",
                (own[0] + 1000, own[1]),
            ),
            ("UPDATE knowledge_indexes SET id = id + 1000 WHERE id = %s", (own[0],)),
            (
                "INSERT INTO knowledge_chunks (key, index_id, repository, chunk_id, path, content_hash, data, "
                "lexical, lex, lex_len) VALUES (%s, %s, %s, 'c', 'p', 'h', '{}', '', '', 0)",
                (10_000, own[0], own[1]),
            ),
            ("UPDATE knowledge_indexes SET lock_key = 1 WHERE id = %s", (own[0],)),
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql, params)
    rebuilt = knowledge_as(teams["a"], teams["clone_a"], "reindex-all", "--quiet")
    assert rebuilt.returncode == 0, rebuilt.stderr


def test_a_writer_waits_a_bounded_time_and_names_who_holds_the_lock(teams):
    with psycopg.connect(teams["a"], autocommit=True) as holder:
        index_id = holder.execute("SELECT id FROM knowledge_indexes WHERE live LIMIT 1").fetchone()[0]
        holder.execute("BEGIN")
        holder.execute("SELECT id FROM knowledge_indexes WHERE id = %s FOR NO KEY UPDATE", (index_id,))
        waiter = connect(teams["a"])
        try:
            with waiter.transaction(), pytest.raises(StoreUnavailableError, match=r"another writer \(process \d+"):
                take_lock(waiter, index_id, "the index", wait_seconds=0.5)
        finally:
            waiter.close()
        holder.execute("ROLLBACK")


def test_team_b_cannot_lock_team_as_rows_or_tables(teams):
    """Security round four: A's writer lock key showed in pg_locks while held, and B holding it made A's
    reindex-from-changes wait 120 s and fail; B's DELETE on knowledge_chunks let it LOCK TABLE every team's rows.
    Now A's lock is a row B cannot see, B holds no table privilege that locks a table, and every session's waits
    are bounded."""
    with psycopg.connect(teams["a"], autocommit=True) as writer_a:
        index_id = writer_a.execute("SELECT id FROM knowledge_indexes WHERE live LIMIT 1").fetchone()[0]
        writer_a.execute("BEGIN")
        take_lock(writer_a, index_id, "A's index")
        with psycopg.connect(teams["b"], autocommit=True) as squatter:
            visible = squatter.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (writer_a.info.backend_pid,)
            ).fetchone()[0]
            assert visible == 0  # nothing of A's writer lock to name
            locked = squatter.execute(
                "SELECT id FROM knowledge_indexes WHERE id = %s FOR NO KEY UPDATE", (index_id,)
            ).fetchall()
            assert locked == []  # the row is not B's to see, so not B's to lock
            for table in ("knowledge_chunks", "knowledge_indexes", "knowledge_terms", "knowledge_vectors"):
                for mode in ("ACCESS EXCLUSIVE", "EXCLUSIVE", "SHARE ROW EXCLUSIVE", "SHARE"):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege), squatter.transaction():
                        squatter.execute(f"LOCK TABLE {table} IN {mode} MODE")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                squatter.execute("DELETE FROM knowledge_chunks")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                squatter.execute("SELECT knowledge_delete_index(%s)", (index_id,))
        writer_a.execute("ROLLBACK")
    session = connect(teams["b"])
    try:
        assert session.execute("SHOW lock_timeout").fetchone()[0] == "1min"
        assert session.execute("SHOW statement_timeout").fetchone()[0] == "30min"
    finally:
        session.close()
    commit(teams["clone_a"], {"docs/newer.md": "---\ndescription: newer\n---\n# Newer\nAnother page.\n"})
    changed = knowledge_as(teams["a"], teams["clone_a"], "reindex-from-changes", "--quiet", timeout=90)
    assert changed.returncode == 0, changed.stderr
