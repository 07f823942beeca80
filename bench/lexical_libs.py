"""bm25s next to SQLite FTS5 for the lexical side: build time, one-chunk update, query time, size on disk.

    pip install bm25s && python bench/lexical_libs.py --chunks 100000

bm25s has no incremental update: a changed chunk means rebuilding its index, which is what is timed for it.
Both index the same identifier-aware terms (knowledge.lexical.terms).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load

from knowledge.lexical import terms


def main() -> None:
    import bm25s

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    args = parser.parse_args()
    data = load(SHARED / "scifact")
    texts = [f"{title}\n{text}" for title, text in data.corpus.values()]
    corpus = [terms(texts[n % len(texts)]) for n in range(args.chunks)]
    queries = [terms(q) for q in list(data.queries.values())[:100]]
    started = time.monotonic()
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(corpus, show_progress=False)
    build = time.monotonic() - started
    started = time.monotonic()
    for query in queries:
        retriever.retrieve([query], k=50, show_progress=False)
    query_ms = 1000 * (time.monotonic() - started) / len(queries)
    with tempfile.TemporaryDirectory() as tmp:
        retriever.save(tmp)
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    corpus[7] = terms("a new body for one function")
    started = time.monotonic()
    bm25s.BM25(k1=1.2, b=0.75).index(corpus, show_progress=False)
    update = time.monotonic() - started
    print(
        json.dumps(
            {
                "library": f"bm25s {bm25s.__version__}",
                "chunks": args.chunks,
                "build_seconds": round(build, 1),
                "one_chunk_update_seconds": round(update, 1),
                "query_ms": round(query_ms, 1),
                "size_mb": round(size / 2**20, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
