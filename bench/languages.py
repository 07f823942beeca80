"""One real repository per added language, indexed without the model (phase one): no crash, entities found.

    python bench/languages.py --mirror /work/.mirror > bench/results/languages.json

Each repository is a local mirror of a public GitHub project (bare git directory `owner+name/repo`, as `fetch` leaves
it), exported at its newest commit into a temp folder outside this tree; nothing of it is committed here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge.chunking.languages import language_of
from knowledge.kb import KnowledgeBase
from knowledge.store.local import LocalStore

REPOS = {  # language -> owner+name
    "ruby": "rack+rack",
    "php": "slimphp+Slim",
    "csharp": "App-vNext+Polly",
    "kotlin": "JakeWharton+timber",
    "swift": "Alamofire+Alamofire",
    "scala": "scopt+scopt",
    "bash": "nvm-sh+nvm",
    "lua": "kikito+inspect.lua",
    "haskell": "haskell+aeson",
    "elixir": "elixir-plug+plug",
    "zig": "Hejsil+zig-clap",
}


def export(gitdir: Path, dest: Path) -> str:
    commit = subprocess.run(["git", "--git-dir", str(gitdir), "rev-parse", "HEAD"], capture_output=True, text=True)
    archive = subprocess.run(["git", "--git-dir", str(gitdir), "archive", "HEAD"], check=True, capture_output=True)
    dest.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@e", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return commit.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for language, name in REPOS.items():
            gitdir = args.mirror / name / "repo"
            if (gitdir / ".git").is_dir():
                gitdir = gitdir / ".git"
            root = Path(tmp) / name
            commit = export(gitdir, root)
            started = time.monotonic()
            report = KnowledgeBase.open(root).reindex_all(embed=False)
            store = LocalStore.open(root, "code")
            chunks = [c for c in store.all_chunks().values() if (spec := language_of(c.path)) and spec.name == language]
            out[language] = {
                "repository": name.replace("+", "/"),
                "commit": commit,
                "files": len({c.path for c in chunks}),
                "chunks": len(chunks),
                "entities": len([c for c in chunks if c.symbol]),
                "kinds": dict(Counter(c.symbol_kind for c in chunks if c.symbol).most_common(6)),
                "with_calls": len([c for c in chunks if c.calls]),
                "syntax_fallbacks": len([p for p in report.warnings if "syntax error" in p.problem]),
                "skipped": len(report.skipped),
                "seconds": round(time.monotonic() - started, 1),
            }
            store.close()
            print(json.dumps({language: out[language]}), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
