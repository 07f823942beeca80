"""Pure rendering of responses, reports and status as text or JSON-ready dicts (shared by CLI and server)."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

from ..records import (
    FileProblem,
    FindabilityReport,
    IndexReport,
    Reference,
    SearchHit,
    SearchResponse,
    SourceText,
)
from .base import SEARCH_FORMAT_VERSION, escaped_json, in_test_folder, shown

if TYPE_CHECKING:
    from ..records import JsonObject

# Always printed, null or not: what every result has (`score` null: no vector yet; `content` null: metadata only)
_CORE_KEYS = frozenset({"id", "path", "kind", "score", "title", "description", "section", "line_start", "line_end",
                        "content", "tokens"})  # fmt: skip


# A result thinned to fit the budget: where it is and what it is (`show PATH:START-END` reads it; its place: its rank)
_THIN_KEYS = frozenset({"path", "line_start", "line_end", "symbol", "section", "thin", "source"})


ECHO_CHARS = 200  # of a long question, what the answer echoes: the echo must not spend the budget on itself


def echoed(query: str) -> str:
    return query if len(query) <= ECHO_CHARS else query[:ECHO_CHARS].rstrip() + " …"


def search_to_dict(response: SearchResponse) -> JsonObject:
    """The versioned JSON schema of docs/json-output.md. The commit every result was indexed at is said once."""
    commits = {hit.commit for hit in response.results}
    shared = commits.pop() if len(commits) == 1 else None
    return {
        "format_version": SEARCH_FORMAT_VERSION,
        "query": echoed(response.query),
        **({"query_chars": len(response.query)} if len(response.query) > ECHO_CHARS else {}),
        "model": response.model,
        "threshold": response.threshold,
        "full_threshold": response.full_threshold,
        "budget": response.budget,
        "tokens_used": response.tokens_used,
        "omitted": response.omitted,
        "over_budget": response.over_budget,
        "dense_coverage": response.dense_coverage,
        "static_coverage": response.static_coverage,
        **({"commit": shared} if shared else {}),
        **({"source": response.source} if response.source else {}),
        "results": [hit_to_dict(replace(hit, commit=None) if shared else hit) for hit in response.results],
    }


def hit_to_dict(hit: SearchHit) -> JsonObject:
    """A result as JSON: the core keys always, the others only when set (a null costs an agent tokens, says nothing);
    a result thinned to fit the budget, its line alone (docs/json-output.md)."""
    if hit.thin:
        line = {key: value for key, value in asdict(hit).items() if key in _THIN_KEYS and value is not None}
        if hit.kind == "code":
            del line["section"]  # "function", "class": the symbol says which
        return line
    return {
        key: value
        for key, value in asdict(hit).items()
        if key != "thin" and (key in _CORE_KEYS or (value is not None and not (key == "stale" and value is False)))
    }


def response_to_text(response: SearchResponse, files_only: bool = False, exact: bool = False) -> str:
    """What `knowledge search` prints: hits, one line per file (`--files`) or one per occurrence (`--exact`)."""
    if exact:
        return occurrences_to_text(response)
    return files_to_text(response) if files_only else search_to_text(response)


def search_json(response: SearchResponse) -> str:
    """What `knowledge search --json` prints (indented: the widest of the JSON forms the budget must cover)."""
    return escaped_json(json.dumps(search_to_dict(response), ensure_ascii=False, indent=2))


def hit_json(hit: SearchHit) -> str:
    return escaped_json(json.dumps(hit_to_dict(hit), ensure_ascii=False, indent=2))


def hit_text(hit: SearchHit) -> str:
    return "\n".join(_hit_lines(hit)) + "\n"


def _why_left_out(response: SearchResponse) -> str:
    beyond_k = response.omitted - response.over_budget
    why = [f"{beyond_k} beyond -k"] if beyond_k else []
    if response.over_budget:
        why.append(f"{response.over_budget} over the budget: --budget N for more, --metadata-only for lines only")
    return "; ".join(why)


def search_to_text(response: SearchResponse) -> str:
    source = f" in {response.source}" if response.source else ""
    if not response.results:
        return (
            f"No results{source} at or above similarity {response.threshold:.2f} for: {shown(echoed(response.query))}\n"
        )
    out: list[str] = [f"from {response.source}:\n"] if response.source else []
    for hit in response.results:
        out.extend(_hit_lines(hit))
    tail = f"{response.tokens_used}/{response.budget} tokens"
    if response.omitted:
        tail += f", {response.omitted} more result(s) left out ({_why_left_out(response)})"
    if response.dense_coverage < 1:
        tail += f"; {response.dense_coverage:.0%} embedded so far"
        if response.static_coverage:
            tail += f", {response.static_coverage:.0%} ranked by the static first stage meanwhile"
    out.append(tail)
    return "\n".join(out) + "\n"


def _hit_lines(hit: SearchHit) -> list[str]:
    out: list[str] = []
    if hit.kind == "code":
        what = " ".join(part for part in (hit.symbol_kind, hit.title) if part) + f" ({hit.language})"
    else:
        what = hit.section or hit.title
    via = f"  [{hit.neighbour_of}]" if hit.neighbour_of else ""
    # The relevance the results are ordered by (it falls down the list); a neighbour added by --expand has none.
    relevance = hit.relevance if hit.relevance is not None else hit.score
    score = "  -  " if relevance is None else f"{relevance:.3f}"
    lexical = "  [no vector yet: lexical or static-stage match]" if hit.score is None else ""
    stale = "  [stale: file changed since indexing]" if hit.stale else ""
    where = f"{shown(hit.source)}: " if hit.source else ""
    out.append(
        f"[{score}] {where}{shown(hit.path)}:{hit.line_start}-{hit.line_end}  {shown(what)}{via}{lexical}{stale}"
    )
    if hit.thin:
        return [*out, ""]
    if hit.drift:
        out.append(f"        drift: {hit.drift}")
    for label, refs, more in (("calls", hit.calls, hit.more_calls), ("called by", hit.called_by, hit.more_callers)):
        if refs:
            rest = len(refs) - 5 + (more or 0)
            out.append(
                f"        {label}: "
                + ", ".join(_reference(r) for r in refs[:5])
                + (f" and {rest} more" if rest > 0 else "")
            )
    if hit.description:
        out.append(f"        {hit.description}")
    if hit.explain is not None:
        out.append("        " + ", ".join(f"{name} {value}" for name, value in hit.explain.items()))
    if hit.content is not None:
        out.extend("    " + line for line in hit.content.splitlines())
    else:
        out.append("        (metadata only)")
    out.append("")
    return out


def occurrences_to_text(response: SearchResponse) -> str:
    """`search --exact`: `path:line: text` for each matching line as `grep -n` prints it; with context, the lines
    around it as `path-line- text` and `--` between groups, each line once."""
    matches = {(hit.path, hit.match_line or hit.line_start) for hit in response.results}
    out: list[str] = []
    printed: set[tuple[str, int]] = set()
    last: tuple[str, int] | None = None
    for hit in response.results:
        if hit.content is None:
            out.append(f"{shown(hit.path)}:{hit.match_line or hit.line_start}:")
            continue
        for number, text in enumerate(hit.content.split("\n"), start=hit.line_start):
            if (hit.path, number) in printed:
                continue
            if last is not None and hit.line_end > hit.line_start and last != (hit.path, number - 1):
                out.append("--")
            printed.add((hit.path, number))
            last = (hit.path, number)
            mark = ":" if (hit.path, number) in matches else "-"
            out.append(f"{shown(hit.path)}{mark}{number}{mark} {text}")
    if response.omitted:
        out.append(f"… {response.omitted} more occurrence(s): raise -k or --budget")
    return "\n".join(out) + ("\n" if out else "")


def files_to_text(response: SearchResponse) -> str:
    """`search --files`: the matching files, best first, one path per line (like `grep -l`)."""
    return "".join(f"{shown(hit.path)}\n" for hit in response.results)


def report_to_dict(report: IndexReport) -> JsonObject:
    data = asdict(report)
    data["skipped"] = [str(p) for p in report.skipped]
    data["warnings"] = [str(p) for p in report.warnings]
    return data


def report_summary(report: IndexReport) -> str:
    line = (
        f"indexed {report.files_indexed} files, {report.chunks_total} chunks "
        f"({report.chunks_embedded} embedded, {report.chunks_reused} from cache) in {report.seconds:.1f}s"
    )
    if report.chunks_pending:
        line += f"; {report.chunks_pending} chunks wait for vectors ({report.dense_coverage:.0%} embedded)"
    if report.files_removed:
        line += f"; {report.files_removed} removed"
    if report.skipped:
        line += f"; {len(report.skipped)} skipped"
    # Secrets in tests and fixtures are there on purpose: `status` counts them, the summary of every run does not
    redactions = [p for p in report.warnings if p.is_redaction and not in_test_folder(p.path)]
    in_tests = sum(p.is_redaction and in_test_folder(p.path) for p in report.warnings)
    if redactions:
        files = len({p.path for p in redactions})
        line += f"; {len(redactions)} secret(s) redacted in {files} file(s)"
        line += f", {in_tests} more in tests and fixtures" if in_tests else ""
        line += " (`knowledge status --verbose` lists them)"
    return line


def report_problems(report: IndexReport) -> list[FileProblem]:
    """What a reindex prints one line each for: skipped files and warnings, not redactions (a count in the summary)."""
    return [*report.skipped, *(p for p in report.warnings if not p.is_redaction)]


def source_to_dict(source: SourceText) -> JsonObject:
    return {"format_version": SEARCH_FORMAT_VERSION, **asdict(source), "lines": list(source.lines)}


def source_to_text(source: SourceText) -> str:
    width = len(str(source.line_end))
    return "".join(f"{n:>{width}}  {line}\n" for n, line in enumerate(source.lines, start=source.line_start))


def hits_to_dict(hits: list[SearchHit]) -> JsonObject:
    return {"format_version": SEARCH_FORMAT_VERSION, "results": [hit_to_dict(hit) for hit in hits]}


def _reference(ref: Reference) -> str:
    """`Command.make_context (src/click/core.py:1362, by name)`: a caller at its first call site, else where it is."""
    guess = ", by name" if ref.get("resolved") == "name" else ""
    sites = ref.get("sites")
    line = sites[0] if isinstance(sites, list) and sites else ref["line"]
    return f"{ref['name']} ({ref['path']}:{line}{guess})"


def hits_to_text(hits: list[SearchHit]) -> str:
    """One line per doc section: where it is and the reference that ties it to what was asked."""
    if not hits:
        return "No doc section refers to it.\n"
    return "".join(
        f"{shown(hit.path)}:{hit.line_start}-{hit.line_end}  {shown(hit.section or hit.title)}  ({hit.reference})\n"
        for hit in hits
    )


def findability_to_dict(report: FindabilityReport) -> JsonObject:
    return {
        "format_version": SEARCH_FORMAT_VERSION,
        "description": asdict(report.description),
        "title": asdict(report.title),
        "seconds": report.seconds,
        "lost": [asdict(p) for p in report.lost],
        "probes": [asdict(p) for p in report.probes],
    }


def findability_to_text(report: FindabilityReport) -> str:
    out = []
    for name, figures in (("descriptions", report.description), ("section titles", report.title)):
        if not figures.queries:  # nothing to ask with: no figure, not a 0.000 that reads like a failing score
            out.append(f"{name:15}    0 queries  n/a (no doc has one)")
            continue
        out.append(
            f"{name:15} {figures.queries:4} queries  recall@1 {figures.recall_at_1:.3f}  "
            f"recall@5 {figures.recall_at_5:.3f}  MRR {figures.mrr:.3f}"
        )
    if report.lost:
        out.append(f"{len(report.lost)} doc(s) their own description does not find first:")
        for probe in report.lost:
            where = f"rank {probe.rank}" if probe.rank else "not in the top 10"
            out.append(f"  {probe.doc} ({where}); above it: {', '.join(probe.outranked_by) or '-'}")
            out.append(f"      description: {probe.query}")
    out.append(f"{report.seconds:.1f} s")
    return "\n".join(out) + "\n"


# Drift's renderers live in their own module, imported from here as the rest are
from .drift import drift_to_dict as drift_to_dict  # noqa: E402
from .drift import drift_to_github as drift_to_github  # noqa: E402
from .drift import drift_to_sarif as drift_to_sarif  # noqa: E402
from .drift import drift_to_text as drift_to_text  # noqa: E402
from .status import status_from_dict as status_from_dict  # noqa: E402
from .status import status_to_dict as status_to_dict  # noqa: E402
from .status import status_to_text as status_to_text  # noqa: E402
