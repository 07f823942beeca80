"""What `knowledge locate` prints: files best first, each with the evidence that put it there and its entities; as
text, or as the `--json` schema (docs/json-output.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..records import LOCATE_SIGNALS
from .base import SEARCH_FORMAT_VERSION, clip, escaped_json, shown

if TYPE_CHECKING:
    from ..records import JsonObject, LocatedFile, LocateResponse


def located_to_dict(file: LocatedFile) -> JsonObject:
    return {
        "path": file.path,
        "score": file.score,
        "evidence": [{"signal": e.signal, **({"detail": e.detail} if e.detail else {})} for e in file.evidence],
        "entities": [
            {"id": e.id, "name": e.name, "line_start": e.line_start, "line_end": e.line_end} for e in file.entities
        ],
    }


def located_json(file: LocatedFile) -> str:
    return escaped_json(json.dumps(located_to_dict(file), ensure_ascii=False, indent=2))


def locate_to_dict(response: LocateResponse) -> JsonObject:
    """The question is not echoed (a pasted issue would spend the budget on itself): its length is."""
    return {
        "format_version": SEARCH_FORMAT_VERSION,
        "query_chars": response.query_chars,
        "budget": response.budget,
        "tokens_used": response.tokens_used,
        "omitted": response.omitted,
        **({"left_out_chars": response.left_out_chars} if response.left_out_chars else {}),
        **({"confidence": response.confidence} if response.confidence else {}),
        "files": [located_to_dict(file) for file in response.files],
    }


QUOTED = {signal.name for signal in LOCATE_SIGNALS if signal.quoted}


def _evidence(signal: str, detail: str) -> str:
    if not detail:
        return signal
    text = shown(clip(detail, 60))
    return f'{signal} "{text}"' if signal in QUOTED else f"{signal} {text}"


def located_text(file: LocatedFile) -> str:
    signals = "; ".join(_evidence(e.signal, e.detail) for e in file.evidence[:6])
    lines = [f"{shown(file.path)}  ({signals})"]
    lines += [f"    {e.line_start}-{e.line_end}  {shown(e.name)}" for e in file.entities]
    return "\n".join(lines) + "\n"


def locate_to_text(response: LocateResponse) -> str:
    said = left_out_line(response)
    if not response.files:
        return said + "No file to suggest: nothing in the index shares this text's names, words or meaning.\n"
    tail = f"{response.tokens_used}/{response.budget} tokens"
    if response.omitted:
        tail += f", {response.omitted} more file(s) over the budget: --budget N for more"
    return said + _sureness(response) + "".join(located_text(file) for file in response.files) + tail + "\n"


def _sureness(response: LocateResponse) -> str:
    """A line first when the answer is unsure: nothing the text names found the first file."""
    if response.confidence != "low":
        return ""
    return "low confidence: nothing the text names (a frame, a path, a name, a message) is here; only its words\n"


def left_out_line(response: LocateResponse) -> str:
    if not response.left_out_chars:
        return ""
    read = response.query_chars - response.left_out_chars
    return (
        f"read {read:,} of the text's {response.query_chars:,} characters, its head and its tail: "
        f"{response.left_out_chars:,} in the middle left out\n"
    )
