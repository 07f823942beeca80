"""The static first stage: a dense vector for every chunk at once, replaced chunk by chunk by the transformer's."""

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from knowledge.embedding import model_spec
from knowledge.embedding.install import ensure_static, installed_model
from knowledge.embedding.onnx_embedder import load_tokenizer
from knowledge.embedding.static import (
    INFO,
    MIN_VERIFIED,
    TABLE,
    StaticEmbedder,
    load_static,
    verified,
)
from knowledge.errors import ModelVerificationError
from knowledge.git import recently_changed
from knowledge.kb import KnowledgeBase
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


def test_during_the_fill_no_chunk_is_counted_twice_and_the_answer_says_each_stage_share(kb):
    docs = kb.index("docs").store
    first = docs.pending(2)
    docs.add_vectors({p.key: HashingEmbedder().embed_query(p.embed_text) for p in first})
    coverage = docs.coverage()
    assert coverage.embedded == 2
    assert coverage.static == coverage.chunks - 2  # the static rows of the embedded chunks are gone
    answer = kb.search("hooks install budget", kind="docs", threshold=-1.0, k=20, explain=True)
    ids = [hit.id for hit in answer.results]
    assert len(ids) == len(set(ids))
    staged = [hit for hit in answer.results if hit.explain["static_score"] is not None]
    modelled = [hit for hit in answer.results if hit.score is not None]
    assert staged
    assert modelled
    assert not {h.id for h in staged} & {h.id for h in modelled}
    assert answer.dense_coverage + answer.static_coverage == pytest.approx(1.0)


def test_a_resumed_fill_leaves_no_static_row_behind(kb):
    kb.embed_pending()
    assert all(c.embedded == c.chunks and c.static == 0 for c in coverages(kb))
    answer = kb.search("hooks install", threshold=0.0)
    assert answer.static_coverage == 0.0
    assert all(hit.score is not None for hit in answer.results)


def test_a_changed_file_gets_static_vectors_for_its_new_chunks_only(kb, git_repo):
    kb.embed_pending()
    commit(git_repo, {"docs/hooks.md": DOCS["docs/hooks.md"] + "\n## Status\n\nhooks status lists them.\n"})
    kb.reindex_changes(embed=False)
    coverage = kb.index("docs").coverage()
    assert coverage.static == coverage.chunks - coverage.embedded > 0


# ---- the real static stage, distilled from MiniLM --------------------------------------------------------------
@pytest.fixture(scope="module")
def minilm_static(tmp_path_factory):
    spec = model_spec("all-MiniLM-L6-v2")
    folder = ensure_static(model_home(), spec, "fp32")
    copy = tmp_path_factory.mktemp("static")
    for name in (TABLE, INFO, "tokenizer.json"):
        shutil.copy(folder / name, copy / name)
    return copy


def real_tokenizer(folder):
    return load_tokenizer((folder / "tokenizer.json").read_text(encoding="utf-8"), 0, 0)


@pytest.mark.model
def test_the_built_static_stage_is_verified_and_finds_meaning_not_just_shared_words(minilm_static):
    info = json.loads((minilm_static / INFO).read_text())
    assert int(info["verified"].split("/")[0]) >= MIN_VERIFIED
    stage = load_static(minilm_static, real_tokenizer(minilm_static))
    assert verified(stage) >= MIN_VERIFIED
    shuffled = StaticEmbedder(np.random.default_rng(0).permutation(stage.table), real_tokenizer(minilm_static), "")
    assert verified(shuffled) < MIN_VERIFIED  # what the build refuses
    near, far = stage.embed_documents(["add a post-commit hook to the repository", "the weather in paris is mild"])
    query = stage.embed_query("how are git hooks installed")
    assert float(near @ query) > float(far @ query) + 0.1


@pytest.mark.model
def test_a_corrupt_static_table_is_refused(minilm_static, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(minilm_static, broken)
    data = bytearray((broken / TABLE).read_bytes())
    data[-5] ^= 0xFF
    (broken / TABLE).write_bytes(bytes(data))
    with pytest.raises(ModelVerificationError, match="sha256"):
        load_static(broken, real_tokenizer(broken))


@pytest.mark.model
def test_the_installed_model_reports_its_static_stage(minilm_static):
    spec = model_spec("all-MiniLM-L6-v2")
    assert installed_model(model_home(), spec, "fp32") is not None
    assert (installed_model(model_home(), spec, "fp32").path / TABLE).is_file()


@pytest.mark.model
def test_reindex_all_returns_searchable_and_the_vectors_arrive_in_the_background(git_repo, tmp_path):
    """The real CLI with MiniLM, as a user runs it: the model named by --model is the one the detached embed uses."""
    ensure_static(model_home(), model_spec("all-MiniLM-L6-v2"), "fp32")
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


@pytest.mark.model
def test_the_static_stage_reports_progress_batch_by_batch(tmp_path, monkeypatch):
    """`model install`'s longest step (every vocabulary token through the model) ticks a progress bar after every
    batch, with an ETA, instead of one line a minute: here over the first 1,100 tokens of MiniLM's vocabulary."""
    from knowledge.embedding.install import open_embedder
    from knowledge.embedding.static import DISTILL_BATCH, build_static

    embedder = open_embedder(installed_model(model_home(), model_spec("all-MiniLM-L6-v2"), "fp32"))
    monkeypatch.setattr(embedder, "vocabulary_size", lambda: 1100)
    monkeypatch.setattr("knowledge.embedding.static.verified", lambda static: 0)  # a part of a table: not judged
    ticks = []
    with pytest.raises(ModelVerificationError):
        build_static(tmp_path, embedder, on_progress=ticks.append)
    assert [t.done for t in ticks] == [DISTILL_BATCH, 2 * DISTILL_BATCH, 1100]
    assert {t.stage for t in ticks} == {"static stage"}
    assert all(t.total == 1100 and t.eta_seconds is not None for t in ticks)
    assert ticks[-1].eta_seconds == 0
