"""Best-effort call graph over code chunks: call sites resolved by name within the repository."""

from __future__ import annotations

import re
from collections import defaultdict

from .quiet import is_quiet
from .records import Chunk, Reference, group_key, is_part

MAX_EDGES = 20
MAX_SITES = 10  # call sites listed per caller
NAME_CANDIDATE_DEFINITIONS = 3  # a member call of unknown receiver names a method of this few definitions at most


def _is_part(chunk: Chunk) -> bool:
    return is_part(chunk.id)


def _head_id(chunk: Chunk) -> str:
    """The id of the entity's first part (`path#name` for `path#name~3`)."""
    return group_key(chunk.id)


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


class CallGraph:
    """Who calls what, from each entity's call names.

    Python calls whose target `ast` pins down (`self.f()`, imported names, `x.f()` where `x`'s class is known) are
    `resolved: "exact"`. A plain call `f()` resolves to functions named `f` (same file, then same language, first); a
    member call `x.f()` (recorded as ".f"), whose receiver type is unknown, resolves to methods named `f` in the same
    file, so `path.exists()` is not taken for some unrelated `exists` method; these are `resolved: "name"`. Among the
    callers of a method, member calls from other files are listed too, as `"name"` candidates, when few entities
    define that name; so are they among a function's callers outside Python (`pkg.F()` in Go). Names nothing defines
    are dropped. A long entity split into parts (`id~2`, `id~3`) is one entity: every part's calls are its calls, and
    a call in any part makes it the caller.
    """

    def __init__(self, chunks: list[Chunk]) -> None:
        self._by_name: dict[str, list[Chunk]] = defaultdict(list)
        self._callers: dict[str, list[Chunk]] = defaultdict(list)
        self._exact_callers: dict[str, list[Chunk]] = defaultdict(list)  # "path::Qual" or "module:m::Qual" calls
        heads = {chunk.id: chunk for chunk in chunks if not _is_part(chunk)}
        self._heads = heads
        self._calls: dict[str, list[str]] = defaultdict(list)  # an entity's calls, over all its parts
        self._parts: dict[str, list[Chunk]] = defaultdict(list)
        self._exact_by_target: dict[str, list[Chunk]] | None = None
        for chunk in chunks:
            owner = heads.get(_head_id(chunk), chunk)
            if chunk is owner and chunk.symbol and chunk.symbol_kind:
                self._by_name[chunk.symbol].append(chunk)
            self._calls[owner.id].extend(chunk.calls)
            self._parts[owner.id].append(chunk)
        for owner_id, names in self._calls.items():
            head = heads.get(owner_id)
            if head is None:
                continue
            for name in dict.fromkeys(names):
                (self._exact_callers if "::" in name else self._callers)[name].append(head)

    def _rank(self, origin: Chunk, chunks: list[Chunk]) -> list[Chunk]:
        """Same file first, tests and examples last (where `MAX_EDGES` cuts, they are what goes), then by language."""
        return sorted(chunks, key=lambda c: (c.path != origin.path, is_quiet(c.path), *self._order(origin, c)))

    @staticmethod
    def _order(origin: Chunk, chunk: Chunk) -> tuple[bool, str, int]:
        return (chunk.language != origin.language, chunk.path, chunk.line_start)

    def _exact(self, call: str) -> list[Chunk]:
        where, qualified = call.rsplit("::", 1)
        parent, _, name = qualified.rpartition(".")
        if where.startswith("module:"):
            module = where[len("module:") :].replace(".", "/")
            suffixes = (f"{module}.py", f"{module}/__init__.py")
            found = [
                c
                for c in self._by_name.get(name, [])
                if c.path.endswith(suffixes)
                and c.parent == parent
                and (c.path in suffixes or c.path.endswith(tuple("/" + s for s in suffixes)))
            ]
            if found or not parent:
                return found
            # `from pkg import Config`, where pkg/__init__.py re-exports the class from one of its modules
            inside = f"/{module}/"
            return [c for c in self._by_name.get(name, []) if c.parent == parent and inside in f"/{c.path}"]
        return [c for c in self._by_name.get(name, []) if c.path == where and c.parent == parent]

    def _exact_targets(self) -> dict[str, list[Chunk]]:
        """Entity id -> the entities calling it exactly, resolved once per graph (a search asks for ten)."""
        if self._exact_by_target is None:
            self._exact_by_target = defaultdict(list)
            for call, chunks in self._exact_callers.items():
                for target in self._exact(call):
                    self._exact_by_target[target.id].extend(chunks)
        return self._exact_by_target

    def _targets(self, chunk: Chunk, call: str) -> list[Chunk]:
        if "::" in call:
            return self._exact(call)
        if call.startswith("."):
            return [c for c in self._by_name.get(call[1:], []) if c.path == chunk.path and c.parent]
        return self._rank(chunk, [c for c in self._by_name.get(call, []) if c.symbol_kind != "method"])[:3]

    def calls(self, chunk: Chunk) -> tuple[Reference, ...]:
        found: dict[str, tuple[Chunk, str]] = {}
        for call in dict.fromkeys(self._calls.get(_head_id(chunk)) or chunk.calls):
            for target in self._targets(chunk, call):
                if target.id != chunk.id:
                    found.setdefault(target.id, (target, "exact" if "::" in call else "name"))
        return tuple(_ref(c, how) for c, how in list(found.values())[:MAX_EDGES])

    def called_by(self, chunk: Chunk) -> tuple[Reference, ...]:
        """Who calls the entity `chunk` is (any of its parts: a search may answer with its second), each with the lines
        of its call sites (`sites`)."""
        chunk = self._heads.get(_head_id(chunk), chunk)
        if not chunk.symbol or not chunk.symbol_kind:
            return ()
        exact = self._exact_targets().get(chunk.id, [])
        members = self._callers.get("." + chunk.symbol, [])
        few = len(self._by_name.get(chunk.symbol, [])) <= NAME_CANDIDATE_DEFINITIONS
        if chunk.symbol_kind == "method":
            by_name = [c for c in members if c.path == chunk.path or few]
        else:
            by_name = list(self._callers.get(chunk.symbol, []))
            # Go's `logrus.New()`, a JavaScript module's `lib.parse()`: a function called through its package looks
            # like a member call (Python's are resolved exactly through its imports)
            if few and chunk.language != "python":
                by_name += [c for c in members if c.language == chunk.language]
        resolved = {c.id: "name" for c in by_name} | {c.id: "exact" for c in exact}
        # same file first, tests and examples last however their calls were resolved (so the cap cuts them first),
        # exact callers before guesses among the rest
        ranked = sorted(
            {c.id: c for c in [*exact, *by_name] if c.id != chunk.id}.values(),
            key=lambda c: (c.path != chunk.path, is_quiet(c.path), resolved[c.id] != "exact", *self._order(chunk, c)),
        )
        found = {c.id: (c, resolved[c.id]) for c in ranked}
        return tuple(
            _ref(c, how, call_sites(self._parts.get(c.id, [c]), chunk.symbol))
            for c, how in list(found.values())[:MAX_EDGES]
        )
