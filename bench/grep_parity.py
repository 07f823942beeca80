"""grep parity of `search --exact`: for identifiers of a real repository, the lines `knowledge` lists equal the lines
`git grep -n -w` finds in the same (indexed) files.

    python bench/grep_parity.py /path/to/checkout [--names 40]

The checkout is indexed without vectors (exact mode needs none). Names: the most frequent identifiers, plus the
attribute-only ones (`x.name` but never `def name`/`name =`), where a term-based index goes wrong.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge.api.request import SearchRequest
from knowledge.kb import KnowledgeBase

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("--names", type=int, default=40)
    args = parser.parse_args()
    kb = KnowledgeBase.open(args.root)
    if not kb.engine.exists("code"):
        kb.reindex_all(embed=False)
    files = sorted({path for kind in ("docs", "code") for path in kb.engine.open(kind).files()})
    counts: Counter[str] = Counter()
    attribute_only: Counter[str] = Counter()
    for path in files:
        text = (args.root / path).read_text(errors="replace")
        counts.update(WORD.findall(text))
        attribute_only.update(re.findall(r"\.([A-Za-z_][A-Za-z0-9_]{3,})\(", text))
    names = [n for n, _ in counts.most_common(args.names // 2)]
    names += [n for n, _ in attribute_only.most_common(args.names) if n not in names][: args.names - len(names)]
    equal = 0
    for name in names:
        grep = subprocess.run(
            ["git", "grep", "-n", "-I", "-w", "-F", name, "--", *files],
            cwd=args.root,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.splitlines()
        expected = {tuple(line.split(":", 2)[:2]) for line in grep}
        response = kb.search(SearchRequest(name, exact=True, k=100, budget=50_000, metadata_only=True))
        ours = {(hit.path, str(hit.match_line)) for hit in response.results}
        complete = len(ours) + response.omitted == len(expected)
        shown_right = ours <= expected
        equal += complete and shown_right
        print(f"{name:32} grep {len(expected):5}  knowledge {len(ours) + response.omitted:5}"
              f"{'' if complete and shown_right else '  DIFFERENT'}")  # fmt: skip
    print(f"{equal}/{len(names)} identifiers: same lines as git grep -n -w over {len(files)} indexed files")


if __name__ == "__main__":
    main()
