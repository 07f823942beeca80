"""Read a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) in place."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "bench-data"


@dataclass(frozen=True)
class BeirSet:
    name: str
    corpus: dict[str, tuple[str, str]]  # id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, set[str]]


def load(folder: Path, split: str = "test") -> BeirSet:
    corpus: dict[str, tuple[str, str]] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            corpus[str(row["_id"])] = (row.get("title") or "", row.get("text") or "")
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            queries[str(row["_id"])] = row["text"]
    qrels: dict[str, set[str]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, set()).add(did)
    return BeirSet(folder.name, corpus, {q: queries[q] for q in qrels}, qrels)


def mteb_text(title: str, text: str) -> str:
    """How MTEB embeds a BEIR document for these models: `(title + " " + text).strip()`."""
    return f"{title} {text}".strip()
