"""Pairs in the shape `knowledge locate` asks: a commit's message (what a change was for, in a person's words) and the
code that commit changed (the function, method or class with the most changed lines, as knowledge embeds it), mined
from the history of the repositories training/manifest.json lists under `commit_sources` (none of them in
../shared/do-not-train.txt, none a repository of swe-dev: its fixes would be in the history).

    python training/commit_pairs.py            # writes ~/.cache/knowledge/training/commit-pairs.jsonl
    python training/commit_pairs.py --update-manifest

One pair a commit: a message is one question, and two of its answers in one batch would be each other's negatives.
Merges, releases, bumps, reverts, formatting sweeps and commits of more than MAX_FILES source files are passed over.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from chunk_pairs import CHUNK_TOKENS, _head, wanted  # noqa: E402

from knowledge.chunking.code import chunk_code  # noqa: E402
from knowledge.records import SourceFile  # noqa: E402

MANIFEST = HERE / "manifest.json"
MIRROR = HERE.parent.parent / ".mirror"
OUT = Path.home() / ".cache" / "knowledge" / "training" / "commit-pairs.jsonl"
MAX_FILES = 4  # a commit of more source files is a sweep: its message names none of them in particular
MIN_WORDS, MAX_CHARS = 5, 1500  # a message of fewer words says too little; locate reads an issue's first 1,500
ENTITY_KINDS = {"function", "method", "class"}
_PASSED_OVER = re.compile(
    r"^(merge|bump|release|revert|prepare|back to dev|update (the )?(changelog|news|version)|version|pre-commit|"
    r"\[pre-commit|apply .*(black|ruff|isort|pyupgrade)|(run|format with|reformat) |lint|typo|fix typo|style)",
    re.IGNORECASE,
)
_TRAILER = re.compile(r"^(signed-off-by|co-authored-by|reviewed-by|acked-by|cc|closes|fixes|see|ref|refs):", re.I)
_PR_NUMBER = re.compile(r"\s*\((gh-)?#\d+\)|\s*\[(skip ci|ci skip)\]", re.IGNORECASE)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def message_of(subject: str, body: str) -> str:
    """The message as a question: the subject, then the body's prose, trailers and PR numbers gone; "" if passed."""
    subject = _PR_NUMBER.sub("", subject).strip()
    if not subject or _PASSED_OVER.match(subject):
        return ""
    lines = [line for line in body.split("\n") if not _TRAILER.match(line.strip())]
    text = "\n".join([subject, *lines]).strip()
    text = _PR_NUMBER.sub("", text)[:MAX_CHARS]
    return text if len(text.split()) >= MIN_WORDS else ""


def commits(gitdir: Path, commit: str, limit: int) -> Iterator[tuple[str, str, dict[str, set[int]]]]:
    """(sha, message, {path: the new side's changed lines}) for the newest `limit` commits (no merges) touching Python
    source, one `git log -p` stream."""
    shape = "--format=%x1e%H%x00%s%x00%b%x00"
    cmd = ["git", "--git-dir", str(gitdir), "log", "--no-merges", "-U0", "--no-renames", shape, f"-n{limit}", commit,
           "--", "*.py"]  # fmt: skip
    stream = subprocess.run(cmd, capture_output=True, check=True).stdout.decode("utf-8", "replace")
    for record in stream.split("\x1e")[1:]:
        sha, subject, body, patch = ([*record.split("\x00", 3), "", "", ""])[:4]
        changed: dict[str, set[int]] = {}
        path = ""
        for line in patch.split("\n"):
            if line.startswith("+++ "):
                path = line[6:] if line.startswith("+++ b/") else ""
                if path and (not path.endswith(".py") or not wanted(path)):
                    path = ""
            elif path and (hunk := _HUNK.match(line)):
                start, size = int(hunk.group(1)), int(hunk.group(2) or 1)
                changed.setdefault(path, set()).update(range(start, start + max(size, 1)))
        yield sha, message_of(subject, body), changed


def changed_entity(path: str, text: str, lines: set[int], count: Any) -> str:  # noqa: ANN401
    """The embedded text of the function, method or class with the most changed lines; "" when none has any."""
    source = SourceFile(path, "code", text, hashlib.sha256(text.encode()).hexdigest())
    best, most = None, 0
    for chunk in chunk_code(source, CHUNK_TOKENS, count).chunks:
        if chunk.symbol_kind not in ENTITY_KINDS:
            continue
        hits = sum(1 for n in range(chunk.line_start, chunk.line_end + 1) if n in lines)
        if hits > most:
            best, most = chunk, hits
    return _head(best.embed_text, count) if best is not None else ""


def mined(source: dict[str, Any], mirror: Path, count: Any) -> list[dict[str, str]]:  # noqa: ANN401
    gitdir = mirror / source["repo"].replace("/", "+") / "repo"
    if not gitdir.is_dir():
        print(f"{source['repo']}: no mirror at {gitdir} (fetch it first); skipped", file=sys.stderr)
        return []
    reader = subprocess.Popen(
        ["git", "--git-dir", str(gitdir), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert reader.stdin is not None
    assert reader.stdout is not None
    pairs: list[dict[str, str]] = []
    for sha, message, changed in commits(gitdir, source["commit"], source["max_commits"]):
        if not message or not changed or len(changed) > MAX_FILES:
            continue
        best = ""
        for path, lines in sorted(changed.items(), key=lambda item: -len(item[1])):
            reader.stdin.write(f"{sha}:{path}\n".encode())
            reader.stdin.flush()
            header = reader.stdout.readline().split()
            if len(header) < 3 or header[1] != b"blob":
                continue
            data = reader.stdout.read(int(header[2]) + 1)[:-1]
            best = changed_entity(path, data.decode("utf-8", "replace"), lines, count)
            if best:
                pairs.append({"query": message, "positive": best, "kind": "commit", "source": source["repo"],
                              "path": path, "commit": sha})  # fmt: skip
                break
    reader.stdin.close()
    reader.wait()
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--update-manifest", action="store_true", help="record each source's pair count")
    args = parser.parse_args()
    manifest = json.loads(args.manifest.read_text(encoding="utf-8"))

    def count(text: str) -> int:  # about 4 characters a token, as training/mine.py counts
        return len(text) // 4 + 1

    everything: list[dict[str, str]] = []
    for source in manifest["commit_sources"]:
        pairs = mined(source, args.mirror, count)
        print(f"{source['repo']}: {len(pairs)} pairs", file=sys.stderr, flush=True)
        source["pairs"] = len(pairs)
        everything += pairs
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(pair) + "\n" for pair in everything), encoding="utf-8")
    print(f"wrote {len(everything)} pairs to {args.out}", file=sys.stderr)
    if args.update_manifest:
        args.manifest.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
