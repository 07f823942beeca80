import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge.errors import IndexCorruptError, IndexIncompatibleError, IndexNotFoundError
from knowledge.kb import KnowledgeBase
from knowledge.store.local import LocalStore

from .conftest import HashingEmbedder, commit

FIXTURES = Path(__file__).parent / "fixtures" / "docs"


def open_kb(root):
    return KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder())


@pytest.fixture
def indexed_repo(git_repo):
    commit(git_repo, {f"docs/{p.name}": p.read_text() for p in FIXTURES.glob("*.md")})
    open_kb(git_repo).reindex_all()
    return git_repo


def test_missing_index_names_the_command(git_repo):
    with pytest.raises(IndexNotFoundError, match="knowledge reindex-all"):
        LocalStore.open(git_repo)


def test_corrupt_store_names_the_file(indexed_repo):
    db = indexed_repo / ".knowledge" / "docs.sqlite"
    for extra in (".knowledge/docs.sqlite-wal", ".knowledge/docs.sqlite-shm"):
        (indexed_repo / extra).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexCorruptError, match=r"docs\.sqlite: unreadable index"):
        open_kb(indexed_repo).search("hooks", threshold=0)
    open_kb(indexed_repo).reindex_all()
    assert open_kb(indexed_repo).search("hooks", threshold=0).results


def test_garbage_vector_file_is_detected(indexed_repo):
    (indexed_repo / ".knowledge" / "docs.usearch").write_bytes(b"garbage")
    (indexed_repo / ".knowledge" / "docs.usearch.prev").unlink(missing_ok=True)
    with pytest.raises(IndexCorruptError, match=r"docs\.usearch: does not match its index"):
        open_kb(indexed_repo).search("hooks", threshold=0)


def test_copied_index_still_opens(indexed_repo, tmp_path):
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(indexed_repo), str(copy)], check=True)  # new inodes, same bytes
    assert len(LocalStore.open(copy).all_chunks()) == len(LocalStore.open(indexed_repo).all_chunks())
    assert [h.id for h in open_kb(copy).search("token budget", threshold=0).results] == [
        h.id for h in open_kb(indexed_repo).search("token budget", threshold=0).results
    ]


def test_crash_after_snapshot_rename_before_it_is_recorded_keeps_the_previous_snapshot(indexed_repo, tmp_path):
    before = open_kb(indexed_repo).search("token budget", threshold=0)
    folder = indexed_repo / ".knowledge"
    saved = sqlite3.connect(tmp_path / "saved.sqlite")
    live = sqlite3.connect(folder / "docs.sqlite")
    live.backup(saved)
    live.close()
    commit(indexed_repo, {"docs/new.md": "---\ndescription: n\n---\n# New\n\nnew words here\n"})
    open_kb(indexed_repo).reindex_changes()
    store = LocalStore.open(indexed_repo)
    assert store.compact(force=True)
    store.close()
    # Put back the database as it was before the compaction: the state right after the rename, before the commit.
    live = sqlite3.connect(folder / "docs.sqlite")
    saved.backup(live)
    live.close()
    assert (folder / "docs.usearch.prev").exists()
    after = open_kb(indexed_repo).search("token budget", threshold=0)
    assert [h.id for h in after.results] == [h.id for h in before.results]
    # A second compaction from that state must not make the orphan the good copy.
    store = LocalStore.open(indexed_repo)
    store.compact(force=True)
    store.close()
    assert [h.id for h in open_kb(indexed_repo).search("token budget", threshold=0).results] == [
        h.id for h in before.results
    ]


def test_other_model_is_refused_not_mixed(indexed_repo):
    class Other(HashingEmbedder):
        fingerprint = "other-model"

    kb = KnowledgeBase.open(indexed_repo, embedder_factory=lambda s: Other())
    with pytest.raises(IndexIncompatibleError, match="reindex-all"):
        kb.search("hooks")


SLOW_REINDEX = """
import sys, time
sys.path.insert(0, {tests!r})
from conftest import HashingEmbedder
from knowledge.kb import KnowledgeBase
from pathlib import Path

class Slow(HashingEmbedder):
    def embed_documents(self, texts, on_batch=None):
        print("embedding", flush=True)
        time.sleep(60)
        return super().embed_documents(texts, on_batch)

KnowledgeBase.open(Path({root!r}), embedder_factory=lambda s: Slow()).reindex_all()
"""


def test_killed_while_embedding_stays_searchable_and_resumes_to_a_clean_rebuild(indexed_repo, tmp_path):
    commit(indexed_repo, {f"docs/extra{i}.md": f"# Extra {i}\n\nmore text {i}\n" for i in range(20)})
    script = SLOW_REINDEX.format(tests=str(Path(__file__).parent), root=str(indexed_repo))
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )
    assert proc.stdout.readline().strip() == "embedding"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    # Chunks are in, vectors are not: the index answers, lexically for the new files, and says how much is embedded.
    during = open_kb(indexed_repo).search("more text", threshold=0)
    assert during.dense_coverage < 1
    assert any(h.path.startswith("docs/extra") and h.score is None for h in during.results)
    status = open_kb(indexed_repo).status()
    assert status.files == 23
    assert status.chunks_pending > 0
    # The lock died with the process: the next run resumes at once and ends equal to a clean rebuild.
    started = time.monotonic()
    result = open_kb(indexed_repo).embed_pending()
    assert result.embedded > 0
    assert time.monotonic() - started < 30
    resumed = open_kb(indexed_repo).search("more text 7", threshold=0)
    assert resumed.dense_coverage == 1
    clean = tmp_path / "clean"
    subprocess.run(["cp", "-r", str(indexed_repo), str(clean)], check=True)
    subprocess.run(["rm", "-rf", str(clean / ".knowledge")], check=True)
    open_kb(clean).reindex_all()
    expected = open_kb(clean).search("more text 7", threshold=0)
    assert sorted((h.id, h.score) for h in resumed.results) == sorted((h.id, h.score) for h in expected.results)


def test_meta_json_names_model_and_dims(indexed_repo):
    meta = json.loads((indexed_repo / ".knowledge" / "docs.meta.json").read_text())
    assert meta["manifest"]["model_id"] == "hashing-test"
    assert meta["manifest"]["dims"] == 64
    assert meta["format_version"] == 2
    assert meta["manifest"]["fingerprint"].startswith("hashing-test-1")
    assert meta["chunks"] == len(LocalStore.open(indexed_repo).all_chunks())


def test_old_format_index_gets_one_clear_line(indexed_repo):
    folder = indexed_repo / ".knowledge"
    for path in folder.glob("docs.sqlite*"):
        path.unlink()
    (folder / "docs.meta.json").write_text(json.dumps({"manifest": {"format_version": 1}, "chunks": {}}))
    with pytest.raises(
        IndexIncompatibleError, match="index format 1 from an earlier knowledge; run `knowledge reindex-all`"
    ):
        open_kb(indexed_repo).search("hooks")
    report = open_kb(indexed_repo).reindex_changes()  # the hooks' command migrates it by rebuilding
    assert report.files_indexed == 3
    assert open_kb(indexed_repo).search("hooks", threshold=0).results


def test_a_broken_lexical_index_is_an_error_not_an_empty_answer(indexed_repo):
    db = sqlite3.connect(indexed_repo / ".knowledge" / "docs.sqlite")
    db.execute("DROP TABLE fts")
    db.commit()
    db.close()
    with pytest.raises(IndexCorruptError, match=r"docs\.sqlite: the lexical index cannot be read"):
        open_kb(indexed_repo).search("hooks")


def test_a_query_term_with_a_double_quote_is_quoted_for_fts5(indexed_repo):
    store = LocalStore.open(indexed_repo)
    assert store.lexical_search(['say"hi', "hooks"], 5)  # no FTS5 syntax error, the other term still matches


def test_leftovers_of_killed_writers_are_removed_by_the_next_writer(indexed_repo):
    folder = indexed_repo / ".knowledge"
    leftovers = [folder / ".docs.sqlite.building", folder / ".docs.sqlite.building-wal", folder / ".docs.usearch.9.tmp"]
    for path in leftovers:
        path.write_bytes(b"half-written")
    (indexed_repo / "docs" / "new.md").write_text("# New\n\ntext\n")
    open_kb(indexed_repo).reindex_changes(worktree=True)
    assert [p.name for p in leftovers if p.exists()] == []


class InSmallBatches(HashingEmbedder):
    """Reports every 8 texts, as the ONNX embedder reports every token-capped batch."""

    def embed_documents(self, texts, on_batch=None):
        out = super().embed_documents(texts)
        for start in range(0, len(texts), 8):
            time.sleep(0.01)  # a rate slow enough that the ETA is not rounded to 0
            if on_batch:
                on_batch(len(texts[start : start + 8]))
        return out


def test_embedding_reports_after_every_model_batch_with_an_eta_for_the_whole_index(git_repo):
    docs = {f"docs/page{i}.md": f"---\ndescription: page {i}\n---\n# Page {i}\n\nwords about {i}\n" for i in range(300)}
    code = {f"src/mod{i}.py": f"def function_{i}():\n    return {i}\n" for i in range(300)}
    commit(git_repo, {**docs, **code})
    seen = []
    KnowledgeBase.open(git_repo, embedder_factory=lambda s: InSmallBatches()).reindex_all(on_progress=seen.append)
    docs_steps = [p for p in seen if p.stage == "embedding docs"]
    # 300 doc chunks in committed batches of 256: one callback per model batch, not two per stage
    assert len(docs_steps) >= 300 // 8
    assert [p.done for p in docs_steps] == sorted(p.done for p in docs_steps)
    assert docs_steps[-1].done == docs_steps[-1].total == 300
    # when the docs are done the code is still to embed: the ETA says so instead of 0
    assert docs_steps[-1].eta_seconds is not None
    assert docs_steps[-1].eta_seconds > 0
    code_steps = [p for p in seen if p.stage == "embedding code"]
    assert code_steps[-1].eta_seconds == 0


def test_plain_progress_off_a_terminal_comes_at_least_every_ten_seconds(capsys):
    from knowledge.cli.progress import ProgressPrinter
    from knowledge.records import Progress

    now = [0.0]
    printer = ProgressPrinter(enabled=True, terminal=False, clock=lambda: now[0])
    for done in range(1, 101):  # a model batch every 3 s
        now[0] += 3.0
        printer(Progress("embedding code", done, 100, 300.0 - 3 * done))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("embedding code: 1/100 (1%), about")
    assert lines[-1].startswith("embedding code: 100/100 (100%)")
    assert 100 * 3 / 10 <= len(lines) <= 100 * 3 / 5 + 2  # every 5-6 s: never quieter than 10 s, never every batch


def test_status_counts_what_the_fill_has_embedded_not_only_what_it_committed():
    """569400d: status sat at 0.0% for minutes while embed.log showed 47% done (coverage moves in commits of 256)."""
    from knowledge.status import _filled
    from knowledge.store import Coverage, EmbedProgress

    progress = EmbedProgress(done=470, total=1000, chars_done=0, chars_total=0, chars_per_second=0.0, updated_at=0.0)
    assert _filled(Coverage(chunks=1000, embedded=0, progress=progress)) == 470
    assert _filled(Coverage(chunks=1200, embedded=300, progress=progress)) == 670  # 200 had vectors before it began
    assert _filled(Coverage(chunks=1000, embedded=512)) == 512  # no fill: what is committed


def test_at_a_steady_rate_the_eta_never_rises_across_the_whole_fill(git_repo, monkeypatch):
    """Status's ETA: the pass's characters left over its cumulative rate, for the whole index (docs then code), so at
    a steady model speed it only falls; the clock is the embedder's own (no test timing on a loaded machine)."""
    import itertools
    from types import SimpleNamespace

    import knowledge.embed_pass as embed_pass

    now = [0.0]  # the fill's own clock only: locks and waits elsewhere keep the real one
    monkeypatch.setattr(embed_pass, "time", SimpleNamespace(monotonic=lambda: now[0], time=time.time, sleep=time.sleep))

    class Steady(HashingEmbedder):
        """The real embedder's order (shortest first) at a steady thousand characters a second."""

        def embed_documents(self, texts, on_batch=None):
            out = super().embed_documents(texts)
            shortest_first = sorted(texts, key=len)
            for start in range(0, len(texts), 8):
                batch = shortest_first[start : start + 8]
                now[0] += sum(map(len, batch)) / 1000.0
                if on_batch:
                    on_batch(len(batch))
            return out

    docs = {f"docs/page{i}.md": f"---\ndescription: page {i}\n---\n# Page {i}\n\nwords about {i}\n" for i in range(200)}
    code = {f"src/mod{i}.py": f"def function_{i}(value):\n    return value * {i}\n" for i in range(200)}
    commit(git_repo, {**docs, **code})
    seen = []
    KnowledgeBase.open(git_repo, embedder_factory=lambda s: Steady()).reindex_all(on_progress=seen.append)
    etas = [p.eta_seconds for p in seen if p.stage.startswith("embedding") and p.eta_seconds is not None]
    assert len(etas) > 40
    assert all(later <= earlier + 0.1 for earlier, later in itertools.pairwise(etas)), etas  # 0.1: its rounding
    assert etas[-1] == 0
