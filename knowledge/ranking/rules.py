"""The ranking rules, one ordered table: what a name query asks for, what the path says, and variety.

Each rule adds to or scales a candidate's score in units of a first-rank vote (1 / (k + 1)), so the rules weigh the
same against either retriever. All but one touch code chunks only (prose ranking, SciFact, is left to the fusion tuned
for it); `heading_words` lifts a doc section whose heading spells the question, in mixed answers only. Every rule's
share is returned with the candidate for `--explain`. A rule is a row of `RULES`: its knobs in `RankingRules`
(policy.py), the values that switch it off, and the function that says what it moves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from ..pieces import group_key
from ..quiet import QUIET_PATH
from ..records import CONTAINERS, Chunk
from .fusion import Candidate, Rule
from .policy import RankingPolicy, RankingRules
from .query import (
    PARTS,
    Query,
    in_scope,
    name_key,
    normal,
    path_words,
    scope_words,
    stem_words,
    type_named,
    underscores,
)

_CALLABLE = frozenset({"function", "method"})
_ASKS_FOR_TESTS = frozenset({"test", "tests", "testing", "example", "examples", "spec", "fixture", "mock", "benchmark"})
_HEADERS, _SOURCES = frozenset({".h", ".hh", ".hpp", ".hxx"}), frozenset({".c", ".cc", ".cpp", ".cxx"})


@dataclass(frozen=True, slots=True)
class Context:
    """What every rule reads: the candidates with their chunks (None: not readable), the query and the rules."""

    ranked: Sequence[tuple[Candidate, Chunk | None]]
    query: Query
    vote: float  # the fused worth of one first-rank vote
    rules: RankingRules
    generated: frozenset[str] = frozenset()  # paths git's attributes mark generated or vendored

    @property
    def names(self) -> frozenset[str]:  # the names the query asks for
        return self.query.names

    @property
    def words(self) -> frozenset[str]:  # its words of substance
        return self.query.words

    @property
    def qualified(self) -> Mapping[str, list[frozenset[str]]]:  # a name asked with qualifiers -> how they were written
        return self.query.qualified

    def code(self) -> list[tuple[int, Chunk]]:
        return [(n, chunk) for n, (_, chunk) in enumerate(self.ranked) if chunk is not None and chunk.kind == "code"]


Effect = Callable[[Context, Sequence[float]], dict[int, float]]


@dataclass(frozen=True, slots=True)
class RuleRow:
    rule: Rule
    effect: Effect | None  # position -> votes added, or -> factor; None: the decay, applied in `diversify`
    factor: bool  # whether the effect scales the score (else it adds to it)
    off: Mapping[str, float]  # the `RankingRules` fields, and the values that switch the rule off


def _defines(context: Context, scores: Sequence[float]) -> dict[int, float]:
    """The chunk that defines a name the query asks for: its entity, else a constant or variable declared in it; more
    when its file is named like it, and when the query qualifies the name and the qualifiers name its scope."""
    rules, vote = context.rules, context.vote
    found: list[tuple[int, Chunk, str, str]] = []  # position, chunk, the name as spelled there, its key
    for n, chunk in context.code():
        spelled = next((x for x in (chunk.symbol, *chunk.names) if x and name_key(x) in context.names), "")
        if spelled:
            found.append((n, chunk, spelled, name_key(spelled)))
    # `Server._serve` asks for `_serve`, not for `serve` beside it: where a definition is spelled as the query wrote
    # the name (leading underscores too), the ones spelled otherwise define another name
    written = context.query.underscores
    as_written = {key for _, _, spelled, key in found if underscores(spelled) in written.get(key, ())}
    found = [f for f in found if f[3] not in as_written or underscores(f[2]) in written[f[3]]]
    qualified = _qualified_definitions(context, found)
    out: dict[int, float] = {}
    for n, chunk, spelled, symbol in found:
        share = rules.defines * vote
        if type_named(context.query.text, symbol) and not spelled[:1].isupper():
            share *= rules.defines_other_case
        elif chunk.parent and name_key(chunk.parent) == symbol and symbol not in context.qualified:
            share *= rules.defines_other_case  # a constructor (Java, C++, C#): the type's name asks for the type
        words = path_words(chunk.path)
        if symbol in words or normal(symbol) in words:
            share += rules.defines_in_named_file * vote
        if n in qualified and rules.defines:  # not for "does X" questions, where a name is what the code uses
            share += rules.defines_qualified * vote
        out[n] = share
    return out


def _qualified_definitions(context: Context, found: Sequence[tuple[int, Chunk, str, str]]) -> set[int]:
    """The definitions among `found` whose scope (enclosing entity, file, folders) the query's qualifiers name:
    `Command.invoke` is `invoke` in `Command`, not in `Context`. A qualifier that names no definition's scope says
    nothing checkable (a root namespace, a Go package at the repository's root) and is passed over; one that names
    some narrows to them."""
    qualified = context.qualified
    if not qualified:
        return set()
    out: set[int] = set()
    for name, ways in qualified.items():
        scopes = {n: scope_words(chunk.path, chunk.parent) for n, chunk, _, symbol in found if symbol == name}
        out |= in_scope(scopes, ways)
    return out


def _file_words(context: Context, scores: Sequence[float]) -> dict[int, float]:
    """Query words that name the file or its folder; FieldNamingPolicy.java over FieldNamingStrategy.java for "field
    naming policy": part of the share by how much of the file's own name the query covers."""
    rules = context.rules
    out: dict[int, float] = {}
    for n, chunk in context.code():
        matched = context.words & path_words(chunk.path)
        if not matched:
            continue
        share = rules.file_words * context.vote * min(1.0, len(matched) / 2)
        stem = stem_words(chunk.path)
        if stem:
            coverage = len(stem & context.words) / len(stem)
            share *= 1 - rules.file_stem_coverage + rules.file_stem_coverage * coverage
        out[n] = share
    return out


def _heading_words(context: Context, scores: Sequence[float]) -> dict[int, float]:
    """In a mixed answer the code rules lift code; a doc section whose own heading spells most of the question's words
    ("How the model weights are verified") gains up to `heading_words` votes, so that docs hold their place."""
    rules, words = context.rules, context.words
    out: dict[int, float] = {}
    if not rules.heading_words or not words:
        return out
    for n, (_, chunk) in enumerate(context.ranked):
        if chunk is None or chunk.kind != "doc":
            continue
        heading = chunk.section.rsplit(">", 1)[-1] if chunk.section else chunk.title
        matched = len({normal(part) for part in PARTS.findall(heading) if len(part) > 2} & words)
        if matched >= min(2, len(words)):
            out[n] = rules.heading_words * context.vote * matched / len(words)
    return out


def _file_coherence(context: Context, scores: Sequence[float]) -> dict[int, float]:
    """A chunk gains a share of what the file's other entities scored: a file that several retrieved functions point
    at is more likely the one the question is about (semble-dev 0.860 -> 0.875 at 0.5, capped at 2 votes). The parts
    of one long function are one piece of evidence, and never their own (CoSQA: a split snippet lifted itself)."""
    rules = context.rules
    out: dict[int, float] = {}
    if not rules.file_coherence:
        return out
    best: dict[str, dict[str, float]] = {}  # path -> entity -> its best part's score
    for n, chunk in context.code():
        entities = best.setdefault(chunk.path, {})
        entity = group_key(chunk.id)
        entities[entity] = max(entities.get(entity, 0.0), scores[n])
    for n, chunk in context.code():
        entities = best[chunk.path]
        others = sum(entities.values()) - entities[group_key(chunk.id)]
        share = rules.file_coherence * min(others, rules.file_coherence_cap * context.vote)
        if share:
            out[n] = share
    return out


def _header(context: Context, scores: Sequence[float]) -> dict[int, float]:
    """A header declares what its source file implements: with both among the candidates, the source comes first
    (libuv's `idna.h` over `idna.c` for an IDNA question)."""
    code = context.code()
    implemented = {PurePosixPath(c.path).with_suffix("") for _, c in code if PurePosixPath(c.path).suffix in _SOURCES}
    return {
        n: context.rules.header
        for n, chunk in code
        if (path := PurePosixPath(chunk.path)).suffix in _HEADERS and path.with_suffix("") in implemented
    }


def _demote(context: Context, scores: Sequence[float]) -> dict[int, float]:
    """Tests, examples, vendored and generated code, unless the query asks for them; last but one, so that they are
    demoted with their boosts."""
    if context.words & _ASKS_FOR_TESTS:
        return {}
    return {
        n: context.rules.demote
        for n, chunk in context.code()
        if QUIET_PATH.search(chunk.path) or chunk.path in context.generated
    }


def _non_callable(context: Context, scores: Sequence[float]) -> dict[int, float]:
    """Code that is no function or method: a class shell, imports, module code."""
    factor = context.rules.non_callable
    if factor == 1.0:
        return {}
    return {n: factor for n, chunk in context.code() if chunk.symbol_kind not in _CALLABLE}


def _fragment(context: Context, scores: Sequence[float]) -> dict[int, float]:
    """A chunk with no name of its own inside a class or module (a one-line `attr_reader`, a block of constants),
    for a question that names that class, answers below it: the class is what was asked about."""
    cap = context.rules.fragment
    if not cap:
        return {}
    code = context.code()
    entities = {(chunk.path, chunk.symbol): n for n, chunk in code if chunk.symbol and chunk.symbol_kind in CONTAINERS}
    out: dict[int, float] = {}
    for n, chunk in code:
        entity = entities.get((chunk.path, chunk.parent)) if not chunk.symbol and chunk.parent else None
        if entity is None or not _names_it(context, chunk.parent) or scores[n] <= cap * scores[entity]:
            continue
        out[n] = cap * scores[entity] / scores[n]
    return out


def _names_it(context: Context, name: str) -> bool:
    """Whether the query names `name`: as a name it asks for, or word by word (`connection` for `Connection`)."""
    words = {normal(part) for part in PARTS.findall(name) if len(part) > 2}
    return name_key(name) in context.names or (bool(words) and words <= context.words)


RULES: tuple[RuleRow, ...] = (
    RuleRow(Rule.DEFINES, _defines, False, {"defines": 0.0, "defines_in_named_file": 0.0, "defines_qualified": 0.0}),
    RuleRow(Rule.FILE_WORDS, _file_words, False, {"file_words": 0.0}),
    RuleRow(Rule.HEADING_WORDS, _heading_words, False, {"heading_words": 0.0}),
    RuleRow(Rule.FILE_COHERENCE, _file_coherence, False, {"file_coherence": 0.0}),
    RuleRow(Rule.HEADER, _header, True, {"header": 1.0}),
    RuleRow(Rule.DEMOTE, _demote, True, {"demote": 1.0}),
    RuleRow(Rule.NON_CALLABLE, _non_callable, True, {"non_callable": 1.0}),
    RuleRow(Rule.FRAGMENT, _fragment, True, {"fragment": 0.0}),
    RuleRow(Rule.SAME_FILE, None, True, {"same_file_decay": 1.0}),
)
RULE_NAMES = tuple(row.rule.value for row in RULES)  # what `--explain` shows, in this order


def without(rules: RankingRules, *off: Rule) -> RankingRules:
    """`rules` with the rules named switched off (their fields at the table's neutral values)."""
    neutral: dict[str, Any] = {name: value for row in RULES if row.rule in off for name, value in row.off.items()}
    return replace(rules, **neutral)


def rules_for(policy: RankingPolicy, query: Query, kinds: Collection[str]) -> RankingRules:
    """The rules a question is ranked by over sources of `kinds`: the policy's "does X" rules for a question that says
    what code does; the file's coherence only in code-only answers (doc sections cannot earn it: it would tilt a mixed
    answer); a doc section's heading only in mixed answers (prose alone keeps its fusion)."""
    rules = policy.does_rules if query.code_does else policy.rules
    if any(kind != "code" for kind in kinds):
        rules = without(rules, Rule.FILE_COHERENCE)
    if set(kinds) != {"code", "docs"}:
        rules = without(rules, Rule.HEADING_WORDS)
    return rules


def score(
    ranked: Sequence[tuple[Candidate, Chunk | None]],
    query: Query,
    vote: float,
    rules: RankingRules,
    generated: frozenset[str] = frozenset(),
) -> list[Candidate]:
    """Each candidate with its `ruled` score: its fused score and what every rule of the table added or scaled, in order
    (`vote`: the fused worth of one first-rank vote)."""
    if not rules.enabled:
        return [replace(candidate, ruled=candidate.fused, shares={}) for candidate, _ in ranked]
    context = Context(ranked, query, vote, rules, generated)
    scores = [candidate.fused for candidate, _ in ranked]
    shares: list[dict[Rule, float]] = [{} for _ in ranked]
    for row in RULES:
        if row.effect is None:
            continue
        for n, value in row.effect(context, scores).items():
            if row.factor:
                shares[n][row.rule] = round(scores[n] * (value - 1), 4)
                scores[n] *= value
            else:
                shares[n][row.rule] = round(value, 4)
                scores[n] += value
    return [
        replace(candidate, ruled=total, shares=moved)
        for (candidate, _), total, moved in zip(ranked, scores, shares, strict=True)
    ]


def diversify(ranked: Sequence[tuple[Candidate, Chunk | None]], rules: RankingRules) -> list[tuple[int, Candidate]]:
    """`ranked` (best first) re-sorted after the second and later chunks of one file lose credit: each candidate with
    its position in `ranked` and its `final` score."""
    if not rules.enabled:
        return [(n, replace(candidate, final=candidate.ruled)) for n, (candidate, _) in enumerate(ranked)]
    indices = sorted(range(len(ranked)), key=lambda i: -ranked[i][0].ruled)
    seen: Counter[str] = Counter()
    out: list[tuple[float, int, Candidate]] = []
    for position in indices:
        candidate, chunk = ranked[position]
        final, shares = candidate.ruled, candidate.shares
        if chunk is not None:
            seen[chunk.path] += 1
            if seen[chunk.path] > rules.same_file_free:
                factor = rules.same_file_decay ** (seen[chunk.path] - rules.same_file_free)
                shares = {**shares, Rule.SAME_FILE: round(final * (factor - 1), 4)}
                final *= factor
        out.append((-final, position, replace(candidate, final=final, shares=shares)))
    out.sort(key=lambda item: item[:2])
    return [(position, candidate) for _, position, candidate in out]


def rank(
    ranked: Sequence[tuple[Candidate, Chunk | None]],
    query: Query,
    policy: RankingPolicy,
    kinds: Collection[str],
    generated: frozenset[str] = frozenset(),
) -> list[tuple[int, Candidate]]:
    """The candidates in their final order, each with its position in `ranked`: the rules, then per-file diversity
    (`generated`: the paths git's attributes mark generated, demoted as vendored code is). Fused scores are
    rank-based, so lists from different stores merge on them directly."""
    rules = rules_for(policy, query, kinds)
    scored = score(ranked, query, policy.fusion.vote, rules, generated)
    order = sorted(range(len(ranked)), key=lambda i: (-scored[i].ruled, scored[i].dense_order))
    final = diversify([(scored[i], ranked[i][1]) for i in order], rules)
    return [(order[position], candidate) for position, candidate in final]
