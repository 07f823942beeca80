"""The ranking gate: every benchmark through the product's own search path, base and working tree side by side.

    python bench/function_set.py                       # once: the function-level set under /tmp/function-set
    python bench/gate.py --base main --out bench/results/gate.json

Benchmarks (each a list of repositories with annotated queries, scored as semble's README says: a target counts at
the first of the top 10 results whose path matches and, when it has lines, whose range overlaps them):
- semble-dev: the 15 repositories of ../shared/bench-data/semble-dev, file-level targets, also as two fixed folds;
- function: the CodeSearchNet-style set of bench/function_set.py (doc comment -> the documented function);
- cosqa, scifact: ../shared/bench-data, each document a file (CoSQA snippets as `.py` code, SciFact abstracts as
  Markdown), qrels' documents as file-level targets;
- mixed: this repository's docs and code at the base commit, `--kind all`: each doc's description asks for its file,
  each `##` heading for its section.
Every query runs through `KnowledgeBase.search` twice: with the product's defaults (threshold included; budget off,
metadata only, k 10) and with threshold 0. The base is checked out with `git worktree`; each side indexes its own copy
of the corpora, both sharing one vector cache (content-hash keyed, in --home), so a ranking-only change costs queries,
not embeddings. `--model` picks the model both sides run (default: the product's default).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
SHARED = PROJECT.parent / "shared" / "bench-data"
FOLDS = {  # fixed, mixed languages: tune on one, report the other
    "fold_a": ["aiohttp", "httpx", "starlette", "redux", "chi", "axum", "libuv", "flask"],
    "fold_b": ["model2vec", "requests", "express", "trpc", "gin", "gson", "fmtlib"],
}
# The function set's Python repositories, shown apart: a function-level set in one language reads most like them.
FUNCTION_PYTHON = ["more-itertools", "tenacity", "attrs", "itsdangerous", "click"]
SETTINGS = {"defaults": {}, "threshold0": {"threshold": 0.0}}
MAX_BEIR_QUERIES = 300  # the first 300 test queries of CoSQA and SciFact: enough for a 0.003 step, 2 cores


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def commit_tree(dest: Path) -> None:
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("-c", "user.name=gate", "-c", "user.email=gate@example.com", "commit", "-qm", "corpus", cwd=dest)


# ---- corpora: built once, copied per side ---------------------------------------------------------------------
def semble_corpora(mirror: Path, work: Path) -> dict[str, tuple[Path, list[dict]]]:
    sys.path.insert(0, str(HERE))
    from semble_dev import checkout

    repos = json.loads((SHARED / "semble-dev" / "repos.json").read_text())
    out = {}
    for repo in repos:
        root = checkout(repo, mirror, work / "semble-dev")
        queries = json.loads((SHARED / "semble-dev" / "annotations" / f"{repo['name']}.json").read_text())
        out[repo["name"]] = (
            root,
            [
                {
                    "query": q["query"],
                    "targets": q["relevant"] + q.get("secondary", []),
                    "category": q.get("category", ""),
                }
                for q in queries
            ],
        )
    return out


def function_corpora(function_set: Path) -> dict[str, tuple[Path, list[dict]]]:
    out = {}
    for path in sorted((function_set / "annotations").glob("*.json")):
        queries = json.loads(path.read_text())
        out[path.stem] = (
            function_set / "trees" / path.stem,
            [{"query": q["query"], "targets": q["relevant"], "category": "function"} for q in queries],
        )
    return out


def beir_corpus(name: str, work: Path) -> dict[str, tuple[Path, list[dict]]]:
    sys.path.insert(0, str(HERE))
    from beir_data import load

    data = load(SHARED / name)
    root = work / name
    suffix = ".py" if name == "cosqa" else ".md"
    if not (root / ".git").exists():
        root.mkdir(parents=True, exist_ok=True)
        for doc_id, (title, text) in data.corpus.items():
            body = text if name == "cosqa" else f"---\ntitle: {json.dumps(title)}\n---\n{text}\n"
            (root / f"{doc_id}{suffix}").write_text(body, encoding="utf-8")
        commit_tree(root)
    queries = [
        {"query": data.queries[qid], "targets": [f"{d}{suffix}" for d in sorted(relevant)], "category": name}
        for qid, relevant in sorted(data.qrels.items())[:MAX_BEIR_QUERIES]
    ]
    return {name: (root, queries)}


def mixed_corpus(base: str, work: Path) -> dict[str, tuple[Path, list[dict]]]:
    import frontmatter

    root = work / "mixed" / "knowledge"
    if not (root / ".git").exists():
        root.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", base], cwd=PROJECT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
        commit_tree(root)
    queries = []
    for doc in [*sorted((root / "docs").glob("*.md")), root / "README.md"]:
        rel = doc.relative_to(root).as_posix()
        text = doc.read_text()
        description = frontmatter.loads(text).metadata.get("description")
        if description:
            queries.append({"query": str(description), "targets": [rel], "category": "description"})
        lines = text.split("\n")
        heads = [(i + 1, line[3:].strip()) for i, line in enumerate(lines) if line.startswith("## ")]
        for n, (start, title) in enumerate(heads):
            end = heads[n + 1][0] - 1 if n + 1 < len(heads) else len(lines)
            if len(title.split()) >= 2:
                queries.append(
                    {
                        "query": re.sub(r"^\d+[a-z]?\.\s*", "", title),
                        "targets": [{"path": rel, "start_line": start, "end_line": end}],
                        "category": "heading",
                    }
                )
    return {"knowledge": (root, queries)}


# ---- one side: index its copy of every corpus, run every query --------------------------------------------------
WORKER = r"""
import json, sys, time, statistics
sys.path.insert(0, sys.argv[1])
from knowledge.kb import KnowledgeBase
spec = json.loads(open(sys.argv[2]).read())
out = {}
for bench, repos in spec["benches"].items():
    kind = "all" if bench == "mixed" else ("docs" if bench == "scifact" else "code")
    for repo, (root, queries) in repos.items():
        started = time.monotonic()
        overrides = {"model": spec["model"], "home": spec["home"]}
        kb = KnowledgeBase.open(__import__("pathlib").Path(root), overrides=overrides)
        static_only = spec.get("stage") == "static"  # phase one only: every chunk on its static vector
        if kb.engine.exists("docs") or kb.engine.exists("code"):
            kb.reindex_changes(embed=not static_only)
        else:
            kb.reindex_all(embed=not static_only)
        print(f"  {bench}/{repo}: indexed in {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
        import dataclasses
        try:  # the policy record (what resolve_options hands search()): its room, then a module, then the rules
            import knowledge.ranking.policy as holder
            attribute = "DEFAULT_POLICY"
        except ImportError:
            try:
                import knowledge.policy as holder
                attribute = "DEFAULT_POLICY"
            except ImportError:
                import knowledge.ranking as holder
                attribute = "DEFAULT_RULES"
        shipped = getattr(holder, attribute)
        for variant, overrides in spec["variants"].items():
            if attribute == "DEFAULT_POLICY":
                nested = {"fusion", "plain", "rules", "does_rules", "cut"}
                flat = {k: v for k, v in overrides.items() if k not in nested}
                rules = dataclasses.replace(shipped.rules, **{**flat, **overrides.get("rules", {})})
                fusion = dataclasses.replace(shipped.fusion, **overrides.get("fusion", {}))
                chosen = dataclasses.replace(shipped, rules=rules, fusion=fusion)
                if "cut" in overrides:  # the cut's constants, in the policy since the ranking has its room
                    chosen = dataclasses.replace(chosen, cut=dataclasses.replace(shipped.cut, **overrides["cut"]))
                does = overrides.get("does_rules")  # "rules": "does X" questions ranked like any other
                if does is not None and hasattr(shipped, "does_rules"):
                    does = rules if does == "rules" else dataclasses.replace(shipped.does_rules, **does)
                    chosen = dataclasses.replace(chosen, does_rules=does)
                chosen = chosen.plain() if overrides.get("plain") else chosen
            else:
                chosen = dataclasses.replace(shipped, **overrides)
            setattr(holder, attribute, chosen)
            answers = {}
            for name, extra in spec["settings"].items():
                rows = []
                for q in queries:
                    response = kb.search(q["query"], kind=kind, k=10, budget=50000, metadata_only=True, **extra)
                    rows.append([[h.path, h.line_start, h.line_end] for h in response.results])
                answers[name] = rows
            if variant == "shipped" and spec.get("answers"):  # what a user gets: the defaults, text in the budget
                rows = []
                for q in queries:
                    response = kb.search(q["query"], kind=kind)
                    hits = [[h.path, h.line_start, h.line_end, h.content is not None] for h in response.results]
                    rows.append({"hits": hits, "used": response.tokens_used, "budget": response.budget})
                answers["answer"] = rows
            if variant == "shipped" and spec.get("efficiency") and bench == "semble-dev":
                rows = []  # semble's token efficiency: the top 50 at threshold 0, each with its text and tokens
                for q in queries:
                    response = kb.search(q["query"], kind=kind, k=50, threshold=0.0, budget=50_000)
                    rows.append([[h.path, h.line_start, h.line_end, h.tokens] for h in response.results])
                answers["efficiency"] = rows
            out.setdefault(variant, {}).setdefault(bench, {})[repo] = answers
        setattr(holder, attribute, shipped)
json.dump(out, open(sys.argv[3], "w"))
"""


def target_rank(results: list, target: str | dict) -> int | None:
    path = target if isinstance(target, str) else target["path"]
    span = None if isinstance(target, str) else (target["start_line"], target["end_line"])
    for rank, (found, start, end, *_) in enumerate(results[:10], start=1):
        if found != path and not found.endswith("/" + path):
            continue
        if span is None or (start <= span[1] and end >= span[0]):
            return rank
    return None


def ndcg(results: list, targets: list) -> float:
    import math

    ranks = {target_rank(results, t) for t in targets} - {None}
    dcg = sum(1 / math.log2(rank + 1) for rank in ranks)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(10, len(targets)) + 1))
    return dcg / ideal if ideal else 0.0


def text_inside(answers: dict, repos: dict[str, tuple[Path, list[dict]]]) -> dict:
    """Share of questions whose answer (the defaults: threshold, budget, k) holds the text of a target, and how many
    answers went over their budget (must be none)."""
    inside, over, total = 0, 0, 0
    for repo, (_, queries) in repos.items():
        for row, q in zip(answers[repo]["answer"], queries, strict=True):
            total += 1
            over += row["used"] > row["budget"]
            with_text = [hit for hit in row["hits"] if hit[3]]
            inside += any(target_rank(with_text, t) is not None for t in q["targets"])
    return {"text_inside": inside / max(1, total), "over_budget": over, "questions": total}


def efficiency(answers: dict, repos: dict[str, tuple[Path, list[dict]]]) -> dict:
    """semble's token efficiency over the top 50 with text: the tokens read down the list until the first result in a
    relevant file (its own included), and the share of questions whose relevant file comes within 1,000 tokens."""
    to_first: list[int] = []
    within, total = 0, 0
    for repo, (_, queries) in repos.items():
        for rows, q in zip(answers[repo]["efficiency"], queries, strict=True):
            total += 1
            paths = {t if isinstance(t, str) else t["path"] for t in q["targets"]}
            read = 0
            for path, _, _, tokens in rows:
                read += tokens
                if any(path == p or path.endswith("/" + p) for p in paths):
                    to_first.append(read)
                    within += read <= 1000
                    break
    return {
        "tokens_to_first_mean": statistics.fmean(to_first) if to_first else None,
        "tokens_to_first_median": statistics.median(to_first) if to_first else None,
        "within_1k": within / max(1, total),
        "found_in_50": len(to_first) / max(1, total),
    }


def score(answers: dict, corpora: dict[str, dict[str, tuple[Path, list[dict]]]]) -> dict:
    table: dict = {}
    for bench, repos in corpora.items():
        for setting in SETTINGS:
            per_repo = {
                repo: statistics.fmean(
                    ndcg(res, q["targets"]) for res, q in zip(answers[bench][repo][setting], queries, strict=True)
                )
                for repo, (_, queries) in repos.items()
            }
            table.setdefault(bench, {})[setting] = {"mean": statistics.fmean(per_repo.values()), "repos": per_repo}
            subsets = FOLDS if bench == "semble-dev" else {"python": FUNCTION_PYTHON} if bench == "function" else {}
            prefix = "semble" if bench == "semble-dev" else bench
            for subset, names in subsets.items():
                if all(n in per_repo for n in names):
                    table.setdefault(f"{prefix}-{subset}", {})[setting] = {
                        "mean": statistics.fmean(per_repo[n] for n in names)
                    }
        if all("answer" in answers[bench][repo] for repo in repos):
            table[bench]["answer"] = text_inside(answers[bench], repos)
            per_repo = {  # the default answer itself scored as a ranking: what budget packing costs
                repo: statistics.fmean(
                    ndcg(row["hits"], q["targets"])
                    for row, q in zip(answers[bench][repo]["answer"], queries, strict=True)
                )
                for repo, (_, queries) in repos.items()
            }
            table[bench]["answer"]["ndcg"] = statistics.fmean(per_repo.values())
        if all("efficiency" in answers[bench][repo] for repo in repos):
            table[bench]["efficiency"] = efficiency(answers[bench], repos)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="main", help="the git revision to compare with")
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--function-set", type=Path, default=Path("/tmp/function-set"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/gate"))
    parser.add_argument("--home", type=Path, default=None, help="model and vector cache (default: the user's)")
    parser.add_argument("--benches", nargs="*", default=["semble-dev", "function", "cosqa", "scifact", "mixed"])
    parser.add_argument("--sides", nargs="*", default=["base", "tree"])
    parser.add_argument(
        "--variants",
        type=json.loads,
        default={},
        help='the tree side also with these ranking-policy overrides, e.g. \'{"fusion": {"enabled": false}}\'',
    )
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS), help="defaults, threshold0 or both")
    parser.add_argument(
        "--answers", action="store_true", help="also the default answer: how often the target's text is inside it"
    )
    parser.add_argument(
        "--efficiency", action="store_true", help="also semble's token efficiency on semble-dev (top 50 with text)"
    )
    parser.add_argument(
        "--stage",
        choices=["complete", "static"],
        default="complete",
        help="static: index phase one only, with a vector cache of its own, so every chunk ranks on its static vector",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    for name in set(SETTINGS) - set(args.settings):
        del SETTINGS[name]
    work = args.work
    corpora_dir = work / "corpora"
    builders = {
        "semble-dev": lambda: semble_corpora(args.mirror, corpora_dir),
        "function": lambda: function_corpora(args.function_set),
        "cosqa": lambda: beir_corpus("cosqa", corpora_dir),
        "scifact": lambda: beir_corpus("scifact", corpora_dir),
        "mixed": lambda: mixed_corpus(args.base, corpora_dir),
    }
    corpora = {bench: builders[bench]() for bench in args.benches}
    sides = {"tree": PROJECT}
    if "base" in args.sides:
        base_root = work / "base-src"
        if base_root.exists():
            subprocess.run(["git", "worktree", "remove", "--force", str(base_root)], cwd=PROJECT, check=False)
            shutil.rmtree(base_root, ignore_errors=True)
        git("worktree", "add", "--detach", "-f", str(base_root), args.base, cwd=PROJECT)
        sides["base"] = base_root
    home = str(args.home or os.environ.get("KNOWLEDGE_HOME") or Path.home() / ".cache" / "knowledge")
    if args.stage == "static":  # the models, but no cached vector: nothing may arrive from the transformer
        static_home = work / "static-home"
        static_home.mkdir(parents=True, exist_ok=True)
        if not (static_home / "models").exists():
            (static_home / "models").symlink_to(Path(home) / "models")
        home = str(static_home)
    results: dict = {"model": args.model, "base": git("rev-parse", args.base, cwd=PROJECT).strip(), "sides": {}}
    for side in args.sides:
        started = time.monotonic()
        benches = {}
        for bench, repos in corpora.items():
            copies = {}
            for repo, (root, queries) in repos.items():
                copy = work / side / bench / repo
                if not copy.exists():
                    shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(".knowledge"))
                copies[repo] = (str(copy), queries)
            benches[bench] = copies
        spec = work / f"{side}.spec.json"
        variants = {"shipped": {}, **(args.variants if side == "tree" else {})}
        spec.write_text(
            json.dumps(
                {
                    "benches": benches,
                    "model": args.model,
                    "home": home,
                    "settings": SETTINGS,
                    "variants": variants,
                    "answers": args.answers,
                    "efficiency": args.efficiency,
                    "stage": args.stage,
                }
            )
        )
        answers_path = work / f"{side}.answers.json"
        print(f"{side}: running {sum(len(q) for r in corpora.values() for _, q in r.values())} queries", flush=True)
        subprocess.run(
            [sys.executable, "-c", WORKER, str(sides[side]), str(spec), str(answers_path)],
            check=True,
            env={**os.environ, "KNOWLEDGE_NO_DAEMON": "1"},
        )
        for variant, answers in json.loads(answers_path.read_text()).items():
            label = side if variant == "shipped" else f"{side}:{variant}"
            results["sides"][label] = score(answers, corpora)
        results["seconds"] = {**results.get("seconds", {}), side: round(time.monotonic() - started)}
    print_table(results)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, sort_keys=True))


def print_table(results: dict) -> None:
    sides = list(results["sides"])
    rows = list(results["sides"][sides[0]])
    print(f"\nmodel {results['model']}, base {results['base'][:10]}")
    head = " | ".join(f"{s} {setting}" for setting in SETTINGS for s in sides)
    print(f"| benchmark | {head} |")
    print("|---" * (1 + len(sides) * len(SETTINGS)) + "|")
    means = {(s, setting): [] for s in sides for setting in SETTINGS}
    for bench in rows:
        cells = []
        for setting in SETTINGS:
            for s in sides:
                value = results["sides"][s][bench][setting]["mean"]
                cells.append(f"{value:.3f}")
                if bench not in {"semble-fold_a", "semble-fold_b", "function-python"}:  # parts, not benchmarks
                    means[(s, setting)].append(value)
        print(f"| {bench} | " + " | ".join(cells) + " |")
    overall = [f"{statistics.fmean(means[(s, st)]):.3f}" for st in SETTINGS for s in sides]
    print("| **mean** | " + " | ".join(overall) + " |")
    answered = [
        (s, b, results["sides"][s][b]["answer"]) for s in sides for b in rows if "answer" in results["sides"][s][b]
    ]
    if answered:
        print("\n| side | benchmark | target text inside the default answer | over budget |\n|---|---|---|---|")
        for s, bench, row in answered:
            print(f"| {s} | {bench} | {row['text_inside']:.1%} of {row['questions']} | {row['over_budget']} |")
        print("\n| side | benchmark | the default answer's nDCG@10 | threshold 0 |\n|---|---|---|---|")
        for s, bench, row in answered:
            print(f"| {s} | {bench} | {row['ndcg']:.3f} | {results['sides'][s][bench]['threshold0']['mean']:.3f} |")
    efficient = [(s, results["sides"][s]["semble-dev"].get("efficiency")) for s in sides if "semble-dev" in rows]
    if any(row for _, row in efficient):
        print("\n| side | tokens to the first relevant file (mean / median) | relevant within 1k | found in 50 |")
        print("|---|---|---|---|")
        for s, row in efficient:
            if row and row["tokens_to_first_mean"] is not None:
                print(
                    f"| {s} | {row['tokens_to_first_mean']:.0f} / {row['tokens_to_first_median']:.0f} | "
                    f"{row['within_1k']:.2f} | {row['found_in_50']:.2f} |"
                )


if __name__ == "__main__":
    main()
