"""Code ranking rules on top of the fused candidates: what a name query asks for, what the path says, and variety.

Each rule adds or scales fused score in units of a first-rank vote (1 / (k + 1)), so the rules weigh the same
against either retriever. All but one touch code chunks only (prose ranking, SciFact, is left to the fusion tuned
for it); `heading_words` lifts a doc section whose heading spells the question, in mixed answers only. Every rule's
share is recorded on the candidate for `--explain`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Protocol

from .lexical import STOPWORDS
from .pieces import group_key
from .policy import DEFAULT_POLICY, RankingPolicy, RankingRules
from .records import Chunk


class Ranked(Protocol):
    fused: float
    final: float
    rules: dict[str, float]


SHIPPED_RULES = DEFAULT_POLICY.rules
# What `--explain` shows, in this order.
RULE_NAMES = (
    "defines",
    "file_words",
    "heading_words",
    "file_coherence",
    "header",
    "demoted",
    "non_callable",
    "same_file",
)

_QUIET_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|__mocks__|spec|specs|examples?|samples?|demos?|docs_src|vendor|vendored|"
    r"third_party|node_modules|generated|gen|fixtures?|benchmarks?|compat)(/|$)"
    r"|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)\.\w+|[^/]*\.d\.ts|conftest\.py)$",
    re.IGNORECASE,
)
_CALLABLE = frozenset({"function", "method"})
_ASKS_FOR_TESTS = frozenset({"test", "tests", "testing", "example", "examples", "spec", "fixture", "mock", "benchmark"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


# Longest first. Agent nouns meet their verbs (builder, building, build), which a stemmer for prose leaves apart.
_SUFFIXES = (
    "ization", "ations", "ation", "izers", "ments", "izer", "ment", "ings", "ions", "ing", "ion", "ers", "er", "ed",
    "es", "ly", "s", "e",
)  # fmt: skip


def _normal(word: str) -> str:
    """A word reduced to what its forms share, for matching query words to the words of file names: `building` meets
    `GsonBuilder`'s `builder` at `build` (semble-dev 0.881 -> 0.887 over plural-only matching)."""
    word = word.lower()
    if word.endswith("ss"):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def asked_names(query: str) -> set[str]:
    """Names the query asks for, lower-cased without underscores: a bare one-word query, code-shaped tokens
    (snake_case, camelCase, dotted: the last part), `backticked` words. A capitalised word in a sentence is not one:
    it says what the sentence is about ("a deep copy of this NameAllocator"), not which definition is wanted (the
    function set +0.013 without it, semble-dev unchanged; §4c)."""
    tokens = _NAME_TOKEN.findall(query)
    names = set(re.findall(r"`([^`]+)`", query))
    if len(tokens) == 1:
        names.add(tokens[0])
    names.update(token for token in tokens if "." in token or re.search(r"^_|\w_\w|[a-z][A-Z]", token))
    return {n.split(".")[-1].lower().replace("_", "") for n in names if n.split(".")[-1]}


# Verbs a doc comment opens with ("Returns …", "Create …"): a question worded so says what code does.
_ACTIONS = frozenset({
    "accept", "add", "allow", "append", "apply", "attach", "build", "calculate", "call", "check", "clear",
    "clone", "close", "collect", "compare", "compute", "configure", "construct", "convert", "copy", "count",
    "create", "decode", "define", "delete", "detach", "determine", "disable", "draw", "drop", "dump", "emit",
    "enable", "encode", "ensure", "escape", "evaluate", "execute", "extract", "fetch", "filter", "find", "flush",
    "format", "generate", "get", "handle", "hide", "indicate", "initialize", "insert", "install", "instantiate",
    "invoke", "iterate", "join", "load", "lookup", "make", "map", "mark", "match", "merge", "normalize", "open",
    "parse", "prepare", "print", "process", "produce", "provide", "raise", "read", "receive", "reduce",
    "register", "remove", "render", "replace", "reset", "resolve", "return", "run", "save", "send", "serialize",
    "set", "show", "sign", "skip", "sort", "split", "start", "stop", "store", "take", "tell", "test", "transform",
    "try", "unescape", "update", "validate", "verify", "visit", "wrap", "write", "yield",
})  # fmt: skip


_QUESTION_WORDS = frozenset({"how", "what", "where", "which", "why", "when", "who", "whats", "what's"})
# A topic is a few words ("radix tree path matching", 5.4 on average in semble-dev); a longer statement that is no
# question describes behaviour ("A validator that raises ValueError if the initializer is called with …").
STATEMENT_WORDS = 8
# A sentence ("Guesses the mimetype based on a filename.") or a phrase that opens with an article ("The URL host as a
# string") describes one definition, as its doc comment does; a topic is a few words without either.
_ARTICLES = frozenset({"the", "a", "an"})


def asks_what_code_does(query: str) -> bool:
    """Whether the question says what code does: it opens with an action ("Returns the package name", "parse a cookie
    header into a dict"), is a sentence or a phrase opening with an article ("The URL host as a string"), or is a
    statement of `STATEMENT_WORDS` words or more. It asks for the function that does it,
    not for a topic's place ("how …" questions, a few words naming a topic, a bare name)."""
    words = query.split()
    if len(words) < 3 or words[0].lower() in _QUESTION_WORDS:
        return False
    if len(words) >= STATEMENT_WORDS or query.rstrip().endswith(".") or words[0].lower() in _ARTICLES:
        return True
    verb = words[0].lower()
    if not verb.isalpha():
        return False
    stems = {verb, verb[:-1] if verb.endswith("s") else "", verb[:-2] if verb.endswith("es") else ""}
    if verb.endswith("ies"):
        stems.add(verb[:-3] + "y")
    return bool(stems & _ACTIONS)


def rules_for(policy: RankingPolicy, query: str) -> RankingRules:
    """The rules a question is ranked by: the policy's "does X" rules for a question that says what code does."""
    return policy.does_rules if asks_what_code_does(query) else policy.rules


def _path_words(path: str) -> set[str]:
    pure = PurePosixPath(path)
    pieces = [pure.stem, *pure.parent.parts[-2:]]
    return {_normal(part) for piece in pieces for part in _PARTS.findall(piece) if len(part) > 2} | {
        _normal(pure.stem.replace("_", "").replace("-", ""))
    }


def _type_named(query: str, symbol: str) -> bool:
    """Whether the query spells `symbol` (normalised) as a type: `FromRequest` asks for the trait, not `from_request`
    (semble-dev symbol 0.955 -> 0.961)."""
    return any(token[:1].isupper() and token.lower().replace("_", "") == symbol for token in _WORD.findall(query))


def _stem_words(path: str) -> set[str]:
    return {_normal(part) for part in _PARTS.findall(PurePosixPath(path).stem) if len(part) > 2}


def apply_rules(
    ranked: Sequence[tuple[Ranked, Chunk | None]], query: str, vote: float, rules: RankingRules = SHIPPED_RULES
) -> None:
    """Adjust each code candidate's fused score in place (`vote`: the fused worth of one first-rank vote)."""
    if not rules.enabled:
        return
    names = asked_names(query)
    query_words = {_normal(w) for w in _WORD.findall(query) if w.lower() not in STOPWORDS and len(w) > 2}
    quiet_ok = bool(query_words & _ASKS_FOR_TESTS)
    for candidate, chunk in ranked:
        if chunk is not None and chunk.kind == "doc" and rules.heading_words and query_words:
            _heading_words(candidate, chunk, query_words, vote, rules)
        if chunk is None or chunk.kind != "code":
            continue
        # what the chunk defines: its entity, else a constant or variable declared in it
        spelled = next((n for n in (chunk.symbol, *chunk.names) if n and n.lower().replace("_", "") in names), "")
        symbol = spelled.lower().replace("_", "")
        path_words = _path_words(chunk.path)
        if symbol:
            share = rules.defines * vote
            if _type_named(query, symbol) and not spelled[:1].isupper():
                share *= rules.defines_other_case
            if symbol in path_words or _normal(symbol) in path_words:
                share += rules.defines_in_named_file * vote
            candidate.rules["defines"] = round(share, 4)
            candidate.fused += share
        matched = query_words & path_words
        if matched:
            share = rules.file_words * vote * min(1.0, len(matched) / 2)
            stem = _stem_words(chunk.path)
            if stem:  # FieldNamingPolicy.java over FieldNamingStrategy.java for "field naming policy"
                coverage = len(stem & query_words) / len(stem)
                share *= 1 - rules.file_stem_coverage + rules.file_stem_coverage * coverage
            candidate.rules["file_words"] = round(share, 4)
            candidate.fused += share
    if rules.file_coherence:
        _file_coherence(ranked, vote, rules)
    _headers_give_way(ranked, rules)
    for candidate, chunk in ranked:  # last, so that tests, examples and vendored code are demoted with their boosts
        if chunk is None or chunk.kind != "code":
            continue
        if not quiet_ok and _QUIET_PATH.search(chunk.path):
            candidate.rules["demoted"] = round(candidate.fused * (rules.demote - 1), 4)
            candidate.fused *= rules.demote
        if rules.non_callable != 1.0 and chunk.symbol_kind not in _CALLABLE:
            candidate.rules["non_callable"] = round(candidate.fused * (rules.non_callable - 1), 4)
            candidate.fused *= rules.non_callable


def _heading_words(candidate: Ranked, chunk: Chunk, query_words: set[str], vote: float, rules: RankingRules) -> None:
    """In a mixed answer the code rules lift code; a doc section whose own heading spells most of the question's words
    ("How the model weights are verified") gains up to `heading_words` votes, so that docs hold their place."""
    heading = chunk.section.rsplit(">", 1)[-1] if chunk.section else chunk.title
    words = {_normal(part) for part in _PARTS.findall(heading) if len(part) > 2}
    matched = len(words & query_words)
    if matched >= min(2, len(query_words)):
        share = rules.heading_words * vote * matched / len(query_words)
        candidate.rules["heading_words"] = round(share, 4)
        candidate.fused += share


_HEADERS, _SOURCES = frozenset({".h", ".hh", ".hpp", ".hxx"}), frozenset({".c", ".cc", ".cpp", ".cxx"})


def _headers_give_way(ranked: Sequence[tuple[Ranked, Chunk | None]], rules: RankingRules) -> None:
    """A header declares what its source file implements: with both among the candidates, the source comes first
    (libuv's `idna.h` over `idna.c` for an IDNA question)."""
    paths = {PurePosixPath(chunk.path) for _, chunk in ranked if chunk is not None and chunk.kind == "code"}
    implemented = {path.with_suffix("") for path in paths if path.suffix in _SOURCES}
    for candidate, chunk in ranked:
        if chunk is None or chunk.kind != "code":
            continue
        path = PurePosixPath(chunk.path)
        if path.suffix in _HEADERS and path.with_suffix("") in implemented:
            candidate.rules["header"] = round(candidate.fused * (rules.header - 1), 4)
            candidate.fused *= rules.header


def _file_coherence(ranked: Sequence[tuple[Ranked, Chunk | None]], vote: float, rules: RankingRules) -> None:
    """A chunk gains a share of what the file's other entities scored: a file that several retrieved functions point
    at is more likely the one the question is about (semble-dev 0.860 -> 0.875 at 0.5, capped at 2 votes). The parts
    of one long function are one piece of evidence, and never their own (CoSQA: a split snippet lifted itself)."""
    best: dict[str, dict[str, float]] = {}  # path -> entity -> its best part's score
    for candidate, chunk in ranked:
        if chunk is not None and chunk.kind == "code":
            entities = best.setdefault(chunk.path, {})
            entity = group_key(chunk.id)
            entities[entity] = max(entities.get(entity, 0.0), candidate.fused)
    for candidate, chunk in ranked:
        if chunk is not None and chunk.kind == "code":
            entities = best[chunk.path]
            others = sum(entities.values()) - entities[group_key(chunk.id)]
            share = rules.file_coherence * min(others, rules.file_coherence_cap * vote)
            if share:
                candidate.rules["file_coherence"] = round(share, 4)
                candidate.fused += share


def diversify(ranked: Sequence[tuple[Ranked, Chunk | None]], rules: RankingRules = SHIPPED_RULES) -> list[int]:
    """Positions of `ranked` (best first) re-sorted after the second and later chunks of one file lose credit."""
    if not rules.enabled:
        for candidate, _ in ranked:
            candidate.final = candidate.fused
        return list(range(len(ranked)))
    indices = sorted(range(len(ranked)), key=lambda i: -ranked[i][0].fused)
    seen: Counter[str] = Counter()
    scores = []
    for position in indices:
        candidate, chunk = ranked[position]
        score = candidate.fused
        if chunk is not None:
            seen[chunk.path] += 1
            if seen[chunk.path] > rules.same_file_free:
                factor = rules.same_file_decay ** (seen[chunk.path] - rules.same_file_free)
                candidate.rules["same_file"] = round(score * (factor - 1), 4)
                score *= factor
        candidate.final = score
        scores.append((-score, position))
    return [position for _, position in sorted(scores)]
