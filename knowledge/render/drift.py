"""Drift as text, JSON, GitHub workflow annotations and SARIF (`knowledge drift`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from ..records import DriftItem
from .base import SEARCH_FORMAT_VERSION, clip

if TYPE_CHECKING:
    from ..records import JsonObject


def drift_to_dict(items: list[DriftItem]) -> JsonObject:
    return {
        "format_version": SEARCH_FORMAT_VERSION,
        "broken": sum(1 for i in items if i.status == "broken" and not i.history),
        "changed": sum(1 for i in items if i.status == "changed" and not i.history),
        "history": sum(1 for i in items if i.history),
        "items": [{**asdict(i), "commits": [{"commit": c, "subject": s} for c, s in i.commits]} for i in items],
    }


def _workflow_escape(text: str, property_value: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_value else text


def drift_to_github(items: list[DriftItem]) -> str:
    """GitHub Actions workflow commands: an annotation on the doc's lines of the pull request, an error for a broken
    reference, a warning for code that changed after its doc."""
    out = []
    for item in items:
        level = "notice" if item.history else "error" if item.status == "broken" else "warning"
        where = f"file={_workflow_escape(item.path, True)},line={item.line_start},endLine={item.line_end}"
        title = _workflow_escape(f"knowledge drift: {item.status} reference {item.reference}", True)
        out.append(f"::{level} {where},title={title}::{_workflow_escape(item.summary)}")
    return "".join(line + "\n" for line in out)


def drift_to_sarif(items: list[DriftItem]) -> JsonObject:
    """SARIF 2.1.0, for code-scanning uploads: one result per drifted reference, located on the doc's lines."""
    rules = {
        "broken": ("broken-reference", "A doc refers to a file or entity that moved, was renamed or was removed."),
        "changed": ("changed-reference", "The code a doc refers to changed after the doc section last changed."),
    }
    return {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "knowledge drift",
                        "rules": [{"id": rule, "shortDescription": {"text": text}} for rule, text in rules.values()],
                    }
                },
                "results": [
                    {
                        "ruleId": rules[item.status][0],
                        "level": "note" if item.history else "error" if item.status == "broken" else "warning",
                        "message": {"text": f"{item.reference}: {item.summary}"},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": item.path},
                                    "region": {"startLine": item.line_start, "endLine": item.line_end},
                                }
                            }
                        ],
                    }
                    for item in items
                ],
            }
        ],
    }


def drift_to_text(items: list[DriftItem]) -> str:
    if not items:
        return "No drift: every doc reference is where the docs say, and unchanged since the docs were.\n"
    out = []
    current = [i for i in items if not i.history]
    history = [i for i in items if i.history]
    for heading, group in (
        ("", current),
        ("history (changelogs name old APIs by design; they fail nothing):", history),
    ):
        if heading and group:
            out.append(heading)
        for item in group:
            out.append(f"{item.status:7}  {item.path}:{item.line_start}-{item.line_end}  {item.section}")
            out.append(f"         {item.summary}")
            for commit, subject in item.commits[:5]:
                out.append(f"         {commit[:10]} {clip(subject, 90)}")
    broken = sum(1 for i in current if i.status == "broken")
    tail = f"{broken} broken reference(s), {len(current) - broken} changed since the docs were written"
    out.append(tail + (f"; {len(history)} in changelogs, apart" if history else ""))
    return "\n".join(out) + "\n"
