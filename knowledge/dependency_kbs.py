"""The repository's dependencies as knowledge bases: each declared dependency resolved to what is installed
(dependencies.py), its files copied once into the user cache at that version, indexed there once and shared by every
repository that uses it, and asked alone (`--dep NAME`) or beside the repository (`--scope deps|all`)."""

from __future__ import annotations

import heapq
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .api.request import MAX_BUDGET
from .errors import ConfigError, KnowledgeError
from .fs import make_dirs, write_file
from .locate_answer import DEFAULT_K, confidence, packed
from .records import LocatedFile, LocateResponse, SearchHit, SearchResponse, SourceText
from .render.locate import located_json

if TYPE_CHECKING:
    from .api.request import LocateRequest, SearchRequest, SourceRequest
    from .dependency_files import Dependency
    from .kb import KnowledgeBase

# a dependency's file or result, as its results name it: `click==8.1.7:click/core.py`, `click==8.1.7:click/core.py#X`
IN_DEPENDENCY = re.compile(r"^(?P<name>[A-Za-z0-9@][A-Za-z0-9._/@-]*)==(?P<version>[^:/\s]+):(?P<inside>.+)$")


def dependencies(root: Path) -> list[Dependency]:
    """The repository's declared dependencies, each resolved to what is installed (`knowledge deps`)."""
    from .dependencies import resolve

    return resolve(root)


def dependency_named(root: Path, name: str) -> Dependency:
    """The declared dependency `name` (as PEP 503 compares names), installed; one clear error otherwise."""
    from .dependency_files import normalized

    for dependency in dependencies(root):
        if normalized(dependency.name) == normalized(name):
            if dependency.installed is None:
                raise ConfigError(f"{root}: {name} is declared but {dependency.problem}")
            return dependency
    raise ConfigError(f"{root}: {name} is not a declared dependency (see `knowledge deps list`)")


def cache_folder(home: Path, dependency: Dependency) -> Path:
    """Where `dependency`'s files and index live in the user cache at its installed version."""
    from .dependency_files import normalized

    return home / "deps" / dependency.ecosystem / f"{normalized(dependency.name)}-{dependency.installed}"


def listed(root: Path) -> list[tuple[Dependency, str | None]]:
    """`knowledge deps list`: each declared dependency, and the cache folder holding its index at the version installed
    (None when no repository has asked that version yet)."""
    from .config import load_settings

    home = load_settings(root)[0].home
    out = []
    for dependency in dependencies(root):
        folder = cache_folder(home, dependency)
        out.append((dependency, str(folder) if dependency.installed and (folder / ".knowledge").is_dir() else None))
    return out


def dependency_copy(home: Path, dependency: Dependency) -> tuple[Path, bool]:
    """The folder under `home` holding `dependency`'s installed files at its version (one per ecosystem, name and
    version, shared by every repository that uses it), and whether it was made now: made once, beside it, then
    renamed in; never changed after."""
    from .dependencies import package_files

    base = home / "deps"
    folder = cache_folder(home, dependency)
    if folder.is_dir():
        return folder, False
    building = folder.with_name(f".{folder.name}.{os.getpid()}.building")
    make_dirs(base, building)
    for inside, data in package_files(dependency):
        make_dirs(base, (building / inside).parent)
        write_file(base, building / inside, data)
    try:
        os.replace(building, folder)
    except OSError:  # another process made it meanwhile: theirs is the same files
        shutil.rmtree(building, ignore_errors=True)
        if not folder.is_dir():
            raise
        return folder, False
    return folder, True


def dependency_kb(kb: KnowledgeBase, name: str) -> tuple[KnowledgeBase, str, int | None]:
    """The knowledge base of dependency `name` of `kb`'s repository at the version installed, its source
    (`click==8.5.1`) and, when it was indexed now, its chunks."""
    return _opened(kb, dependency_named(kb.root, name))


def _opened(kb: KnowledgeBase, dependency: Dependency) -> tuple[KnowledgeBase, str, int | None]:
    """Built in the user cache the first time any repository asks for that version (its first stage at once, its
    vectors by a background fill like any index's), then shared; asked with the repository's model."""
    from .kb import KnowledgeBase

    folder, made = dependency_copy(kb.settings.home, dependency)
    model: dict[str, object] = {
        "model": kb.settings.model,
        "model_variant": kb.settings.model_variant,
        "home": str(kb.settings.home),
    }
    asked = KnowledgeBase.open(folder, overrides=model, embedder_factory=kb.model.embedder_factory)
    chunks = None
    if made or not asked.engine.exists("code"):
        report = asked.reindex_all(embed=False)
        chunks = report.chunks_total
        if report.chunks_pending:
            asked.embed_in_background()
    return asked, f"{dependency.name}=={dependency.installed}", chunks


class ScopedSearch:
    """Searches from where a request asks: the repository (`scope` repo, the default), one dependency (`dep`), every
    installed dependency (`scope` deps) or the repository and them (`scope` all), each result naming its source. A
    dependency's knowledge base, once opened, stays open for the process (a warm server asks it as it asks the
    repository's)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._opened: dict[tuple[str, str, str | None], tuple[KnowledgeBase, str]] = {}

    def search(self, request: SearchRequest) -> SearchResponse:
        if request.scope == "repo" and not request.dep:
            return self.kb.search(request)
        explained = replace(request, scope="repo", dep="", explain=True)  # each result's static similarity
        k = request.k or self.kb.settings.k
        answers = [("", self.kb.search(explained))] if request.scope == "all" else []
        alone = bool(request.dep) and request.scope == "repo"  # one dependency instead of the repository
        chosen = [dependency_named(self.kb.root, request.dep)] if request.dep else _installed(self.kb.root)
        source = ""
        every = ("code", "docs") if request.kind == "all" else (request.kind,)
        worth = {d.name: every for d in chosen} if request.dep else self._worth_asking(chosen, request.query, k)
        for dependency in chosen:
            asked, source = self._dependency(dependency)
            kinds = [kind for kind in every if kind in worth.get(dependency.name, ()) and asked.engine.present(kind)]
            answers += [(source, asked.search(replace(explained, kind=kind))) for kind in kinds]
        merged = interleaved(answers, k)
        if alone:
            merged = replace(merged, source=source)
        if request.explain:
            return merged
        return replace(merged, results=tuple(replace(hit, explain=None) for hit in merged.results))

    def locate(self, request: LocateRequest, printed: Callable[[LocatedFile], str] = located_json) -> LocateResponse:
        """Where to change for an issue: in the repository, in one dependency (`dep`) at the version installed, or in
        the dependencies the issue points into (`scope` deps) and beside the repository (`scope` all). A dependency's
        files and entities are named by their source (`click==8.1.7:click/core.py`); each source's files keep their
        order, merged by their fused score (the same signals fused the same way in each), inside one budget."""
        if request.scope == "repo" and not request.dep:
            return self.kb.locate(request, printed)
        if request.dep:
            chosen = [dependency_named(self.kb.root, request.dep)]
        else:
            chosen = pointed_into(_installed(self.kb.root), request.query)
            if not chosen and request.scope == "deps":
                raise ConfigError(
                    "the issue points into no installed dependency (no frame or path inside one, no name of one): "
                    "name one with --dep NAME"
                )
        whole = replace(request, scope="repo", dep="", budget=MAX_BUDGET)
        answers = [("", self.kb.locate(whole, printed))] if request.scope == "all" else []
        for dependency in chosen:
            asked, source = self._dependency(dependency)
            answer = asked.locate(whole, partial(_printed_in, printed=printed, source=source))
            answers.append((source, replace(answer, files=tuple(_file_in(f, source) for f in answer.files))))
        streams = [((-file.score, order, file) for file in answer.files) for order, (_, answer) in enumerate(answers)]
        files = [file for *_, file in heapq.merge(*streams, key=lambda row: row[:2])][: request.k or DEFAULT_K]
        budget = request.budget or self.kb.settings.budget
        kept, used = packed(files, lambda shape: self.kb.model.count_tokens(printed(shape)), budget)
        left_out = max((answer.left_out_chars for _, answer in answers), default=0)
        omitted = len(files) - len(kept)
        return LocateResponse(len(request.query), kept, used, budget, omitted, left_out, confidence(files))

    def _worth_asking(self, chosen: list[Dependency], query: str, k: int) -> dict[str, tuple[str, ...]]:
        """Which kinds of which dependencies may hold one of the answer's `k` results (by name), the others left
        unasked (each search costs ~10 ms; a warm environment has dozens): every kind of a dependency the question
        names, the code defining a name it asks for, and the indexes holding one of the `k` chunks of them all nearest
        to the question in the static stage's space (the space the results are merged in). Every one, where that
        space cannot compare them. A dependency's docs (mostly the one description its distribution ships) and its
        code are two sources, as two dependencies are."""
        from .ranking.query import asked_names

        both = ("code", "docs")
        stage = self.kb.model.static()
        if stage is None or len(chosen) <= 1:
            return {dependency.name: both for dependency in chosen}
        vector = stage.embed_query(query)
        names = sorted(asked_names(query))
        said = query.lower()
        kept: dict[str, set[str]] = defaultdict(set)
        nearest: list[tuple[float, str, str]] = []
        for dependency in chosen:
            if names_dependency(said, dependency):
                kept[dependency.name].update(both)
            opened, _ = self._dependency(dependency)
            for index in opened.indexes():
                side = index.searched
                if side.manifest.static_stage != stage.fingerprint or (names and side.defining(names, 1)):
                    kept[dependency.name].add(index.kind)
                nearest += [(found.score, dependency.name, index.kind) for found in side.static_search(vector, k)]
        nearest.sort(key=lambda row: -row[0])
        for _, name, kind in nearest[:k]:
            kept[name].add(kind)
        return {name: tuple(kinds) for name, kinds in kept.items()}

    def source(self, request: SourceRequest) -> SourceText:
        """Exact lines of a repository file, or of a dependency's file at the version a result named it with (a path
        `click==8.1.7:click/core.py`, an id `click==8.1.7:click/core.py#Context`), read from its copy in the cache."""
        asked = request.id or request.path or ""
        named = IN_DEPENDENCY.match(asked)
        if named is None or (not request.id and (self.kb.root / asked).exists()):
            if request.id:
                return self.kb.source_of_chunk(request.id)
            return self.kb.source(request.path or "", request.start, request.end)
        dependency = dependency_named(self.kb.root, named["name"])
        if dependency.installed != named["version"]:
            raise KnowledgeError(
                f"{asked}: {dependency.name} is installed at {dependency.installed} here, not {named['version']}; "
                "search again"
            )
        opened, source = self._dependency(dependency)
        inside = named["inside"]
        text = opened.source_of_chunk(inside) if request.id else opened.source(inside, request.start, request.end)
        return replace(text, path=f"{source}:{text.path}")

    def _dependency(self, dependency: Dependency) -> tuple[KnowledgeBase, str]:
        key = (dependency.ecosystem, dependency.name, dependency.installed)
        if key not in self._opened:
            asked, source, _ = _opened(self.kb, dependency)
            self._opened[key] = (asked, source)
        return self._opened[key]


def search_scoped(kb: KnowledgeBase, request: SearchRequest) -> SearchResponse:
    """`ScopedSearch(kb).search(request)`: one question from where it asks, in a process that asks once."""
    return ScopedSearch(kb).search(request)


def names_dependency(text: str, dependency: Dependency) -> bool:
    """Whether lower-cased `text` names `dependency` as a word (`python-frontmatter`, `python_frontmatter`)."""
    from .dependency_files import normalized

    parts = re.split(r"[-_.]+", normalized(dependency.name))
    return re.search(r"\b" + r"[-_. ]?".join(map(re.escape, parts)) + r"\b", text) is not None


def pointed_into(installed: list[Dependency], text: str) -> list[Dependency]:
    """The installed dependencies an issue points into: a traceback's frame or a written path inside one's installed
    folder (`site-packages/click/core.py`, `node_modules/left-pad/index.js`), or the dependency named as a word."""
    from .issue import clip_paste, read_issue

    issue = read_issue(clip_paste(text)[0])
    written = ["/" + path.replace("\\", "/").lstrip("/") for path in (*(f.path for f in issue.frames), *issue.paths)]
    said = text.lower()
    out = []
    for dependency in installed:
        folder = Path(dependency.location or "").name
        inside = bool(folder) and any(f"/{folder}/" in path for path in written)
        if inside or names_dependency(said, dependency):
            out.append(dependency)
    return out


def _installed(root: Path) -> list[Dependency]:
    return [d for d in dependencies(root) if d.installed is not None]


def interleaved(answers: list[tuple[str, SearchResponse]], k: int) -> SearchResponse:
    """One answer from several sources' answers (asked with `explain`): each source's results kept in their own order,
    merged by their similarity to the question in the static stage's space, which every chunk of every source has
    whether or not its transformer vector has come (one shipped model: the scores compare across sources, where
    each answer's rank-based relevance does not: a package of sixteen chunks has a first place too); a result that
    list did not find takes the similarity of the next one of its source that it did. Each result names its source;
    `k` at most."""
    if not answers:
        raise ConfigError("no dependency is installed to ask (see `knowledge deps list`)")
    first = answers[0][1]

    def ranked(source: str, answer: SearchResponse, order: int) -> Iterator[tuple[float, int, int, SearchHit]]:
        known = [_similarity(hit) for hit in answer.results]
        for position, hit in enumerate(answer.results):
            worth = next((value for value in known[position:] if value is not None), None)
            if worth is None:
                worth = next((value for value in reversed(known[:position]) if value is not None), 0.0)
            yield -worth, order, position, _named(hit, source) if source else replace(hit, source=source)

    streams = [ranked(source, answer, order) for order, (source, answer) in enumerate(answers)]
    merged = [hit for *_, hit in heapq.merge(*streams)]
    found = sum(len(a.results) + a.omitted for _, a in answers)
    results = tuple(merged[:k])
    return replace(
        first,
        results=results,
        tokens_used=sum(hit.tokens for hit in results),
        budget=max(a.budget for _, a in answers),
        omitted=found - len(results),
        over_budget=sum(a.over_budget for _, a in answers),
        dense_coverage=min(a.dense_coverage for _, a in answers),
        static_coverage=max(a.static_coverage for _, a in answers),
        source="",
    )


def _printed_in(file: LocatedFile, printed: Callable[[LocatedFile], str], source: str) -> str:
    return printed(_file_in(file, source))


def _file_in(file: LocatedFile, source: str) -> LocatedFile:
    """A dependency's located file, its path and its entities' ids naming their source (what `show` reads)."""
    entities = tuple(replace(entity, id=f"{source}:{entity.id}") for entity in file.entities)
    return replace(file, path=f"{source}:{file.path}", entities=entities)


def _named(hit: SearchHit, source: str) -> SearchHit:
    """A dependency's result, naming its source, with an id `show` and `get_source` read it by."""
    return replace(hit, source=source, id=f"{source}:{hit.id}")


def _similarity(hit: SearchHit) -> float | None:
    value = (hit.explain or {}).get("static_score")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
