"""Code indexing benchmarks.

    python bench/code_bench.py cosqa --model all-MiniLM-L6-v2          # line numbers in the embedding input or not
    python bench/code_bench.py corpus --model all-MiniLM-L6-v2 --src DIR  # files/s, chunks/s, size, peak memory
    python bench/code_bench.py lexical --chunks 100000                   # lexical index: build, one-chunk update

`cosqa` writes each CoSQA function to its own .py file, indexes them with the product's code path (tree-sitter
chunks, embedding header) and evaluates nDCG@10 on the test split, with and without line numbers in the input.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load
from metrics import evaluate

from knowledge.chunking import code as code_chunking
from knowledge.config import load_settings
from knowledge.kb import KnowledgeBase
from knowledge.lexical import terms
from knowledge.records import Chunk
from knowledge.store import Change, Manifest, NewChunk
from knowledge.store.local import LocalStore


def cosqa(model: str, home: Path, line_numbers: bool) -> dict:
    data = load(SHARED / "cosqa")
    code_chunking.LINE_NUMBERS_IN_EMBEDDING = line_numbers  # the A/B switch
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for doc_id, (_, text) in data.corpus.items():
            (root / f"f{doc_id}.py").write_text(text + "\n", encoding="utf-8")
        settings, _ = load_settings(root, {"model": model, "home": str(home)})
        kb = KnowledgeBase(root, settings)
        started = time.monotonic()
        report = kb.reindex_all()
        seconds = time.monotonic() - started
        runs = {}
        for qid, text in data.queries.items():
            response = kb.search(
                text, k=100, threshold=-1.0, full_threshold=2.0, budget=10**9, metadata_only=True, kind="code"
            )
            ranked: list[str] = []
            for hit in response.results:
                doc_id = hit.path[1:-3]
                if doc_id not in ranked:
                    ranked.append(doc_id)
            runs[qid] = ranked
    return {
        "model": model,
        "line_numbers": line_numbers,
        "chunks": report.chunks_total,
        "index_seconds": round(seconds, 1),
        **{k: round(v, 4) for k, v in evaluate(runs, data.qrels).items()},
    }


def corpus(model: str, home: Path, src: Path, variant: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        import shutil

        shutil.copytree(src, root)
        settings, _ = load_settings(root, {"model": model, "model_variant": variant, "home": str(home / "cold")})
        # A fresh KNOWLEDGE_HOME/embeddings would force embedding everything: that is the point here. The model itself
        # is linked from the warm home so the timing is indexing, not model conversion.
        (home / "cold").mkdir(parents=True, exist_ok=True)
        models = home / "cold" / "models"
        if not models.exists():
            models.symlink_to(home / "models")
        kb = KnowledgeBase(root, settings)
        kb.embedder  # noqa: B018 - load first
        started = time.monotonic()
        report = kb.reindex_all()
        seconds = time.monotonic() - started
        size = sum(p.stat().st_size for p in (root / ".knowledge").glob("*") if p.is_file())
        files = report.files_indexed
    import shutil

    shutil.rmtree(home / "cold" / "embeddings", ignore_errors=True)
    return {
        "model": model,
        "variant": variant,
        "files": files,
        "chunks": report.chunks_total,
        "seconds": round(seconds, 1),
        "files_per_s": round(files / seconds, 1),
        "chunks_per_s": round(report.chunks_total / seconds, 1),
        "index_mb": round(size / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def lexical(chunks: int) -> dict:
    data = load(SHARED / "scifact")
    texts = list(data.corpus.values())
    made = {
        n: Chunk(
            id=f"c{n}",
            path=f"f{n % 5000}.py",
            kind="code",
            title=texts[n % len(texts)][0],
            description="",
            section="",
            line_start=1,
            line_end=2,
            content=texts[n % len(texts)][1],
            embed_text="",
            content_hash=f"h{n}",
        )
        for n in range(chunks)
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = Manifest(2, "bench", "none", "fp32", 8, "cos", 0, "bench", 0.0, 1.0, "")
        store = LocalStore.create(root, "code", manifest)
        started = time.monotonic()
        store.apply(Change(frozenset(), [NewChunk(chunk) for chunk in made.values()]))
        store.publish()
        build = time.monotonic() - started
        changed = replace(made[7], path="one.py", content="a new body for one function", content_hash="changed")
        started = time.monotonic()
        store.apply(Change(frozenset({"one.py"}), [NewChunk(changed)]))
        update = time.monotonic() - started
        written = 1
        started = time.monotonic()
        for query in list(data.queries.values())[:100]:
            store.lexical_search(terms(query), 50)
        query_ms = 1000 * (time.monotonic() - started) / 100
        size = (root / ".knowledge" / "code.sqlite").stat().st_size
        store.close()
    return {
        "chunks": chunks,
        "build_seconds": round(build, 1),
        "one_chunk_update_seconds": round(update, 3),
        "rows_rewritten": written,
        "query_ms": round(query_ms, 1),
        "size_mb": round(size / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["cosqa", "corpus", "lexical"])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--variant", default="fp32")
    parser.add_argument("--src", type=Path)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--no-line-numbers", action="store_true")
    args = parser.parse_args()
    settings, _ = load_settings(Path.cwd(), {})
    if args.what == "cosqa":
        result = cosqa(args.model, settings.home, not args.no_line_numbers)
    elif args.what == "corpus":
        result = corpus(args.model, settings.home, args.src, args.variant)
    else:
        result = lexical(args.chunks)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
