"""Progress on stderr: a bar per stage on a terminal, a plain line every few seconds otherwise, nothing if quiet."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

from ..records import Progress

PLAIN_PROGRESS_SECONDS = 5.0


class ProgressPrinter:
    """Progress on stderr: a bar per stage on a terminal, a plain line every few seconds otherwise, nothing if quiet."""

    def __init__(
        self, enabled: bool, terminal: bool | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.enabled = enabled
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self._clock = clock
        self._bar: Any = None
        self._stage = ""
        self._done = 0
        self._last_line = 0.0

    def __call__(self, progress: Progress) -> None:
        if not self.enabled:
            return
        if not self.terminal:
            self._plain(progress)
            return
        if progress.stage != self._stage:
            self.close()
            self._stage, self._done = progress.stage, 0
            self._bar = click.progressbar(
                length=progress.total, label=f"{progress.stage:<16}", file=sys.stderr, show_pos=True, show_eta=False
            )
            self._bar.__enter__()
        self._bar.update(progress.done - self._done)
        self._done = progress.done
        if progress.eta_seconds is not None:
            self._bar.label = f"{progress.stage:<16} {duration(progress.eta_seconds)} left"

    def _plain(self, progress: Progress) -> None:
        now = self._clock()
        first = progress.stage != self._stage
        finished = progress.done >= progress.total
        if not (first or finished or now - self._last_line >= PLAIN_PROGRESS_SECONDS):
            return
        self._stage, self._last_line = progress.stage, now
        share = progress.done / progress.total if progress.total else 1.0
        eta = f", about {duration(progress.eta_seconds)} left" if progress.eta_seconds is not None else ""
        click.echo(f"{progress.stage}: {progress.done}/{progress.total} ({share:.0%}){eta}", err=True)

    def step(self, message: str) -> None:
        if self.enabled:
            click.echo(f"model: {message}", err=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        self._stage = ""


def duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def interactive(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()
