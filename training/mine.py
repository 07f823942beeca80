"""Mine (question, code) training pairs with provenance from the sources `training/manifest.json` names.

    python training/mine.py                       # writes ~/.cache/knowledge/training/pairs.jsonl
    python training/mine.py --update-manifest     # and records each source's pair count in the manifest

The CodeSearchNet way, in the shape knowledge searches (chunk_pairs.py): a documented function, method or class,
cut by knowledge's own chunker, is asked for by its doc comment's first paragraph and answered by its embedded text
with every doc comment taken out; a Markdown section by its heading. Sources: the standard libraries on these
machines (CPython's Lib/, the JDK's src.zip), installed packages of the training extra at the versions named, and
repositories at a pinned commit from `fetch` mirrors (--mirror); never anything ../shared/do-not-train.txt lists
(tests/test_training_manifest.py checks the manifest against it). The data stays outside the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
DEFAULT_OUT = Path.home() / ".cache" / "knowledge" / "training" / "pairs.jsonl"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from chunk_pairs import code_suffix, file_pairs  # noqa: E402


def files_of_cpython(root: Path) -> Iterator[tuple[str, str]]:
    """The standard library's .py files (its own test suites and site-packages left out)."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("site-packages/", "test/", "idlelib/idle_test/")):
            continue
        with contextlib.suppress(UnicodeDecodeError, OSError):
            yield rel, path.read_text(encoding="utf-8")


def files_of_zip(archive: Path, pattern: str) -> Iterator[tuple[str, str]]:
    """The files of a source archive whose names match `pattern` (the JDK: java.* and javax.* packages)."""
    with zipfile.ZipFile(archive) as zipped:
        for name in sorted(zipped.namelist()):
            if re.match(pattern, name):
                yield name, zipped.read(name).decode("utf-8", errors="replace")


def files_of_git(gitdir: Path, commit: str, roots: list[str]) -> Iterator[tuple[str, str]]:
    """The files of a repository at a commit (from a `fetch` mirror), under `roots` when given."""
    listing = subprocess.run(
        ["git", "--git-dir", str(gitdir), "ls-tree", "-r", "-z", "--name-only", commit, "--", *roots],
        check=True, capture_output=True,
    ).stdout.decode("utf-8", errors="replace")  # fmt: skip
    names = [name for name in listing.split("\0") if name and (name.endswith(".md") or code_suffix(name))]
    with subprocess.Popen(
        ["git", "--git-dir", str(gitdir), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as batch:
        assert batch.stdin is not None
        assert batch.stdout is not None
        for name in names:
            batch.stdin.write(f"{commit}:{name}\n".encode())
            batch.stdin.flush()
            header = batch.stdout.readline().split()
            if len(header) < 3:
                continue
            data = batch.stdout.read(int(header[2]) + 1)[:-1]
            if len(data) < 400_000:
                yield name, data.decode("utf-8", errors="replace")
        batch.stdin.close()


def files_of_package(source: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """An installed package's .py files, at the version the manifest names (else nothing)."""
    if importlib.metadata.version(source["package"]) != source["version"]:
        raise SystemExit(f"{source['name']}: installed {importlib.metadata.version(source['package'])}, manifest "
                         f"says {source['version']}")  # fmt: skip
    spec = importlib.util.find_spec(source["import"])
    assert spec is not None
    assert spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    for path in sorted(root.rglob("*.py")):
        with contextlib.suppress(UnicodeDecodeError, OSError):
            yield f"{source['import']}/{path.relative_to(root).as_posix()}", path.read_text(encoding="utf-8")


def files_of(source: dict[str, Any], mirror: Path) -> Iterator[tuple[str, str]] | None:
    kind = source["kind"]
    if kind == "cpython-stdlib":
        return files_of_cpython(Path(sysconfig.get_paths()["stdlib"]))
    if kind == "jdk-src-zip":
        found = next((Path(c) for c in source["candidates"] if Path(c).is_file()), None)
        return None if found is None else files_of_zip(found, r"(java\.base|java\.\w+)/(java|javax)/.*\.java$")
    if kind == "git":
        gitdir = mirror / source["repo"].replace("/", "+") / "repo"
        return files_of_git(gitdir, source["commit"], source.get("roots", [])) if gitdir.is_dir() else None
    if kind == "python-package":
        return files_of_package(source) if importlib.util.find_spec(source["import"]) else None
    raise SystemExit(f"{source['name']}: unknown kind {kind}")


def mined(source: dict[str, Any], files: Iterator[tuple[str, str]], count: Any) -> list[dict[str, str]]:  # noqa: ANN401
    """The source's pairs; at most `max_pairs`, taken by a hash of the query (the same ones on every run)."""
    pairs = [pair for path, text in files for pair in file_pairs(path, text, source["name"], count)]
    unique = {(pair["query"], pair["positive"]): pair for pair in pairs}
    ordered = sorted(unique.values(), key=lambda pair: hashlib.sha256(pair["query"].encode()).hexdigest())
    return ordered[: source.get("max_pairs", len(ordered))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="where `fetch` put repositories")
    parser.add_argument("--update-manifest", action="store_true")
    args = parser.parse_args()

    def count(text: str) -> int:  # about 4 characters a token: the tokenizer itself took 75% of the mining time
        return (len(text) + 3) // 4

    manifest = json.loads(MANIFEST.read_text())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for source in manifest["sources"]:
            files = files_of(source, args.mirror)
            if files is None:
                print(f"{source['name']}: not on this machine, skipped", file=sys.stderr)
                continue
            counts: dict[str, int] = {}
            for pair in mined(source, files, count):
                out.write(json.dumps(pair, ensure_ascii=False) + "\n")
                counts[pair["kind"]] = counts.get(pair["kind"], 0) + 1
            source["pairs"] = counts
            print(f"{source['name']}: {counts}", file=sys.stderr, flush=True)
    if args.update_manifest:
        MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
