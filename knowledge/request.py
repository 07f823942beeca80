"""SearchRequest: the one record every frontend (CLI, HTTP, MCP, daemon, remote client) builds for a search.

Fields left None mean "not asked": the core resolves them against the settings once (search.resolve_options).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from .errors import KnowledgeError
from .patterns import glob

if TYPE_CHECKING:
    from .records import JsonObject

KINDS_ASKED = ("all", "docs", "code")
MATCH_MODES = ("word", "substring", "regex")
MAX_CONTEXT = 20
MAX_K = 100
MAX_BUDGET = 50_000
MAX_QUERY_CHARS = 4_000
MAX_FILTERS = 20  # globs or languages per filter


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    k: int | None = None
    threshold: float | None = None
    full_threshold: float | None = None
    budget: int | None = None
    metadata_only: bool = False
    explain: bool = False
    kind: str = "all"
    expand: bool = False
    files_only: bool = False  # one result per file, metadata only
    exact: bool = False  # every line matching `query`, one result each (grep-like, no model)
    match: str = "word"  # with exact: `word` (grep -w), `substring` (grep -F) or `regex` (grep -E, bounded)
    context: int = 0  # with exact: lines of context either side (grep -C)
    paths: tuple[str, ...] = ()  # globs: keep results whose path matches one (`src/**`)
    exclude: tuple[str, ...] = ()  # globs: drop results whose path matches one (`tests/**`)
    language: tuple[str, ...] = ()  # keep code in these languages (`python`, `go`, …)

    def __post_init__(self) -> None:
        if not isinstance(self.query, str):
            raise KnowledgeError("query: expected a non-empty string")
        if not self.query.strip():
            raise KnowledgeError("the query is empty")
        check_text("query", self.query)
        if len(self.query) > MAX_QUERY_CHARS:
            raise KnowledgeError(f"query: {len(self.query):,} characters; at most {MAX_QUERY_CHARS:,}")
        if self.kind not in KINDS_ASKED:
            raise KnowledgeError(f"kind: {self.kind!r} is not one of {', '.join(KINDS_ASKED)}")
        if self.match not in MATCH_MODES:
            raise KnowledgeError(f"match: {self.match!r} is not one of {', '.join(MATCH_MODES)}")
        _check_int("context", self.context, 0, MAX_CONTEXT)
        _check_int("k", self.k, 1, MAX_K)
        _check_int("budget", self.budget, 1, MAX_BUDGET)
        _check_float("threshold", self.threshold)
        _check_float("full_threshold", self.full_threshold)
        for name in ("metadata_only", "explain", "expand", "files_only", "exact"):
            if not isinstance(getattr(self, name), bool):
                raise KnowledgeError(f"{name}: expected true or false")
        for name in ("paths", "exclude", "language"):
            values = getattr(self, name)
            if isinstance(values, list):  # JSON gives lists
                object.__setattr__(self, name, values := tuple(values))
            if not isinstance(values, tuple) or not all(isinstance(v, str) and v for v in values):
                raise KnowledgeError(f"{name}: expected a list of non-empty strings")
            if len(values) > MAX_FILTERS:
                raise KnowledgeError(f"{name}: at most {MAX_FILTERS} entries")
            for value in values:
                if name != "language":
                    glob(value)  # the settings' limits: a glob RE2 runs in linear time, 200 characters at most
                elif len(value) > 200:
                    raise KnowledgeError(f"language: {value[:40]!r}…: at most 200 characters")

    @property
    def filtered(self) -> bool:
        return bool(self.paths or self.exclude or self.language)

    @classmethod
    def from_params(cls, params: JsonObject) -> SearchRequest:
        """From JSON parameters (HTTP body, MCP arguments); unknown names are refused."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(params) - known)
        if unknown:
            raise KnowledgeError(f"unknown search parameter(s): {', '.join(unknown)}")
        if params.get("query") is None:
            raise KnowledgeError("query: expected a non-empty string")
        values = {name: value for name, value in params.items() if value is not None}
        return cls(**values)

    def to_params(self) -> JsonObject:
        """JSON parameters with only what was asked (None and defaults left out)."""
        defaults = SearchRequest("x")
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in asdict(self).items()
            if name == "query" or (value is not None and value != getattr(defaults, name))
        }


def check_text(name: str, value: str) -> None:
    """Refuse text no store, file system or tokenizer can take: NUL bytes and lone surrogates."""
    if "\0" in value:
        raise KnowledgeError(f"{name}: contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise KnowledgeError(f"{name}: not valid Unicode text (a lone surrogate)") from None


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise KnowledgeError(f"{name}: expected an integer from {low} to {high}, got {value!r}")


def _check_float(name: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1.0 <= value <= 1.0:
        raise KnowledgeError(f"{name}: expected a number from -1 to 1, got {value!r}")
