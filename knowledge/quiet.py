"""Which paths hold code that is not the project's own working code: tests, examples, vendored, generated and
benchmark code, compatibility shims, TypeScript declarations. The ranking demotes them (and the files git's attributes
mark `linguist-generated` or `linguist-vendored`: `KindIndex.marked_generated`); the call graph lists their callers
after the others."""

from __future__ import annotations

import re

QUIET_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|__mocks__|spec|specs|examples?|samples?|demos?|docs_src|vendor|vendored|"
    r"third_party|extern|node_modules|generated|gen|fixtures?|benchmarks?|compat)(/|$)"
    r"|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)\.\w+|[^/]*\.d\.ts|conftest\.py)$",
    re.IGNORECASE,
)


def is_quiet(path: str) -> bool:
    return QUIET_PATH.search(path) is not None
