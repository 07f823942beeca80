"""How the CLI fails: our errors as one line, storage and database refusals as one line each, anything unexpected as
a log file plus exit 3, Ctrl-C as 130 and a closed pipe as 141."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from .. import admin
from ..errors import KnowledgeError

EXIT_PROBLEMS = 1
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what grep and cat report


class KnowledgeGroup(click.Group):
    """Turns our errors into one-line messages and unexpected ones into a log file plus exit 3, and takes the
    group's own options after the command too (`knowledge search q --model X`), where the command has none of
    that name."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = self._global_options_first(ctx, args)
        return super().parse_args(ctx, args)

    def _global_options_first(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {
            name: not param.is_flag for param in self.params if isinstance(param, click.Option) for name in param.opts
        }
        position, command = 0, None
        while position < len(args):  # the command: the first word that is not one of the group's options
            word = args[position]
            if word == "--" or not word.startswith("-"):
                command = self.commands.get(word) if word != "--" else None
                break
            position += 1 + (takes_value.get(word, False) and "=" not in word)
        if command is None:
            return args
        owned = _option_names(command)
        head, tail, moved = args[: position + 1], args[position + 1 :], []
        kept: list[str] = []
        index = 0
        while index < len(tail):
            word = tail[index]
            if word == "--":
                kept += tail[index:]
                break
            name = word.split("=", 1)[0]
            if name.startswith("--") and name in takes_value and name not in owned:
                value = takes_value[name] and "=" not in word and index + 1 < len(tail)
                moved += tail[index : index + 1 + value]
                index += 1 + value
                continue
            kept.append(word)
            index += 1
        return [*moved, *head, *kept]

    def invoke(self, ctx: click.Context) -> Any:  # noqa: ANN401
        try:
            return super().invoke(ctx)
        except KnowledgeError as exc:
            raise click.ClickException(str(exc)) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            # The reader went away (`knowledge lint | head`): stop quietly, as grep does.
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(EXIT_BROKEN_PIPE)
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            storage = storage_problem(exc)
            if storage is not None:
                raise click.ClickException(storage) from exc
            click.echo(f"Error: internal error: {type(exc).__name__}: {exc}{_log_traceback(ctx)}", err=True)
            ctx.exit(EXIT_INTERNAL)


def _log_traceback(ctx: click.Context) -> str:
    """Writes the traceback under .knowledge/logs/; '; details in PATH', or '' when it cannot be written."""
    try:
        root = admin.repository_root(Path(ctx.find_root().obj["path"]))
    except Exception:  # no git, unreadable folder: the message still goes out
        root = Path.cwd()
    try:
        log = admin.write_log(root, "last-error.log", traceback.format_exc())
    except (OSError, KnowledgeError):
        return ""
    return f"; details in {log}"


def _option_names(command: click.Command) -> set[str]:
    """Every option name the command, or any command under it, defines."""
    names = {name for param in command.params for name in getattr(param, "opts", ())}
    if isinstance(command, click.Group):
        for inner in command.commands.values():
            names |= _option_names(inner)
    return names


_STORAGE_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}
# "cannot rollback": what SQLite says when a transaction was already torn down by a full disk
_SQLITE_STORAGE = (
    "readonly database",
    "disk is full",
    "unable to open database file",
    "disk i/o error",
    "cannot rollback",
)


def storage_problem(exc: BaseException) -> str | None:
    """One line for a write the file system refused (read-only, permission, disk full), else None."""
    import sqlite3

    if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot write{where}: {exc.strerror or exc}"
    if isinstance(exc, sqlite3.OperationalError) and any(s in str(exc).lower() for s in _SQLITE_STORAGE):
        return f"cannot write the index under .knowledge/: {exc} (read-only, no permission or disk full?)"
    return database_problem(exc)


def database_problem(exc: BaseException) -> str | None:
    """One line for a shared store (PostgreSQL) that refused a statement or went away, else None."""
    if not type(exc).__module__.startswith("psycopg"):
        return None
    said = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if type(exc).__name__ == "InsufficientPrivilege":
        return (
            f"the shared store refused this role: {said}; the database owner grants it with "
            "`knowledge teams setup --role ROLE` (docs/teams.md, Access)"
        )
    if type(exc).__name__ in {"OperationalError", "InterfaceError", "AdminShutdown"}:
        return (
            f"the shared store went away: {said}; nothing written by this pass is visible, the index is as the last "
            "complete pass left it: rerun when the database is back"
        )
    return None
