from knowledge.focus import TEXT_TOKENS, WHOLE_TOKENS, focus
from knowledge.kb import KnowledgeBase
from knowledge.members import MAX_MEMBERS

from .conftest import HashingEmbedder, commit


class WideHashing(HashingEmbedder):
    max_tokens = 4096  # a long function stays one chunk: what is focused is its own text, not a part's


def words(text: str) -> int:
    return len(text.split())


def long_function(filler: int, doc_lines: int = 2) -> str:
    doc = ['    """Settle the ledger for one account.'] + ["    More about settling."] * (doc_lines - 1) + ['    """']
    body = [f"    step_{n} = compute_interim_total(step_{n}, rate, window, carry)" for n in range(filler)]
    body[filler // 2] = "    overdraft_penalty = apply_overdraft_penalty(balance, overdraft_limit)"
    return "\n".join(["def settle_ledger(account, balance, overdraft_limit):", *doc, *body, "    return balance"])


def test_a_text_that_fits_stays_whole():
    text = long_function(20)
    assert words(text) <= WHOLE_TOKENS
    assert focus(text, ["overdraft"], words, "ledger.py:1-25") == text


def test_a_long_text_keeps_its_signature_and_doc_and_the_lines_that_matched_with_markers():
    text = long_function(200)
    focused = focus(text, ["overdraft", "penalty"], words, "ledger.py:1-204")
    lines = focused.split("\n")
    assert lines[0] == "def settle_ledger(account, balance, overdraft_limit):"
    assert lines[1] == '    """Settle the ledger for one account.'
    assert "    overdraft_penalty = apply_overdraft_penalty(balance, overdraft_limit)" in lines
    assert lines[4].strip().startswith("…")
    assert lines[4].strip().endswith("lines left out")
    assert lines[-1].startswith("    … ")
    assert lines[-1].endswith(" lines left out (knowledge show ledger.py:1-204)")
    assert words(focused) <= TEXT_TOKENS


def test_the_markers_count_every_line_left_out():
    text = long_function(200)
    focused = focus(text, ["overdraft"], words, "ledger.py:1-204").split("\n")
    left_out = sum(int(line.split("…")[1].split()[0]) for line in focused if line.strip().startswith("…"))
    assert left_out + len(focused) - 2 == len(text.split("\n"))


def test_a_question_no_line_holds_shows_the_body_from_its_start():
    focused = focus(long_function(200), ["nothing"], words, "ledger.py:1-204").split("\n")
    assert focused[4] == "    step_0 = compute_interim_total(step_0, rate, window, carry)"


def test_a_doc_comment_too_long_to_leave_room_gives_way_to_the_lines_that_matched():
    focused = focus(long_function(200, doc_lines=60), ["overdraft"], words, "ledger.py:1-264")
    assert focused.startswith("def settle_ledger(account, balance, overdraft_limit):\n")
    assert "More about settling." not in focused
    assert "apply_overdraft_penalty" in focused
    assert words(focused) <= TEXT_TOKENS


def test_a_search_answers_a_long_function_with_the_lines_that_matched_and_its_whole_range(git_repo):
    source = long_function(300)
    commit(git_repo, {"src/ledger.py": source + "\n"})
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: WideHashing())
    kb.reindex_all()
    answer = kb.search("apply overdraft penalty", kind="code", threshold=-1, full_threshold=-1)
    first = answer.results[0]
    assert first.path == "src/ledger.py"
    assert first.line_start == 1
    assert first.line_end == len(source.split("\n"))
    assert "apply_overdraft_penalty(balance, overdraft_limit)" in first.content
    assert first.content.startswith("def settle_ledger(account, balance, overdraft_limit):")
    assert f"(knowledge show src/ledger.py:1-{first.line_end})" in first.content
    assert kb.model.count_tokens(first.content) <= TEXT_TOKENS


def test_a_class_answers_with_an_outline_of_at_most_max_members_and_says_how_many_more(git_repo):
    methods = "".join(f"    def method_{n}(self):\n        return {n}\n\n" for n in range(MAX_MEMBERS + 5))
    commit(git_repo, {"src/many.py": f'class ManyMethods:\n    """Holds many methods."""\n\n{methods}'})
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: HashingEmbedder())
    kb.reindex_all()
    hit = next(h for h in kb.search("ManyMethods", kind="code", threshold=-1).results if h.symbol == "ManyMethods")
    outline = hit.content.split("members of ManyMethods:\n", 1)[1].split("\n")
    assert len(outline) == MAX_MEMBERS + 1
    assert outline[-1].startswith("  … 5 more (knowledge show src/many.py:1-")


def test_a_long_doc_section_answers_with_its_heading_and_the_paragraph_that_matched(git_repo):
    filler = "\n".join(f"Paragraph {n} says something general about the weather and the seasons." for n in range(60))
    section = f"# Operations\n\n{filler[: len(filler) // 2]}\nRotate the signing keys every ninety days.\n{filler}"
    commit(git_repo, {"docs/ops.md": f"---\ndescription: How the service is run.\n---\n{section}\n"})
    kb = KnowledgeBase.open(git_repo, embedder_factory=lambda s: WideHashing())
    kb.reindex_all()
    first = kb.search("rotate signing keys", kind="docs", threshold=-1, full_threshold=-1).results[0]
    assert first.content.startswith("# Operations\n")
    assert "Rotate the signing keys every ninety days." in first.content
    assert "lines left out (knowledge show docs/ops.md:" in first.content
    assert kb.model.count_tokens(first.content) <= TEXT_TOKENS
