"""A progress bar on stderr for long work."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def format_progress(report: Progress) -> str:
    """Return one line: bytes read of the total with ETA, games per second, games kept."""
    rate = report.games_read / report.seconds if report.seconds > 0 else 0.0
    parts = [f"{_size(report.bytes_read)}"]
    if report.bytes_total:
        fraction = min(1.0, report.bytes_read / report.bytes_total)
        bar = "#" * int(fraction * 20)
        parts = [
            f"[{bar:<20}] {fraction:6.1%}",
            f"{_size(report.bytes_read)}/{_size(report.bytes_total)}",
        ]
        if 0 < fraction < 1:
            eta = report.seconds * (1 - fraction) / fraction
            parts.append(f"ETA {int(eta // 60)}:{int(eta % 60):02d}")
    parts.append(f"{report.games_read:,} games ({rate:,.0f}/s)")
    parts.append(f"{report.games_kept:,} kept")
    return "  ".join(parts)


class ProgressBar:
    """Redraws one progress line on a terminal, or prints a line every few seconds elsewhere."""

    def __init__(self, stream: TextIO | None = None, interval: float = 5.0) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval
        self._last = -interval
        self._unprinted: str | None = None

    def __call__(self, report: Progress) -> None:
        line = format_progress(report)
        self._unprinted = None
        if self.tty:
            self.stream.write("\r" + line + "\x1b[K")
            self.stream.flush()
        elif report.seconds - self._last >= self.interval:
            self._last = report.seconds
            self.stream.write(line + "\n")
            self.stream.flush()
        else:
            self._unprinted = line

    def close(self) -> None:
        """End the progress line; elsewhere than a terminal, print the last report if unprinted."""
        if self.tty:
            self.stream.write("\n")
        elif self._unprinted:
            self.stream.write(f"{self._unprinted}\n")
        self.stream.flush()


@dataclass(frozen=True)
class Progress:
    """A progress report: compressed bytes read of the total, games read and kept."""

    bytes_read: int
    bytes_total: int | None
    games_read: int
    games_kept: int
    seconds: float


ProgressCallback = Callable[[Progress], None]
