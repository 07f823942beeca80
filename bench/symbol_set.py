"""A symbol test set of our own: names asked bare and qualified, answered through `search()` with the defaults.

    python bench/symbol_set.py --mirror /work/.mirror --work /tmp/symbol-set                 # build, then run
    python bench/symbol_set.py --work /tmp/symbol-set --stage complete --out bench/results/symbol-set.json

Eight repositories in eight languages, none on ../shared/do-not-train.txt nor in training/manifest.json, each at a
pinned commit brought with `fetch`. The definitions come from knowledge's own chunker run over each tree (what is
asked is whether the definition is ranked first, not whether it is found: the chunker's entity table is tested in
tests/test_languages.py). From them, deterministically: bare names defined once in the repository (`Filesystem`),
and qualified names in the language's own spelling whose last part is defined more than once where that is possible
(`Entry.WithField`, `logger::log`, `Faraday::Adapter`, `Stubs#match`, `League\\Flysystem\\Filesystem`,
`logrus.WithField`, `spdlog::logger`). Tests, examples and vendored code are never targets. A query counts when the
first result of `knowledge search QUERY --kind code` (defaults: threshold, k, budget) overlaps the target's lines.
The trees and the queries stay under --work; nothing here is committed but this builder and its results.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# repository -> (mirror folder, commit, language, separator for members, separator for nested containers)
SOURCES = {
    "structlog": ("hynek+structlog", "025edaf799c6d6d511ab672d14c2ba8e885c4c36", "python", ".", "."),
    "faraday": ("lostisland+faraday", "59334e0e9b1918bd26b143f4a7bbc8c765de3ac4", "ruby", "#", "::"),
    "flysystem": ("thephpleague+flysystem", "072735c56cc0da00e10716dd90d5a7f7b40b36be", "php", "::", "\\"),
    "spdlog": ("gabime+spdlog", "62302019babd8fdf63c1c6dc4c9faa48d441a7f0", "cpp", "::", "::"),
    "logrus": ("sirupsen+logrus", "87434bb3a736e2a27d34df66924471714f408d3d", "go", ".", "."),
    "bytes": ("tokio-rs+bytes", "d5c8ad3227afe459c09f1d0d85455abf00f0381a", "rust", "::", "::"),
    "immer": ("immerjs+immer", "061c2425e1c9dff89e4e4189d42af1b7839dfe0a", "typescript", ".", "."),
    "junit4": ("junit-team+junit4", "71c33ce555230d9dfb6cab5e133e22a4cc95cdff", "java", ".", "."),
}
BARE, QUALIFIED = 16, 26  # per repository, at most
DEFINITION_KINDS = {"function", "method", "class", "module", "interface", "trait", "struct", "enum", "type", "impl"}
NOT_TARGETS = re.compile(r"(^|/)(bundled|external|third_party|bench|website|docs?)(/|$)")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def checkout(name: str, mirror: Path, work: Path) -> Path:
    folder, commit, *_ = SOURCES[name]
    tree = work / "trees" / name
    if (tree / ".git").is_dir():
        return tree
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", f"--git-dir={mirror / folder / 'repo'}", "archive", commit], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    git("init", "-q", cwd=tree)
    git("add", "-A", cwd=tree)
    git("-c", "user.name=set", "-c", "user.email=set@example.com", "commit", "-qm", "tree", cwd=tree)
    return tree


def definitions(tree: Path, home: Path) -> list[dict]:
    """Every entity knowledge's chunker finds outside tests and vendored code: name, kind, parent, file, lines."""
    from knowledge.kb import KnowledgeBase
    from knowledge.pieces import group_key
    from knowledge.quiet import QUIET_PATH

    kb = KnowledgeBase.open(tree, overrides={"home": str(home), "fill": False})
    kb.reindex_all(embed=False)
    entities: dict[str, dict] = {}
    for chunk in kb.index("code").all_chunks().values():
        if not chunk.symbol or chunk.symbol_kind not in DEFINITION_KINDS:
            continue
        if QUIET_PATH.search(chunk.path) or NOT_TARGETS.search(chunk.path):
            continue
        key = f"{chunk.path}#{group_key(chunk.id)}"
        first = {"path": chunk.path, "name": chunk.symbol, "kind": chunk.symbol_kind, "parent": chunk.parent}
        seen = entities.setdefault(key, {**first, "start": chunk.line_start, "end": chunk.line_end})
        seen["start"], seen["end"] = min(seen["start"], chunk.line_start), max(seen["end"], chunk.line_end)
    return sorted(entities.values(), key=lambda d: (d["path"], d["start"], d["name"]))


def _key(name: str) -> str:
    return name.lower().replace("_", "")


def namespace_of(tree: Path, path: str, language: str) -> str:
    """The PHP namespace or the Go package a file declares ("" when none)."""
    pattern = {"php": r"^namespace\s+([\w\\]+)\s*;", "go": r"^package\s+(\w+)"}.get(language)
    if pattern is None:
        return ""
    found = re.search(pattern, (tree / path).read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
    return found.group(1) if found else ""


def queries_for(name: str, tree: Path, defs: list[dict]) -> list[dict]:
    _, _, language, member_sep, nested_sep = SOURCES[name]
    rng = random.Random(f"symbol-set:{name}")
    by_name = Counter(_key(d["name"]) for d in defs)
    by_scope = Counter((_key(d["parent"]), _key(d["name"])) for d in defs)
    containers = {(d["path"], d["name"]) for d in defs if d["kind"] not in {"function", "method"}}
    target = lambda d: {"path": d["path"], "start_line": d["start"], "end_line": d["end"]}  # noqa: E731
    bare = [d for d in defs if by_name[_key(d["name"])] == 1 and len(d["name"]) >= 4 and d["name"].isidentifier()]
    out = [{"query": d["name"], "form": "bare", "target": target(d)} for d in rng.sample(bare, min(BARE, len(bare)))]
    forms: dict[str, list[tuple[bool, dict]]] = defaultdict(list)  # form -> (ambiguous, query)
    for d in defs:
        if not d["name"].isidentifier():
            continue
        scope = (_key(d["parent"]), _key(d["name"]))
        # a member of a class, module, trait or impl (not a closure inside a function)
        if d["parent"].isidentifier() and by_scope[scope] == 1 and (d["path"], d["parent"]) in containers:
            member = d["kind"] in {"function", "method"}
            sep = member_sep if member else nested_sep
            form = f"A{sep}b" if member else f"A{sep}B"
            forms[form].append((by_name[scope[1]] > 1, {"query": f"{d['parent']}{sep}{d['name']}", "form": form,
                                                        "target": target(d)}))  # fmt: skip
        namespace = namespace_of(tree, d["path"], language) if not d["parent"] else ""
        if namespace and by_name[scope[1]] == 1:  # `League\Flysystem\Filesystem`, `logrus.WithField`
            sep = "\\" if language == "php" else "."
            form = f"ns{sep}B"
            forms[form].append((False, {"query": f"{namespace}{sep}{d['name']}", "form": form, "target": target(d)}))
    quota = {form: QUALIFIED // len(forms) for form in forms}
    for form in sorted(forms):  # what a form lacks goes to the others, in order
        spare = quota[form] - min(quota[form], len(forms[form]))
        quota[form] -= spare
        for other in sorted(forms):
            if other != form and spare and len(forms[other]) > quota[other]:
                taken = min(spare, len(forms[other]) - quota[other])
                quota[other] += taken
                spare -= taken
    for form in sorted(forms):
        # the ambiguous ones first (the last part alone would not single the definition out), then the rest
        ambiguous = [q for hard, q in forms[form] if hard]
        plain = [q for hard, q in forms[form] if not hard]
        chosen = rng.sample(ambiguous, min(quota[form], len(ambiguous)))
        out += chosen + rng.sample(plain, min(quota[form] - len(chosen), len(plain)))
    return out


def build(mirror: Path, work: Path, home: Path) -> dict[str, list[dict]]:
    sets = {}
    for name in SOURCES:
        tree = checkout(name, mirror, work)
        sets[name] = queries_for(name, tree, definitions(tree, home))
        print(f"  {name}: {len(sets[name])} queries", file=sys.stderr, flush=True)
    (work / "queries.json").write_text(json.dumps(sets, indent=1))
    return sets


def first_hit(results: list, target: dict) -> int | None:
    for rank, hit in enumerate(results[:10], start=1):
        if hit.path == target["path"] and hit.line_start <= target["end_line"] and hit.line_end >= target["start_line"]:
            return rank
    return None


def run(work: Path, home: Path, stage: str, model: str | None = None) -> dict:
    from knowledge.kb import KnowledgeBase

    sets = json.loads((work / "queries.json").read_text())
    rows: dict[str, list[dict]] = {}
    for name, queries in sets.items():
        overrides: dict[str, object] = {"home": str(home), "fill": stage == "complete"}
        if model:
            overrides["model"] = model
        kb = KnowledgeBase.open(work / "trees" / name, overrides=overrides)
        started = time.monotonic()
        kb.reindex_changes(embed=stage == "complete")
        print(f"  {name}: indexed in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        for q in queries:
            results = kb.search(q["query"], kind="code").results
            rank = first_hit(list(results), q["target"])
            top = results[0] if results else None
            found = f"{top.path}:{top.line_start}" if top is not None else None
            rows.setdefault(name, []).append({**q, "rank": rank, "top": found})
    return summarize(rows)


def summarize(rows: dict[str, list[dict]]) -> dict:
    by_form: dict[str, list[int]] = defaultdict(list)
    by_repo = {}
    for name, found in rows.items():
        by_repo[name] = {"queries": len(found), "first": sum(r["rank"] == 1 for r in found) / len(found)}
        for r in found:
            by_form[r["form"]].append(r["rank"] == 1)
    every = [r for found in rows.values() for r in found]
    return {
        "queries": len(every),
        "first": sum(r["rank"] == 1 for r in every) / len(every),
        "top3": sum(r["rank"] is not None and r["rank"] <= 3 for r in every) / len(every),
        "repos": by_repo,
        "forms": {form: {"queries": len(v), "first": sum(v) / len(v)} for form, v in sorted(by_form.items())},
        "misses": [{**r, "repo": name} for name, found in rows.items() for r in found if r["rank"] != 1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/symbol-set"))
    parser.add_argument("--home", type=Path, default=None, help="model and vector cache (default: WORK/home)")
    parser.add_argument("--stage", choices=["static", "complete"], default="static")
    parser.add_argument("--model", default=None, help="the model (default: the product's)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    home = args.home or args.work / "home"
    if not (home / "models").exists():
        home.mkdir(parents=True, exist_ok=True)
        (home / "models").symlink_to(Path.home() / ".cache" / "knowledge" / "models")
    if not (args.work / "queries.json").exists():
        build(args.mirror, args.work, home)
    result = run(args.work, home, args.stage, args.model)
    result["stage"], result["model"] = args.stage, args.model or "default"
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "misses"}, indent=1))
    for miss in result["misses"][:40]:
        print(f"  miss {miss['repo']}: {miss['query']!r} -> {miss['top']} (want {miss['target']['path']}:"
              f"{miss['target']['start_line']}, rank {miss['rank']})")  # fmt: skip


if __name__ == "__main__":
    main()
