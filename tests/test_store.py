import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge.errors import IndexCorruptError, IndexIncompatibleError, IndexNotFoundError
from knowledge.kb import KnowledgeBase
from knowledge.store import IndexStore

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
        IndexStore.open(git_repo)


def test_corrupt_metadata_names_the_file(indexed_repo):
    meta = indexed_repo / ".knowledge" / "docs.meta.json"
    meta.write_text("{not json")
    with pytest.raises(IndexCorruptError, match=r"docs\.meta\.json: unreadable index metadata"):
        open_kb(indexed_repo).search("hooks", threshold=0)
    open_kb(indexed_repo).reindex_all()
    assert open_kb(indexed_repo).search("hooks", threshold=0).results


def test_garbage_vector_file_is_detected(indexed_repo):
    (indexed_repo / ".knowledge" / "docs.usearch").write_bytes(b"garbage")
    (indexed_repo / ".knowledge" / "docs.usearch.prev").unlink(missing_ok=True)
    with pytest.raises(IndexCorruptError, match=r"docs\.usearch: does not match docs\.meta\.json"):
        IndexStore.open(indexed_repo)


def test_copied_index_still_opens(indexed_repo, tmp_path):
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(indexed_repo), str(copy)], check=True)  # new inodes, same bytes
    assert len(IndexStore.open(copy).chunks) == len(IndexStore.open(indexed_repo).chunks)


def test_crash_between_vector_and_metadata_rename_keeps_previous_generation(indexed_repo):
    before = open_kb(indexed_repo).search("token budget", threshold=0)
    commit(indexed_repo, {"docs/new.md": "---\ndescription: n\n---\n# New\n\nnew words here\n"})
    vectors = indexed_repo / ".knowledge" / "docs.usearch"
    old_meta = (indexed_repo / ".knowledge" / "docs.meta.json").read_bytes()
    open_kb(indexed_repo).reindex_all()
    # Put back the old metadata: the state right after the vector rename, before the metadata rename.
    (indexed_repo / ".knowledge" / "docs.meta.json").write_bytes(old_meta)
    assert vectors.with_name("docs.usearch.prev").exists()
    after = open_kb(indexed_repo).search("token budget", threshold=0)
    assert [h.id for h in after.results] == [h.id for h in before.results]


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


def test_killing_reindex_all_midway_leaves_previous_index_usable(indexed_repo):
    before = open_kb(indexed_repo).search("install hook", threshold=0)
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
    after = open_kb(indexed_repo).search("install hook", threshold=0)
    assert [h.id for h in after.results] == [h.id for h in before.results]
    status = open_kb(indexed_repo).status()
    assert status.files == 3
    # The lock died with the process: a new run proceeds at once.
    started = time.monotonic()
    report = open_kb(indexed_repo).reindex_all()
    assert report.files_indexed == 23
    assert time.monotonic() - started < 30


def test_manifest_names_model_and_dims(indexed_repo):
    manifest = json.loads((indexed_repo / ".knowledge" / "manifest.json").read_text())
    assert manifest["model_id"] == "hashing-test"
    assert manifest["dims"] == 64
    assert manifest["format_version"] == 1
    assert manifest["fingerprint"].startswith("hashing-test-1")
