"""Frozen records shared across layers: files, chunks, hits, responses, reports, progress."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# A JSON object as it crosses a frontend (HTTP, MCP, the daemon's socket, the remote client): its values are checked
# where they are read (api/request.py, server/backend.py), not by this type.
JsonObject = dict[str, Any]

REDACTION_NOTE = "secret redacted"  # how a redaction is reported (a file's problem line starts with it)

INDEX_DIR_NAME = ".knowledge"  # the folder under a repository's root that holds its index


# The kinds of code entity that hold others (a class's methods, an impl's functions): what the chunker nests members
# under and what ranking and the members answer read as a container
CONTAINERS = frozenset(
    {"class", "interface", "struct", "trait", "impl", "enum", "type", "module", "object", "protocol", "union"}
)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file chosen for indexing, decoded."""

    path: str  # repository-relative, POSIX separators
    kind: str  # "doc" or "code", by the include globs that listed it
    text: str
    content_hash: str
    stat: tuple[int, int] = (0, 0)  # (mtime_ns, size) when read: the cheap freshness check
    redactions: tuple[tuple[int, str], ...] = ()  # (line, kind) of each secret replaced in `text`


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable unit: a doc section or a code entity (function, method, class; or lines), or a part of one."""

    id: str
    path: str
    kind: str
    title: str
    description: str
    section: str  # heading path, "Install > With pip"
    line_start: int  # 1-based, inclusive
    line_end: int
    content: str  # the source text of the chunk, as shown to a reader
    embed_text: str  # header + content: what the model embeds
    content_hash: str  # sha256 of embed_text: the embedding cache key
    tags: tuple[str, ...] = ()
    commit: str | None = None  # HEAD when this chunk was indexed
    language: str = ""  # code only, from here on
    symbol: str = ""  # function, method or class name
    symbol_kind: str = ""  # function, method, class, interface, struct, ...; "" for line chunks
    parent: str = ""  # the enclosing class (or Go receiver, Rust impl type)
    decorators: tuple[str, ...] = ()
    exported: bool | None = None  # None where the language has no such notion
    calls: tuple[str, ...] = ()  # names this entity calls
    references: tuple[str, ...] = ()  # docs: what the section links to or names (see references.py)
    names: tuple[str, ...] = ()  # code: constants, variables and type names declared here outside any function


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A file that was skipped, or indexed with a problem worth reporting."""

    path: str
    problem: str

    @property
    def is_redaction(self) -> bool:
        """A secret replaced by a placeholder: reported as a count, listed by `status --verbose`."""
        return self.problem.startswith(REDACTION_NOTE)

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What a reindex did."""

    files_indexed: int
    chunks_total: int
    chunks_embedded: int
    chunks_reused: int
    files_removed: int
    skipped: tuple[FileProblem, ...] = ()
    warnings: tuple[FileProblem, ...] = ()
    undescribed: tuple[str, ...] = ()  # docs without a `description` (see `knowledge lint`)
    docs_indexed: int = 0  # of `files_indexed`, the docs
    seconds: float = 0.0
    chunks_pending: int = 0  # chunks still waiting for a vector (searchable lexically meanwhile)
    dense_coverage: float = 1.0  # share of chunks with a vector


# An entity a result calls or is called by: its name, file and first line, the lines of its call sites (callers only)
# and how it was resolved ("exact" or "name").
Reference = dict[str, str | int | list[int]]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result; `content` is None when the hit is below the full-content threshold or metadata-only was asked."""

    id: str
    path: str
    kind: str
    score: float | None  # cosine similarity; None while the chunk has no vector yet (lexical match only)
    title: str
    description: str
    section: str
    line_start: int
    line_end: int
    content: str | None
    tokens: int
    commit: str | None = None  # the commit the chunk was indexed at
    stale: bool = False  # the file differs on disk from what was indexed
    explain: dict[str, float | int | bool | None] | None = None  # ranks and scores behind the order (--explain)
    language: str | None = None  # code results only, from here on
    symbol: str | None = None
    symbol_kind: str | None = None
    parent: str | None = None
    calls: tuple[Reference, ...] | None = None  # {name, path, line, resolved} of what it calls
    called_by: tuple[Reference, ...] | None = None  # {name, path, line, sites, resolved} of what calls it
    more_callers: int | None = None  # callers left out of `called_by` to fit the budget (its first few stay)
    more_calls: int | None = None  # callees left out of `calls` to fit the budget
    thin: bool = False  # thinned to fit the budget: printed as its line (where it is, what it is) alone
    neighbour_of: str | None = None  # with --expand: "callee of ID" or "caller of ID" (ID: the top code hit)
    drift: str | None = None  # docs: what the section's referenced code did since the section last changed
    reference: str | None = None  # docs-for: the reference that ties the section to what was asked
    relevance: float | None = None  # search: the score the results are ordered by, 1.0: first in both lists
    match_line: int | None = None  # --exact/--substring/--regex: the matching line (line_start..end adds --context)
    source: str | None = None  # --scope deps/all: where it was found (`click==8.1.7`; "": the repository)


def hit_of(chunk: Chunk, **fields: object) -> SearchHit:
    """A result for `chunk`: its metadata, then what the caller says (score, content, line range, …)."""
    base: dict[str, object] = {
        "id": chunk.id,
        "path": chunk.path,
        "kind": chunk.kind,
        "score": None,
        "title": chunk.title,
        "description": chunk.description,
        "section": chunk.section,
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
        "content": None,
        "tokens": 0,
        "commit": chunk.commit,
        "language": chunk.language or None,
        "symbol": chunk.symbol or None,
        "symbol_kind": chunk.symbol_kind or None,
        "parent": chunk.parent or None,
    }
    return SearchHit(**{**base, **fields})  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class SearchResponse:
    """A whole answer: hits packed best-first into the token budget."""

    query: str
    results: tuple[SearchHit, ...]
    tokens_used: int
    budget: int
    omitted: int  # hits above the threshold left out by k or the budget
    threshold: float
    full_threshold: float
    model: str
    dense_coverage: float = 1.0  # share of the searched chunks that have vectors; below 1 while embedding runs
    static_coverage: float = 0.0  # share that waits with the static first stage's vector instead
    over_budget: int = 0  # of `omitted`, those left out by the budget (the rest: beyond k)
    source: str = ""  # the dependency that answered (`click==8.5.1`); "": the repository


@dataclass(frozen=True, slots=True)
class LocateSignal:
    """One kind of evidence `locate` weighs: its name (a vote's, the evidence's), what it says of a file, and whether
    its detail is free text (a message, a commit's subject: quoted when shown), and how sure an answer is whose first
    file it found (`sure`): "high" where the text names the place itself (a frame, a path, a message found
    verbatim), "medium" where it names what is defined there, "low" where it finds only words, meaning or history.
    The MCP tool's description, the JSON docs, the renderer and the answer's confidence read the table; adding a
    signal is a row and the function that casts its votes."""

    name: str
    says: str
    quoted: bool = False
    sure: str = "low"


LOCATE_SIGNALS = (
    LocateSignal("frame", "a traceback frame ran there (its file, line and function)", sure="high"),
    LocateSignal("path", "the text names the file, its module, or a word that is the module's name", sure="high"),
    LocateSignal("name", "a name the text's code uses is defined there", sure="medium"),
    LocateSignal("callee", "a function that a name the text uses calls is defined there (the call graph, one step)"),
    LocateSignal("message", "a quoted error message is written there", quoted=True, sure="high"),
    LocateSignal("words", "its words are the text's (the lexical index)"),
    LocateSignal("meaning", "it means what the text means (the static stage, the transformer once vectors exist)"),
    LocateSignal(
        "history", "a past commit whose message reads like the text changed it (its subject, or its sha)", quoted=True
    ),
)


@dataclass(frozen=True, slots=True)
class LocateEvidence:
    """Why a file is in a `locate` answer: the signal (frame, path, name, message, words, meaning, history) and what
    it matched (the frame, the name, the message, the commit)."""

    signal: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class LocatedEntity:
    """A function, class or doc section of a located file that drew evidence."""

    id: str
    name: str
    line_start: int
    line_end: int


@dataclass(frozen=True, slots=True)
class LocatedFile:
    path: str
    score: float
    evidence: tuple[LocateEvidence, ...]
    entities: tuple[LocatedEntity, ...]


@dataclass(frozen=True, slots=True)
class LocateResponse:
    """Where to change for an issue: files best first, each with its evidence and entities, inside the budget."""

    query_chars: int
    files: tuple[LocatedFile, ...]
    tokens_used: int
    budget: int
    omitted: int  # files left out by the budget
    left_out_chars: int = 0  # of a paste longer than locate reads, the middle not read (issue.clip_paste)
    confidence: str = ""  # the surest signal that found the first file: high, medium or low (records.LocateSignal.sure)


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress tick for long work: `done` of `total` units in `stage`."""

    stage: str
    done: int
    total: int
    eta_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What `knowledge status` reports."""

    root: str
    index_dir: str
    exists: bool
    model: str | None
    dims: int | None
    files: int
    chunks: int
    built_at: str | None
    age_seconds: float | None
    skipped: tuple[FileProblem, ...] = field(default_factory=tuple)
    thresholds: dict[str, float] = field(default_factory=dict)
    commit: str | None = None  # the commit the index reflects
    head: str | None = None
    commits_behind: int | None = None  # None unless HEAD descends from the indexed commit
    commit_relation: str | None = None  # "at HEAD", "N commit(s) behind HEAD", or why HEAD is off the indexed line
    changed_files: tuple[str, ...] = ()  # files whose content on disk differs from the index (work tree included)
    reindex_running: bool = False
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)  # per kind: files, chunks
    dense_coverage: float = 1.0
    chunks_pending: int = 0
    embedding_eta_seconds: float | None = None  # while an embedding run is going
    fill_progress: float | None = None  # while the fill runs: the share it has embedded, committed or not
    embedding_stopped: bool = False  # chunks wait for vectors and no fill holds its lock (killed, or never started)
    static_coverage: float = 0.0  # share of chunks ranked by the static first stage until their vectors arrive
    static_stage: str = ""  # which static table wrote those rows (the index's manifest)
    fill: bool = True  # false (the `fill` setting): the index stays at the first stage
    redactions: tuple[FileProblem, ...] = field(default_factory=tuple)  # secrets replaced: file, line and kind
    store: str = "local"  # where the index lives: "local" or the shared database, repository and branch
    origin: str = "built here"  # or "imported from a snapshot of <commit>", or "a shared store"
    buffer_bytes: int | None = None  # a shared store: its server's shared_buffers
    searched_bytes: int | None = None  # a shared store: what its searches read (chunk rows, text index, graphs)


@dataclass(frozen=True, slots=True)
class SourceText:
    """Exact current lines of a file, 1-based and inclusive."""

    path: str
    line_start: int
    line_end: int
    total_lines: int
    lines: tuple[str, ...]
    note: str | None = None  # e.g. the file changed since the chunk asked for was indexed


@dataclass(frozen=True, slots=True)
class DriftItem:
    """A doc section whose reference moved on after the section last changed, or no longer resolves."""

    path: str  # the doc
    section: str
    chunk_id: str
    line_start: int
    line_end: int
    section_commit: str  # the newest commit among the section's lines
    reference: str  # as references.py writes it: link:…, path:…, symbol:…
    status: str  # "changed" (the code moved on) or "broken" (the reference no longer resolves)
    summary: str  # one line: what changed
    commits: tuple[tuple[str, str], ...] = ()  # (commit, subject), newest first
    changed_lines: int = 0
    history: bool = False  # a changelog's section: it names old APIs by design, so it fails nothing by default


@dataclass(frozen=True, slots=True)
class Probe:
    doc: str
    source: str  # "description" or "title"
    query: str
    rank: int | None  # 1-based rank of the doc among distinct docs in the answer; None when not in the top TOP
    outranked_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Figures:
    queries: int
    recall_at_1: float
    recall_at_5: float
    mrr: float


@dataclass(frozen=True, slots=True)
class FindabilityReport:
    description: Figures
    title: Figures
    probes: tuple[Probe, ...]
    seconds: float
    lost: tuple[Probe, ...] = field(default_factory=tuple)  # descriptions that do not find their own doc first


# The one part-id rule: the second and later parts of a split entity or section end in `~N` (chunking/ids.py). A C++
# destructor's `~` (`a.cc#Buffer::~Buffer`) is part of a name, never a part number.
_PART = re.compile(r"~\d+$")


def group_key(chunk_id: str) -> str:
    """The id of the whole entity or section (`path#name` for `path#name~3`)."""
    return _PART.sub("", chunk_id)


def is_part(chunk_id: str) -> bool:
    """Whether the id is that of a second or later part of a split entity or section."""
    return _PART.search(chunk_id) is not None
