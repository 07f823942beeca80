"""Every operation's request: the one record every frontend (CLI, HTTP, MCP, daemon, remote client) builds, and the
one declaration of its options (`Declared` validates a request once and reads and writes it as JSON).

Each field's `Option` (its help, bounds, choices and command-line names) is what every frontend is made from: the
click options of `knowledge search` (cli/search.py), the MCP tool's parameters and their descriptions
(server/mcp.py), the warm launcher's fast path (launcher.py) and the validation below. Adding an option is one field
here. Fields left None mean "not asked": the core resolves them against the settings once (search.resolve_options).
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Self

from ..errors import KnowledgeError

if TYPE_CHECKING:
    from ..records import JsonObject

FORMATS = ("json", "text")  # an answer as its versioned JSON schema, or as the CLI prints it
KINDS_ASKED = ("all", "docs", "code")
MATCH_MODES = ("word", "substring", "regex")
SCOPES = ("repo", "deps", "all")
MAX_CONTEXT = 20
MAX_K = 100
MAX_BUDGET = 50_000
MAX_QUERY_CHARS = 64_000  # a pasted issue or task, tracebacks and all (tens of KB): a long question is no error
MAX_PASTE_CHARS = 8_000_000  # locate's text: a whole CI log is taken, and read as its head and its tail (issue.py)
MAX_FILTERS = 20  # globs or languages per filter
MAX_FILTER_CHARS = 200
MAX_LINE = 10**9


@dataclass(frozen=True, slots=True)
class Option:
    """How a request field is offered: `flags` on the command line (none: not a CLI option), as an MCP tool
    parameter (`mcp`), on the launcher's warm path (`warm`: simple enough to parse without click)."""

    help: str
    flags: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    mcp: bool = True
    warm: bool = False
    switches: tuple[tuple[str, str, str], ...] = ()  # (flag, value, help): a command-line flag setting the field


def _option(default: object, help: str, **how: Any) -> Any:  # noqa: ANN401 - a dataclass field, typed by its annotation
    return field(default=default, metadata={"option": Option(help, **how)})


def _required(help: str) -> Any:  # noqa: ANN401 - a dataclass field, typed by its annotation
    """A field every request must give (no default): a non-empty string."""
    return field(metadata={"option": Option(help)})


def _globs(flag: str, help: str) -> Any:  # noqa: ANN401 - a dataclass field, typed by its annotation
    return _option((), help.replace(" (`", " (repeatable; `"), flags=(flag,), metavar="GLOB")


def _format() -> Any:  # noqa: ANN401 - a dataclass field, typed by its annotation
    """The answer's form: the CLI asks for text with no --json; MCP always gets the JSON object (not a tool
    parameter)."""
    return _option("json", "The answer as its versioned JSON (`json`) or as the CLI prints it (`text`).",
                   choices=FORMATS, mcp=False)  # fmt: skip


class Declared:
    """What every request is: the declaration of its fields validates it once, when it is made, and reads and writes
    it as JSON parameters (an HTTP body, an MCP tool's arguments, the daemon's wire). A request with a rule across its
    fields says it in `checked`."""

    __slots__ = ()
    __dataclass_fields__: typing.ClassVar[dict[str, Field[Any]]]  # every request is a dataclass

    def __post_init__(self) -> None:
        _validate(self)
        self.checked()

    def checked(self) -> None:
        """A rule across this request's fields (none unless a request says one)."""

    @classmethod
    def from_params(cls, params: JsonObject) -> Self:
        """From JSON parameters; unknown names are refused, None is "not asked"."""
        operation = cls.__name__.removesuffix("Request").lower()
        unknown = sorted(set(params) - set(cls.__dataclass_fields__))
        if unknown:
            raise KnowledgeError(f"unknown {operation} parameter(s): {', '.join(unknown)}")
        for name in sorted(required_fields(cls)):
            if params.get(name) is None:
                raise KnowledgeError(f"{name}: expected a non-empty string")
        return cls(**{name: value for name, value in params.items() if value is not None})

    def to_params(self) -> JsonObject:
        """JSON parameters with only what was asked: the required fields, and every other that differs from its
        default."""
        required = required_fields(type(self))
        return {
            declared.name: list(value) if isinstance(value, tuple) else value
            for declared in fields(self)
            if (value := getattr(self, declared.name)) is not None
            and (declared.name in required or value != declared.default)
        }


@dataclass(frozen=True, slots=True)
class SearchRequest(Declared):
    query: str = _required("What you want to know, in plain words or with identifiers.")
    k: int | None = _option(None, "Most results to return.", flags=("-k", "--top-k"), low=1, high=MAX_K, warm=True)
    threshold: float | None = _option(
        None, "Drop results below this cosine similarity (default: calibrated for the model).", flags=("--threshold",),
        low=-1, high=1,
    )  # fmt: skip
    full_threshold: float | None = _option(
        None, "Include full text only for results at or above this similarity.", flags=("--full-threshold",),
        low=-1, high=1, mcp=False,
    )  # fmt: skip
    budget: int | None = _option(
        None, "Token budget for everything printed, counted in the model's tokens (default 2000).",
        flags=("--budget",), low=1, high=MAX_BUDGET, warm=True,
    )  # fmt: skip
    metadata_only: bool = _option(
        False, "Never include content: paths, titles, sections, lines.", flags=("--metadata-only",), warm=True
    )
    explain: bool = _option(
        False, "Show each result's dense and lexical scores, ranks and fused score.", flags=("--explain",)
    )
    kind: str = _option(
        "all", "Search docs, code, or both (merged by fused rank).", flags=("--kind",), choices=KINDS_ASKED, warm=True
    )
    expand: bool = _option(
        False, "Add the top code hit's callers and callees, as the budget allows.", flags=("--expand",)
    )
    files_only: bool = _option(
        False, "List the matching files, best first, one line each (metadata only).", flags=("--files",), warm=True
    )
    exact: bool = _option(
        False, "Every line where QUERY occurs as a whole word (grep -rnw; no model).", flags=("--exact",), warm=True
    )
    match: str = _option(
        "word", "With exact: `word` (grep -w), `substring` (grep -F) or `regex` (grep -E, linear time).",
        choices=MATCH_MODES,
        switches=(
            ("--substring", "substring", "Every line holding QUERY anywhere (grep -rnF)."),
            ("--regex", "regex", "Every line matching the regular expression QUERY (grep -rnE)."),
        ),
    )  # fmt: skip
    context: int = _option(
        0, "With --exact/--substring/--regex: lines either side.", flags=("-C", "--context"), low=0, high=MAX_CONTEXT
    )
    paths: tuple[str, ...] = _globs("--path", "Only results whose path matches one of these globs (`src/**`).")
    exclude: tuple[str, ...] = _globs("--exclude", "No results whose path matches one of these globs (`tests/**`).")
    language: tuple[str, ...] = _option(
        (), "Only code in these languages (repeatable; `python`, `go`).", flags=("--lang",), metavar="NAME"
    )
    dep: str = _option(
        "", "Ask this dependency at the version installed instead of the repository (`knowledge deps list`); with "
        "--scope all, beside it.", flags=("--dep",), metavar="NAME",
    )  # fmt: skip
    scope: str = _option(
        "repo", "Ask the repository, its installed dependencies (each indexed once at its version), or all of them, "
        "the results interleaved by similarity and each naming its source (`click==8.1.7`).",
        flags=("--scope",), choices=SCOPES,
        switches=(("--deps", "deps", "Ask every installed dependency instead of the repository (--scope deps)."),),
    )  # fmt: skip

    format: str = _format()

    @property
    def filtered(self) -> bool:
        return bool(self.paths or self.exclude or self.language)


@dataclass(frozen=True, slots=True)
class LocateRequest(Declared):
    """An issue or task text in, the files (their functions, classes, sections) to change out: `knowledge locate`."""

    query: str = _required("The issue or task text as filed: title, description, tracebacks, code.")
    k: int | None = _option(None, "Most files to return (default 10).", flags=("-k", "--top-k"), low=1, high=MAX_K)
    budget: int | None = _option(
        None, "Token budget for everything printed, counted in the model's tokens (default 2000).",
        flags=("--budget",), low=1, high=MAX_BUDGET,
    )  # fmt: skip
    paths: tuple[str, ...] = _globs("--path", "Only files whose path matches one of these globs (`src/**`).")
    exclude: tuple[str, ...] = _globs("--exclude", "No files whose path matches one of these globs (`tests/**`).")
    dep: str = _option(
        "", "Locate in this dependency at the version installed instead of the repository (`knowledge deps list`); "
        "with --scope all, beside it.", flags=("--dep",), metavar="NAME",
    )  # fmt: skip
    scope: str = _option(
        "repo", "Locate in the repository, in the installed dependencies the issue points into (a traceback's frame or "
        "a path inside one, or its name), or in all of them, the files merged by their fused score and each naming "
        "its source (`click==8.1.7:click/core.py`).",
        flags=("--scope",), choices=SCOPES,
        switches=(("--deps", "deps", "Locate in the dependencies the issue points into (--scope deps)."),),
    )  # fmt: skip

    format: str = _format()

    @property
    def filtered(self) -> bool:
        return bool(self.paths or self.exclude)


@dataclass(frozen=True, slots=True)
class SourceRequest(Declared):
    """Exact current lines of a repository file, by path and range or by a result's id: `knowledge show`."""

    path: str | None = _option(None, "A repository file's path, relative to its root.")
    start: int | None = _option(None, "The first line (1-based).", low=1, high=MAX_LINE)
    end: int | None = _option(None, "The last line (inclusive).", low=1, high=MAX_LINE)
    id: str | None = _option(
        None, "A result's id (`path#name`), instead of a path and lines.", flags=("--id",), metavar="ID"
    )

    def checked(self) -> None:
        if not self.id and not self.path:
            raise KnowledgeError("path: expected a non-empty string (or a result's id)")
        if self.start is not None and self.end is not None and self.end < self.start:
            raise KnowledgeError(f"end ({self.end}) is before start ({self.start})")


@dataclass(frozen=True, slots=True)
class DocsForFileRequest(Declared):
    """Doc sections that mention a file path (or its name)."""

    path: str = _required("A repository file's path (or its name).")


@dataclass(frozen=True, slots=True)
class DocsForRequest(Declared):
    """Doc sections that refer to code: a file, the entity at a line, or a symbol."""

    target: str = _required("A file path, `path:LINE` (the entity at that line) or a symbol (`KnowledgeBase.search`).")


@dataclass(frozen=True, slots=True)
class StatusRequest(Declared):
    """The index: model, counts, the commit it reflects, files changed since, skipped files (`knowledge status`)."""

    verbose: bool = _option(
        False, "Also list every redacted secret (file, line, kind).", flags=("--verbose", "-v"), mcp=False
    )
    format: str = _format()


@dataclass(frozen=True, slots=True)
class ReindexRequest(Declared):
    """Bring the index up to date with the files."""

    full: bool = _option(False, "A full rebuild (slow) instead of the changes only.")
    worktree: bool = _option(True, "Also the work tree's uncommitted changes.", mcp=False)


@dataclass(frozen=True, slots=True)
class LlmsTxtRequest(Declared):
    """The docs' llms.txt: nothing to ask."""


Request = SearchRequest | LocateRequest


def _validate(request: Declared) -> None:
    if isinstance(request, SearchRequest | LocateRequest):
        _validate_query(request.query, MAX_PASTE_CHARS if isinstance(request, LocateRequest) else MAX_QUERY_CHARS)
    for name, kind, option in request_options(type(request)):
        value = getattr(request, name)
        if kind is tuple:
            object.__setattr__(request, name, _checked_list(name, value))
        elif value is not None:
            _check(name, value, kind, option)
            if kind is str and name in required_fields(type(request)) and not value.strip():
                raise KnowledgeError(f"{name}: expected a non-empty string")


def _validate_query(query: object, limit: int) -> None:
    if not isinstance(query, str):
        raise KnowledgeError("query: expected a non-empty string")
    if not query.strip():
        raise KnowledgeError("the query is empty")
    check_text("query", query)
    if len(query) > limit:
        raise KnowledgeError(f"query: {len(query):,} characters; at most {limit:,}")


def required_fields(cls: type) -> set[str]:
    """The fields a request must be given (no default)."""
    return {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}


def request_options(request: type[Declared] = SearchRequest) -> Iterator[tuple[str, type, Option]]:
    """(name, base type: bool, int, float, str or tuple, Option) of every option of a request, in declaration order."""
    hints = typing.get_type_hints(request)
    for declared in fields(request):
        option = declared.metadata.get("option")
        if option is not None:
            yield declared.name, _base_type(hints[declared.name]), option


def _base_type(hint: object) -> type:
    """`int | None` -> int, `tuple[str, ...]` -> tuple."""
    if typing.get_origin(hint) is tuple:
        return tuple
    args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return typing.cast("type", args[0] if args else hint)


def _check(name: str, value: object, kind: type, option: Option) -> None:
    if kind is bool:
        if not isinstance(value, bool):
            raise KnowledgeError(f"{name}: expected true or false")
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or not option.low <= value <= option.high:  # type: ignore[operator]
            raise KnowledgeError(f"{name}: expected an integer from {option.low} to {option.high}, got {value!r}")
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not option.low <= value <= option.high:  # type: ignore[operator]
            raise KnowledgeError(f"{name}: expected a number from {option.low:g} to {option.high:g}, got {value!r}")
    elif kind is str:
        if not isinstance(value, str):  # JSON may send any value where text is meant
            raise KnowledgeError(f"{name}: expected a string, got {type(value).__name__}")
        check_text(name, value)
        if option.choices and value not in option.choices:
            raise KnowledgeError(f"{name}: {value!r} is not one of {', '.join(option.choices)}")


def _checked_list(name: str, values: object) -> tuple[str, ...]:
    if isinstance(values, list):  # JSON gives lists
        values = tuple(values)
    if not isinstance(values, tuple) or not all(isinstance(v, str) and v for v in values):
        raise KnowledgeError(f"{name}: expected a list of non-empty strings")
    if len(values) > MAX_FILTERS:
        raise KnowledgeError(f"{name}: at most {MAX_FILTERS} entries")
    for value in values:
        check_text(name, value)
        if name == "language":
            if len(value) > MAX_FILTER_CHARS:
                raise KnowledgeError(f"language: {value[:40]!r}…: at most {MAX_FILTER_CHARS} characters")
        else:
            from ..patterns import glob  # RE2, loaded only when a request has globs (the warm launcher has none)

            glob(value)  # the settings' limits: a glob RE2 runs in linear time, 200 characters at most
    return typing.cast("tuple[str, ...]", values)


def check_text(name: str, value: str) -> None:
    """Refuse text no store, file system or tokenizer can take: NUL bytes and lone surrogates."""
    if "\0" in value:
        raise KnowledgeError(f"{name}: contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise KnowledgeError(f"{name}: not valid Unicode text (a lone surrogate)") from None
