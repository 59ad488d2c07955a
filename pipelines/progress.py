"""A progress line on stderr for long work: ingest's games and bytes, downloads' files."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def bar(fraction: float, width: int = 20) -> str:
    """Return a bar of `#` filled to `fraction` (0-1), in brackets: `[#####     ]`."""
    return f"[{'#' * int(min(1.0, fraction) * width):<{width}}]"


def format_progress(report: Progress) -> str:
    """Return one line: bytes read of the total with ETA, games per second, games kept."""
    rate = report.games_read / report.seconds if report.seconds > 0 else 0.0
    parts = [f"{_size(report.bytes_read)}"]
    if report.bytes_total:
        fraction = min(1.0, report.bytes_read / report.bytes_total)
        parts = [
            f"{bar(fraction)} {fraction:6.1%}",
            f"{_size(report.bytes_read)}/{_size(report.bytes_total)}",
        ]
        if 0 < fraction < 1:
            eta = report.seconds * (1 - fraction) / fraction
            parts.append(f"ETA {int(eta // 60)}:{int(eta % 60):02d}")
    parts.append(f"{report.games_read:,} games ({rate:,.0f}/s)")
    parts.append(f"{report.games_kept:,} kept")
    return "  ".join(parts)


class ProgressBar:
    """Redraws one progress line on a terminal, or prints a line every few seconds elsewhere.

    Called with an ingest `Progress`; `show` draws any line, so other work (downloads) uses
    the same bar with its own wording. On a terminal the line is redrawn at most every
    `tty_interval` seconds, elsewhere printed at most every `interval` seconds; `force` draws
    it at once (a file finished, a new file started).
    """

    def __init__(
        self, stream: TextIO | None = None, interval: float = 5.0, tty_interval: float = 0.0
    ) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = tty_interval if self.tty else interval
        self._last = float("-inf")
        self._unprinted: str | None = None
        self._open = False  # a line drawn on the terminal and not ended yet

    def __call__(self, report: Progress) -> None:
        self.show(format_progress(report), report.seconds, force=report.done)

    def show(self, line: str, seconds: float, force: bool = False) -> None:
        """Draw a line now, or keep it for later if the last one was drawn too recently."""
        if not force and seconds - self._last < self.interval:
            self._unprinted = line
            return
        self._last = seconds
        self._unprinted = None
        self._write(line)

    def _write(self, line: str) -> None:
        if self.tty:
            self.stream.write("\r" + line + "\x1b[K")
            self._open = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def end_line(self) -> None:
        """End the line drawn on a terminal, so that what is written next starts a line."""
        if self._open:
            self._open = False
            self.stream.write("\n")
            self.stream.flush()

    def close(self) -> None:
        """Draw the last line if it was held back, and end the progress line on a terminal."""
        if self._unprinted:
            self._write(self._unprinted)
        self.end_line()
        self.stream.flush()

    @contextmanager
    def apart_from_logs(self) -> Iterator[ProgressBar]:
        """While in the block, a log record written to a stream first ends the bar's line.

        Applies to the stream handlers of every logger configured when the block starts.
        """
        keep_apart = _EndLineFirst(self)
        handlers = stream_handlers()
        for handler in handlers:
            handler.addFilter(keep_apart)
        try:
            yield self
        finally:
            for handler in handlers:
                handler.removeFilter(keep_apart)


def stream_handlers() -> set[logging.StreamHandler[TextIO]]:
    """Return the handlers of the configured loggers that write log records to a stream."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    return {
        handler
        for logger in loggers
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler)
    }


class _EndLineFirst(logging.Filter):
    """A handler filter that ends a progress bar's open line before the record is written."""

    def __init__(self, bar: ProgressBar) -> None:
        super().__init__()
        self.bar = bar

    def filter(self, record: logging.LogRecord) -> bool:
        self.bar.end_line()
        return True


@dataclass(frozen=True)
class Progress:
    """A progress report: compressed bytes read of the total, games read and kept.

    `done` marks the last report of a run, whose numbers are the run's (its manifest's): it is
    always shown.
    """

    bytes_read: int
    bytes_total: int | None
    games_read: int
    games_kept: int
    seconds: float
    done: bool = False


ProgressCallback = Callable[[Progress], None]


#: The share of a month's build its reading is counted as, in MonthsProgress's bar and ETA.
READ_SHARE = 0.9


class MonthsProgress:
    """One progress line over many months built at once (a backfill), drawn on a ProgressBar:
    months done of all, a bar and ETA over the months (each running month counted by its bytes
    read), and the games read and kept so far. Thread-safe: months report from their threads.
    """

    def __init__(self, shown: ProgressBar, months: int) -> None:
        self.shown = shown
        self.months = months
        self.done: set[str] = set()
        self.latest: dict[str, Progress] = {}
        self.started = time.monotonic()
        self._lock = threading.Lock()

    def month(self, month: str) -> ProgressCallback:
        """Return the progress callback of one month's build."""

        def report(progress: Progress) -> None:
            with self._lock:
                self.latest[month] = progress
                self._draw(force=False)

        return report

    def finished(self, month: str) -> None:
        """Count a month as done (built, up to date or empty)."""
        with self._lock:
            self.done.add(month)
            self._draw(force=True)

    def line(self) -> str:
        """The line as it stands: months, bar, ETA, games and kept."""
        seconds = time.monotonic() - self.started
        running = 0.0  # a month read whole is not done yet: its book is still to build
        for month, report in self.latest.items():
            if month not in self.done and report.bytes_total:
                running += READ_SHARE * min(1.0, report.bytes_read / report.bytes_total)
        fraction = min(1.0, (len(self.done) + running) / self.months) if self.months else 1.0
        parts = [f"{bar(fraction)} {len(self.done)} of {self.months} months"]
        if 0 < fraction < 1:
            eta = seconds * (1 - fraction) / fraction
            parts.append(f"ETA {int(eta // 60)}:{int(eta % 60):02d}")
        games = sum(report.games_read for report in self.latest.values())
        kept = sum(report.games_kept for report in self.latest.values())
        rate = games / seconds if seconds > 0 else 0.0
        parts.append(f"{games:,} games ({rate:,.0f}/s)")
        parts.append(f"{kept:,} kept")
        return "  ".join(parts)

    def _draw(self, *, force: bool) -> None:
        self.shown.show(self.line(), time.monotonic() - self.started, force=force)


@dataclass(frozen=True)
class ReadProgress:
    """A progress report of a file read through: its bytes read of the total, records read.

    `done` marks the last report of the read (always shown).
    """

    bytes_read: int
    bytes_total: int
    records: int
    seconds: float
    done: bool = False


ReadCallback = Callable[[ReadProgress], None]


def format_read(report: ReadProgress) -> str:
    """Return one line: a bar over the file's bytes with ETA, records and their rate."""
    fraction = min(1.0, report.bytes_read / report.bytes_total) if report.bytes_total else 1.0
    parts = [
        f"{bar(fraction)} {fraction:6.1%}",
        f"{_size(report.bytes_read)}/{_size(report.bytes_total)}",
    ]
    if 0 < fraction < 1:
        eta = report.seconds * (1 - fraction) / fraction
        parts.append(f"ETA {int(eta // 60)}:{int(eta % 60):02d}")
    rate = report.records / report.seconds if report.seconds > 0 else 0.0
    parts.append(f"{report.records:,} records ({rate:,.0f}/s)")
    return "  ".join(parts)


def read_progress(shown: ProgressBar) -> ReadCallback:
    """Return the callback that draws a file read's reports on `shown`."""

    def report(progress: ReadProgress) -> None:
        shown.show(format_read(progress), progress.seconds, force=progress.done)

    return report
