"""Cost of staying fresh: commit latency with and without the hooks, a 50-commit rebase, and one edit in 1,000 docs.

    python bench/freshness.py --model all-MiniLM-L6-v2 > bench/results/freshness.json

Docs are real SciFact abstracts written as Markdown (title, description, three sections) into temp git repos.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load

from knowledge import hooks
from knowledge.config import load_settings
from knowledge.fs import is_locked
from knowledge.kb import KnowledgeBase
from knowledge.store import lock_path


def git(root: Path, *args: str, hooks_off: bool = False) -> None:
    prefix = ["-c", "core.hooksPath=/nonexistent"] if hooks_off else []
    subprocess.run(["git", *prefix, *args], cwd=root, check=True, capture_output=True)


def markdown(title: str, text: str) -> str:
    sentences = [s.strip() for s in text.split(". ") if s.strip()]
    third = max(1, len(sentences) // 3)
    parts = [". ".join(sentences[i : i + third]) for i in range(0, len(sentences), third)][:3]
    sections = "\n\n".join(f"## Part {n + 1}\n\n{part}" for n, part in enumerate(parts))
    return f"---\ndescription: {json.dumps(title)}\n---\n# {title}\n\n{sections}\n"


def make_repo(root: Path, docs: list[tuple[str, str]]) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for n, (title, text) in enumerate(docs):
        path = root / "docs" / f"doc{n:04d}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(markdown(title, text), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "docs")


def wait_idle(root: Path, runs: int, timeout: float = 120) -> None:
    log = root / hooks.LOG
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) >= runs and not is_locked(lock_path(root)):
            return
        time.sleep(0.05)
    raise RuntimeError(f"hook runs did not finish in {root}")


def commit_latency(root: Path, samples: int, hooked: bool) -> list[float]:
    times = []
    target = root / "docs" / "doc0000.md"
    for n in range(samples):
        target.write_text(target.read_text() + f"\nEdit {n} {'hooked' if hooked else 'plain'}.\n")
        git(root, "add", "-A")
        started = time.perf_counter()
        git(root, "commit", "-q", "-m", f"edit {n}", hooks_off=not hooked)
        times.append(time.perf_counter() - started)
        if hooked:
            wait_idle(root, n + 1)
    return times


def rebase_runs(root: Path, commits: int) -> dict:
    git(root, "checkout", "-q", "-b", "topic", hooks_off=True)
    for n in range(commits):
        (root / "docs" / f"topic{n:03d}.md").write_text(markdown(f"Topic {n}", f"Text of topic {n}. More."))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"topic {n}", hooks_off=True)
    git(root, "checkout", "-q", "main", hooks_off=True)
    (root / "docs" / "main-moved.md").write_text(markdown("Main moved", "Main gets a new doc. Then more."))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "main moves", hooks_off=True)
    git(root, "checkout", "-q", "topic", hooks_off=True)
    log = root / hooks.LOG
    before = len(log.read_text().splitlines()) if log.exists() else 0
    started = time.perf_counter()
    subprocess.run(["git", "rebase", "-q", "main"], cwd=root, check=True, capture_output=True)
    rebase_seconds = time.perf_counter() - started
    time.sleep(2)
    wait_idle(root, before + 1)
    time.sleep(2)
    lines = log.read_text().splitlines()[before:]
    return {
        "commits_replayed": commits,
        "rebase_seconds": round(rebase_seconds, 3),
        "reindex_runs": len(lines),
        "log": lines,
    }


def one_edit_in_many(root: Path, model: str, home: Path) -> dict:
    # An empty vector cache, so the full build and the edit are really embedded; the built model is linked in.
    cold = root.parent / "cold-home"
    cold.mkdir()
    (cold / "models").symlink_to(home / "models")
    home = cold
    settings, _ = load_settings(root, {"model": model, "home": str(home)})
    kb = KnowledgeBase(root, settings)
    started = time.perf_counter()
    full = kb.reindex_all()
    full_seconds = time.perf_counter() - started
    edited = f"docs/doc{full.files_indexed // 2:04d}.md"
    target = root / edited
    text = target.read_text()
    target.write_text(text.replace("## Part 2\n\n", "## Part 2\n\nA sentence added to one section. ", 1))
    git(root, "commit", "-q", "-a", "-m", "one edit", hooks_off=True)
    started = time.perf_counter()
    report = kb.reindex_changes()
    incremental_seconds = time.perf_counter() - started
    changed = [c.embed_text for c in kb_chunks(root) if c.path == edited]
    started = time.perf_counter()
    kb.embedder.embed_documents(changed[:1])
    embed_one = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "knowledge", "-C", str(root), "--model", model, "reindex-from-changes", "-q"],
        check=True,
        env={**os.environ, "KNOWLEDGE_HOME": str(home)},
    )
    cold_noop = time.perf_counter() - started
    return {
        "docs": full.files_indexed,
        "chunks": full.chunks_total,
        "full_reindex_seconds": round(full_seconds, 1),
        "incremental_files": report.files_indexed,
        "incremental_chunks_embedded": report.chunks_embedded,
        "incremental_chunks_reused": report.chunks_reused,
        "incremental_seconds_warm": round(incremental_seconds, 3),
        "embedding_one_chunk_seconds": round(embed_one, 3),
        "cold_cli_noop_seconds": round(cold_noop, 3),
    }


def kb_chunks(root: Path) -> list:
    from knowledge.store.local import LocalStore

    return list(LocalStore.open(root).all_chunks().values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--docs", type=int, default=1000)
    args = parser.parse_args()
    settings, _ = load_settings(Path.cwd(), {})
    os.environ["KNOWLEDGE_MODEL"] = args.model
    corpus = list(load(SHARED / "scifact").corpus.values())
    result: dict = {"model": args.model}
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small"
        make_repo(small, corpus[:50])
        KnowledgeBase(small, load_settings(small, {"model": args.model})[0]).reindex_all()
        plain = commit_latency(small, args.samples, hooked=False)
        hooks.install(small)
        hooked = commit_latency(small, args.samples, hooked=True)
        result["commit_latency"] = {
            "samples": args.samples,
            "median_ms_without_hooks": round(1000 * statistics.median(plain), 1),
            "median_ms_with_hooks": round(1000 * statistics.median(hooked), 1),
            "median_added_ms": round(1000 * (statistics.median(hooked) - statistics.median(plain)), 1),
        }
        result["rebase"] = rebase_runs(small, 50)
        many = Path(tmp) / "many"
        make_repo(many, corpus[100 : 100 + args.docs])
        result["one_edit_in_many"] = one_edit_in_many(many, args.model, settings.home)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
