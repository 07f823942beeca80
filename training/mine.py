"""Mine (question, code) training pairs with provenance from the sources `training/manifest.json` names.

    python training/mine.py                       # writes ~/.cache/knowledge/training/pairs.jsonl
    python training/mine.py --update-manifest     # and records each source's pair count in the manifest

The CodeSearchNet way: a function's doc comment (its first paragraph) asks for the function with every doc comment
stripped; a name split into words (`read_config_file` -> "read config file") asks for the same body. Sources are the
standard libraries on these machines (CPython's Lib/, the JDK's src.zip), never anything ../shared/do-not-train.txt
lists (tests/test_training_manifest.py checks the manifest against it). The data stays outside the repository.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
DEFAULT_OUT = Path.home() / ".cache" / "knowledge" / "training" / "pairs.jsonl"
MIN_DOC_WORDS, MAX_BODY_CHARS = 4, 4000
_WORD_BREAKS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|_+")
_JAVADOC_METHOD = re.compile(
    r"/\*\*(?P<doc>(?:(?!\*/).)*?)\*/\s*(?:@\w+(?:\([^)]*\))?\s*)*"
    r"(?P<head>(?:public|protected|private|static|final|synchronized|abstract|native|default|\s)+"
    r"[\w<>\[\], ?.]+\s+(?P<name>\w+)\s*\([^)]*\)[^{;]*)\{",
    re.S,
)


def words_of(name: str) -> str:
    return " ".join(part.lower() for part in _WORD_BREAKS.split(name) if part)


def first_paragraph(doc: str) -> str:
    text = doc.strip().split("\n\n", 1)[0]
    return " ".join(text.split())


def python_pairs(root: Path, source: str) -> Iterator[dict[str, str]]:
    """Functions and methods with docstrings in the .py files under `root` (tests and site-packages left out)."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("site-packages/", "test/", "idlelib/idle_test/")) or "/tests/" in rel or "/test/" in rel:
            continue
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = text.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("__"):
                continue
            doc = ast.get_docstring(node)
            body = _without_docstrings(node, lines)
            if body is None or len(body) > MAX_BODY_CHARS:
                continue
            if doc and len(first_paragraph(doc).split()) >= MIN_DOC_WORDS:
                yield {
                    "query": first_paragraph(doc),
                    "positive": body,
                    "kind": "docstring",
                    "source": source,
                    "path": rel,
                }
            if len(words_of(node.name).split()) >= 2:
                yield {"query": words_of(node.name), "positive": body, "kind": "name", "source": source, "path": rel}


def _without_docstrings(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> str | None:
    start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    end = node.end_lineno or node.lineno
    drop: set[int] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and inner.body:
            first = inner.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                drop.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    kept = [lines[n - 1] for n in range(start, end + 1) if n not in drop]
    return "\n".join(kept) if len(kept) > 1 else None


def java_pairs(archive: Path, source: str) -> Iterator[dict[str, str]]:
    """Javadoc'ed methods of the java.* and javax.* sources in a JDK's src.zip (the Javadoc's first sentence asks)."""
    with zipfile.ZipFile(archive) as zipped:
        for name in sorted(zipped.namelist()):
            if not name.endswith(".java") or not re.match(r"(java\.base|java\.\w+)/(java|javax)/", name):
                continue
            text = io.TextIOWrapper(zipped.open(name), encoding="utf-8", errors="replace").read()
            for match in _JAVADOC_METHOD.finditer(text):
                body = _braced(text, match.end() - 1)
                if body is None or len(body) > MAX_BODY_CHARS:
                    continue
                doc = " ".join(line.strip().lstrip("*").strip() for line in match["doc"].splitlines())
                sentence = re.split(r"(?<=\.)\s|@\w", doc, maxsplit=1)[0]
                sentence = re.sub(r"\{@\w+\s+([^}]*)\}", r"\1", re.sub(r"<[^>]+>", "", sentence)).strip()
                positive = match["head"].strip() + " " + body
                if len(sentence.split()) >= MIN_DOC_WORDS:
                    yield {"query": sentence, "positive": positive, "kind": "docstring", "source": source, "path": name}
                if len(words_of(match["name"]).split()) >= 2:
                    yield {"query": words_of(match["name"]), "positive": positive, "kind": "name", "source": source,
                           "path": name}  # fmt: skip


def _braced(text: str, opening: int) -> str | None:
    depth = 0
    for position in range(opening, min(len(text), opening + MAX_BODY_CHARS * 2)):
        if text[position] == "{":
            depth += 1
        elif text[position] == "}":
            depth -= 1
            if depth == 0:
                return text[opening : position + 1]
    return None


def located(source: dict[str, object]) -> Path | None:
    """Where a source is on this machine: the running CPython's Lib/, or the first JDK src.zip found."""
    if source["kind"] == "cpython-stdlib":
        return Path(sysconfig.get_paths()["stdlib"])
    for candidate in source.get("candidates", []):  # type: ignore[union-attr]
        if Path(str(candidate)).is_file():
            return Path(str(candidate))
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--update-manifest", action="store_true")
    args = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for source in manifest["sources"]:
            where = located(source)
            if where is None:
                print(f"{source['name']}: not on this machine, skipped", file=sys.stderr)
                continue
            mine = python_pairs if source["kind"] == "cpython-stdlib" else java_pairs
            counts: dict[str, int] = {}
            for pair in mine(where, source["name"]):
                out.write(json.dumps(pair, ensure_ascii=False) + "\n")
                counts[pair["kind"]] = counts.get(pair["kind"], 0) + 1
            source["pairs"] = counts
            print(f"{source['name']} ({where}): {counts}", file=sys.stderr)
    if args.update_manifest:
        MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
