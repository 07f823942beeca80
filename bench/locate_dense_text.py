"""What the static stage should read of a long issue: the meaning signal of `locate` alone, for several choices of text,
over the swe-dev issues of one repository asked against ONE index (an indexed checkout, e.g. the last one
bench/locate.py left): a relative comparison of the choices only, since most issues saw older code.

    python bench/locate_dense_text.py /tmp/locate-r1/clones/sympy+sympy --repo sympy/sympy --home /tmp/locate-r1/home

Prints Acc@1 / Acc@10 per choice, for all issues and for the two folds (odd and even issues by date).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from knowledge import locate as L  # noqa: E402 - after the path insert
from knowledge.embedding.static import load_issue_static  # noqa: E402
from knowledge.issue import IssueText, read_issue  # noqa: E402
from knowledge.kb import KnowledgeBase  # noqa: E402
from knowledge.model_stages import static_stage  # noqa: E402

DATA = PROJECT.parent / "shared" / "bench-data" / "swe-dev" / "instances.jsonl"
CHOICES = {
    "the title": lambda i: i.title,
    "title + prose[:1500] (shipped)": L.salient,
    "title + prose[:1500] + code[:500]": lambda i: "\n".join(p for p in (i.title, i.prose[:1500], i.code[:500]) if p),
    "the text[:2000] as written": lambda i: i.text[:2000],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("--repo", default="sympy/sympy")
    parser.add_argument("--home", default=None)
    parser.add_argument("--issue-side", type=Path, nargs="*", default=[], help="issue tables to compare (folders)")
    args = parser.parse_args()
    kb = KnowledgeBase.open(args.root, overrides={"home": args.home} if args.home else None)
    sources = kb.indexes(("code", "docs"))
    stage = static_stage(sources, kb.model)
    if stage is None:
        raise SystemExit(f"{args.root}: no static stage rows to ask")
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    rows = sorted((r for r in rows if r["repo"] == args.repo), key=lambda r: r["created_at"])
    issues: list[tuple[IssueText, list[str]]] = [(read_issue(r["problem_statement"]), r["gold_files"]) for r in rows]
    choices = [(name, pick, stage) for name, pick in CHOICES.items()]
    for folder in args.issue_side:
        side = load_issue_static(folder, stage)
        if side is None:
            raise SystemExit(f"{folder}: no issue side for {stage.fingerprint}")
        choices.append((f"{L.salient.__name__} through {folder}", L.salient, side))
    for name, pick, embedder in choices:
        ranks = []
        for issue, gold in issues:
            votes: dict[str, list] = defaultdict(list)
            vector = embedder.embed_query(pick(issue))
            for source in sources:
                L._meaning(source, source.coverage(), "static", vector, votes)
            order = list(L.fuse(votes, {}, {}, L.LocatePolicy()))[:10]
            ranks.append(next((k for k, path in enumerate(order) if path in gold), None))

        def acc(subset: list[int | None], k: int) -> float:
            return sum(r is not None and r < k for r in subset) / max(1, len(subset))

        folds = {"all": ranks, "odd": ranks[0::2], "even": ranks[1::2]}
        said = "  ".join(f"{fold} {acc(r, 1):.3f} / {acc(r, 10):.3f}" for fold, r in folds.items())
        print(f"{name:45s} {said}")


if __name__ == "__main__":
    main()
