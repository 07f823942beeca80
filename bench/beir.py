"""BEIR evaluator over ../shared/bench-data, run through knowledge's own embedder, store and search.

Modes:
  model    MTEB's protocol (document = title + " " + text, no chunking): proves conversion, tokenizer and pooling
           against the published figures. Vectors and BM25 go through the local store (LocalStore) and its search.
  product  the whole product path: each document becomes a Markdown file (title in front matter), then
           KnowledgeBase.reindex_all() and KnowledgeBase.search(); a document's rank is its best chunk's.

    python bench/beir.py --dataset scifact --model all-mpnet-base-v2 --mode model
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, BeirSet, load, mteb_text
from metrics import evaluate

from knowledge.config import load_settings
from knowledge.embedding import load_embedder
from knowledge.embedding.cache import EmbeddingCache, embed_with_cache
from knowledge.kb import KnowledgeBase
from knowledge.kind import KindIndex
from knowledge.lexical import terms
from knowledge.ranking import DEFAULT_POLICY, FusionParams
from knowledge.ranking.query import parse
from knowledge.records import Chunk
from knowledge.retrieval import retrieve
from knowledge.store import Change, Manifest, NewChunk
from knowledge.store.local import LocalStore

TOP = 100


def local_store(root: Path, manifest: Manifest) -> LocalStore:
    return LocalStore.create(root, "docs", manifest)


@contextlib.contextmanager
def model_index(
    data: BeirSet, model: str, variant: str, home: Path, make_store: Callable[[Path, Manifest], Any] = local_store
) -> Iterator[tuple]:
    """The corpus embedded MTEB's way, in a real store (vectors and BM25; local unless `make_store` says otherwise)."""
    embedder = load_embedder(model, home, variant)
    ids = list(data.corpus)
    texts = [mteb_text(*data.corpus[i]) for i in ids]
    cache = EmbeddingCache(home / "embeddings" / f"{embedder.fingerprint}.sqlite", embedder.dims)
    started = time.monotonic()
    vectors, embedded = embed_with_cache(texts, embedder.embed_documents, cache, embedder.dims)
    info = {"embedded": embedded, "embed_seconds": round(time.monotonic() - started, 1)}
    chunks = [
        Chunk(
            id=i,
            path=i,
            kind="doc",
            title=data.corpus[i][0],
            description="",
            section="",
            line_start=1,
            line_end=1,
            content=data.corpus[i][1],
            embed_text="",
            content_hash=str(n),
        )
        for n, i in enumerate(ids)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = Manifest(2, "bench", model, variant, embedder.dims, "cos", 0, embedder.fingerprint, -1.0, 1.0, "")
        store = make_store(root, manifest)
        started = time.monotonic()
        store.apply(Change(frozenset(), [NewChunk(c, v) for c, v in zip(chunks, vectors, strict=True)]))
        store.publish()
        store.compact(force=True)
        info["store_seconds"] = round(time.monotonic() - started, 1)
        settings, _ = load_settings(root)
        index = KindIndex(root, settings, "docs", store)
        try:
            yield embedder, index, info
        finally:
            store.close()


def rank(method: str, index: KindIndex, query: str, vector: np.ndarray, params: FusionParams) -> list[str]:
    store = index.store
    if method == "dense":
        keys = [hit.key for hit in store.dense_search(vector, TOP)]
    elif method == "lexical":
        keys = [hit.key for hit in store.lexical_search(terms(query), TOP)]
    else:
        keys = [c.key for c in retrieve(index, parse(query), vector, TOP, replace(DEFAULT_POLICY, fusion=params))]
    chunks = store.chunks(keys[:TOP])
    return [chunks[key].id for key in keys[:TOP]]


def run_model_mode(
    data: BeirSet,
    model: str,
    variant: str,
    home: Path,
    method: str = "dense",
    params: FusionParams = DEFAULT_POLICY.fusion,
    make_store: Callable[[Path, Manifest], Any] = local_store,
) -> tuple[dict[str, list[str]], dict]:
    with model_index(data, model, variant, home, make_store) as (embedder, index, info):
        started = time.monotonic()
        runs = {
            qid: rank(method, index, text, embedder.embed_query(text), params) for qid, text in data.queries.items()
        }
        info["query_ms_mean"] = round(1000 * (time.monotonic() - started) / len(data.queries), 2)
    return runs, info


def run_product_mode(data: BeirSet, model: str, variant: str, home: Path) -> tuple[dict[str, list[str]], dict]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for doc_id, (title, text) in data.corpus.items():
            safe_title = json.dumps(title)  # JSON strings are valid YAML scalars
            (root / f"{doc_id}.md").write_text(f"---\ntitle: {safe_title}\n---\n{text}\n", encoding="utf-8")
        settings, _ = load_settings(root, {"model": model, "model_variant": variant, "home": str(home)})
        kb = KnowledgeBase(root, settings)
        started = time.monotonic()
        report = kb.reindex_all()
        index_seconds = time.monotonic() - started
        runs: dict[str, list[str]] = {}
        started = time.monotonic()
        for qid, text in data.queries.items():
            response = kb.search(text, k=TOP, threshold=-1.0, full_threshold=1.0, budget=50_000, metadata_only=True)
            ranked: list[str] = []
            for hit in response.results:
                doc_id = hit.path[: -len(".md")]
                if doc_id not in ranked:
                    ranked.append(doc_id)
            runs[qid] = ranked
        query_seconds = time.monotonic() - started
    return runs, {
        "chunks": report.chunks_total,
        "embedded": report.chunks_embedded,
        "index_seconds": round(index_seconds, 1),
        "query_ms_mean": round(1000 * query_seconds / len(data.queries), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--split", default="test")
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--variant", default="fp32")
    parser.add_argument("--mode", choices=["model", "product"], default="model")
    parser.add_argument(
        "--method",
        choices=["dense", "lexical", "hybrid"],
        default="dense",
        help="model mode: which retriever ranks the documents",
    )
    parser.add_argument("--home", type=Path, default=None, help="KNOWLEDGE_HOME (models and vector cache)")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON here")
    args = parser.parse_args()
    settings, _ = load_settings(Path.cwd(), {"home": str(args.home) if args.home else None})
    data = load(SHARED / args.dataset, args.split)
    if args.mode == "model":
        runs, info = run_model_mode(data, args.model, args.variant, settings.home, args.method)
    else:
        runs, info = run_product_mode(data, args.model, args.variant, settings.home)
    result = {
        "dataset": args.dataset,
        "split": args.split,
        "model": args.model,
        "variant": args.variant,
        "mode": args.mode,
        "method": args.method if args.mode == "model" else "product",
        "queries": len(data.qrels),
        **{k: round(v, 4) for k, v in evaluate(runs, data.qrels).items()},
        **info,
    }
    print(json.dumps(result))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
