"""locate(): where to change for an issue or task text. Each signal read from the issue (issue.py; the signals are
the rows of records.LOCATE_SIGNALS) votes for files. A file's vote in a signal is its place there and its margin to
the signal's first file, every signal alike (`LocatePolicy`); tests, docs, templates and changelogs are evidence,
rarely the answer: their votes pass to the file a test names, and what is left of them is damped. Within each file,
its entities are ranked by the same votes, the frame nearest a traceback's error first."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .chunking.languages import language_of
from .issue import Frame, IssueText
from .kind import KindIndex
from .lexical import terms
from .modules import module_name, project_words, test_subjects
from .pieces import whole
from .quiet import is_quiet
from .ranking.fusion import rank_and_margin, ranks_by_votes, reciprocal_rank
from .ranking.query import name_key
from .records import Chunk, LocatedEntity, LocatedFile, LocateEvidence, group_key

if TYPE_CHECKING:
    import numpy as np

    from .store import Coverage

MODULE_DEPTH = 12  # a dotted name's longest prefix tried as a module path: bounds the work a pasted `a.a.a…` costs
_DOC_FOLDER = re.compile(r"(^|/)\.github/")
_MAIN_GUARD = re.compile(r"""^if __name__ == ['"]__main__['"]\s*:""", re.MULTILINE)
_RECORD_NAME = re.compile(r"(^|/)(changelog|changes|history|news|authors)[^/]*(/|$)", re.I)  # HISTORY.rst, changes/


@dataclass(frozen=True, slots=True)
class LocatePolicy:
    """How the signals' votes become one ranking: rank and margin fusion, every signal alike (weights chosen on one
    fold of swe-dev or mswe-dev lost on the other: docs/benchmarks.md §4g)."""

    rank_constant: float = 5.0  # a signal's first file gets 1/(k+1), its tenth 1/(k+10)
    # half a file's vote in a signal is its place, half how near its votes come to the signal's first file's: a rank
    # alone reads a near tie as a step and a decisive first as one step (files Acc@1 up on all four folds; §4g)
    margin_share: float = 0.5
    quiet_damping: float = 0.3  # what a test, a doc or a template keeps of its own votes; the rest goes to its subject
    depth: int = 400  # chunks read from each ranked list
    # the entities a file names by its place, the last for every file after: an entity is listed where it is likelier
    # the place than the next file's best (functions Acc@5 up on both dev sets and all four folds; §4g)
    entities_by_rank: tuple[int, ...] = (4, 3, 1)
    common_name_files: int = 12  # a name defined in more files than this says nothing of where
    few_files: int = 3  # a word naming more modules than this (`utils`, `base`) says nothing of which
    walked_names: int = 8  # the named definitions whose callees vote (0: the call graph casts no vote)


Stage = tuple[str, Callable[[str], "np.ndarray"]]  # "static" or "dense", and its query embedder
Vote = tuple[str, float, str, int | str | None]  # signal, score within the signal, detail, chunk key or id


def locate(
    sources: Sequence[KindIndex],
    issue: IssueText,
    k: int,
    policy: LocatePolicy,
    meaning: Sequence[Stage] = (),
    history: Callable[[Sequence[str]], list[tuple[str, float, str]]] | None = None,
    keep: Callable[[str], bool] | None = None,
    coverages: Sequence[Coverage] | None = None,
) -> list[LocatedFile]:
    """The `k` files to change for `issue`, best first; `meaning` are the dense stages the sources answer with
    (("static", its query embedder), and ("dense", the transformer's) once vectors exist). `keep` filters before
    the fusion, as search's filters do: a file left out casts no vote and passes none to its subject."""
    known = {path: s for s in sources for path in s.searched.files() if keep is None or keep(path)}
    votes = {path: cast for path, cast in collect(sources, known, issue, meaning, history, coverages, policy).items()
             if path in known}  # fmt: skip
    code = [source for source in sources if source.kind == "code"]
    generated = code[0].marked_generated([path for path in votes if known[path].kind == "code"]) if code else set()
    quiet = {path: path in generated or quiet_path(path, known) for path in votes}
    subjects = test_subjects(votes, [path for path in known if known[path].kind == "code"])  # the voted tests only
    order = fuse(votes, quiet, subjects, policy)
    listed = policy.entities_by_rank
    return [
        _located(path, order[path], votes.get(path, []), known, policy, listed[min(rank, len(listed) - 1)])
        for rank, path in enumerate(list(order)[:k])
    ]


def collect(
    sources: Sequence[KindIndex],
    known: dict[str, KindIndex],
    issue: IssueText,
    meaning: Sequence[Stage] = (),
    history: Callable[[Sequence[str]], list[tuple[str, float, str]]] | None = None,
    coverages: Sequence[Coverage] | None = None,
    policy: LocatePolicy = LocatePolicy(),
) -> dict[str, list[Vote]]:
    """Every signal's votes, per file (`coverages`: the sources', as the request read them)."""
    code = next((s for s in sources if s.kind == "code"), None)
    votes: dict[str, list[Vote]] = defaultdict(list)
    if code is not None:
        _frames_and_paths(issue, known, votes, policy)
        named = _names(code, issue, votes, policy)
        _callees(code, named, votes, policy)
        _messages(code, issue, votes)
    text = salient(issue)
    vectors = [(stage, embed(text)) for stage, embed in meaning]
    for source, coverage in zip(sources, coverages or [s.coverage() for s in sources], strict=True):
        _words(source, issue, votes, policy)
        for stage, vector in vectors:
            _meaning(source, coverage, stage, vector, votes, policy)
    if history is not None:
        for path, score, detail in history(terms(issue.text)):
            if path in known:
                votes[path].append(("history", score, detail, None))
    return votes


# ---- signals -----------------------------------------------------------------------------------------------------
def _suffix_match(written: str, by_file_name: Mapping[str, list[str]]) -> str | None:
    """The indexed file a written path names: the longest shared suffix of whole parts, unique at that length; the
    file name and, where both paths have one, the folder holding it (`/usr/lib/python3/json/decoder.py` is not the
    repository's `codecs/decoder.py`; `/home/me/checkout/setup.py` is its `setup.py`)."""
    parts = [p for p in written.strip("./").split("/") if p and p != "."]
    if not parts:
        return None
    best: list[str] = []
    best_length = 0
    for path in by_file_name.get(parts[-1], ()):
        theirs = path.split("/")
        length = 0
        while length < min(len(parts), len(theirs)) and parts[-1 - length] == theirs[-1 - length]:
            length += 1
        if length < min(2, len(parts), len(theirs)):
            continue
        if length > best_length:
            best, best_length = [path], length
        elif length == best_length:
            best.append(path)
    return best[0] if len(best) == 1 else None


def _frames_and_paths(
    issue: IssueText, known: dict[str, KindIndex], votes: dict[str, list[Vote]], policy: LocatePolicy
) -> None:
    by_file_name: dict[str, list[str]] = defaultdict(list)  # a written path's candidates: found by its last part,
    for indexed in known:  # not by a walk over every file
        by_file_name[indexed.rsplit("/", 1)[-1]].append(indexed)
    chunks_of: dict[str, Sequence[Chunk]] = {}  # a long trace runs through one file many times: read it once
    for frame in issue.frames:
        path = _suffix_match(frame.path, by_file_name)
        if path is not None:
            where = f"{path}:{frame.line}" + (f" in {frame.function}" if frame.function else "")
            if path not in chunks_of:
                chunks_of[path] = known[path].searched.chunks_of_path(path)
            votes[path].append(("frame", 1.0 / (1 + frame.position), where, _frame_entity(chunks_of[path], frame)))
    for written in issue.paths:
        path = _suffix_match(written, by_file_name)
        if path is not None:
            votes[path].append(("path", 1.0, written, None))
    stems: dict[str, list[str]] = defaultdict(list)
    for path in known:
        if known[path].kind == "code" and language_of(path) is not None:  # a module: source, not `setup.cfg`
            stems[module_name(path).lower()].append(path)
    wide = project_words(known)
    for word in (w for w in issue.words if w not in wide):  # a module's name: "decompose() in intpoly", not `gson`
        named = stems.get(word, [])
        if 0 < len(named) <= policy.few_files:
            for path in named:
                votes[path].append(("path", 0.5 / len(named), word, None))
    for dotted in issue.modules:
        parts = dotted.split(".")
        # `pkg.mod.Class.method`: the longest prefix that is a module (no module is nested deeper than this)
        for length in range(min(len(parts), MODULE_DEPTH), 1, -1):
            stem = "/".join(parts[:length])
            path = _suffix_match(stem + ".py", by_file_name) or _suffix_match(stem + "/__init__.py", by_file_name)
            if path is not None:
                votes[path].append(("path", 0.8, dotted, None))
                break


def _frame_entity(chunks: Sequence[Chunk], frame: Frame) -> str | None:
    """The id of the chunk a frame ran in (`chunks`: its file's): its function by name, the one holding its line where
    several share the name (`invoke` of two classes), any of them where none does (an installed copy's lines may
    differ), else the innermost chunk holding its line."""
    function = re.split(r"::|\.", frame.function)[-1]  # `Cls.method`, `fmt::detail::write`: the name defined
    holding = sorted(
        (c for c in chunks if c.line_start <= frame.line <= c.line_end), key=lambda c: c.line_end - c.line_start
    )
    named = [c for c in chunks if function and c.symbol == function]
    chosen = [c for c in holding if function and c.symbol == function] or named or holding
    return chosen[0].id if chosen else None


def _names(
    code: KindIndex, issue: IssueText, votes: dict[str, list[Vote]], policy: LocatePolicy
) -> list[tuple[float, Chunk]]:
    """Votes for the files defining the names the text's code uses; returns the definitions voted for, with their
    weights (the call graph walks on from them)."""
    keys = {name_key(name): name for name in issue.names}
    if not keys:
        return []
    defining = code.searched.defining(sorted(keys), policy.depth * 4)
    chunks = code.searched.chunks(defining)
    by_name: dict[str, dict[str, int]] = defaultdict(dict)
    for key, chunk in chunks.items():
        by_name[name_key(chunk.symbol)].setdefault(chunk.path, key)
    named = []
    for position, name in enumerate(issue.names):
        files = by_name.get(name_key(name), {})
        if not files or len(files) > policy.common_name_files:
            continue
        # the issue's most used names first; a name defined in one file says more than one defined in five
        weight = 1.0 / (len(files) ** 0.5) / (1 + position / 8)
        for path, key in files.items():
            votes[path].append(("name", weight, name, key))
            named.append((weight, chunks[key]))
    return named


def _callees(
    code: KindIndex, named: list[tuple[float, Chunk]], votes: dict[str, list[Vote]], policy: LocatePolicy
) -> None:
    """The call graph from what the text names to where the work happens: what each named function or method calls
    (one step, resolved as `search --expand` resolves it) votes for the file defining it, in another file than the
    caller's; a caller of many functions says less of each."""
    if not named or policy.walked_names == 0:
        return
    graph = code.call_graph()
    for weight, chunk in sorted(named, key=lambda pair: -pair[0])[: policy.walked_names]:
        called = [ref for ref in graph.calls(chunk) if ref["path"] != chunk.path]
        for ref in called:
            detail = f"{chunk.symbol} -> {ref['name']}"
            votes[str(ref["path"])].append(("callee", weight / len(called) ** 0.5, detail, None))


def _messages(code: KindIndex, issue: IssueText, votes: dict[str, list[Vote]]) -> None:
    for message in issue.messages[:16]:
        fragments = [f.strip() for f in re.split(r"['\"`]|\b\d[\w.]*", message) if len(f.strip()) >= 12]
        if not fragments:
            continue
        hits = code.searched.lexical_search(terms(message), 40)
        chunks = code.searched.chunks([hit.key for hit in hits])
        for hit in hits:
            chunk = chunks.get(hit.key)
            if chunk is not None and any(fragment in chunk.content for fragment in fragments):
                votes[chunk.path].append(("message", 1.0, message[:80], hit.key))


def _words(source: KindIndex, issue: IssueText, votes: dict[str, list[Vote]], policy: LocatePolicy) -> None:
    hits = source.searched.lexical_search(terms(issue.text), policy.depth)
    _per_file(source, [(hit.key, hit.score) for hit in hits], "words", votes)


def _meaning(
    source: KindIndex,
    coverage: Coverage,
    stage: str,
    vector: np.ndarray,
    votes: dict[str, list[Vote]],
    policy: LocatePolicy,
) -> None:
    """One dense stage's nearest chunks (the static stage's table, or the transformer's vectors) read per file."""
    if stage == "static" and coverage.static_rows:
        hits = source.searched.static_search(vector, policy.depth)
    elif stage == "dense" and coverage.embedded:
        hits = source.searched.dense_search(vector, policy.depth)
    else:
        return
    _per_file(source, [(hit.key, hit.score) for hit in hits], "meaning", votes)


def salient(issue: IssueText) -> str:
    """What a dense stage sees of a long issue: its title, then its prose, not its code (the model reads 384
    tokens; the static stage averages, so a long log would drown the question, and an issue's code is mostly imports
    and calls of the public API, which read as "all of the package": bench/locate_dense_text.py)."""
    return "\n".join(part for part in (issue.title, issue.prose[:1500]) if part)


def _per_file(source: KindIndex, hits: list[tuple[int, float]], signal: str, votes: dict[str, list[Vote]]) -> None:
    """A ranked chunk list read per file: each file's best chunk stands for it, its other chunks add a little (and
    each keeps its own vote, so the file's entities are ranked by the same list)."""
    chunks = source.searched.chunks([key for key, _ in hits])
    seen: set[str] = set()
    for key, score in hits:
        chunk = chunks.get(key)
        if chunk is None:
            continue
        votes[chunk.path].append((signal, score if chunk.path not in seen else 0.1 * score, "", key))
        seen.add(chunk.path)


# ---- fusion ------------------------------------------------------------------------------------------------------
def quiet_path(path: str, known: dict[str, KindIndex]) -> bool:
    """Evidence rather than an answer: a test, a doc, anything under `.github/`, and a project's records (changelog,
    news, history, authors) unless the file is source code (`pkg/history.py` is code like any other)."""
    if is_quiet(path) or known[path].kind == "docs" or _DOC_FOLDER.search(path) is not None:
        return True
    return _RECORD_NAME.search(path) is not None and language_of(path) is None


def fuse(
    votes: dict[str, list[Vote]], quiet: dict[str, bool], subjects: dict[str, str], policy: LocatePolicy
) -> dict[str, float]:
    """Each file's score, best first: per signal, files ranked by their summed votes, each worth its place and its
    margin to the first (`rank_and_margin`); a quiet file's (test, doc, template) score passes mostly to its subject."""
    per_signal: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for path, path_votes in votes.items():
        for signal, score, _, _ in path_votes:
            per_signal[signal][path] += score
    scores = rank_and_margin(per_signal.values(), policy.rank_constant, policy.margin_share)
    final: dict[str, float] = defaultdict(float)
    for path, score in scores.items():
        if quiet.get(path, False):
            subject = subjects.get(path)
            if subject is not None and subject != path:
                final[subject] += score * (1 - policy.quiet_damping)
            final[path] += score * policy.quiet_damping
        else:
            final[path] += score
    return {path: final[path] for path in sorted(final, key=lambda p: (-final[p], p))}


def _located(
    path: str, score: float, path_votes: list[Vote], known: dict[str, KindIndex], policy: LocatePolicy, listed: int
) -> LocatedFile:
    """The file's answer: its evidence, and its entities ranked as files are (per signal, the file's chunks ranked by
    their votes, each rank worth 1 / (rank_constant + rank)), save that the frame nearest the error comes first: what
    ran when it failed says more of where than any likeness; the trace's other frames are one signal among the rest
    (bench/locate.py, function level); and a module's `__main__` demo comes after the definitions it calls."""
    evidence: dict[tuple[str, str], float] = {}
    per_signal: dict[str, dict[int | str, float]] = defaultdict(lambda: defaultdict(float))
    for signal, value, detail, key in path_votes:
        evidence[(signal, detail)] = max(evidence.get((signal, detail), 0.0), value)
        if key is not None:
            per_signal[signal][key] += value
    fused = reciprocal_rank(((ranks_by_votes(votes_of), 1.0) for votes_of in per_signal.values()), policy.rank_constant)
    frames = per_signal.get("frame", {})
    nearest = min(frames, key=lambda k: (-frames[k], -fused[k], str(k)), default=None)
    index = known[path]
    by_key = index.searched.chunks([key for key in fused if isinstance(key, int)])
    chunk_of = {key: by_key.get(key) if isinstance(key, int) else index.chunk_by_id(key) for key in fused}
    in_file = index.searched.chunks_of_path(path)
    # a module's `if __name__ == "__main__":` block (all its parts) is its demo
    demos = {group_key(c.id) for c in in_file if not c.symbol and _MAIN_GUARD.search(c.content) is not None}
    demo = {key: chunk is not None and group_key(chunk.id) in demos for key, chunk in chunk_of.items()}
    order = sorted(fused, key=lambda k: (k != nearest, demo[k], -fused[k], str(k)))
    definitions = _definitions(in_file)
    entities: dict[str, LocatedEntity] = {}
    for key in order:
        chunk = chunk_of[key]
        if chunk is None:
            continue
        entity = definitions.get(chunk.id) or LocatedEntity(chunk.id, _label(chunk), chunk.line_start, chunk.line_end)
        entities.setdefault(entity.id, entity)
        if len(entities) == listed:
            break
    return LocatedFile(
        path=path,
        score=round(score, 4),
        evidence=tuple(LocateEvidence(signal, detail) for (signal, detail) in evidence),
        entities=tuple(entities.values()),
    )


def _definitions(chunks: Sequence[Chunk]) -> dict[str, LocatedEntity]:
    """Each chunk's id -> the whole entity or section it is a part of, named once with all its lines: one too long for
    a chunk is indexed as parts `path#name`, `path#name~2`, ... (records.group_key, the rule `search` answers by)."""
    parts_of: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        parts_of[group_key(chunk.id)].append(chunk)
    out: dict[str, LocatedEntity] = {}
    for whole_id, parts in parts_of.items():
        first, start, end = whole(parts)
        entity = LocatedEntity(whole_id, _label(first), start, end)
        out.update((c.id, entity) for c in parts)
    return out


def _label(chunk: Chunk) -> str:
    if chunk.symbol:
        return f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
    return chunk.section or chunk.title
