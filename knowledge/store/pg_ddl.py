"""The shared store's tables, policies and their migrations as SQL, one constant per schema version (pg_schema.py
runs them in order)."""

ACCESS_POLICY = """
    EXISTS (SELECT 1 FROM knowledge_grants g WHERE g.repository = {table}.repository
            AND pg_has_role(current_user, g.grantee, 'MEMBER'))
"""
SCHEMA_V1 = """
CREATE TABLE knowledge_indexes (
    id bigserial PRIMARY KEY,
    repository text NOT NULL, branch text NOT NULL, kind text NOT NULL,
    live boolean NOT NULL DEFAULT false,
    manifest jsonb NOT NULL,
    commit text, chunks_version text NOT NULL DEFAULT '', progress jsonb,
    doc_count bigint NOT NULL DEFAULT 0, total_len bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now());
CREATE UNIQUE INDEX knowledge_indexes_live ON knowledge_indexes (repository, branch, kind) WHERE live;
CREATE TABLE knowledge_chunks (
    key bigserial PRIMARY KEY,
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    repository text NOT NULL,
    chunk_id text NOT NULL, path text NOT NULL, content_hash text NOT NULL, data jsonb NOT NULL,
    embed_text text, chars integer NOT NULL DEFAULT 0, symbol text,
    lexical text NOT NULL, lex tsvector NOT NULL, lex_len integer NOT NULL,
    dims integer, embedding vector);
CREATE INDEX knowledge_chunks_path ON knowledge_chunks (index_id, path);
CREATE INDEX knowledge_chunks_id ON knowledge_chunks (index_id, chunk_id);
CREATE INDEX knowledge_chunks_symbol ON knowledge_chunks (index_id, symbol) WHERE symbol IS NOT NULL;
CREATE INDEX knowledge_chunks_pending ON knowledge_chunks (index_id, key) WHERE embedding IS NULL;
CREATE INDEX knowledge_chunks_lex ON knowledge_chunks USING gin (lex);
CREATE TABLE knowledge_files (
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    repository text NOT NULL, path text NOT NULL, hash text NOT NULL, mtime_ns bigint, size bigint,
    PRIMARY KEY (index_id, path));
CREATE TABLE knowledge_problems (
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    repository text NOT NULL, path text NOT NULL, problem text NOT NULL);
CREATE INDEX knowledge_problems_path ON knowledge_problems (index_id, path);
CREATE TABLE knowledge_vectors (
    fingerprint text NOT NULL, content_hash text NOT NULL, embedding vector NOT NULL,
    PRIMARY KEY (fingerprint, content_hash));
CREATE TABLE knowledge_grants (repository text NOT NULL, grantee name NOT NULL, PRIMARY KEY (repository, grantee));
"""
# Version 2: document frequencies per index and lexeme, and each index's count of embedded chunks, kept by every
# write, so neither BM25 nor coverage counts rows at query time.
SCHEMA_V2 = """
ALTER TABLE knowledge_indexes ADD COLUMN embedded_count bigint NOT NULL DEFAULT 0;
UPDATE knowledge_indexes i
    SET embedded_count = (SELECT count(embedding) FROM knowledge_chunks c WHERE c.index_id = i.id);
CREATE TABLE knowledge_terms (
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    repository text NOT NULL, lexeme text NOT NULL, df integer NOT NULL,
    PRIMARY KEY (index_id, lexeme));
INSERT INTO knowledge_terms (index_id, repository, lexeme, df)
    SELECT c.index_id, min(c.repository), u.lexeme, count(*)
    FROM knowledge_chunks c, unnest(tsvector_to_array(c.lex)) AS u(lexeme) GROUP BY c.index_id, u.lexeme;
"""
# Version 3: the vector cache belongs to a repository (row-level security like the chunks), so a team role can
# neither read nor poison another team's cache; the HNSW indexes of the known models' sizes are made here, by the
# owner, once, rather than by every writer (PostgreSQL lets only a table's owner create its indexes).
SCHEMA_V3 = """
CREATE TABLE knowledge_vectors_v3 (
    repository text NOT NULL, fingerprint text NOT NULL, content_hash text NOT NULL, embedding vector NOT NULL,
    PRIMARY KEY (repository, fingerprint, content_hash));
INSERT INTO knowledge_vectors_v3 (repository, fingerprint, content_hash, embedding)
    SELECT DISTINCT ON (c.repository, i.manifest->>'fingerprint', c.content_hash)
           c.repository, i.manifest->>'fingerprint', c.content_hash, c.embedding
    FROM knowledge_chunks c JOIN knowledge_indexes i ON i.id = c.index_id WHERE c.embedding IS NOT NULL;
DROP TABLE knowledge_vectors;
ALTER TABLE knowledge_vectors_v3 RENAME TO knowledge_vectors;
ALTER INDEX knowledge_vectors_v3_pkey RENAME TO knowledge_vectors_pkey;
"""
# Version 4: BM25 reads postings, one row per (index, lexeme, chunk) in a b-tree, instead of every candidate's
# tsvector through a GIN index. Under row-level security PostgreSQL uses an index only for leakproof operators: `=`
# on text and bigint is, `tsvector @@ tsquery` is not, so a team role's lexical search read every row of its index
# (docs/benchmarks.md §9). A posting belongs to its index, and a role sees the postings of the indexes it may see.
SCHEMA_V4 = """
CREATE TABLE knowledge_postings (
    index_id bigint NOT NULL REFERENCES knowledge_indexes (id) ON DELETE CASCADE,
    lexeme text NOT NULL, key bigint NOT NULL, tf real NOT NULL, lex_len integer NOT NULL,
    PRIMARY KEY (index_id, lexeme, key) INCLUDE (tf, lex_len));
INSERT INTO knowledge_postings (index_id, lexeme, key, tf, lex_len)
    SELECT c.index_id, u.lexeme, c.key, coalesce(array_length(u.positions, 1), 1), c.lex_len
    FROM knowledge_chunks c, unnest(c.lex) AS u ORDER BY 1, 2, 3;
DROP INDEX knowledge_chunks_lex;
"""
# `IN`, not a correlated `EXISTS`: PostgreSQL hashes the visible index ids once, where on a low row estimate it ran
# the `EXISTS` (and the indexes' own policy under it) once per posting (6,677 times in one search at 20k chunks)
INDEX_POLICY = "{table}.index_id IN (SELECT i.id FROM knowledge_indexes i)"
# Version 5: every row of an index is bound to it. Rows name their index's repository through a composite foreign
# key, and their policy is the index's visibility, so a role cannot plant a row in an index it cannot see (refused
# by row-level security before any unique check could answer); a repository without a grant is nobody's but the
# owner's. Rows whose label disagreed with their index (planted) are dropped.
BOUND_TABLES = ("knowledge_chunks", "knowledge_files", "knowledge_problems", "knowledge_terms")
SCHEMA_V5 = (
    "".join(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_bound;\n" for table in BOUND_TABLES)
    + "ALTER TABLE knowledge_indexes DROP CONSTRAINT IF EXISTS knowledge_indexes_id_repository;\n"
    + "ALTER TABLE knowledge_indexes ADD CONSTRAINT knowledge_indexes_id_repository UNIQUE (id, repository);\n"
    + "".join(
        f"""DELETE FROM {table} t USING knowledge_indexes i WHERE i.id = t.index_id AND i.repository <> t.repository;
ALTER TABLE {table} ADD CONSTRAINT {table}_bound FOREIGN KEY (index_id, repository)
    REFERENCES knowledge_indexes (id, repository) ON DELETE CASCADE;
DROP POLICY IF EXISTS knowledge_by_repository ON {table};
DROP POLICY IF EXISTS knowledge_by_index ON {table};
"""
        for table in BOUND_TABLES
    )
    + "".join(
        f"DROP POLICY IF EXISTS knowledge_by_repository ON {table};\n"
        for table in ("knowledge_indexes", "knowledge_vectors")
    )
)
# Version 6: every chunk keeps its static stage's vector (the static list votes beside the transformer's, as in the
# local engine); each index counts the chunks holding one, and those of them still waiting for their embedding.
SCHEMA_V6 = """
ALTER TABLE knowledge_chunks ADD COLUMN IF NOT EXISTS static vector;
ALTER TABLE knowledge_indexes ADD COLUMN IF NOT EXISTS static_count bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS static_waiting bigint NOT NULL DEFAULT 0;
"""
# Version 7: locks and ids another team cannot name or squat. Each index has a random lock key, readable only by the
# roles that see its row: its builder's session lock and its writers' transaction lock are taken on it (the bare index
# id, and a hash of the repository and branch, were keys any role could take first and hold). Ids and chunk keys are
# generated only: member roles insert and update every column but those (column privileges, made by pg_schema).
SCHEMA_V7 = """
ALTER TABLE knowledge_indexes ADD COLUMN IF NOT EXISTS lock_key bigint NOT NULL
    DEFAULT (floor(random() * 9223372036854775807))::bigint;
"""
GENERATED_COLUMNS = {"knowledge_indexes": ("id", "lock_key"), "knowledge_chunks": ("key",)}
# Version 8: a large index's static rows get a graph of their own, built once its first build has loaded them (a
# graph built from loaded rows is ~6x faster than one grown row by row: bench/first_stage_million.py, §0a). Only the
# table's owner may create an index on it, so a member's build asks these functions, which run as the owner, build
# or drop only what names an index the caller's login may see, and nothing else. Each graph holds one index's rows
# (a partial index), so a walk never passes another index's vectors; halfvec keeps it half the size. Their search
# path is the tables' schema, then pg_temp (last: a caller's temporary table must never stand in for ours).
STATIC_GRAPH_PREFIX = "knowledge_static_graph_"
SCHEMA_V8 = """
CREATE OR REPLACE FUNCTION knowledge_check_visible(target bigint) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = {path} AS $$
BEGIN  -- the rule of ACCESS_POLICY, for the caller's login: these functions run as the owner, whom no policy binds
    IF NOT EXISTS (
        SELECT 1 FROM knowledge_indexes i WHERE i.id = target AND (
            EXISTS (SELECT 1 FROM knowledge_grants g WHERE g.repository = i.repository
                    AND pg_has_role(session_user, g.grantee, 'MEMBER'))
            OR pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = 'knowledge_indexes'::regclass),
                           'USAGE'))) THEN
        RAISE EXCEPTION 'knowledge index % is not one this role may see', target
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END $$;
REVOKE ALL ON FUNCTION knowledge_check_visible(bigint) FROM PUBLIC;
CREATE OR REPLACE FUNCTION knowledge_static_graph(target bigint, dims integer, memory_mb integer) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    name text := 'knowledge_static_graph_' || target;
BEGIN
    PERFORM knowledge_check_visible(target);
    IF dims NOT BETWEEN 1 AND 4000 OR to_regclass(name) IS NOT NULL THEN
        RETURN false;
    END IF;
    PERFORM set_config('maintenance_work_mem', greatest(64, least(memory_mb, 4096)) || 'MB', true);
    EXECUTE format('CREATE INDEX %I ON knowledge_chunks USING hnsw ((static::halfvec(%s)) halfvec_cosine_ops) '
                   'WHERE index_id = %s', name, dims, target);
    RETURN true;
END $$;
CREATE OR REPLACE FUNCTION knowledge_static_graphs_tidy() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    found record;
    dropped integer := 0;
BEGIN
    FOR found IN
        SELECT c.relname, substring(c.relname FROM '^knowledge_static_graph_([0-9]+)$')::bigint AS id
        FROM pg_class c JOIN pg_index x ON x.indexrelid = c.oid
        WHERE x.indrelid = 'knowledge_chunks'::regclass AND c.relname ~ '^knowledge_static_graph_[0-9]+$'
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM knowledge_indexes WHERE id = found.id);
        BEGIN  -- a graph whose index is gone; a reader holding the table only delays it to a later tidy
            PERFORM set_config('lock_timeout', '2s', true);
            EXECUTE format('DROP INDEX IF EXISTS %I', found.relname);
            dropped := dropped + 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    RETURN dropped;
END $$;
REVOKE ALL ON FUNCTION knowledge_static_graph(bigint, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION knowledge_static_graphs_tidy() FROM PUBLIC;
"""
# Version 9: the lexical side in PostgreSQL's own form: a GIN index over the chunks' tsvectors (compressed posting
# lists, kept current by its pending list) replaces the postings table, whose b-tree of one row per (chunk, term) was
# most of a large store (52 million rows, 7.6 GB at a million chunks) and most of its build. Row-level security keeps
# a team role off a GIN index (`@@` is not leakproof), so the postings of a search's terms are read through this
# function, which runs as the owner for an index the caller's login may see, and answers that index's rows only.
SCHEMA_V9 = """
CREATE INDEX IF NOT EXISTS knowledge_chunks_lex ON knowledge_chunks USING gin (lex);
DROP TABLE IF EXISTS knowledge_postings;
CREATE OR REPLACE FUNCTION knowledge_postings(target bigint, candidates tsquery, lexemes text[])
RETURNS TABLE (key bigint, lexeme text, tf real, lex_len integer)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = {path} AS $$
BEGIN
    PERFORM knowledge_check_visible(target);
    -- dynamic, so each search is planned with its own terms (a cached generic plan cannot weigh them); a candidate's
    -- tsvector is cut to the query's lexemes in C (marked weight A, kept by weight) before it is unnested: unnesting
    -- all of its ~50 and filtering them was 3x slower (97 -> 33 ms for 4,887 candidates at 100k chunks)
    RETURN QUERY EXECUTE
        'SELECT c.key, u.lexeme, coalesce(array_length(u.positions, 1), 1)::real, c.lex_len '
        'FROM knowledge_chunks c, unnest(ts_filter(setweight(c.lex, ''A'', $3), ''{{a}}'')) AS u '
        'WHERE c.index_id = $1 AND c.lex @@ $2'
        USING target, candidates, lexemes;
END $$;
REVOKE ALL ON FUNCTION knowledge_postings(bigint, tsquery, text[]) FROM PUBLIC;
"""
# Version 10: a member deletes only through these functions (for an index its login may see): with DELETE on a table
# a role may also `LOCK TABLE … IN ACCESS EXCLUSIVE MODE`, which stalled every team's search and reindex. Members
# keep SELECT and column-level INSERT and UPDATE, which lock no table (security round four).
SCHEMA_V10 = """
CREATE OR REPLACE FUNCTION knowledge_delete_paths(target bigint, paths text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    removed integer;
BEGIN
    PERFORM knowledge_check_visible(target);
    DELETE FROM knowledge_chunks WHERE index_id = target AND path = ANY(paths);
    GET DIAGNOSTICS removed = ROW_COUNT;
    DELETE FROM knowledge_files WHERE index_id = target AND path = ANY(paths);
    DELETE FROM knowledge_problems WHERE index_id = target AND path = ANY(paths);
    RETURN removed;
END $$;
CREATE OR REPLACE FUNCTION knowledge_delete_index(target bigint) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    removed integer;
BEGIN
    PERFORM knowledge_check_visible(target);
    DELETE FROM knowledge_indexes WHERE id = target;
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END $$;
REVOKE ALL ON FUNCTION knowledge_delete_paths(bigint, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION knowledge_delete_index(bigint) FROM PUBLIC;
"""
# Version 11: who calls what, read by name (issue 68): a GIN index over each chunk's recorded calls, read through
# this function for the reason of version 9 (row-level security keeps a member role off a GIN index: `?|` is not
# leakproof). A call graph then reads the rows it shows instead of every chunk of its index once a process.
SCHEMA_V11 = """
CREATE INDEX IF NOT EXISTS knowledge_chunks_calls ON knowledge_chunks USING gin ((data -> 'calls'));
CREATE OR REPLACE FUNCTION knowledge_callers(target bigint, names text[])
RETURNS TABLE (called text, caller bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = {path} AS $$
BEGIN
    PERFORM knowledge_check_visible(target);
    -- dynamic, so each call is planned with its own names (a generic plan read the index's rows by path)
    RETURN QUERY EXECUTE
        'SELECT c.name, k.key FROM knowledge_chunks k, jsonb_array_elements_text(k.data -> ''calls'') AS c(name) '
        'WHERE k.index_id = $1 AND k.data -> ''calls'' ?| $2 AND c.name = ANY($2) ORDER BY k.key'
        USING target, names;
END $$;
REVOKE ALL ON FUNCTION knowledge_callers(bigint, text[]) FROM PUBLIC;
"""
# what a member role may call (each checks what the caller may see itself)
MEMBER_FUNCTIONS = (
    "knowledge_static_graph(bigint, integer, integer)",
    "knowledge_static_graphs_tidy()",
    "knowledge_postings(bigint, tsquery, text[])",
    "knowledge_delete_paths(bigint, text[])",
    "knowledge_delete_index(bigint)",
    "knowledge_callers(bigint, text[])",
)
