"""What a file is called as a module: its own name, or its folder's where its language names it so and keeps the
folder's code there (`utc/index.js`, `exec/mod.rs`); whose test a test file is; and the folders so wide they name the
project rather than any module in it (`com/google/gson/` holding nine files in ten)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection

from .quiet import is_quiet, is_test

# JavaScript's and Rust's: the folder's module and its code. Python's `__init__.py` mostly re-exports its folder's
# modules: named by its folder, it took the word from `sets/sets.py` and `pretty/pretty.py` (two sympy first places)
FOLDER_MODULES = frozenset({"index", "mod"})
# A test's name less Python's and Go's marks (`test_latex`, `latex_test`). Other languages' (`utc.test`, `format-test`,
# `JsonParserTest`) were read too and cost first places: fmt's tests are named for the header every fix passes through
# (docs/benchmarks.md §4g)
_TEST_NAME = re.compile(r"^(?:test_)?(.+?)(?:_tests?)?$")
PROJECT_SHARE = 0.5  # a folder holding more than this share of the files names the project


def module_name(path: str) -> str:
    """The name a file is imported by: its stem, or for a folder's module its folder's name."""
    parts = path.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    return parts[-2] if stem in FOLDER_MODULES and len(parts) > 1 else stem


def test_subjects(paths: Collection[str], code: Collection[str]) -> dict[str, str]:
    """Each test file's subject: the code file (of `code`) named as the test names it (`tests/test_latex.py` ->
    `printing/latex.py`, `x_test.go` -> `x.go`), the one nearest it when several share the name. An example's
    `examples/auth/index.js` names `auth`, not every `index.js`."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in code:
        if not is_quiet(path):
            by_name[module_name(path)].append(path)
    subjects = {}
    for path in paths:
        if not is_test(path):  # an example, a benchmark, a generated or vendored copy is no test of a namesake
            continue
        name = module_name(path)
        match = _TEST_NAME.match(name) if name == path.rsplit("/", 1)[-1].rsplit(".", 1)[0] else None
        candidates = by_name.get(match.group(1) if match else name, [])
        if candidates:
            subjects[path] = max(candidates, key=lambda c: _shared_prefix(c, path))
    return subjects


def project_words(paths: Collection[str]) -> frozenset[str]:
    """The folder names (lower case) that hold more than `PROJECT_SHARE` of `paths`: `gson`, `mockito`, `java`."""
    held = Counter(folder for path in paths for folder in {part.lower() for part in path.split("/")[:-1]})
    return frozenset(folder for folder, count in held.items() if count > PROJECT_SHARE * len(paths))


def _shared_prefix(a: str, b: str) -> int:
    count = 0
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        count += 1
    return count
