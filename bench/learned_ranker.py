"""A learned ranker for "does X" questions, trained on one half of the function set and scored on the other.

    python bench/gate.py --sides tree --model all-MiniLM-L6-v2 --benches function semble-dev   # the indexes, once
    python bench/learned_ranker.py --work /tmp/gate --out bench/results/learned-ranker-minilm.json

Every "does X" question of the function set and semble-dev goes through `KnowledgeBase.search` on the gate's tree
indexes (threshold 0); the ranked candidates (up to 60) are kept with what the product knows of each: its dense and
lexical votes, whether both lists found it, its cosine, its lexical score over the best, whether it is a function or
method, its length. A pairwise logistic model over those features is fitted on one half of the function set's
repositories (`HALVES`, each with four languages) and the candidates re-ordered by it are scored on the other half
and on semble-dev's "does X" questions, beside the product's own order of the same candidates. Results are grouped
one per entity as `search()` does, and scored with the gate's nDCG@10.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import gate  # noqa: E402

import knowledge.search as search_module  # noqa: E402
from knowledge.kb import KnowledgeBase  # noqa: E402
from knowledge.lexical import STOPWORDS  # noqa: E402
from knowledge.pieces import group_key  # noqa: E402
from knowledge.quiet import QUIET_PATH as _QUIET_PATH  # noqa: E402
from knowledge.ranking.query import WORD as _WORD  # noqa: E402
from knowledge.ranking.query import asks_what_code_does  # noqa: E402
from knowledge.ranking.query import normal as _normal  # noqa: E402

HALVES = {
    "a": ["click", "attrs", "cobra", "javapoet", "log", "underscore"],
    "b": ["more-itertools", "tenacity", "itsdangerous", "uuid", "pflag", "jsoup"],
}
FEATURES = ["dense vote", "lexical vote", "both lists", "cosine", "lexical / best", "callable", "log lines"]
DEPTH = 60


def features(c: dict) -> list[float]:
    dense = 6 / (5 + c["dense_rank"]) if c["dense_rank"] else 0.0
    lexical = 6 / (5 + c["lexical_rank"]) * min(1.0, c["query_words"] / 10) if c["lexical_rank"] else 0.0
    return [
        dense,
        lexical,
        float(dense > 0 and lexical > 0),
        c["cosine"] or 0.0,
        (c["lexical_score"] or 0.0) / c["best_lexical"] if c["best_lexical"] else 0.0,
        float(c["callable"]),
        math.log(c["end"] - c["start"] + 1),
    ]


def dump(work: Path, model: str, home: str) -> list[dict]:
    captured: dict = {}
    original = search_module.rank

    def rank(pooled, sources, query, options, cache):  # type: ignore[no-untyped-def]
        out = original(pooled, sources, query, options, cache)
        captured["rows"] = [(c, cache.get(index, c.key)) for c, index in out]
        return out

    search_module.rank = rank
    corpora = {
        "function": gate.function_corpora(Path("/tmp/function-set")),
        "semble-dev": gate.semble_corpora(Path("/work/.mirror"), work / "corpora"),
    }
    rows = []
    for bench, repos in corpora.items():
        for repo, (_, queries) in repos.items():
            kb = KnowledgeBase.open(work / "tree" / bench / repo, overrides={"model": model, "home": home})
            for q in queries:
                if not asks_what_code_does(q["query"]):
                    continue
                kb.search(q["query"], kind="code", k=10, budget=50000, metadata_only=True, threshold=0.0)
                words = {_normal(w) for w in _WORD.findall(q["query"]) if w.lower() not in STOPWORDS and len(w) > 2}
                ranked = [(c, ch) for c, ch in captured["rows"][:DEPTH] if ch is not None]
                best = max((c.lexical_score or 0.0 for c, _ in ranked), default=0.0)
                candidates = [
                    {
                        "path": ch.path,
                        "start": ch.line_start,
                        "end": ch.line_end,
                        "group": group_key(ch.id),
                        "dense_rank": c.dense_rank,
                        "lexical_rank": c.lexical_rank,
                        "cosine": c.cosine,
                        "lexical_score": c.lexical_score,
                        "best_lexical": best,
                        "callable": ch.symbol_kind in ("function", "method"),
                        "quiet": bool(_QUIET_PATH.search(ch.path)),
                        "query_words": len(words),
                    }
                    for c, ch in ranked
                ]
                rows.append({"bench": bench, "repo": repo, "targets": q["targets"], "candidates": candidates})
    search_module.rank = original
    return rows


def relevant(c: dict, targets: list) -> bool:
    for t in targets:
        path = t if isinstance(t, str) else t["path"]
        if (c["path"] == path or c["path"].endswith("/" + path)) and (
            isinstance(t, str) or (c["start"] <= t["end_line"] and c["end"] >= t["start_line"])
        ):
            return True
    return False


def fit(rows: list[dict], l2: float = 1e-2, steps: int = 3000, rate: float = 0.5) -> np.ndarray:
    """Pairwise logistic regression: each relevant candidate against up to 40 others of its question."""
    differences = []
    for row in rows:
        f = [features(c) for c in row["candidates"]]
        labels = [relevant(c, row["targets"]) for c in row["candidates"]]
        others = [i for i, label in enumerate(labels) if not label][:40]
        differences += [np.subtract(f[i], f[j]) for i, label in enumerate(labels) if label for j in others]
    x = np.array(differences)
    unit = np.abs(x).mean(0) + 1e-9
    z, w = x / unit, np.zeros(x.shape[1])
    for _ in range(steps):
        w -= rate * (-(z * (1 / (1 + np.exp(z @ w)))[:, None]).mean(0) + l2 * w)
    return w / unit


def ndcg_of(row: dict, order: list[int]) -> float:
    seen: dict[str, int] = {}
    results: list[tuple[str, int, int]] = []
    for i in order:
        c = row["candidates"][i]
        if c["group"] in seen:  # one result per entity, its ranked parts merged
            path, start, end = results[seen[c["group"]]]
            results[seen[c["group"]]] = (path, min(start, c["start"]), max(end, c["end"]))
        else:
            seen[c["group"]] = len(results)
            results.append((c["path"], c["start"], c["end"]))
    return gate.ndcg(results[:10], row["targets"])


def scored(rows: list[dict], weights: np.ndarray | None, quiet_votes: float = 2.0) -> dict[str, float]:
    """Mean nDCG@10 over repositories: the product's order (weights None) or the learned one."""
    per: dict[str, list[float]] = {}
    for row in rows:
        n = len(row["candidates"])
        if weights is None:
            order = list(range(n))
        else:
            values = [float(np.dot(features(c), weights)) - quiet_votes * c["quiet"] for c in row["candidates"]]
            order = sorted(range(n), key=lambda i: -values[i])
        per.setdefault(row["repo"], []).append(ndcg_of(row, order) if n else 0.0)
    return {
        "mean": statistics.fmean(statistics.fmean(v) for v in per.values()),
        "questions": sum(map(len, per.values())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/gate"))
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--home", default=str(Path.home() / ".cache" / "knowledge"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = dump(args.work, args.model, args.home)
    semble = [r for r in rows if r["bench"] == "semble-dev"]
    half = {
        name: [r for r in rows if r["bench"] == "function" and r["repo"] in repos] for name, repos in HALVES.items()
    }
    report: dict = {"model": args.model, "features": FEATURES, "halves": HALVES, "runs": {}}
    for trained, other in (("a", "b"), ("b", "a")):
        weights = fit(half[trained])
        report["runs"][f"trained on {trained}"] = {
            "weights": [round(float(w), 4) for w in weights],
            f"unseen half {other}": {"product": scored(half[other], None), "learned": scored(half[other], weights)},
            f"seen half {trained}": {"product": scored(half[trained], None), "learned": scored(half[trained], weights)},
            "semble-dev does-X": {"product": scored(semble, None), "learned": scored(semble, weights)},
        }
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
