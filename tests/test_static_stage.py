"""The static first stage: a dense vector for every chunk at once, replaced chunk by chunk by the transformer's."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np
import pytest

from knowledge.embedding.onnx_embedder import load_tokenizer
from knowledge.embedding.shipped import ISSUE_INFO, ISSUE_TABLE, shipped_fingerprint
from knowledge.embedding.static import (
    INFO,
    MIN_VERIFIED,
    SHIPPED,
    TABLE,
    TOKENIZER,
    VERIFY_PAIRS,
    StaticEmbedder,
    load_issue_static,
    load_static,
    verified,
)
from knowledge.errors import ModelVerificationError
from knowledge.git import recently_changed
from knowledge.kb import KnowledgeBase
from knowledge.render import status_from_dict, status_to_dict, status_to_text
from knowledge.store.asked import ASKED_FILE, KEEP, LIMIT_BYTES, recently_asked, record_asked

from .conftest import HashingEmbedder, commit, model_home


class StagedEmbedder(HashingEmbedder):
    """The test double with a static stage of its own: another hashing space (32 dims), as the real one differs."""

    def static_stage(self):
        stage = HashingEmbedder()
        stage.dims = 32
        return stage


DOCS = {
    "docs/hooks.md": "---\ndescription: Git hooks.\n---\n# Hooks\n\n## Install\n\nhooks install writes post-commit "
    "hooks.\n\n## Remove\n\nhooks uninstall removes them.\n",
    "docs/search.md": "---\ndescription: Searching.\n---\n# Search\n\n## Budget\n\nThe token budget caps the "
    "answer.\n\n## Threshold\n\nThe similarity threshold drops weak results.\n",
    "src/app.py": "def install_hooks(root):\n    return root\n\n\ndef token_budget(n):\n    return n\n",
}


@pytest.fixture
def kb(git_repo):
    commit(git_repo, DOCS)
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: StagedEmbedder())
    kb.reindex_all(embed=False)
    return kb


def coverages(kb):
    return [index.coverage() for index in kb.indexes()]


def test_before_any_transformer_vector_every_chunk_has_a_static_one_and_search_uses_it(kb):
    assert all(c.embedded == 0 and c.static == c.chunks > 0 for c in coverages(kb))
    answer = kb.search("hooks install", threshold=0.0, explain=True)
    assert answer.dense_coverage == 0.0
    assert answer.static_coverage == 1.0
    assert answer.results
    assert all(hit.score is None for hit in answer.results)  # no cosine in the model's space yet
    assert any(hit.explain["static_score"] is not None for hit in answer.results)


def test_during_the_fill_each_chunk_is_one_candidate_and_the_answer_says_each_stage_share(kb):
    docs = kb.index("docs").store
    first = docs.pending(2)
    docs.add_vectors({p.key: HashingEmbedder().embed_query(p.embed_text) for p in first})
    coverage = docs.coverage()
    assert coverage.embedded == 2
    assert coverage.static == coverage.chunks - 2  # waiting on the static stage alone
    assert coverage.static_rows == coverage.chunks  # the embedded keep theirs: the static list votes beside
    answer = kb.search("hooks install budget", kind="docs", threshold=-1.0, k=20, explain=True)
    ids = [hit.id for hit in answer.results]
    assert len(ids) == len(set(ids))
    waiting = [hit for hit in answer.results if hit.score is None]
    modelled = [hit for hit in answer.results if hit.score is not None]
    assert waiting
    assert modelled
    assert all(hit.explain["static_score"] is not None for hit in waiting)
    assert answer.dense_coverage + answer.static_coverage == pytest.approx(1.0)


def test_once_complete_the_static_list_votes_beside_the_transformer(kb, monkeypatch):
    import knowledge.ranking.policy as policy

    kb.embed_pending()
    assert all(c.embedded == c.chunks and c.static == 0 and c.static_rows == c.chunks for c in coverages(kb))
    answer = kb.search("hooks install", threshold=0.0, explain=True)
    assert answer.static_coverage == 0.0
    assert all(hit.score is not None for hit in answer.results)
    assert any(hit.explain["static_rank"] is not None and hit.explain["dense_rank"] for hit in answer.results)
    shipped = policy.DEFAULT_POLICY
    monkeypatch.setattr(policy, "DEFAULT_POLICY", replace(shipped, fusion=replace(shipped.fusion, static_weight=0.0)))
    alone = kb.search("hooks install", threshold=0.0, explain=True)
    voted = {hit.id: hit.explain["fused_score"] for hit in answer.results if hit.explain["static_rank"]}
    unvoted = {hit.id: hit.explain["fused_score"] for hit in alone.results}
    assert voted
    assert all(score > unvoted[key] for key, score in voted.items() if key in unvoted)


def test_a_changed_file_gets_static_vectors_for_its_new_chunks(kb, git_repo):
    kb.embed_pending()
    commit(git_repo, {"docs/hooks.md": DOCS["docs/hooks.md"] + "\n## Status\n\nhooks status lists them.\n"})
    kb.reindex_changes(embed=False)
    coverage = kb.index("docs").coverage()
    assert coverage.static == coverage.chunks - coverage.embedded > 0
    assert coverage.static_rows == coverage.chunks


def test_an_index_built_before_static_rows_were_kept_is_rebuilt_by_the_next_reindex(kb):
    kb.embed_pending()
    store = kb.index("docs").store
    with store._db:  # what an older knowledge left: rows gone with the fill
        store._db.execute("DELETE FROM static_blocks")
    store._invalidate()
    assert kb.index("docs").coverage().static_rows == 0
    kb.reindex_changes(embed=False)
    coverage = kb.index("docs").coverage()
    assert coverage.static_rows == coverage.chunks == coverage.embedded  # rebuilt; vectors from the cache


# ---- the real static stage: the trained table shipped inside the package ------------------------------------
@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    copy = tmp_path_factory.mktemp("static")
    for name in (TABLE, INFO, TOKENIZER, ISSUE_TABLE, ISSUE_INFO):
        shutil.copy(SHIPPED / name, copy / name)
    return copy


def test_the_shipped_static_stage_loads_matches_its_checksum_and_finds_meaning(shipped):
    info = json.loads((shipped / INFO).read_text())
    assert hashlib.sha256((shipped / TABLE).read_bytes()).hexdigest() == info["sha256"]
    assert int(info["verified"].split("/")[0]) >= MIN_VERIFIED
    assert info["recipe"]["command"].startswith("python training/mine.py")
    stage = load_static(shipped)
    assert stage.fingerprint == shipped_fingerprint()
    assert verified(stage) >= MIN_VERIFIED
    tokenizer = load_tokenizer((shipped / TOKENIZER).read_text(encoding="utf-8"), 0, 0)
    shuffled = StaticEmbedder(np.random.default_rng(0).permutation(stage.table), tokenizer, "")
    assert verified(shuffled) < MIN_VERIFIED  # what the build refuses
    near, far = stage.embed_documents(["add a post-commit hook to the repository", "the weather in paris is mild"])
    query = stage.embed_query("how are git hooks installed")
    assert float(near @ query) > float(far @ query) + 0.1


def test_a_corrupt_static_table_or_tokenizer_is_refused(shipped, tmp_path):
    for name in (TABLE, TOKENIZER):
        broken = tmp_path / name
        shutil.copytree(shipped, broken)
        data = bytearray((broken / name).read_bytes())
        data[-5] ^= 0xFF
        (broken / name).write_bytes(bytes(data))
        with pytest.raises(ModelVerificationError, match="sha256"):
            load_static(broken)


def test_the_issue_side_ships_beside_the_code_table_changing_only_its_rows_and_refused_when_corrupt(shipped, tmp_path):
    code = load_static(shipped)
    issue = load_issue_static(shipped, code)
    info = json.loads((shipped / ISSUE_INFO).read_text())
    assert issue is not None
    assert info["pairs_with"] == code.fingerprint
    assert issue.fingerprint.startswith(code.fingerprint + "+issue-")
    assert info["recipe"]["held_out_mrr"]["after"] > info["recipe"]["held_out_mrr"]["before"]
    moved = np.flatnonzero(np.abs(issue.table - code.table).max(axis=1) > 0)
    assert 0 < len(moved) <= info["rows"]  # the rest of the table is the code side's own
    questions = issue.embed_documents([q for q, _ in VERIFY_PAIRS])
    passages = code.embed_documents([p for _, p in VERIFY_PAIRS])
    assert int(((questions @ passages.T).argmax(axis=1) == np.arange(len(VERIFY_PAIRS))).sum()) >= MIN_VERIFIED

    other = tmp_path / "other"
    shutil.copytree(shipped, other)
    (other / ISSUE_INFO).write_text(json.dumps({**info, "pairs_with": "static2-another"}))
    assert load_issue_static(other, code) is None  # another table's issue side: the stage embeds the issue itself
    broken = tmp_path / "broken"
    shutil.copytree(shipped, broken)
    data = bytearray((broken / ISSUE_TABLE).read_bytes())
    data[-5] ^= 0xFF
    (broken / ISSUE_TABLE).write_bytes(bytes(data))
    with pytest.raises(ModelVerificationError, match="sha256"):
        load_issue_static(broken, code)


# Code questions whose code shares almost no word with them. The distilled table this replaced (all-mpnet-base-v2's
# token vectors, no data) ranked the Go function 5th of 7 (the other two first); the trained one ranks all three first.
CODE_QUESTIONS = (
    (
        "read a file's lines lazily without loading it all",
        "def lines(path):\n    with open(path) as handle:\n        yield from handle",
    ),
    (
        "check whether a path points to an existing regular file",
        "func isFile(p string) bool {\n\tinfo, err := os.Stat(p)\n\treturn err == nil && info.Mode().IsRegular()\n}",
    ),
    (
        "wait for all spawned worker threads to finish",
        "for handle in handles {\n    handle.join().unwrap();\n}",
    ),
)
DISTRACTORS = (
    "def render(template, **values):\n    return template.format(**values)",
    "class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y",
    "public int compareTo(Version other) { return Integer.compare(major, other.major); }",
    "const sum = (xs) => xs.reduce((a, b) => a + b, 0);",
)


def test_the_trained_stage_answers_code_questions_by_meaning(shipped):
    stage = load_static(shipped)
    codes = stage.embed_documents([code for _, code in CODE_QUESTIONS] + list(DISTRACTORS))
    for n, (question, _) in enumerate(CODE_QUESTIONS):
        assert int(np.argmax(codes @ stage.embed_query(question))) == n, question


def test_knowledge_runs_without_the_training_extra():
    """The shipped stage needs numpy and tokenizers only: torch and sentence-transformers are never imported."""
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['sentence_transformers'] = None\n"
        "from knowledge.embedding.static import shipped_static\n"
        "print(shipped_static().embed_query('open a file').shape)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "(256,)"


def test_an_index_of_another_static_table_is_rebuilt_on_the_next_reindex_and_not_searched_meanwhile(kb):
    """An upgrade ships a new table: rows of the old one live in a half-filled index. Search leaves them out (its
    query vector is of the new table) and the next reindex rebuilds them (vectors come from the cache)."""
    store = kb.index("docs").store
    store.manifest = replace(store.manifest, static_stage="static1-old")
    answer = kb.search("hooks install", kind="docs", threshold=0.0, explain=True)
    assert all(hit.explain["static_score"] is None for hit in answer.results)
    kb.reindex_changes(embed=False)
    assert kb.index("docs").store.manifest.static_stage == kb.model.static_fingerprint()
    answer = kb.search("hooks install", kind="docs", threshold=0.0, explain=True)
    assert any(hit.explain["static_score"] is not None for hit in answer.results)


@pytest.mark.model
def test_reindex_all_returns_searchable_and_the_vectors_arrive_in_the_background(git_repo, tmp_path):
    """The real CLI with MiniLM, as a user runs it: the model named by --model is the one the detached embed uses."""
    commit(git_repo, DOCS)
    env = {**os.environ, "KNOWLEDGE_HOME": str(model_home()), "KNOWLEDGE_NO_DAEMON": "1"}

    def knowledge(*args):
        command = [sys.executable, "-m", "knowledge", "-C", str(git_repo), "--model", "all-MiniLM-L6-v2", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)

    indexed = knowledge("reindex-all")
    assert indexed.returncode == 0, indexed.stderr
    assert "embedding in the background" in indexed.stderr
    answer = json.loads(knowledge("search", "how are hooks installed", "--json").stdout)
    assert answer["results"]
    assert answer["dense_coverage"] + answer["static_coverage"] == pytest.approx(1.0)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = json.loads(knowledge("status", "--json").stdout)
        if status["dense_coverage"] == 1.0 and not status["reindex_running"]:
            break
        time.sleep(0.5)
    assert status["dense_coverage"] == 1.0
    assert status["model"].startswith("all-MiniLM-L6-v2")
    log = (git_repo / ".knowledge" / "logs" / "embed.log").read_text()
    assert "embedding docs: " in log  # the fill's progress lines, as it goes
    assert "embedded " in log
    waited = knowledge("reindex-all", "--wait")
    assert waited.returncode == 0
    assert json.loads(knowledge("search", "hooks", "--json").stdout)["static_coverage"] == 0.0


def test_the_fill_gives_public_entities_their_vectors_first_and_tests_last(git_repo):
    commit(
        git_repo,
        {
            "src/lib.py": "import os\n\nLIMIT = 3\n\n\ndef _helper(x):\n    return x\n\n\ndef public_api(y):\n"
            "    return _helper(y)\n",
            "tests/test_lib.py": "def test_public_api():\n    assert True\n",
        },
    )
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: StagedEmbedder())
    kb.reindex_all(embed=False)
    store = kb.index("code").store
    order = [store.chunks([p.key])[p.key] for p in store.pending(100)]
    assert [c.symbol for c in order][:1] == ["public_api"]
    assert order.index(next(c for c in order if c.symbol == "_helper")) < order.index(
        next(c for c in order if c.path.startswith("tests/"))
    )
    assert order[-1].path.startswith("tests/")  # tests after the code they test
    assert not order[-2].symbol  # and the lines between entities after the entities


def recording_kb(git_repo):
    """A knowledge base indexed without vectors, and the texts its embedder is given, in order."""
    seen: list[str] = []

    class Recording(HashingEmbedder):
        def embed_documents(self, texts, on_batch=None):
            seen.extend(texts)
            return super().embed_documents(texts, on_batch)

    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: Recording())
    kb.reindex_all(embed=False)
    return kb, seen


def test_the_fill_gives_files_changed_lately_their_vectors_before_older_ones(git_repo, tmp_path):
    commit(git_repo, {"src/old.py": "def old_api(x):\n    return x\n"})
    commit(git_repo, {"src/recent.py": "def _recent_helper(y):\n    return y\n"})
    assert recently_changed(git_repo)[:2] == ["src/recent.py", "src/old.py"]
    assert recently_changed(tmp_path) == []  # outside git: no order, no failure
    kb, seen = recording_kb(git_repo)
    store = kb.index("code").store
    first = store.pending(1)[0]  # without the recent files: public entities first
    assert store.chunks([first.key])[first.key].path == "src/old.py"
    kb.embed_pending()
    assert seen[0].startswith("src/recent.py"), seen  # a private helper changed last, before an older public function


def test_the_files_answers_point_at_during_the_fill_get_their_vectors_next(git_repo):
    commit(git_repo, {"src/asked.py": "def parse_invoice(text):\n    return text.split()\n"})
    commit(git_repo, {"src/recent.py": "def _recent_helper(y):\n    return y\n"})
    kb, seen = recording_kb(git_repo)
    answer = kb.search("parse_invoice", kind="code")
    assert answer.dense_coverage < 1
    assert answer.results[0].path == "src/asked.py"
    assert recently_asked(git_repo / ".knowledge")[0] == "src/asked.py"
    kb.embed_pending()
    assert seen[0].startswith("src/asked.py"), seen  # before the file changed last
    kb.search("parse_invoice", kind="code")  # complete: nothing more to remember
    assert recently_asked(git_repo / ".knowledge") == ["src/asked.py"]


def test_the_asked_paths_are_kept_most_recent_first_once_each_and_bounded(tmp_path):
    assert recently_asked(tmp_path) == []  # nothing asked yet
    record_asked(tmp_path, ["a.py", "b.py"])
    record_asked(tmp_path, ["c.py", "a.py", "c.py"])
    assert recently_asked(tmp_path) == ["c.py", "a.py", "b.py"]  # the last answer's best first
    for n in range(3000):
        record_asked(tmp_path, [f"src/module_{n}.py"])
    assert recently_asked(tmp_path)[:2] == ["src/module_2999.py", "src/module_2998.py"]
    assert len(recently_asked(tmp_path)) == KEEP
    assert (tmp_path / ASKED_FILE).stat().st_size <= LIMIT_BYTES
    record_asked(tmp_path / "missing", ["x.py"])  # no index directory: nothing written, no error
    assert not (tmp_path / "missing").exists()


def test_with_fill_off_the_index_stays_at_the_first_stage_and_answers(git_repo):
    """`fill = false` (CI machines, very large repositories): no transformer vector is made, even when asked."""
    commit(git_repo, DOCS)
    made = []

    class Counting(StagedEmbedder):
        def embed_documents(self, texts):
            made.append(len(texts))
            return super().embed_documents(texts)

    kb = KnowledgeBase.open(git_repo, overrides={"fill": False}, embedder_factory=lambda s: Counting())
    kb.reindex_all(embed=True)
    assert kb.embed_in_background() is False
    assert all(c.embedded == 0 and c.static == c.chunks > 0 for c in coverages(kb))
    assert made == []
    answer = kb.search("hooks install", threshold=0.0)
    assert answer.static_coverage == 1.0
    assert answer.results[0].path == "docs/hooks.md"
    status = kb.status()
    assert status.static_coverage == 1.0
    assert status.fill is False
    text = status_to_text(status)
    assert "`fill = false`: the index stays at the first stage" in text
    assert f"first stage: 100.0% of chunks ranked by the static stage meanwhile ({status.static_stage})" in text
    assert status_from_dict(status_to_dict(status)) == status


@pytest.mark.parametrize("small_rows", [1000, 10**9])  # every row scored a page at a time, or by one product
def test_the_static_search_keeps_the_best_k_in_order_with_ties_in_key_order(monkeypatch, small_rows):
    from knowledge.store import static_scan

    monkeypatch.setattr(static_scan, "SMALL_ROWS", small_rows)
    rng = np.random.default_rng(0)
    for rows, k in ((3000, 100), (50, 100), (1000, 1000), (500, 1), (20_000, 7), (40_000, 300)):
        codes = rng.integers(-3, 4, size=(rows, 8)).astype(np.int8)  # coarse values: many ties
        vector = rng.integers(0, 3, size=8).astype(np.float32)
        scores = codes.astype(np.float32) @ vector
        expected = [100 + int(row) for row in np.argsort(-scores, kind="stable")[:k]]
        keys = np.arange(100, 100 + rows, dtype=np.int64)
        found = static_scan.StaticRows(keys, codes, np.ones(rows, np.float32)).nearest(vector, k)
        assert [hit.key for hit in found] == expected


def test_int8_rows_score_within_their_rounding_of_the_float32_rows():
    """A row is its own scale times whole numbers up to 127: each number is off by half a scale step at most, so a
    score is off by at most half a step times the question's absolute sum; unit rows still find themselves first."""
    from knowledge.store import static_blocks, static_scan

    rng = np.random.default_rng(3)
    count, dims = 30_011, 64
    rows = rng.normal(size=(count, 12)) @ rng.normal(size=(12, dims)) + 0.3 * rng.normal(size=(count, dims))
    rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    keys = np.arange(count, dtype=np.int64) * 2 + 5
    stored = static_blocks.quantized(keys, rows)
    assert stored.codes.dtype == np.int8
    assert int(np.abs(stored.codes).max()) == 127
    static = static_scan.StaticRows(*stored)
    for row in rng.choice(count, 40, replace=False):
        vector = rows[row] + 0.05 * rng.normal(size=dims).astype(np.float32)
        exact = rows @ vector
        bound = stored.scales / 2 * np.abs(vector).sum() + 1e-5
        assert np.all(np.abs(static.scores(vector) - exact) <= bound)
        assert static.nearest(rows[row], 1)[0].key == keys[row]


def test_the_static_blocks_keep_rows_in_key_order_through_appends_removals_and_an_older_index(tmp_path):
    import sqlite3

    from knowledge.store import static_blocks
    from knowledge.store.local_static import LocalStatic

    rng = np.random.default_rng(1)
    rows = rng.normal(size=(static_blocks.BLOCK_ROWS * 2 + 5, 4)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)  # unit rows: each is its own best match
    db = sqlite3.connect(tmp_path / "static.sqlite", isolation_level=None)
    db.execute("CREATE TABLE static (key INTEGER PRIMARY KEY, vector BLOB)")
    db.execute("CREATE TABLE chunks (key INTEGER PRIMARY KEY, embedded INTEGER)")
    for statement in static_blocks.SCHEMA:
        db.execute(statement)
    keys = [3 * n + 7 for n in range(len(rows))]
    db.executemany("INSERT INTO chunks VALUES (?, 0)", [(key,) for key in keys])
    # an index from before the blocks: float32 rows, read as they are, then moved into blocks by a write
    db.executemany(
        "INSERT INTO static VALUES (?, ?)", [(key, row.tobytes()) for key, row in zip(keys, rows, strict=True)]
    )
    search = LocalStatic()
    assert np.array_equal(search.current(db).codes, static_blocks.quantized(np.array(keys), rows).codes)
    static_blocks.move_rows_once(db)
    assert db.execute("SELECT count(*) FROM static").fetchone()[0] == 0
    assert db.execute("SELECT count(*), sum(rows) FROM static_blocks").fetchone() == (3, len(rows))
    assert search.counts(db) == (len(rows), len(rows))
    best = search.current(db).nearest(rows[static_blocks.BLOCK_ROWS + 1], 1)[0]
    assert best.key == keys[static_blocks.BLOCK_ROWS + 1]
    assert abs(best.score - 1.0) < 0.5 / 127 * 2  # half a step of the largest scale times the sum of a unit row of 4
    # another process appends: the short last block takes the new row, and the next search reads it
    writer = sqlite3.connect(tmp_path / "static.sqlite", isolation_level=None)
    writer.execute("INSERT INTO chunks VALUES (10000, 1)")
    static_blocks.append(writer, [10000], np.full((1, 4), 0.5, np.float32))
    assert writer.execute("SELECT count(*) FROM static_blocks").fetchone()[0] == 3
    assert search.current(db).nearest(np.ones(4, np.float32), 1)[0].key == 10000
    assert search.counts(db) == (len(rows) + 1, len(rows))
    # removing a file's chunks rewrites the blocks that held them (and drops one left empty)
    gone = keys[: static_blocks.BLOCK_ROWS] + keys[-2:]
    db.executemany("DELETE FROM chunks WHERE key = ?", [(key,) for key in gone])
    static_blocks.remove(db, gone)
    search.invalidate()  # our own write (data_version moves for other connections' commits)
    current = search.current(db)
    assert list(current.keys) == [*keys[static_blocks.BLOCK_ROWS : -2], 10000]
    kept = static_blocks.quantized(np.array(keys[static_blocks.BLOCK_ROWS : -2]), rows[static_blocks.BLOCK_ROWS : -2])
    assert np.array_equal(current.codes[:-1], kept.codes)
    assert np.array_equal(current.scales[:-1], kept.scales)
    # blocks written as float16 (a904587) are read as they are and rewritten as int8 by a write
    old = db.execute("SELECT block, keys, vectors FROM static_blocks WHERE form = 8").fetchall()
    for block, key_blob, vectors in old:
        block_rows = static_blocks._decode(key_blob, vectors, static_blocks.INT8)
        float16 = (block_rows.codes * block_rows.scales[:, None]).astype(np.float16).tobytes()
        db.execute("UPDATE static_blocks SET vectors = ?, form = 16 WHERE block = ?", (float16, block))
    search.invalidate()
    assert list(search.current(db).keys) == list(current.keys)
    static_blocks.move_rows_once(db)
    assert db.execute("SELECT DISTINCT form FROM static_blocks").fetchall() == [(8,)]
    assert search.current(db).nearest(rows[-3], 1)[0].key == keys[-3]
    assert search.counts(db) == (len(current.keys), len(current.keys) - 1)
    db.execute("INSERT INTO chunks VALUES (20000, 0)")  # a chunk without a static row: counted exactly
    assert search.counts(db) == (len(current.keys), len(current.keys) - 1)


def test_fill_paths_and_fill_exclude_scope_the_fill_and_nothing_says_the_rest_waits(git_repo):
    """Issue 68: on a repository whose fill would take hours, a team scopes it; what is left out stays at the first
    stage (searchable) and no summary counts it as waiting."""
    from click.testing import CliRunner

    from knowledge.cli import cli
    from knowledge.store.local import LocalStore

    from .conftest import HashingEmbedder, commit

    commit(
        git_repo,
        {
            "knowledge.toml": 'fill_paths = ["src/**", "docs/**"]\nfill_exclude = ["src/generated/**"]\n',
            "src/app.py": "def serve():\n    return 1\n",
            "src/generated/api.py": "def generated_call():\n    return 2\n",
            "tools/script.py": "def tool():\n    return 3\n",
            "docs/guide.md": "---\ndescription: Guide.\n---\n# Guide\n\nServe the app.\n",
        },
    )
    result = CliRunner().invoke(
        cli, ["-C", str(git_repo), "reindex-all"], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    assert result.exit_code == 0, result.output
    assert "wait for vectors" not in result.stderr
    store = LocalStore.open(git_repo, "code")
    embedded = dict(store._db.execute("SELECT path, min(embedded) FROM chunks GROUP BY path").fetchall())
    assert embedded["src/app.py"] == 1
    assert embedded["src/generated/api.py"] == 0
    assert embedded["tools/script.py"] == 0
    assert LocalStore.open(git_repo, "docs").coverage().ratio == 1.0
    found = CliRunner().invoke(
        cli, ["-C", str(git_repo), "search", "tool", "--kind", "code", "--json", "--threshold", "0"],
        obj={"embedder_factory": lambda s: HashingEmbedder()},
    )  # fmt: skip
    assert "tools/script.py" in found.stdout  # the first stage still answers for it
