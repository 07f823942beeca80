"""`knowledge locate`: an issue or task text in (an argument, `-` for stdin, or a file), the files to change out."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

import click

from ..api.request import LocateRequest
from .context import ask, emit, open_kb, remote_option
from .options import request_options, switched_to_fields


def _issue_text(text: str | None, from_file: Path | None) -> str:
    if from_file is not None and text is not None:
        raise click.UsageError("give the text or --file, not both")
    if from_file is not None:
        try:
            return from_file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise click.UsageError(f"{from_file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise click.UsageError(f"{from_file}: cannot read ({exc.strerror or exc})") from None
    if text is None:
        raise click.UsageError("give the issue text, - to read it from stdin, or --file PATH")
    if text == "-":
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise click.UsageError(f"stdin: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text


@click.command("locate")
@click.argument("text", required=False)
@partial(request_options, request=LocateRequest)
@click.option("--file", "from_file", type=click.Path(dir_okay=False, path_type=Path), help="Read the text from a file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: a `files` list with path, evidence, entities.")
@remote_option
@click.pass_context
def locate_command(
    ctx: click.Context,
    /,
    text: str | None,
    from_file: Path | None,
    as_json: bool,
    remote: str | None,
    **asked: Any,  # noqa: ANN401 - the request's own options, declared once in api/request.py
) -> None:
    """Where to change for an issue or task: the files most likely to need it, best first, each with the evidence
    that put it there (a traceback frame, a named symbol and what it calls, an error message, the words, the
    meaning, past commits) and its functions, classes or sections to read first. The first line says so when the
    answer is unsure (only the words and meaning point there).

    \b
    knowledge locate "Blueprint names with a dot should raise an error"
    gh issue view 123 --json title,body --jq '.title + "\\n" + .body' | knowledge locate -
    knowledge locate --file issue.md --json -k 5 --exclude 'tests/**'
    knowledge locate --file traceback.txt --scope all
    """
    query = _issue_text(text, from_file)
    if not query.strip():
        raise click.UsageError("the issue text is empty: say what should change")
    switched_to_fields(asked, LocateRequest)
    fields = {name: value for name, value in asked.items() if value is not None}
    request = LocateRequest(query=query, format="json" if as_json else "text", **fields)
    data = ask(ctx, "locate", request, remote=remote, kb=lambda: open_kb(ctx))
    emit(data, as_json, lambda: data["text"])
