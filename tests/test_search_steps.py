"""search() as named steps (retrieve -> rank -> cut -> group -> hits -> pack), each tested on a real small index."""

import pytest

from knowledge.api.request import SearchRequest
from knowledge.kb import KnowledgeBase
from knowledge.ranking import Candidate
from knowledge.ranking.query import parse
from knowledge.search import ChunkCache, cut, group, make_hits, rank, resolve_options, retrieve_all, search

from .conftest import HashingEmbedder, commit

CODE = '''
def parse_config(path):
    """Read the settings file."""
    return open(path).read()


def render_page(template):
    """Turn a template into HTML."""
    return template.format()


class Cache:
    def get(self, key):
        return self.items[key]

    def put(self, key, value):
        self.items[key] = value
'''


@pytest.fixture
def kb(git_repo):
    commit(
        git_repo,
        {
            "docs/config.md": "---\ndescription: How settings are read.\n---\n# Config\n\n## Reading\n\nparse_config "
            "reads the settings file.\n\n## Writing\n\nNothing writes settings.\n",
            "app/core.py": CODE,
            "app/other.py": "def parse_args(argv):\n    return argv\n",
        },
    )
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    return kb


def options_for(kb, **fields):
    request = SearchRequest("parse_config reads settings", **fields)
    return request, resolve_options(request, kb.settings, kb.default_thresholds())


def test_the_chunk_cache_reads_each_chunk_from_its_store_once(kb, monkeypatch):
    index = kb.index("code")
    reads: list[int] = []
    real = index.store.chunks

    def counted(keys):
        reads.extend(keys)
        return real(keys)

    monkeypatch.setattr(index.store, "chunks", counted)
    cache = ChunkCache()
    pooled = [(Candidate(key), index) for key in (0, 1, 2)]
    cache.load(pooled)
    cache.load([*pooled, (Candidate(3), index)])
    assert sorted(reads) == [0, 1, 2, 3]
    assert cache.get(index, 1) is not None


def test_retrieve_all_without_a_model_gives_lexical_candidates_only(kb):
    request, options = options_for(kb)
    pooled = retrieve_all(kb.indexes(), None, parse(request.query), options)
    assert pooled
    assert all(c.dense_rank is None and c.cosine is None for c, _ in pooled)
    assert any(c.lexical_rank == 1 for c, _ in pooled)


def test_rank_applies_the_filters_before_anything_is_ranked(kb):
    request, options = options_for(kb, paths=("app/other.py",), kind="code")
    sources = kb.indexes(("code",))
    cache = ChunkCache()
    question = parse(request.query)
    pooled = rank(retrieve_all(sources, None, question, options), sources, question, options, cache)
    assert pooled
    assert {cache.get(index, c.key).path for c, index in pooled} == {"app/other.py"}


def test_cut_keeps_an_exact_identifier_match_and_drops_a_far_dense_hit(kb):
    _, options = options_for(kb, threshold=0.5)
    index = kb.index("code")
    exact = Candidate(1, cosine=0.01, exact=True)
    far = Candidate(2, cosine=0.01, dense_rank=1)
    assert cut([(exact, index), (far, index)], parse("parse_config"), options) == [(exact, index)]


def test_group_with_files_keeps_the_best_chunk_of_each_file(kb):
    request, options = options_for(kb, files_only=True, kind="code")
    sources = kb.indexes(("code",))
    cache = ChunkCache()
    question = parse(request.query)
    ranked = rank(retrieve_all(sources, None, question, options), sources, question, options, cache)
    grouped = group(ranked, options, cache)
    paths = [cache.get(index, c.key).path for c, index in grouped]
    assert len(paths) == len(set(paths)) == len({cache.get(index, c.key).path for c, index in ranked})
    assert grouped[0] == ranked[0]


def test_make_hits_gives_text_only_to_strong_matches_and_keeps_the_rest_for_the_budget(kb):
    _, options = options_for(kb, kind="code")
    index = kb.index("code")
    strong = Candidate(0, cosine=0.99, lexical_rank=1)
    weak = Candidate(1, cosine=0.01, lexical_rank=9)
    hits, spare = make_hits([(strong, index), (weak, index)], options, ChunkCache(), None)
    assert hits[0].content is not None
    assert spare[0] is None
    assert hits[1].content is None
    assert spare[1] is not None


def test_the_steps_together_are_what_search_answers(kb):
    request, options = options_for(kb)
    sources = kb.indexes()
    embed = HashingEmbedder().embed_query
    answer = search(sources, embed, kb.model.count_tokens, request.query, options)
    cache = ChunkCache()
    question = parse(request.query)
    steps = group(
        cut(
            rank(retrieve_all(sources, embed, question, options), sources, question, options, cache),
            question,
            options,
        ),
        options,
        cache,
    )[: options.k]
    hits, _ = make_hits(steps, options, cache, None)
    assert [hit.id for hit in answer.results] == [hit.id for hit in hits][: len(answer.results)]
    assert answer.results
