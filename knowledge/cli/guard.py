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
    """Turns our errors into one-line messages and unexpected ones into a log file plus exit 3."""

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
