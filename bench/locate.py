"""Issue -> files: where to change, over ../shared/bench-data/swe-dev (86 SWE-bench Lite issues of sympy, requests and
flask) or, with `--set mswe-dev`, its 195 Multi-SWE-bench issues (12 repositories in C, C++, Go, Java, JavaScript,
TypeScript and Rust), the product's own path, main and this tree side by side in one run, beside a plain file-level
BM25 (over the files of the instance's language).

    python bench/locate.py --base main --out bench/results/locate.json        # both sides, first stage
    python bench/locate.py --set mswe-dev --base main --index-per-side        # a change to what an index holds
    python bench/locate.py --sides tree --limit 20                            # a quick look at this tree alone

Each repository is cloned once per side from its mirror (`fetch` brings sympy/sympy, psf/requests, pallets/flask to
/work/.mirror), its refs removed so nothing after an instance's base commit is reachable, and walked through its
instances in date order: `git checkout` of the base commit, then `reindex_changes` (what the hooks run) by this
tree's code (this work changes no chunk and no index file the base reads, so both sides ask one index: half the
indexing), then the issue text as filed, asked by each side (its own process, its own code, models loaded before the
clock starts) two ways:
- `search`: `knowledge search "<issue>" --files` (k 10, threshold 0, a large budget): what main offers;
- `locate`: `knowledge locate "<issue>"` (k 10, a large budget), where the side has it.
The BM25 baseline (every `.py` file of the base commit one document, identifiers split, k1 1.2, b 0.75) reads the
commit from the mirror. Scores: Acc@1/5/10 (a gold file among the top k files) and MRR@10, per repository and overall.
`--stage first` (the default: static vectors and the lexical side, no transformer) or `--stage complete` (every
step's changed chunks embedded by the transformer before the questions; sympy's 77 checkouts take hours on 2 cores,
so `--repos psf/requests pallets/flask` and a run of sympy's issues close in date, `--since 2017-07-01 --limit 16`,
are what was run here). `--dump` writes every signal's votes to WORK/votes.json (the transformer's apart, as
`dense_votes`), to weigh the signals offline. Every instance's rows are kept in WORK/rows-STAGE.jsonl as they come;
`--resume` takes them back after an interruption and asks only the instances missing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
SETS = PROJECT.parent / "shared" / "bench-data"  # swe-dev (Python) and mswe-dev (Multi-SWE-bench: 7 languages)
# the files the plain baseline reads, by an instance's language (swe-dev's instances name none: Python)
SUFFIXES = {
    "python": (".py",), "javascript": (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx"),
    "typescript": (".ts", ".tsx", ".js", ".jsx"), "cpp": (".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh", ".c", ".ipp"),
    "c": (".c", ".h"), "java": (".java",), "rust": (".rs",), "go": (".go",),
}  # fmt: skip
MIRRORS = Path("/work/.mirror")
KS = (1, 5, 10)


def git(*args: str, cwd: Path | None = None, git_dir: Path | None = None) -> str:
    prefix = ["git", "--git-dir", str(git_dir)] if git_dir else ["git"]
    return subprocess.run([*prefix, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def mirror_of(repo: str) -> Path:
    return MIRRORS / repo.replace("/", "+") / "repo"


# ---- the plain baseline: file-level BM25 ---------------------------------------------------------------------------
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def bm25_tokens(text: str) -> list[str]:
    out = []
    for token in _TOKEN.findall(text):
        out.append(token.lower())
        parts = [p.lower() for p in _PARTS.findall(token)]
        if len(parts) > 1:
            out.extend(parts)
    return out


def bm25_files(repo: str, commit: str, issue: str, language: str = "python", k: int = 10) -> list[str]:
    gitdir = mirror_of(repo)
    listed = git("ls-tree", "-r", "--name-only", commit, git_dir=gitdir).splitlines()
    paths = [p for p in listed if p.endswith(SUFFIXES[language])]
    blobs = subprocess.run(
        ["git", "--git-dir", str(gitdir), "cat-file", "--batch"],
        input="".join(f"{commit}:{p}\n" for p in paths).encode(),
        capture_output=True,
        check=True,
    ).stdout
    docs, offset = [], 0
    for _ in paths:
        header_end = blobs.index(b"\n", offset)
        size = int(blobs[offset:header_end].split()[2])
        docs.append(Counter(bm25_tokens(blobs[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace"))))
        offset = header_end + 1 + size + 1
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / max(1, len(lengths))
    frequency = Counter(term for d in docs for term in d)
    query = set(bm25_tokens(issue))
    scores = []
    for doc, length in zip(docs, lengths, strict=True):
        score = 0.0
        for term in query & doc.keys():
            idf = math.log(1 + (len(docs) - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = doc[term]
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        scores.append(score)
    order = sorted(range(len(paths)), key=lambda i: -scores[i])
    return [paths[i] for i in order[:k]]


# ---- the sides: one worker process each, over one clone and one index per repository ----------------------------
WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from knowledge.kb import KnowledgeBase
home = sys.argv[2]
complete = sys.argv[3] == "complete"  # the transformer's vectors made at every step (the fill, run here)
for line in sys.stdin:
    order = json.loads(line)
    root = Path(order["root"])
    kb = KnowledgeBase.open(root, overrides={"home": home})  # fresh each time: the index moved under it
    row = {}
    if order["op"] == "index":
        started = time.monotonic()
        if kb.engine.exists("code"):
            kb.reindex_changes(embed=complete)
        else:
            kb.reindex_all(embed=complete)
        row["indexed_s"] = round(time.monotonic() - started, 2)
    else:
        text = order["text"]
        kb.search("warm up", kind="all", files_only=True)  # the models loaded before the clock starts
        t = time.monotonic()
        response = kb.search(text, kind="all", files_only=True, k=10, threshold=0.0, budget=50000)
        row["search"] = [hit.path for hit in response.results]
        row["search_ms"] = round((time.monotonic() - t) * 1000)
        if hasattr(kb, "locate"):
            t = time.monotonic()
            answer = kb.locate(text, k=10, budget=50000)
            row["locate"] = [f.path for f in answer.files]
            row["locate_ms"] = round((time.monotonic() - t) * 1000)
            row["entities"] = [[f.path, e.line_start, e.line_end] for f in answer.files for e in f.entities]
            row["evidence"] = [sorted({e.signal for e in f.evidence}) for f in answer.files]  # how sure, offline
            row["scores"] = [round(f.score, 5) for f in answer.files]
            if order.get("dump"):  # every signal's votes, to weigh the signals offline (--dump)
                from functools import partial
                import knowledge.locate as L
                from knowledge import history as H
                try:
                    from knowledge.model_stages import static_stage
                except ImportError:  # a side from before the stages had a module of their own
                    from knowledge.answer import static_stage
                from knowledge.issue import read_issue
                sources = kb.indexes(("code", "docs"))
                known = {p: s for s in sources for p in s.store.files()}
                stage = static_stage(sources, kb.model)
                side = getattr(kb.model, "issue_static", lambda: stage)() if stage else None  # what locate embeds with
                votes = L.collect(sources, known, read_issue(text), [("static", side.embed_query)] if side else [],
                                  partial(H.files_like, root))
                row["votes"] = {p: [[v[0], v[1]] for v in vs] for p, vs in votes.items()}
                row["quiet"] = [p for p in votes if L.quiet_path(p, known)]
                try:  # a side from before the subjects were read for the voted tests only
                    code = [p for p in known if known[p].kind == "code"]
                    row["subjects"] = L.test_subjects(list(votes), code)
                except TypeError:
                    row["subjects"] = {q: s for q, s in L.test_subjects(known).items() if q in votes}
                # every chunk of the answer's files with its place in the words and meaning lists, to order a
                # file's entities offline
                from knowledge.lexical import terms
                issue = read_issue(text)
                lexical = {
                    h.key: (r, h.score)
                    for s in sources
                    for r, h in enumerate(s.searched.lexical_search(terms(text), 4000))
                }
                static = {}
                if side:
                    vector = side.embed_query(L.salient(issue))
                    static = {
                        h.key: (r, h.score)
                        for s in sources
                        for r, h in enumerate(s.searched.static_search(vector, 6000))
                    }
                spans = {}
                for s in sources:
                    for key, chunk in s.searched.chunks(list(lexical) + list(static)).items():
                        spans[key] = (chunk.path, chunk.line_start, chunk.line_end)
                files = {}
                for path in row["locate"]:
                    index = known[path]
                    at = {v: k for k, v in spans.items() if v[0] == path}
                    files[path] = [
                        [c.line_start, c.line_end, c.symbol, c.parent, c.symbol_kind, len(c.content),
                         lexical.get(at.get((path, c.line_start, c.line_end)), None),
                         static.get(at.get((path, c.line_start, c.line_end)), None)]
                        for c in index.searched.chunks_of_path(path)
                    ]
                row["files"] = files
                keyed = []
                for path, vs in votes.items():
                    for signal, value, detail, key in vs:
                        if key is None:
                            continue
                        index = known[path]
                        found = index.searched.chunks([key]) if isinstance(key, int) else {}
                        chunk = found.get(key) if isinstance(key, int) else index.chunk_by_id(key)
                        if chunk is not None:
                            keyed.append([signal, value, detail, path, chunk.line_start, chunk.line_end])
                row["keyed"] = keyed
                # the transformer's list as its own signal (the complete stage): `locate` adds it to meaning's votes
                try:
                    from knowledge.model_stages import query_embedder
                except ImportError:
                    from knowledge.answer import query_embedder
                dense = query_embedder(sources, kb.model, [s.coverage() for s in sources])
                if dense is not None:
                    from collections import defaultdict
                    by_dense = defaultdict(list)
                    vector = dense(L.salient(issue))
                    for s in sources:
                        if s.coverage().embedded:
                            found = [(h.key, h.score) for h in s.searched.dense_search(vector, L.LocatePolicy().depth)]
                            L._per_file(s, found, "dense", by_dense)
                    row["dense_votes"] = {p: [[v[0], v[1]] for v in vs] for p, vs in by_dense.items()}
    print(json.dumps(row), flush=True)
"""


class Worker:
    """One side's code in its own process, answering orders (index, ask) one JSON line each."""

    def __init__(self, code: Path, home: Path, stage: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(code), str(home), stage], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def order(self, **fields: object) -> dict:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(fields) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"a worker stopped (exit {self.process.wait()})")
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def prepare_clone(repo: str, dest: Path) -> Path:
    """A clone sharing the mirror's objects, no ref but the bench branch: only a base commit's past is reachable."""
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "-q", "--shared", "--no-checkout", str(mirror_of(repo)), str(dest))
    if "origin" in git("remote", cwd=dest).split():
        git("remote", "remove", "origin", cwd=dest)  # its refs go with it: only the bench branch stays
    tags = git("for-each-ref", "--format=%(refname)", "refs/tags", cwd=dest).split()
    if tags:
        subprocess.run(
            ["git", "update-ref", "--stdin"], input="".join(f"delete {r}\n" for r in tags), cwd=dest, check=True,
            text=True,
        )  # fmt: skip
    git("config", "gc.auto", "0", cwd=dest)
    return dest


def walk(
    repo: str,
    instances: list[dict],
    sides: dict[str, Path],
    work: Path,
    home: Path,
    dump: bool,
    stage: str,
    kept: dict[str, dict[str, dict]] | None = None,
    record: Callable[[str, dict[str, dict]], None] | None = None,
    per_side: bool = False,
) -> dict:
    """Each instance: checked out, indexed once by the indexing side (the tree's code when it runs: this work changes
    no chunk and no index file the base reads), then asked by every side in turn. Each instance's rows go to `record`
    as they come (a complete run takes hours: `--resume` takes them back as `kept` and asks only the instances
    missing)."""
    workers = {side: Worker(code, home, stage) for side, code in sides.items()}
    indexer = "tree" if "tree" in workers else next(iter(workers))
    folder = repo.replace("/", "+")
    clones = {side: prepare_clone(repo, work / (f"{side}-{folder}" if per_side else folder)) for side in sides}
    out: dict[str, dict] = {side: {} for side in sides}
    kept = kept or {}
    try:
        for instance in instances:
            iid = instance["instance_id"]
            if all(iid in kept.get(side, {}) for side in sides):
                for side in sides:
                    out[side][iid] = kept[side][iid]
                continue
            indexed: dict[str, float] = {}
            for side, clone in clones.items():
                if per_side or not indexed:
                    git("checkout", "-q", "-f", "-B", "bench", instance["base_commit"], cwd=clone)
                    git("clean", "-q", "-fdx", "-e", ".knowledge", cwd=clone)
                    by = side if per_side else indexer
                    indexed[side] = workers[by].order(op="index", root=str(clone))["indexed_s"]
            for side, worker in workers.items():
                row = worker.order(op="ask", root=str(clones[side]), text=instance["problem_statement"], dump=dump)
                out[side][iid] = {"indexed_s": indexed.get(side, next(iter(indexed.values()))), **row}
            if record is not None:
                record(iid, {side: out[side][iid] for side in sides})
            print(f"  {iid}: indexed {max(indexed.values()):.1f}s", file=sys.stderr, flush=True)
    finally:
        for worker in workers.values():
            worker.close()
    return out


def scores(ranked: dict[str, list[str]], gold: dict[str, list[str]]) -> dict[str, float]:
    out = {f"acc@{k}": 0.0 for k in KS} | {"mrr@10": 0.0}
    for iid, files in gold.items():
        got = ranked.get(iid, [])
        rank = next((i for i, path in enumerate(got[:10]) if path in files), None)
        for k in KS:
            out[f"acc@{k}"] += rank is not None and rank < k
        out["mrr@10"] += 0.0 if rank is None else 1.0 / (rank + 1)
    return {name: round(value / max(1, len(gold)), 3) for name, value in out.items()}


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.MULTILINE)


def touched_lines(patch: str) -> dict[str, set[int]]:
    """The base commit's lines the fix changes, per file (an insertion touches the lines either side of it)."""
    out: dict[str, set[int]] = {}
    for part in patch.split("diff --git ")[1:]:
        path = part.split("\n", 1)[0].split(" b/", 1)[-1].strip()
        for match in _HUNK.finditer(part):
            start, size = int(match.group(1)), int(match.group(2) or 1)
            lines = range(start, start + size) if size else range(start, start + 2)
            out.setdefault(path, set()).update(lines)
    return out


def entity_scores(rows: dict[str, list], instances: list[dict]) -> dict[str, float]:
    """Function level: where the first of `locate`'s entities (files best first, each file's entities in its order)
    that holds a line the fix changes lands (Acc@k over the first k entities; MRR@10)."""
    out = {f"acc@{k}": 0.0 for k in KS} | {"mrr@10": 0.0}
    for instance in instances:
        touched = touched_lines(instance["patch"])
        got = rows.get(instance["instance_id"], [])
        hits = (
            i
            for i, (path, start, end) in enumerate(got[:10])
            if any(n in touched.get(path, ()) for n in range(start, end + 1))
        )
        rank = next(hits, None)
        for k in KS:
            out[f"acc@{k}"] += rank is not None and rank < k
        out["mrr@10"] += 0.0 if rank is None else 1.0 / (rank + 1)
    return {name: round(value / max(1, len(instances)), 3) for name, value in out.items()}


def table(results: dict, instances: list[dict]) -> str:
    repos = sorted({i["repo"] for i in instances})
    lines = ["| side / asker | repository | n | Acc@1 | Acc@5 | Acc@10 | MRR@10 |", "|---|---|---|---|---|---|---|"]
    for name, ranked in results["runs"].items():
        for repo in [*repos, "all"]:
            gold = {i["instance_id"]: i["gold_files"] for i in instances if repo in ("all", i["repo"])}
            s = scores(ranked, gold)
            lines.append(
                f"| {name} | {repo} | {len(gold)} | {s['acc@1']:.3f} | {s['acc@5']:.3f} | {s['acc@10']:.3f} | "
                f"{s['mrr@10']:.3f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="main", help="the commit compared with this tree")
    parser.add_argument("--sides", nargs="+", default=["base", "tree"], choices=["base", "tree"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/locate-bench"))
    parser.add_argument("--home", type=Path, default=None, help="the models' home (default ~/.cache/knowledge)")
    parser.add_argument("--repos", nargs="*", default=None, help="only these (owner/name)")
    parser.add_argument("--since", default=None, help="only instances filed on or after this date (YYYY-MM-DD)")
    parser.add_argument("--limit", type=int, default=None, help="the first N instances of each repository")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--stage", choices=["first", "complete"], default="first")
    parser.add_argument("--set", choices=["swe-dev", "mswe-dev"], default="swe-dev")
    parser.add_argument(
        "--index-per-side",
        action="store_true",
        help="each side indexes its own clone (when this work changes what an index holds, the base cannot read it)",
    )
    parser.add_argument("--dump", action="store_true", help="also write every signal's votes to WORK/votes.json")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="take back the rows an interrupted run of the same sides wrote to WORK/rows-STAGE.jsonl, ask the rest",
    )
    args = parser.parse_args()

    data = SETS / args.set / "instances.jsonl"
    instances = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    instances.sort(key=lambda i: i["created_at"])
    if args.repos:
        instances = [i for i in instances if i["repo"] in args.repos]
    if args.since:
        instances = [i for i in instances if i["created_at"][:10] >= args.since]
    if args.limit:
        kept: Counter[str] = Counter()
        instances = [i for i in instances if (kept.update([i["repo"]]) or kept[i["repo"]] <= args.limit)]
    args.work.mkdir(parents=True, exist_ok=True)
    # the first stage's home: the models, no cached transformer vector, so the first stage is what answers; the
    # complete stage's: its own vector cache, filled as it goes
    home = args.work / ("home" if args.stage == "first" else "home-complete")
    home.mkdir(exist_ok=True)
    models = (args.home or Path(os.environ.get("KNOWLEDGE_HOME") or Path.home() / ".cache" / "knowledge")) / "models"
    if not (home / "models").exists():
        (home / "models").symlink_to(models)
    sides = {}
    if "base" in args.sides:
        base_root = args.work / "base-src"
        if base_root.exists():
            subprocess.run(["git", "worktree", "remove", "--force", str(base_root)], cwd=PROJECT, check=False)
            shutil.rmtree(base_root, ignore_errors=True)
        git("worktree", "add", "--detach", "-f", str(base_root), args.base, cwd=PROJECT)
        sides["base"] = base_root
    if "tree" in args.sides:
        sides["tree"] = PROJECT
    runs: dict[str, dict[str, list[str]]] = {"bm25": {}}
    timing: dict[str, list[float]] = {}
    indexing: dict[str, list[float]] = {}
    dumped: dict[str, dict] = {}
    entities: dict[str, dict[str, list]] = {}
    evidence: dict[str, dict[str, dict]] = {}
    cached = args.work / f"bm25-{args.set}.json"  # the baseline depends on the data alone: once per work folder
    known = json.loads(cached.read_text()) if cached.exists() else {}
    for number, instance in enumerate(instances, 1):
        iid = instance["instance_id"]
        if iid not in known:
            known[iid] = bm25_files(
                instance["repo"],
                instance["base_commit"],
                instance["problem_statement"],
                instance.get("language", "python"),
            )
            print(f"bm25 {number}/{len(instances)}", file=sys.stderr, flush=True)
        runs["bm25"][iid] = known[iid]
    cached.write_text(json.dumps(known))
    by_repo: dict[str, list[dict]] = {}
    for instance in instances:
        by_repo.setdefault(instance["repo"], []).append(instance)
    base_commit = git("rev-parse", args.base, cwd=PROJECT).strip()
    rows_file = args.work / f"rows-{args.set}-{args.stage}.jsonl"
    kept: dict[str, dict[str, dict]] = {}
    if args.resume and rows_file.exists():  # rows of the same base only (the tree's side is this checkout's code)
        for line in rows_file.read_text(encoding="utf-8").splitlines():
            saved = json.loads(line) if line.strip() else {}
            for side, row in saved.get("rows", {}).items() if saved.get("base") == base_commit else ():
                kept.setdefault(side, {})[saved["iid"]] = row

    def record(iid: str, rows: dict[str, dict]) -> None:
        with rows_file.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"base": base_commit, "iid": iid, "rows": rows}) + "\n")

    started = time.monotonic()
    for repo, group in by_repo.items():
        print(f"{repo} ({len(group)} issues)", file=sys.stderr, flush=True)
        clones = args.work / f"clones-{args.stage}"
        by_side = walk(repo, group, sides, clones, home, args.dump, args.stage, kept, record, args.index_per_side)
        for side, out in by_side.items():
            dumped.update({iid: row for iid, row in out.items() if "votes" in row})
            for iid, row in out.items():
                indexing.setdefault("index", []).append(row["indexed_s"])
                for asker in ("search", "locate"):
                    if asker in row:
                        runs.setdefault(f"{side} {asker}", {})[iid] = row[asker]
                        timing.setdefault(f"{side} {asker}", []).append(row[f"{asker}_ms"])
                if "entities" in row:
                    entities.setdefault(f"{side} locate", {})[iid] = row["entities"]
                if "evidence" in row:
                    signals = {"signals": row["evidence"], "scores": row["scores"]}
                    evidence.setdefault(f"{side} locate", {})[iid] = signals
    print(f"all: {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    results = {
        "base": base_commit,
        "instances": len(instances),
        "runs": runs,
        "median_ms": {name: statistics.median(values) for name, values in timing.items()},
        "median_index_s": {name: statistics.median(values) for name, values in indexing.items()},
        "entities": entities,
        "entity_scores": {name: entity_scores(rows, instances) for name, rows in entities.items()},
        "evidence": evidence,  # each file's signals and score, to judge a confidence offline
    }
    if dumped:
        (args.work / "votes.json").write_text(json.dumps(dumped))
    print(table(results, instances))
    for name, scored in results["entity_scores"].items():
        print(f"function level, {name}: " + ", ".join(f"{key} {value:.3f}" for key, value in scored.items()))
    print("median ms an ask:", results["median_ms"], " median s an index step:", results["median_index_s"])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
