"""The warm processes' in-memory lexical index returns exactly what FTS5 returns, and never answers for rows it has
not caught up with."""

import random
import time

import pytest

from knowledge.kb import KnowledgeBase
from knowledge.lexical import terms
from knowledge.store import local_lexical
from knowledge.store.local import LocalStore
from knowledge.store.local_files import FTS_TOKENIZER, store_paths
from knowledge.store.memory_lexicon import MemoryLexicon

from .conftest import HashingEmbedder, commit, git

WORDS = (  # noqa: SIM905 - a word list reads better as text
    "index indexes indexing indexed search searching searches query queries running runs runner cache cached "
    "caching vector vectors embed embedding embeddings token tokens budget commit commits branch rebase hook hooks "
    "reindex_changes parse_config load_settings HttpServer daemon socket owner lexical dense fused rank ranking "
    "the of and to in a is"
).split()


def open_kb(root):
    return KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder())


def doc(rng: random.Random, n: int) -> str:
    sections = [f"---\ndescription: generated doc {n}\n---\n# Doc {n}\n"]
    for s in range(4):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
        sections.append(f"## Part {n}.{s}\n\n{body}\n")
    return "\n".join(sections)


@pytest.fixture
def repo(git_repo):
    rng = random.Random(7)
    commit(git_repo, {f"docs/d{n}.md": doc(rng, n) for n in range(60)})
    open_kb(git_repo).reindex_all()
    return git_repo


def queries() -> list[list[str]]:
    rng = random.Random(11)
    asked = [terms(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))) for _ in range(60)]
    return [*asked, ["indexing", "indexes", "indexing"], ["nosuchword"], ["reindex_changes", "hooks"]]


def same_as_fts5(lexicon: MemoryLexicon, store: LocalStore, k: int = 20) -> None:
    version = store._meta("chunks_version") or ""
    for words in queries():
        expected = store.lexical_search(words, k)  # no lexicon on this store: FTS5
        found = lexicon.search(words, k, version)
        assert found is not None
        assert [key for key, _ in found] == [hit.key for hit in expected], words
        assert [score for _, score in found] == pytest.approx([hit.score for hit in expected], rel=1e-12)


def test_the_copy_ranks_exactly_as_fts5(repo):
    store = LocalStore.open(repo, "docs")
    lexicon = MemoryLexicon(store_paths(repo, "docs")[2], FTS_TOKENIZER)
    lexicon.update()
    same_as_fts5(lexicon, store)


def test_after_a_commit_the_copy_waits_until_it_has_caught_up_then_ranks_as_fts5(repo):
    lexicon = MemoryLexicon(store_paths(repo, "docs")[2], FTS_TOKENIZER)
    lexicon.update()
    rng = random.Random(3)
    commit(repo, {"docs/d1.md": doc(rng, 101), "docs/new.md": doc(rng, 102)})
    git(repo, "rm", "-q", "docs/d2.md")
    git(repo, "commit", "-qm", "remove d2")
    open_kb(repo).reindex_changes()
    store = LocalStore.open(repo, "docs")
    version = store._meta("chunks_version")
    assert lexicon.search(["index"], 10, version) is None  # stale: FTS5 must answer
    lexicon.update()  # patched: one file added, one edited, one removed
    same_as_fts5(lexicon, store)
    for n in range(3, 40):  # most of the rows go: rebuilt rather than patched
        git(repo, "rm", "-q", f"docs/d{n}.md")
    git(repo, "commit", "-qm", "remove many")
    open_kb(repo).reindex_changes()
    store = LocalStore.open(repo, "docs")
    lexicon.update()
    same_as_fts5(lexicon, store)


def test_a_warm_knowledge_base_answers_as_a_cold_one_before_and_after_a_commit(repo, monkeypatch):
    monkeypatch.setattr(local_lexical, "MEMORY_LEXICON_MIN_CHUNKS", 1)
    warm = open_kb(repo)
    monkeypatch.setattr(local_lexical, "BUILD_AFTER_FIRST_QUESTION_S", 0.0)
    warm.keep_warm()  # in the background, as a server does: after the first question
    store = warm.index("docs").store
    assert store._lexical._lexicon.search(["index"], 5, store._meta("chunks_version")) is None
    warm.search("index", threshold=0)
    deadline = time.monotonic() + 30
    lexicon = store._lexical._lexicon
    while lexicon.search(["index"], 5, store._meta("chunks_version")) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store._lexical._lexicon.search(["index"], 5, store._meta("chunks_version")) is not None

    def answers(kb):
        return [[h.id for h in kb.search(" ".join(q), threshold=0).results] for q in queries()[:20]]

    assert answers(warm) == answers(open_kb(repo))
    rng = random.Random(5)
    commit(repo, {"docs/d4.md": doc(rng, 104)})
    open_kb(repo).reindex_changes()
    assert answers(warm) == answers(open_kb(repo))  # at once: FTS5 answers while the copy catches up
