"""Pairs in the shape knowledge searches: the product's own chunker cuts a source file into entities, and a documented
function, method or class gives (its doc comment's first paragraph, the chunk's embedded text with every doc
comment taken out); a Markdown section gives (its heading, its embedded text without the heading). Positives thus
carry the header knowledge embeds (`path (language) kind name in Parent`), read as far as knowledge reads them.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePosixPath

from knowledge.chunking.code import EMBED_HEAD_TOKENS, chunk_code
from knowledge.chunking.languages import LANGUAGES
from knowledge.chunking.markdown import chunk_markdown
from knowledge.records import SourceFile

MIN_DOC_WORDS, MAX_DOC_WORDS = 4, 64
MIN_PROSE_WORDS, MAX_PROSE_WORDS = 20, 200
CHUNK_TOKENS = 512
DOCUMENTED_KINDS = {"function", "method", "class", "interface", "struct", "trait", "enum", "module", "impl", "type"}
SKIPPED_PARTS = {"test", "tests", "testing", "testdata", "__tests__", "spec", "vendor", "third_party", "benchmarks"}
_COMMENT = re.compile(r"^\s*(///?|//!|/\*\*?|\*/?|#(?![\[!])|--)")
_ATTRIBUTE = re.compile(r"^\s*(@\w|#\[|\[[A-Z])")
_TAG = re.compile(r"(^|\s)@\w+.*$")
_INLINE_TAG = re.compile(r"\{@\w+\s+([^}]*)\}")
_MARKUP = re.compile(r"<[^>]+>|`+|\*\*|\[([^\]]*)\]\([^)]*\)")


def wanted(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1].lower()
    if any(part.lower() in SKIPPED_PARTS for part in parts[:-1]) or name.startswith("test_"):
        return False
    return not re.search(r"(_test|\.test|\.spec|_spec|Test|Tests)\.\w+$", parts[-1])


def code_suffix(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() in LANGUAGES


def clean_doc(lines: Iterable[str]) -> str:
    """A doc comment's first paragraph as plain words: markers, tags, markup and links gone."""
    text: list[str] = []
    for raw in lines:
        line = _COMMENT.sub("", raw).strip().rstrip("*/").strip()
        if not line:
            if text:
                break
            continue
        if line.startswith(("@", ":param", ":return", ":raises", "Args:", "Returns:", "Parameters", "# ")):
            break
        text.append(line)
    joined = _TAG.sub("", " ".join(text))
    joined = _MARKUP.sub(lambda m: m.group(1) or "", _INLINE_TAG.sub(r"\1", joined))
    words = joined.split()
    return " ".join(words[:MAX_DOC_WORDS]) if len(words) >= MIN_DOC_WORDS else ""


def later_paragraphs(lines: list[str]) -> str:
    """A doc comment's text after its first paragraph, up to its first tag or parameter section, as plain words."""
    words: list[str] = []
    started = seen_blank = False
    for raw in lines:
        line = _COMMENT.sub("", raw).strip().rstrip("*/").strip()
        if not line:
            seen_blank = started
            continue
        started = True
        if line.startswith(("@", ":param", ":return", ":raises", "Args:", "Returns:", "Parameters", "Examples", ">>>")):
            break
        if seen_blank:
            words += line.split()
    text = _MARKUP.sub(lambda m: m.group(1) or "", _INLINE_TAG.sub(r"\1", " ".join(words)))
    return " ".join(text.split()[:MAX_PROSE_WORDS])


def _comment_above(lines: list[str], start: int) -> tuple[int, list[str]]:
    """The comment block right above line index `start` (attributes between them skipped): (first index, lines)."""
    n = start - 1
    while n >= 0 and _ATTRIBUTE.match(lines[n]):
        n -= 1
    block: list[str] = []
    while n >= 0 and _COMMENT.match(lines[n]) and lines[n].strip():
        block.insert(0, lines[n])
        n -= 1
    return n + 1, block


def _python_docstrings(text: str) -> dict[int, tuple[str, range]]:
    """Per definition line (1-based): its docstring and the lines it spans."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[int, tuple[str, range]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            literal = first.value if isinstance(first, ast.Expr) else None
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str):
                out[node.lineno] = (literal.value, range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return out


def code_pairs(path: str, text: str, source: str, count: Callable[[str], int]) -> Iterator[dict[str, str]]:
    lines = text.split("\n")
    parsed = chunk_code(SourceFile(path, "code", text, hashlib.sha256(text.encode()).hexdigest()), CHUNK_TOKENS, count)
    python = PurePosixPath(path).suffix == ".py"
    docstrings = _python_docstrings(text) if python else {}
    for chunk in parsed.chunks:
        if chunk.symbol_kind not in DOCUMENTED_KINDS or "~" in chunk.id:
            continue
        first = chunk.line_start - 1
        drop: set[int] = set()
        if python:
            found = next((docstrings[n] for n in range(chunk.line_start, chunk.line_end + 1) if n in docstrings), None)
            if found is None:
                continue
            doc_lines = found[0].split("\n")
            query = clean_doc(doc_lines)
            drop = {n - 1 for n in found[1]}
        else:
            top, block = _comment_above(lines, first)
            inside = first
            while inside <= chunk.line_end - 1 and _COMMENT.match(lines[inside]) and lines[inside].strip():
                inside += 1  # a chunk that starts with its own doc comment
            if inside > first:
                block, top = lines[first:inside], first
            doc_lines = block
            query = clean_doc(block)
            drop = set(range(top, top + len(block)))
        if not query:
            continue
        header = chunk.embed_text.split("\n", 1)[0] + "\n"
        body = [lines[n] for n in range(first, chunk.line_end) if n not in drop and not _COMMENT.match(lines[n])]
        positive = header + _head("\n".join(body), count)
        if len(body) > 1:
            yield {"query": query, "positive": positive, "kind": "doc-comment", "source": source, "path": path}
        rest = later_paragraphs(doc_lines)
        if len(rest.split()) >= MIN_PROSE_WORDS:  # prose to prose: the summary asks for the explanation under it
            yield {"query": query, "positive": rest, "kind": "doc-prose", "source": source, "path": path}


def doc_pairs(path: str, text: str, source: str, count: Callable[[str], int]) -> Iterator[dict[str, str]]:
    source_file = SourceFile(path, "doc", text, hashlib.sha256(text.encode()).hexdigest())
    parsed = chunk_markdown(source_file, CHUNK_TOKENS, count)
    for chunk in parsed.chunks:
        heading = chunk.section.split(" > ")[-1] if chunk.section else ""
        words = re.sub(r"[`*_#]", "", heading).split()
        if len(words) < 2 or "~" in chunk.id:
            continue
        body = "\n".join(line for line in chunk.content.split("\n") if heading not in line)
        if len(body.split()) < 20:
            continue
        header = chunk.embed_text[: len(chunk.embed_text) - len(chunk.content)].replace(heading, "")
        yield {"query": " ".join(words), "positive": header + _head(body, count), "kind": "heading",
               "source": source, "path": path}  # fmt: skip


def _head(text: str, count: Callable[[str], int]) -> str:
    """About the first EMBED_HEAD_TOKENS tokens, as knowledge reads a code chunk."""
    kept: list[str] = []
    used = 0
    for line in text.split("\n"):
        used += count(line) + 1
        if used > EMBED_HEAD_TOKENS and kept:
            break
        kept.append(line)
    return "\n".join(kept)


def file_pairs(path: str, text: str, source: str, count: Callable[[str], int]) -> Iterator[dict[str, str]]:
    if not wanted(path):
        return
    if path.endswith(".md"):
        yield from doc_pairs(path, text, source, count)
    elif code_suffix(path):
        yield from code_pairs(path, text, source, count)
