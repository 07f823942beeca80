"""Warm query latency (in-process and over HTTP) at 10k and 100k chunks, cold CLI, and 8 concurrent clients.

    python bench/server.py --model all-mpnet-base-v2 > bench/results/server.json

The indexes hold real SciFact abstracts and their real embeddings (from the embedding cache); to reach 10k and
100k chunks, abstracts repeat with a small random perturbation of their vectors (renormalised). This measures
latency and throughput, not quality.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load, mteb_text

from knowledge.chunking import CHUNKER_VERSION
from knowledge.config import load_settings
from knowledge.embedding import load_embedder
from knowledge.embedding.cache import EmbeddingCache, embed_with_cache
from knowledge.kb import KnowledgeBase
from knowledge.records import Chunk
from knowledge.server.backend import LocalBackend
from knowledge.server.http import KnowledgeHTTPServer
from knowledge.store import Change, Manifest, NewChunk, index_fingerprint
from knowledge.store.local import LocalStore

TOKEN = "bench-token-0123456789abcdef"


def build_index(root: Path, size: int, model: str, home: Path) -> list[str]:
    data = load(SHARED / "scifact")
    embedder = load_embedder(model, home)
    ids = list(data.corpus)
    texts = [mteb_text(*data.corpus[i]) for i in ids]
    cache = EmbeddingCache(home / "embeddings" / f"{embedder.fingerprint}.sqlite", embedder.dims)
    base, _ = embed_with_cache(texts, embedder.embed_documents, cache, embedder.dims)
    rng = np.random.default_rng(0)
    chunks, vectors = [], []
    for n in range(size):
        doc = n % len(ids)
        vector = base[doc] + (rng.normal(0, 0.01, embedder.dims) if n >= len(ids) else 0)
        vectors.append(vector / np.linalg.norm(vector))
        title, text = data.corpus[ids[doc]]
        chunks.append(
            Chunk(
                id=f"docs/{n}.md#top",
                path=f"docs/{n}.md",
                kind="doc",
                title=title,
                description="",
                section="",
                line_start=1,
                line_end=3,
                content=text,
                embed_text="",
                content_hash="",
            )
        )
    manifest = Manifest(
        2,
        "bench",
        model,
        "fp32",
        embedder.dims,
        "cos",
        1,
        index_fingerprint(embedder.fingerprint, CHUNKER_VERSION),
        0.0,
        0.5,
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    store = LocalStore.create(root, "docs", manifest)
    store.apply(
        Change(frozenset(), [NewChunk(c, v) for c, v in zip(chunks, np.asarray(vectors, np.float32), strict=True)])
    )
    store.publish()
    store.compact(force=True)
    store.close()
    return list(data.queries.values())


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
        "n": len(ordered),
    }


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url + "/v1/search", data=json.dumps(body).encode(), method="POST", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def measure(size: int, model: str, home: Path, queries_n: int, concurrent_seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        queries = build_index(root, size, model, home)[:queries_n]
        build_seconds = time.perf_counter() - started
        settings, _ = load_settings(root, {"model": model, "home": str(home)})
        kb = KnowledgeBase(root, settings)
        kb.search(queries[0])  # warm: model, tokenizer, index
        in_process = []
        for query in queries:
            t = time.perf_counter()
            kb.search(query)
            in_process.append(time.perf_counter() - t)
        server = KnowledgeHTTPServer(("127.0.0.1", 0), LocalBackend(kb), TOKEN)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        over_http = []
        for query in queries:
            t = time.perf_counter()
            post(url, {"query": query})
            over_http.append(time.perf_counter() - t)
        counts, errors = [0] * 8, [0] * 8
        deadline = time.monotonic() + concurrent_seconds

        def client(slot: int) -> None:
            n = slot
            while time.monotonic() < deadline:
                try:
                    post(url, {"query": queries[n % len(queries)]})
                    counts[slot] += 1
                except Exception:  # counted, not raised: the benchmark reports errors
                    errors[slot] += 1
                n += 8

        threads = [threading.Thread(target=client, args=(slot,)) for slot in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        server.shutdown()
        cold = []
        if size <= 10_000:
            for query in queries[:5]:
                t = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "knowledge", "-C", str(root), "--model", model, "search", query, "--json"],
                    check=True,
                    capture_output=True,
                    env={**os.environ, "KNOWLEDGE_HOME": str(home)},
                )
                cold.append(time.perf_counter() - t)
    return {
        "chunks": size,
        "index_build_seconds": round(build_seconds, 1),
        "in_process": percentiles(in_process),
        "http": percentiles(over_http),
        "concurrent_8_clients": {
            "seconds": concurrent_seconds,
            "requests": sum(counts),
            "errors": sum(errors),
            "requests_per_s": round(sum(counts) / concurrent_seconds, 1),
        },
        "cold_cli_median_ms": round(1000 * statistics.median(cold)) if cold else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    settings, _ = load_settings(Path.cwd(), {})
    rows = [measure(int(size), args.model, settings.home, args.queries, args.seconds) for size in args.sizes.split(",")]
    print(json.dumps({"model": args.model, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
