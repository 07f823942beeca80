"""docs/cli.md, made from the commands themselves: every command's and group's `--help`, as click prints it at a fixed
width, so the reference cannot say what the CLI does not (tests/test_docs_true.py checks the file is what this makes).

    python -m knowledge.cli.reference > docs/cli.md     # after changing a command, an option or a help text
"""

from __future__ import annotations

import sys

import click

WIDTH = 100
HEADER = """---
title: CLI reference
description: Every knowledge command's --help, made from the commands themselves (python -m knowledge.cli.reference).
---
# CLI reference

Made by `python -m knowledge.cli.reference > docs/cli.md` from the commands themselves; a test fails when it
differs from what they print. [usage.md](usage.md) says how they fit together.
"""


def _walk(command: click.Command, path: list[str], parent: click.Context | None) -> list[tuple[list[str], str]]:
    """(command path, its help) of `command` and every command under it, in the order `--help` lists them."""
    context = click.Context(command, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH)
    found = [(path, command.get_help(context))]
    if isinstance(command, click.Group):
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None and not sub.hidden:
                found += _walk(sub, [*path, name], context)
    return found


def reference() -> str:
    from . import cli

    sections = [HEADER]
    for path, text in _walk(cli, ["knowledge"], None):
        sections.append(f"## {' '.join(path)}\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(sections)


if __name__ == "__main__":
    sys.stdout.write(reference())
