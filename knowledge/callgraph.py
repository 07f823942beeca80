"""Best-effort call graph over code chunks: call sites resolved by name within the repository.

The graph asks `Entities` for what it needs, a name at a time: which entities define a name, which call it, an
entity's parts. `LoadedEntities` answers from a list of chunks in memory; an engine that keeps who calls what in a
table (the local one) answers by key, so an answer reads the rows it shows, not the whole index."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Protocol

from .quiet import is_quiet
from .records import Chunk, Reference, group_key, is_part

MAX_EDGES = 20
MAX_SITES = 10  # call sites listed per caller
NAME_CANDIDATE_DEFINITIONS = 3  # a member call of unknown receiver names a method of this few definitions at most
# languages where a method calls another of its class by its bare name (`release_storage()` in a C++ class body)
IMPLICIT_RECEIVER = frozenset({"cpp", "java", "csharp", "kotlin", "scala", "swift", "ruby"})
# another project's copy of a library: never where a call by name lands from outside that project
VENDORED = re.compile(r"(^|/)(vendor|vendored|third_party|third-party|node_modules|extern|external)/")


class Entities(Protocol):
    """What the call graph reads: the entities (a split entity's first part stands for it) by name."""

    def defining(self, name: str) -> list[Chunk]:
        """The entities named `name` (with a kind), in key order."""
        ...

    def calling(self, calls: Sequence[str]) -> dict[str, list[Chunk]]:
        """For each call as recorded (`f`, `.f`, `path::Qual`, `module:m::Qual`), the entities any of whose parts
        make it, in key order (those calling none are left out)."""
        ...

    def parts(self, chunk: Chunk) -> list[Chunk]:
        """The parts of the entity `chunk` belongs to, first part first (the chunk alone when it has none)."""
        ...


def head_of(chunk: Chunk, parts: Sequence[Chunk]) -> Chunk:
    """The entity `chunk` is a part of: its first part, where the index has it."""
    key = group_key(chunk.id)
    return next((part for part in parts if part.id == key), chunk)


class LoadedEntities:
    """`Entities` over chunks held in memory (the shared store's, an index from before the calls table)."""

    def __init__(self, chunks: list[Chunk]) -> None:
        heads = {chunk.id: chunk for chunk in chunks if not is_part(chunk.id)}
        self._by_name: dict[str, list[Chunk]] = defaultdict(list)
        self._callers: dict[str, list[Chunk]] = defaultdict(list)
        self._parts: dict[str, list[Chunk]] = defaultdict(list)
        calls: dict[str, list[str]] = defaultdict(list)
        for chunk in chunks:
            owner = heads.get(group_key(chunk.id), chunk)
            if chunk is owner and chunk.symbol and chunk.symbol_kind:
                self._by_name[chunk.symbol].append(chunk)
            calls[owner.id].extend(chunk.calls)
            self._parts[owner.id].append(chunk)
        for owner_id, names in calls.items():
            head = heads.get(owner_id)
            if head is None:  # a part whose first part is not indexed calls nothing on its own
                continue
            for name in dict.fromkeys(names):
                self._callers[name].append(head)

    def defining(self, name: str) -> list[Chunk]:
        return self._by_name.get(name, [])

    def calling(self, calls: Sequence[str]) -> dict[str, list[Chunk]]:
        return {call: self._callers[call] for call in calls if call in self._callers}

    def parts(self, chunk: Chunk) -> list[Chunk]:
        return self._parts.get(group_key(chunk.id)) or self._parts.get(chunk.id) or [chunk]


class StoredEntities:
    """`Entities` read from an engine's tables by key: the chunks that define a name (by symbol), that make a call
    (`callers`), and a file's chunks (by path). What a graph asked once it keeps (a graph serves one index version)."""

    def __init__(self, side: StoredGraphSide, file_chunks: Callable[[str], list[Chunk]] | None = None) -> None:
        self._side = side
        self._defined: dict[str, list[Chunk]] = {}
        self._file = file_chunks or side.chunks_of_path  # a file's chunks (the caller may keep the ones asked lately)

    def defining(self, name: str) -> list[Chunk]:
        if name not in self._defined:
            keys = self._side.defining([name.replace("_", "").lower()], 10_000)
            found = self._side.chunks(keys)
            self._defined[name] = [
                found[key]
                for key in sorted(found)
                if found[key].symbol == name and found[key].symbol_kind and not is_part(found[key].id)
            ]
        return self._defined[name]

    def calling(self, calls: Sequence[str]) -> dict[str, list[Chunk]]:
        rows = self._side.callers(calls)  # (call, key) in key order
        chunks = self._side.chunks([key for _, key in rows])
        found: dict[str, dict[str, Chunk]] = defaultdict(dict)
        for call, key in rows:
            chunk = chunks.get(key)
            if chunk is None:
                continue
            head = head_of(chunk, self._file(chunk.path)) if is_part(chunk.id) else chunk
            if not is_part(head.id):  # a part whose first part is not indexed calls nothing on its own
                found[call].setdefault(head.id, head)
        return {call: sorted(heads.values(), key=_in_file_order) for call, heads in found.items()}

    def parts(self, chunk: Chunk) -> list[Chunk]:
        key = group_key(chunk.id)
        parts = [c for c in self._file(chunk.path) if group_key(c.id) == key]
        head = head_of(chunk, parts)
        if head is chunk and is_part(chunk.id):  # no first part indexed: the part is an entity of its own
            return [chunk]
        return parts or [chunk]


class StoredGraphSide(Protocol):
    """The part of an engine's search side the stored graph reads."""

    def chunks(self, keys: Sequence[int]) -> dict[int, Chunk]: ...

    def chunks_of_path(self, path: str) -> list[Chunk]: ...

    def defining(self, names: Sequence[str], limit: int) -> list[int]: ...

    def callers(self, calls: Sequence[str]) -> list[tuple[str, int]]: ...


def _in_file_order(chunk: Chunk) -> tuple[str, int, str]:
    return (chunk.path, chunk.line_start, chunk.id)


def _ref(chunk: Chunk, resolved: str, sites: list[int] | None = None) -> Reference:
    name = f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
    ref: Reference = {"name": name, "path": chunk.path, "line": chunk.line_start}
    if sites:
        ref["sites"] = sites
    ref["resolved"] = resolved
    return ref


def call_sites(parts: list[Chunk], name: str) -> list[int]:
    """The lines of an entity (over all its parts) that call `name`: where it is followed by `(` (or `<`, `{`), else,
    for languages that call without parentheses (Ruby), where it appears at all."""
    word = rf"(?<![\w$]){re.escape(name)}(?![\w$])"
    called, named = re.compile(word + r"\s*[(<{]"), re.compile(word)
    lines: dict[int, str] = {}
    for part in parts:
        for offset, text in enumerate(part.content.split("\n")):
            lines.setdefault(part.line_start + offset, text)
    for pattern in (called, named):
        found = [n for n, text in sorted(lines.items()) if pattern.search(text)]
        if found:
            return found[:MAX_SITES]
    return []


def _modules(path: str) -> list[str]:
    """The dotted modules a Python import may name `path` by: its own (`a.b.c`, `b.c`, `c` for `a/b/c.py`; a
    package's `__init__.py` its folder's) and every run of its folders (a package re-exporting what it holds)."""
    folders = path.split("/")[:-1]
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    own = [*folders, stem] if stem != "__init__" else folders
    found = [".".join(own[start:]) for start in range(len(own))]
    found += [".".join(folders[a:b]) for a in range(len(folders)) for b in range(a + 1, len(folders) + 1)]
    return list(dict.fromkeys(m for m in found if m))


class CallGraph:
    """Who calls what, from each entity's call names.

    Python calls whose target `ast` pins down (`self.f()`, imported names, `x.f()` where `x`'s class is known) are
    `resolved: "exact"`. A plain call `f()` resolves to functions named `f` (same file, then same language, first);
    inside a class of a language that calls its own methods by their bare names (C++, Java, ...), to that class's
    methods first. A member call `x.f()` (recorded as ".f"), whose receiver type is unknown, resolves to methods named
    `f` in the same file, so `path.exists()` is not taken for some unrelated `exists` method; these are `resolved:
    "name"`. Among the callers of a method, member calls from other files are listed too, as `"name"` candidates,
    when few entities define that name; so are they among a function's callers outside Python (`pkg.F()` in Go).
    Names nothing defines are dropped. A long entity split into parts (`id~2`, `id~3`) is one entity: every part's
    calls are its calls, and a call in any part makes it the caller.
    """

    def __init__(self, entities: Entities | list[Chunk], project_of: Callable[[str], str] | None = None) -> None:
        self._entities = LoadedEntities(entities) if isinstance(entities, list) else entities
        self._project_of = project_of

    def _in_scope(self, origin: Chunk, candidates: list[Chunk]) -> list[Chunk]:
        """Where a call by name from `origin` may land in a repository of several projects (`project_of`: the folder
        of a file's nearest manifest): its own project's definitions; failing those, another project's (a sibling
        package it imports), never one's vendored copy of a library."""
        if self._project_of is None or not candidates:
            return candidates
        home = self._project_of(origin.path)
        own = [c for c in candidates if self._project_of(c.path) == home]
        return own or [c for c in candidates if not VENDORED.search(c.path)]

    def _beside(self, caller: Chunk, callee: Chunk) -> bool:
        """Whether a member call of unknown receiver in `caller` may be a call of `callee`: same language, and the
        same project where the repository has several."""
        if caller.language != callee.language:
            return False
        return self._project_of is None or self._project_of(caller.path) == self._project_of(callee.path)

    def _rank(self, origin: Chunk, chunks: list[Chunk]) -> list[Chunk]:
        """Same file first, tests and examples last (where `MAX_EDGES` cuts, they are what goes), then by language."""
        return sorted(chunks, key=lambda c: (c.path != origin.path, is_quiet(c.path), *self._order(origin, c)))

    @staticmethod
    def _order(origin: Chunk, chunk: Chunk) -> tuple[bool, str, int, str]:
        return (chunk.language != origin.language, chunk.path, chunk.line_start, chunk.id)

    def _exact(self, call: str) -> list[Chunk]:
        where, qualified = call.rsplit("::", 1)
        parent, _, name = qualified.rpartition(".")
        defined = self._entities.defining(name)
        if where.startswith("module:"):
            module = where[len("module:") :].replace(".", "/")
            suffixes = (f"{module}.py", f"{module}/__init__.py")
            found = [
                c
                for c in defined
                if c.path.endswith(suffixes)
                and c.parent == parent
                and (c.path in suffixes or c.path.endswith(tuple("/" + s for s in suffixes)))
            ]
            if found or not parent:
                return found
            # `from pkg import Config`, where pkg/__init__.py re-exports the class from one of its modules
            inside = f"/{module}/"
            return [c for c in defined if c.parent == parent and inside in f"/{c.path}"]
        return [c for c in defined if c.path == where and c.parent == parent]

    def _targets(self, chunk: Chunk, call: str) -> list[Chunk]:
        if "::" in call:
            return self._exact(call)
        if call.startswith("."):
            return [c for c in self._entities.defining(call[1:]) if c.path == chunk.path and c.parent]
        defined = self._entities.defining(call)
        if chunk.parent and chunk.language in IMPLICIT_RECEIVER:
            own = [c for c in defined if c.parent == chunk.parent and c.path == chunk.path]
            if own:
                return own
        return self._rank(chunk, self._in_scope(chunk, [c for c in defined if c.symbol_kind != "method"]))[:3]

    def calls(self, chunk: Chunk) -> tuple[Reference, ...]:
        parts = self._entities.parts(chunk)
        names = [name for part in parts for name in part.calls] if len(parts) > 1 else list(chunk.calls)
        found: dict[str, tuple[Chunk, str]] = {}
        for call in dict.fromkeys(names):
            for target in self._targets(chunk, call):
                if target.id != chunk.id:
                    found.setdefault(target.id, (target, "exact" if "::" in call else "name"))
        return tuple(_ref(c, how) for c, how in list(found.values())[:MAX_EDGES])

    def called_by(self, chunk: Chunk) -> tuple[Reference, ...]:
        """Who calls the entity `chunk` is (any of its parts: a search may answer with its second), each with the lines
        of its call sites (`sites`)."""
        chunk = head_of(chunk, self._entities.parts(chunk))
        if not chunk.symbol or not chunk.symbol_kind:
            return ()
        qualified = f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
        exact_calls = [f"{chunk.path}::{qualified}"]
        if chunk.language == "python":
            exact_calls += [f"module:{module}::{qualified}" for module in _modules(chunk.path)]
        plain, member = chunk.symbol, "." + chunk.symbol
        asked = self._entities.calling([*exact_calls, plain, member])
        exact = [
            c
            for call in exact_calls
            if call in asked and any(t.id == chunk.id for t in self._exact(call))
            for c in asked[call]
        ]
        members = asked.get(member, [])
        few = len(self._entities.defining(chunk.symbol)) <= NAME_CANDIDATE_DEFINITIONS
        if chunk.symbol_kind == "method":  # `x.sleep()` of an unknown `x`: a guess only within the method's own project
            by_name = [c for c in members if c.path == chunk.path or (few and self._beside(c, chunk))]
            if chunk.language in IMPLICIT_RECEIVER:  # `release_storage()` in a method of the same class
                by_name += [c for c in asked.get(plain, []) if c.parent == chunk.parent and c.path == chunk.path]
        else:
            functions = [c for c in self._entities.defining(chunk.symbol) if c.symbol_kind != "method"]
            by_name = [c for c in asked.get(plain, []) if chunk in self._in_scope(c, functions)]
            # Go's `logrus.New()`, a JavaScript module's `lib.parse()`: a function called through its package looks
            # like a member call (Python's are resolved exactly through its imports)
            if few and chunk.language != "python":
                by_name += [c for c in members if self._beside(c, chunk)]
        resolved = {c.id: "name" for c in by_name} | {c.id: "exact" for c in exact}
        # same file first, tests and examples last however their calls were resolved (so the cap cuts them first),
        # exact callers before guesses among the rest
        ranked = sorted(
            {c.id: c for c in [*exact, *by_name] if c.id != chunk.id}.values(),
            key=lambda c: (c.path != chunk.path, is_quiet(c.path), resolved[c.id] != "exact", *self._order(chunk, c)),
        )
        return tuple(
            _ref(c, resolved[c.id], call_sites(self._entities.parts(c), chunk.symbol)) for c in ranked[:MAX_EDGES]
        )
