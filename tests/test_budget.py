from knowledge.budget import metadata_text, pack
from knowledge.records import SearchHit


def hit(i, content):
    return SearchHit(
        id=f"d.md#{i}",
        path="d.md",
        kind="doc",
        score=1 - i / 10,
        title="T",
        description="D",
        section="S",
        line_start=1,
        line_end=2,
        content=content,
        tokens=0,
    )


def words(text):
    return len(text.split())


def test_packing_never_exceeds_the_budget_and_degrades_to_metadata():
    hits = [hit(i, "word " * 30) for i in range(5)]
    meta = words(metadata_text(hits[0]))
    for budget in range(1, 200, 7):
        kept, used, omitted = pack(hits, budget, words)
        assert used <= budget
        assert used == sum(h.tokens for h in kept)
        assert len(kept) + omitted == len(hits)
    kept, used, omitted = pack(hits, 30 + 2 * meta, words)
    assert [h.content is not None for h in kept] == [True, False]
    assert omitted == 3


def test_metadata_hits_cost_their_metadata_tokens():
    kept, used, _ = pack([hit(0, None)], 100, words)
    assert kept[0].tokens == used == words(metadata_text(kept[0]))


def test_what_the_budget_has_left_gives_text_to_the_best_results_first():
    hits = [hit(0, "word " * 30), hit(1, None), hit(2, None), hit(3, None)]
    spare = [None, "more " * 20, "long " * 500, "last " * 20]
    meta = words(metadata_text(hits[0]))
    budget = 4 * meta + 30 + 20 + 20
    kept, used, omitted = pack(hits, budget, words, spare)
    assert omitted == 0
    assert used <= budget
    # the first keeps its text, the second gets its spare text, the third's does not fit, the fourth's does
    assert [h.content is not None for h in kept] == [True, True, False, True]
    assert [h.tokens for h in kept] == [meta + 30, meta + 20, meta, meta + 20]
    tight, used, _ = pack(hits, 4 * meta + 30, words, spare)
    assert [h.content is not None for h in tight] == [True, False, False, False]  # metadata of all before any spare
