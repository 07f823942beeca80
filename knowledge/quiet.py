"""Which paths hold code that is not the project's own working code: tests, examples, vendored, generated and
benchmark code (Cargo's `benches/`), compatibility shims, TypeScript declarations, and a C or C++ project's one-file
build of its own sources (`single_include/`, `catch_amalgamated.cpp`). The ranking demotes them (and the files git's
attributes mark `linguist-generated` or `linguist-vendored`: `KindIndex.marked_generated`); the call graph lists their
callers after the others."""

from __future__ import annotations

import re

QUIET_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|__mocks__|spec|specs|examples?|samples?|demos?|docs_src|vendor|vendored|"
    r"third_party|extern|node_modules|generated|gen|fixtures?|benchmarks?|benches|compat|single_include)(/|$)"
    r"|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)\.\w+|[^/]*\.d\.ts|conftest\.py|[^/]*amalgamat[^/]*)$",
    re.IGNORECASE,
)


# What of it is a test: the only quiet file written for one subject (locate passes its votes to that file)
TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|spec|specs)(/|$)"
    r"|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)\.\w+|conftest\.py)$",
    re.IGNORECASE,
)


def is_test(path: str) -> bool:
    return TEST_PATH.search(path) is not None


def is_quiet(path: str) -> bool:
    return QUIET_PATH.search(path) is not None
