"""A function-level code-search set built the CodeSearchNet way, from public repositories outside semble's benchmark.

    python bench/function_set.py --mirror /work/.mirror --work /tmp/function-set

For every documented function or method, the first sentence of its doc comment (Python docstring, Go/Rust/Java/JS
comment block right above it) is the query and the function is the target; the tree is written with those doc
comments removed (whole lines only, so the code itself is untouched), as a fresh git repository per source, beside
`annotations/<repo>.json` in semble's format (`{query, relevant: [{path, start_line, end_line}], category}`), so the
gate scores it with semble's scorer: a result counts only when it overlaps the target's lines. Nothing here is
committed: the trees come from `fetch` mirrors and stay under --work.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# repository -> (mirror folder, language, source folders, file suffix)
SOURCES = {
    "more-itertools": ("more-itertools+more-itertools", "python", ["more_itertools"], ".py"),
    "tenacity": ("jd+tenacity", "python", ["tenacity"], ".py"),
    "attrs": ("python-attrs+attrs", "python", ["src/attr", "src/attrs"], ".py"),
    "itsdangerous": ("pallets+itsdangerous", "python", ["src/itsdangerous"], ".py"),
    "cobra": ("spf13+cobra", "go", [""], ".go"),
    "uuid": ("google+uuid", "go", [""], ".go"),
    "javapoet": ("square+javapoet", "java", ["src/main/java"], ".java"),
    "log": ("rust-lang+log", "rust", ["src"], ".rs"),
    "underscore": ("jashkenas+underscore", "javascript", ["modules"], ".js"),
    "click": ("pallets+click", "python", ["src/click"], ".py"),
    "pflag": ("spf13+pflag", "go", [""], ".go"),
    "jsoup": ("jhy+jsoup", "java", ["src/main/java"], ".java"),
}
# A diagnostic, not the gate's set: the same construction over semble-dev's Python repositories, the packages a
# function-level set "of well-known Python packages" is most likely drawn from. They are in semble's benchmark, so
# the gate's function set (the 1.b) never includes them; `--sources semble-python` builds them apart.
SEMBLE_PYTHON = {
    "requests": ("psf+requests", "python", ["src/requests"], ".py"),
    "flask": ("pallets+flask", "python", ["src/flask"], ".py"),
    "httpx": ("encode+httpx", "python", ["httpx"], ".py"),
    "starlette": ("encode+starlette", "python", ["starlette"], ".py"),
    "aiohttp": ("aio-libs+aiohttp", "python", ["aiohttp"], ".py"),
    "model2vec": ("MinishLab+model2vec", "python", ["model2vec"], ".py"),
}
PER_REPO = 200
MIN_WORDS = 4
FUNCTION_TYPES = {
    "go": {"function_declaration", "method_declaration"},
    "java": {"method_declaration", "constructor_declaration"},
    "rust": {"function_item"},
    "javascript": {"function_declaration", "method_definition"},
}
WRAPPERS = {"export_statement", "attribute_item", "decorator"}


def first_sentence(doc: str, name: str) -> str:
    text = doc.strip().split("\n\n")[0]
    text = re.sub(r"\{@\w+\s+([^}]*)\}", r"\1", text)  # {@code x} -> x
    text = re.sub(r"`+", "", " ".join(text.split()))
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = match.group(1) if match else text
    words = sentence.split()
    if words and words[0] == name:  # Go's "Execute uses the args": the name would give the answer away
        words = words[1:]
    return " ".join(words)


def usable(query: str) -> bool:
    return len(query.split()) >= MIN_WORDS and not query.startswith((":", ">>>", "@", "TODO", "Deprecated"))


def python_file(text: str) -> tuple[list[int], list[tuple[str, str, int, int]]]:
    """Docstring line ranges to remove, and (query, name, start, end) of documented functions (original lines)."""
    tree = ast.parse(text)
    removed: list[int] = []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
            continue
        if not isinstance(body[0].value.value, str):
            continue
        doc = body[0]
        lines = list(range(doc.lineno, doc.end_lineno + 1))
        if len(body) == 1:  # keep the body valid: the last docstring line becomes `pass`
            lines = lines[:-1]
        if _shares_a_line(node, doc):  # `def f(): """Doc."""`: the line stays, so the docstring is no question
            continue
        removed += lines
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            query = first_sentence(ast.get_docstring(node) or "", node.name)
            found.append((query, node.name, start, node.end_lineno or node.lineno))
    return removed, found


def _docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _shares_a_line(node: ast.AST, statement: ast.stmt) -> bool:
    """A body on its definition's line (`def f(): ...`, `class E(Exception): "Doc."`): rewriting that line would
    remove the definition itself (click's `@t.overload` stubs were lost so, and their files failed to parse)."""
    return not isinstance(node, ast.Module) and statement.lineno == getattr(node, "lineno", 0)


def python_rewrite(text: str, removed: list[int]) -> list[str]:
    lines = text.split("\n")
    tree = ast.parse(text)
    passes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and len(node.body) == 1:
            first = node.body[0]
            if _docstring(first) and not _shares_a_line(node, first):
                passes.add(first.end_lineno or first.lineno)
    out = []
    for number, line in enumerate(lines, start=1):
        if number in passes:
            out.append(" " * (len(line) - len(line.lstrip())) + "pass")
        elif number not in removed:
            out.append(line)
    return out


def _comment_text(raw: str) -> str:
    lines = []
    for line in raw.split("\n"):
        line = line.strip()
        line = re.sub(r"^(///?|//!|/\*\*?|\*/|\*)", "", line).removesuffix("*/").strip()
        if not line.startswith("@"):
            lines.append(line)
    return "\n".join(lines)


def tree_sitter_file(text: str, language: str) -> tuple[list[int], list[tuple[str, str, int, int]]]:
    from knowledge.chunking.languages import language_of
    from knowledge.chunking.languages import parser as _parser

    spec = language_of({"go": "a.go", "java": "A.java", "rust": "a.rs", "javascript": "a.js"}[language])
    src = text.encode()
    tree = _parser(spec).parse(src)
    lines = text.split("\n")
    removed: list[int] = []
    found = []

    def last_row(node) -> int:  # a Rust line comment ends at column 0 of the next line
        return node.end_point[0] - 1 if node.end_point[1] == 0 else node.end_point[0]

    def whole_lines(node) -> bool:
        before = lines[node.start_point[0]][: node.start_point[1]]
        after = lines[last_row(node)][node.end_point[1] :] if node.end_point[1] else ""
        return not before.strip() and not after.strip()

    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type not in FUNCTION_TYPES[language]:
            continue
        anchor = node
        while anchor.parent is not None and anchor.parent.type in WRAPPERS:
            anchor = anchor.parent
        comments = []
        previous = anchor.prev_sibling
        while previous is not None and previous.type in {"attribute_item", "decorator", "annotation"}:
            previous = previous.prev_sibling
        expected_end = anchor.start_point[0]
        while previous is not None and "comment" in previous.type and last_row(previous) >= expected_end - 1:
            if not whole_lines(previous):
                break
            comments.append(previous)
            expected_end = previous.start_point[0]
            previous = previous.prev_sibling
        if not comments:
            continue
        name_node = node.child_by_field_name("name")
        name = src[name_node.start_byte : name_node.end_byte].decode() if name_node else ""
        doc = "\n".join(_comment_text(src[c.start_byte : c.end_byte].decode()) for c in reversed(comments))
        for comment in comments:
            removed += range(comment.start_point[0] + 1, last_row(comment) + 2)
        found.append((first_sentence(doc, name), name, anchor.start_point[0] + 1, node.end_point[0] + 1))
    return removed, found


def build(name: str, mirror: Path, work: Path, sources: dict[str, tuple[str, str, list[str], str]]) -> int:
    folder, language, roots, suffix = sources[name]
    gitdir = mirror / folder / "repo"
    dest = work / "trees" / name
    if dest.exists():
        subprocess.run(["rm", "-rf", str(dest)], check=True)
    dest.mkdir(parents=True)
    files = subprocess.run(
        ["git", "--git-dir", str(gitdir), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True
    ).stdout.split("\n")
    queries = []
    for path in sorted(files):
        if not path.endswith(suffix) or not any(path.startswith(r) for r in roots):
            continue
        if re.search(r"(^|/)(tests?|testing|examples?)/|_test\.go$|Test\w*\.java$|(^|/)test_", path):
            continue
        text = subprocess.run(
            ["git", "--git-dir", str(gitdir), "show", f"HEAD:{path}"], capture_output=True, text=True
        ).stdout
        try:
            removed, found = python_file(text) if language == "python" else tree_sitter_file(text, language)
        except SyntaxError:
            continue
        gone = set(removed)
        kept = (
            python_rewrite(text, removed)
            if language == "python"
            else [line for number, line in enumerate(text.split("\n"), start=1) if number not in gone]
        )
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_text("\n".join(kept))
        ordered = sorted(gone)

        def shifted(line: int, ordered: list[int] = ordered) -> int:
            import bisect

            return line - bisect.bisect_left(ordered, line)

        for query, _, start, end in found:
            if usable(query) and end - start >= 1:
                queries.append(
                    {
                        "query": query,
                        "relevant": [{"path": path, "start_line": shifted(start), "end_line": shifted(end)}],
                        "category": "function",
                    }
                )
    seen: dict[str, int] = {}
    for q in queries:
        seen[q["query"]] = seen.get(q["query"], 0) + 1
    unique = [q for q in queries if seen[q["query"]] == 1]  # an ambiguous docstring has no single answer
    step = max(1, len(unique) / PER_REPO)
    chosen = [unique[int(i * step)] for i in range(min(PER_REPO, len(unique)))]
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=b@example.com", "commit", "-qm", "stripped"],
        cwd=dest,
        check=True,
    )
    (work / "annotations").mkdir(parents=True, exist_ok=True)
    (work / "annotations" / f"{name}.json").write_text(json.dumps(chosen, indent=1))
    return len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/function-set"))
    parser.add_argument(
        "--sources", choices=["gate", "semble-python"], default="gate", help="semble-python: a diagnostic, see above"
    )
    args = parser.parse_args()
    sources = SOURCES if args.sources == "gate" else SEMBLE_PYTHON
    total = 0
    for name in sources:
        count = build(name, args.mirror, args.work, sources)
        total += count
        print(f"{name}: {count} queries", flush=True)
    print(f"total: {total} queries in {len(sources)} repositories")


if __name__ == "__main__":
    main()
