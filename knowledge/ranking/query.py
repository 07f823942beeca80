"""What a query asks, read once per request (`Query`, `parse`): its terms and identifiers, the names it asks for and
their qualifiers, whether it says what code does or is one bare name; and the words of a query and of a path reduced
to what their forms share."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TypeVar

from ..lexical import STOPWORDS, identifiers, terms

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A name, or a qualified one: `a.b.C.m`, `A::B`, `Ns\\Class`, `A.B#m` (Python, Java, Go, JS; Ruby, Rust, C++; PHP; docs)
_NAME_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|\\|#)[A-Za-z_][A-Za-z0-9_]*)*")
_SEPARATOR = re.compile(r"\.|::|\\|#")
_DOTTED = re.compile(r"[\w.]+")
_CODE_SHAPED = re.compile(r"^_|\w_\w|[a-z][A-Z]")  # snake_case, camelCase, _private
PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


# Longest first. Agent nouns meet their verbs (builder, building, build), which a stemmer for prose leaves apart.
_SUFFIXES = (
    "ization", "ations", "ation", "izers", "ments", "izer", "ment", "ings", "ions", "ing", "ion", "ers", "er", "ed",
    "es", "ly", "s", "e",
)  # fmt: skip


def normal(word: str) -> str:
    """A word reduced to what its forms share, for matching query words to the words of file names: `building` meets
    `GsonBuilder`'s `builder` at `build` (semble-dev 0.881 -> 0.887 over plural-only matching)."""
    word = word.lower()
    if word.endswith("ss"):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def name_key(name: str) -> str:
    """A name as names are compared: lower case, no underscores (`send_file`, `sendFile` and `SendFile` meet)."""
    return name.lower().replace("_", "")


def asked_names(query: str) -> set[str]:
    """Names the query asks for, lower-cased without underscores: a bare one-word query, code-shaped tokens
    (snake_case, camelCase, qualified: the last part), `backticked` words. A capitalised word in a sentence is not one:
    it says what the sentence is about ("a deep copy of this NameAllocator"), not which definition is wanted (the
    function set +0.013 without it, semble-dev unchanged; §4c)."""
    tokens = _NAME_TOKEN.findall(query)
    names = set(re.findall(r"`([^`]+)`", query))
    if len(tokens) == 1:
        names.add(tokens[0])
    # In a sentence a dotted name is asked for; `A::B`, `Ns\\B` and `A#b` only alone or backticked: inside a topic
    # ("writing to std::ostream", "fmt::arg named arguments") they say what it is about (semble-dev fmtlib -0.4).
    for token in tokens:
        parts = [token] if _DOTTED.fullmatch(token) else _SEPARATOR.split(token)
        names.update(part for part in parts if "." in part or _CODE_SHAPED.search(part))
    return {name_key(last) for n in names if (last := _SEPARATOR.split(n)[-1])}


def underscores(name: str) -> int:
    """How many underscores a name starts with: `_serve` is not `serve` (a private helper beside its public caller)."""
    return len(name) - len(name.lstrip("_"))


def written_underscores(query: str) -> dict[str, set[int]]:
    """Each asked name (`name_key`) -> the leading underscores the query wrote it with."""
    out: dict[str, set[int]] = {}
    for token in [*_NAME_TOKEN.findall(query), *re.findall(r"`([^`]+)`", query)]:
        last = _SEPARATOR.split(token.strip())[-1]
        if last:
            out.setdefault(name_key(last), set()).add(underscores(last))
    return out


def qualified_names(query: str) -> dict[str, list[frozenset[str]]]:
    """For each qualified name the query holds (`Command.invoke`, `Framework::Helpers`, `League\\Flysystem\\Filesystem`,
    `Foo.Bar#baz`, `backticked` ones too): its last part -> the qualifiers written before it (each as `name_key`)."""
    asked = asked_names(query)
    out: dict[str, list[frozenset[str]]] = {}
    for token in [*_NAME_TOKEN.findall(query), *re.findall(r"`([^`]+)`", query)]:
        parts = [part for part in _SEPARATOR.split(token.strip()) if part]
        if len(parts) > 1 and name_key(parts[-1]) in asked:
            out.setdefault(name_key(parts[-1]), []).append(frozenset(name_key(part) for part in parts[:-1]))
    return out


@lru_cache(maxsize=65536)
def scope_words(path: str, parent: str) -> frozenset[str]:
    """What a definition's qualifiers may name: its enclosing entity, its file's name and its folders (`name_key`)."""
    pure = PurePosixPath(path)
    return frozenset(name_key(part) for part in (parent, pure.stem, *pure.parent.parts) if part)


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


@lru_cache(maxsize=65536)  # asked of every candidate's path by every question: a warm server meets the same paths
def path_words(path: str) -> frozenset[str]:
    pure = PurePosixPath(path)
    pieces = [pure.stem, *pure.parent.parts[-2:]]
    return frozenset({normal(part) for piece in pieces for part in PARTS.findall(piece) if len(part) > 2}) | {
        normal(pure.stem.replace("_", "").replace("-", ""))
    }


def type_named(query: str, symbol: str) -> bool:
    """Whether the query spells `symbol` (normalised) as a type: `FromRequest` asks for the trait, not `from_request`
    (semble-dev symbol 0.955 -> 0.961)."""
    return any(token[:1].isupper() and name_key(token) == symbol for token in WORD.findall(query))


@lru_cache(maxsize=65536)
def stem_words(path: str) -> frozenset[str]:
    return frozenset(normal(part) for part in PARTS.findall(PurePosixPath(path).stem) if len(part) > 2)


def query_words(query: str) -> set[str]:
    """The query's words of substance (no stopwords, three letters or more), each reduced by `normal`."""
    return {normal(w) for w in WORD.findall(query) if w.lower() not in STOPWORDS and len(w) > 2}


# A query that is one bare name (`g`, `session`, `FromRequest`): its vector says little, so the lexical side's top
# matches pass whatever their cosine, as a grep user expects; a sentence still needs the similarity floor.
_BARE_NAME = re.compile(r"\s*[A-Za-z_][\w.:]*\s*")


def is_bare_name(query: str) -> bool:
    return _BARE_NAME.fullmatch(query) is not None


@dataclass(frozen=True, slots=True)
class Query:
    """A question as every step of a search reads it, parsed once per request (`parse`)."""

    text: str
    terms: tuple[str, ...]  # what the lexical index is asked for
    identifiers: frozenset[str]  # its code-shaped tokens, as `terms` writes them
    names: frozenset[str]  # the names it asks for (`name_key`)
    qualified: Mapping[str, list[frozenset[str]]]  # a name asked with qualifiers -> each way they were written
    words: frozenset[str]  # its words of substance
    underscores: Mapping[str, set[int]]  # each asked name -> the leading underscores it was written with
    code_does: bool  # it says what code does ("Returns the …")
    bare_name: bool  # it is one name and nothing else


def parse(text: str) -> Query:
    return Query(
        text=text,
        terms=tuple(terms(text)),
        identifiers=frozenset(identifiers(text)),
        names=frozenset(asked_names(text)),
        qualified=qualified_names(text),
        words=frozenset(query_words(text)),
        underscores=written_underscores(text),
        code_does=asks_what_code_does(text),
        bare_name=is_bare_name(text),
    )


Key = TypeVar("Key")


def in_scope(scopes: Mapping[Key, frozenset[str]], ways: Sequence[frozenset[str]]) -> set[Key]:
    """The definitions (by key) whose scope (enclosing entity, file, folders: `scope_words`) the qualifiers of one
    asked name name, written any of `ways`: `Command.invoke` is `invoke` in `Command`, not in `Context`. A qualifier
    that names no definition's scope says nothing checkable (a root namespace, a Go package at the repository's
    root) and is passed over; one that names some narrows to them."""
    known = set().union(*scopes.values()) if scopes else set()
    out: set[Key] = set()
    for qualifiers in ways:
        checkable = qualifiers & known
        if checkable:
            out.update(key for key, scope in scopes.items() if checkable <= scope)
    return out
