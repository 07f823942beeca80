import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.kb import KnowledgeBase
from knowledge.store.local import LocalStore

from .conftest import HashingEmbedder, commit, git, write

DOC = "---\ndescription: {t} doc\n---\n# {t}\n\n{body}\n\n## Details\n\nmore about {t}\n"


def kb_for(root, embedder=None):
    return KnowledgeBase.open(root, embedder_factory=lambda s: embedder or HashingEmbedder())


def snapshot(root):
    return sorted((c.id, c.content_hash) for c in LocalStore.open(root).all_chunks().values())


def equals_clean_rebuild(root):
    incremental = snapshot(root)
    kb_for(root).reindex_all()
    return incremental == snapshot(root)


@pytest.fixture
def repo(git_repo):
    commit(git_repo, {f"docs/d{i}.md": DOC.format(t=f"Doc{i}", body=f"body {i}") for i in range(5)})
    kb_for(git_repo).reindex_all()
    return git_repo


def test_editing_one_section_embeds_only_that_chunk(repo):
    commit(repo, {"docs/d1.md": DOC.format(t="Doc1", body="a new body")})
    report = kb_for(repo).reindex_changes()
    assert (report.files_indexed, report.chunks_embedded, report.chunks_reused) == (1, 1, 1)
    assert equals_clean_rebuild(repo)


def test_nothing_changed_does_nothing(repo):
    report = kb_for(repo).reindex_changes()
    assert (report.files_indexed, report.chunks_total) == (0, 0)
    assert kb_for(repo).catch_up() is None


def test_rename_reuses_vectors_and_delete_removes(repo):
    git(repo, "mv", "docs/d2.md", "docs/moved.md")
    git(repo, "rm", "-q", "docs/d3.md")
    git(repo, "commit", "-q", "-m", "mv and rm")
    report = kb_for(repo).reindex_changes()
    assert report.chunks_embedded == 0
    assert report.files_removed == 2  # d2 (moved away) and d3
    ids = {c[0] for c in snapshot(repo)}
    assert "docs/moved.md#doc2" in ids
    assert not any(i.startswith(("docs/d2.md", "docs/d3.md")) for i in ids)
    assert equals_clean_rebuild(repo)


def test_explicit_paths_including_a_deleted_one(repo):
    (repo / "docs" / "d4.md").unlink()
    write(repo, {"docs/d0.md": DOC.format(t="Doc0", body="edited, not committed")})
    report = kb_for(repo).reindex_changes(["docs/d4.md", "docs/d0.md"])
    assert report.files_removed == 1
    assert report.chunks_embedded == 1
    assert equals_clean_rebuild(repo)


def test_worktree_flag_picks_up_uncommitted_and_untracked(repo):
    write(repo, {"docs/new.md": DOC.format(t="New", body="untracked"), "docs/d0.md": DOC.format(t="Doc0", body="x")})
    assert kb_for(repo).reindex_changes().files_indexed == 0
    report = kb_for(repo).reindex_changes(worktree=True)
    assert report.files_indexed == 2
    assert equals_clean_rebuild(repo)


def test_rewritten_history_falls_back_to_content_hashes(repo):
    git(repo, "checkout", "-q", "--orphan", "rewritten")
    write(repo, {"docs/d0.md": DOC.format(t="Doc0", body="rewritten")})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "new root")
    git(repo, "branch", "-D", "main")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    report = kb_for(repo).reindex_changes()
    assert report.files_indexed == 1
    assert report.chunks_embedded == 1
    assert equals_clean_rebuild(repo)


def test_model_change_rebuilds_instead_of_mixing(repo):
    class Other(HashingEmbedder):
        fingerprint = "other-model"
        dims = 32

    report = kb_for(repo, Other()).reindex_changes()
    assert report.files_indexed == 5
    store = LocalStore.open(repo)
    assert store.manifest.dims == 32
    assert store.manifest.fingerprint.startswith("other-model")


def test_outside_paths_are_refused(repo):
    result = CliRunner().invoke(
        cli,
        ["-C", str(repo), "reindex-from-changes", "/etc/passwd"],
        obj={"embedder_factory": lambda s: HashingEmbedder()},
    )
    assert result.exit_code == 1
    assert "outside the repository root" in result.stderr


def test_search_results_carry_commit_and_staleness(repo):
    head = git(repo, "rev-parse", "HEAD").strip()
    hits = kb_for(repo).search("Doc1 body 1", threshold=0).results
    assert hits[0].commit == head
    assert not hits[0].stale
    write(repo, {hits[0].path: "changed\n"})
    assert kb_for(repo).search("Doc1 body 1", threshold=0).results[0].stale
    status = kb_for(repo).status()
    assert status.changed_files == (hits[0].path,)
    assert status.commits_behind == 0


def test_status_reports_commits_behind(repo):
    commit(repo, {"docs/d1.md": DOC.format(t="Doc1", body="changed")})
    status = kb_for(repo).status()
    assert status.commits_behind == 1
    assert status.changed_files == ("docs/d1.md",)
    assert kb_for(repo).catch_up().files_indexed == 1
    assert kb_for(repo).status().changed_files == ()


def test_cli_reindex_from_changes(repo):
    commit(repo, {"docs/d1.md": DOC.format(t="Doc1", body="cli edit")})
    result = CliRunner().invoke(
        cli, ["-C", str(repo), "reindex-from-changes"], obj={"embedder_factory": lambda s: HashingEmbedder()}
    )
    assert result.exit_code == 0, result.output
    assert "indexed 1 files, 2 chunks (1 embedded, 1 from cache)" in result.stderr
    assert Path(repo / ".knowledge" / "docs.meta.json").exists()


def test_a_new_chunker_rebuilds_on_the_next_run_even_with_nothing_changed(git_repo, monkeypatch):
    """An upgrade that changes the chunker: the hook's next run rebuilds (from cached vectors), search never breaks."""
    import knowledge.indexer
    import knowledge.kb
    from knowledge.kb import KnowledgeBase

    from .conftest import HashingEmbedder, commit

    commit(
        git_repo,
        {"docs/a.md": "---\ndescription: a\n---\n# A\n\nThe token budget.\n", "src/x.py": "def f():\n    pass\n"},
    )
    KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder()).reindex_all()
    newer = knowledge.kb.CHUNKER_VERSION + 1
    monkeypatch.setattr(knowledge.kb, "CHUNKER_VERSION", newer)
    monkeypatch.setattr(knowledge.indexer, "CHUNKER_VERSION", newer)
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    assert kb.search("token budget", threshold=0).results[0].path == "docs/a.md"  # before the hook has run too
    report = kb.reindex_changes()
    assert report.chunks_embedded == 0  # every vector came from the cache
    assert {index.store.manifest.chunker_version for index in kb.indexes()} == {newer}
    assert kb.search("token budget", threshold=0).results[0].path == "docs/a.md"


def test_a_first_build_is_searchable_after_its_first_batch_and_an_interrupted_one_is_finished_by_the_next_run(
    git_repo, monkeypatch
):
    from knowledge import indexer

    commit(git_repo, {f"docs/d{i:03}.md": DOC.format(t=f"Doc{i}", body=f"alpha{i} body") for i in range(100)})
    real = indexer.chunk_batches
    seen: list[list[str]] = []

    def two_batches_then_killed(*args, **kwargs):
        for number, batch in enumerate(real(*args, **kwargs)):
            if number == 1:  # the first batch is live by now: a search in another process answers from it
                seen.append([h.path for h in kb_for(git_repo).search("alpha3 body", threshold=0).results])
            if number == 2:
                raise KeyboardInterrupt
            yield batch

    monkeypatch.setattr(indexer, "chunk_batches", two_batches_then_killed)
    with pytest.raises(KeyboardInterrupt):
        kb_for(git_repo).reindex_all(embed=False)
    assert seen
    assert "docs/d003.md" in seen[0]
    store = LocalStore.open(git_repo)
    assert store.commit() is None  # not complete: no commit recorded
    indexed = len(store.files())
    assert 0 < indexed < 100
    monkeypatch.setattr(indexer, "chunk_batches", real)
    report = kb_for(git_repo).reindex_changes()  # what a hook runs next
    assert report.files_indexed == 100 - indexed
    assert LocalStore.open(git_repo).commit() == git(git_repo, "rev-parse", "HEAD").strip()
    assert equals_clean_rebuild(git_repo)


def test_a_big_build_chunks_only_a_window_ahead_of_the_store_and_hands_batches_out_in_path_order(git_repo, monkeypatch):
    """The workers chunk faster than a store writes: a build must not hold every batch (GBs at a million chunks)."""
    from concurrent.futures import ProcessPoolExecutor

    from knowledge import chunk_files
    from knowledge.config import load_settings

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the files are chunked in this process, one batch at a time")
    files = {
        f"docs/d{i:04}.md": DOC.format(t=f"Doc{i}", body=f"alpha{i} body")
        for i in range(40 * chunk_files.FILES_PER_TASK)
    }
    commit(git_repo, files)
    submitted: list[int] = []
    real_submit = ProcessPoolExecutor.submit

    def counted(self, fn, *args, **kwargs):
        submitted.append(1)
        return real_submit(self, fn, *args, **kwargs)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", counted)
    settings, _ = load_settings(git_repo)
    batches = chunk_files.chunk_batches(git_repo, settings, "docs", list(files), None, HashingEmbedder)
    first = next(batches)
    window = min(os.cpu_count() or 1, 8) * chunk_files.TASKS_AHEAD
    assert len(submitted) <= window < 40  # not all forty parts at once
    paths = [f.path for f in first.files] + [f.path for batch in batches for f in batch.files]
    assert paths == sorted(files)
    assert len(submitted) == 40
