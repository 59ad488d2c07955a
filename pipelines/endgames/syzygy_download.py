"""Downloading Syzygy tables from a public mirror: resumable, checksummed, skipping finished files.

Mirror layout (tablebase.sesse.net): BASE/3-4-5/NAME for every 3- to 5-piece file, BASE/6-WDL/NAME
and BASE/6-DTZ/NAME for 6 pieces. The published SHA-256 list (syzygy-tables.info) has one line
per file, ``<hex>  <name>``, and is also the list of files a set holds.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json_atomic
from pipelines.progress import ProgressBar, bar
from pipelines.sources.checksums import parse_checksums
from pipelines.sources.download import download_file
from pipelines.sources.http import fetch_text
from pipelines.sources.retry import BACKOFF, RETRIES, TIMEOUT

DEFAULT_BASE_URL = "http://tablebase.sesse.net/syzygy"
DEFAULT_CHECKSUMS_URL = (
    "https://raw.githubusercontent.com/niklasf/syzygy-tables.info/main/checksums/SHA256SUM"
)

#: Piece counts per set, and the approximate size of the whole set in bytes.
SETS: dict[str, tuple[tuple[int, ...], int]] = {
    "3-4": ((3, 4), 30 << 20),
    "3-4-5": ((3, 4, 5), 939 << 20),
    "6": ((6,), int(149.2 * (1 << 30))),
}

#: Record of files already verified, so finished files are not hashed again.
STATE_FILE = ".chesspipe-syzygy.json"

_NAME = re.compile(r"^(K[QRBNP]*vK[QRBNP]*)\.(rtbw|rtbz)$")


@dataclass(frozen=True)
class TableFile:
    """A table file of a set: its name, published SHA-256 and URL."""

    name: str
    sha256: str
    url: str


@dataclass
class FileProgress:
    """Progress of one file: its index among the set's files and bytes so far."""

    index: int
    total_files: int
    name: str
    done: int
    size: int | None
    seconds: float


def table_checksums(text: str) -> dict[str, str]:
    """Return {table file name: sha256} from a `sha256sum` list; other files are left out."""
    checksums = {
        name: digest for name, digest in parse_checksums(text).items() if _NAME.match(name)
    }
    if not checksums:
        raise ChesspipeError("the checksum list names no table files")
    return checksums


def pieces_of(name: str) -> int:
    """Return the piece count of a table file name."""
    return len(name.split(".", 1)[0]) - 1


def file_url(base_url: str, name: str) -> str:
    """Return a table file's URL on a mirror with the public layout."""
    base = base_url.rstrip("/")
    if pieces_of(name) <= 5:
        return f"{base}/3-4-5/{name}"
    folder = "6-WDL" if name.endswith(".rtbw") else "6-DTZ"
    return f"{base}/{folder}/{name}"


def set_files(checksums: dict[str, str], set_name: str, base_url: str) -> list[TableFile]:
    """Return the files of a set, smallest piece count first."""
    if set_name not in SETS:
        raise ChesspipeError(f"unknown set {set_name!r}; choose {', '.join(SETS)}")
    counts = SETS[set_name][0]
    names = sorted(
        (n for n in checksums if pieces_of(n) in counts), key=lambda n: (pieces_of(n), n)
    )
    if not names:
        raise ChesspipeError(f"the checksum list has no files of set {set_name}")
    return [TableFile(n, checksums[n], file_url(base_url, n)) for n in names]


def read_checksum_list(
    source: str, timeout: float = TIMEOUT, retries: int = RETRIES, backoff: float = BACKOFF
) -> dict[str, str]:
    """Return the table checksums from a URL or a local file."""
    if source.startswith(("http://", "https://")):
        text = fetch_text(source, timeout=timeout, retries=retries, backoff=backoff)
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise ChesspipeError(f"cannot read the checksum list {source}: {exc}") from None
    return table_checksums(text)


class _State:
    """Files already verified in a folder: name -> size, mtime and sha256."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / STATE_FILE
        try:
            self.data: dict[str, dict[str, Any]] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def is_complete(self, path: Path, sha256: str) -> bool:
        if not path.is_file():
            return False
        stat = path.stat()
        entry = self.data.get(path.name)
        if entry and entry == {
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "sha256": sha256,
        }:
            return True
        if file_sha256(path) == sha256:
            self.remember(path, sha256)
            return True
        return False

    def remember(self, path: Path, sha256: str) -> None:
        stat = path.stat()
        self.data[path.name] = {
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "sha256": sha256,
        }
        write_json_atomic(self.path, self.data)


def download_set(
    folder: Path,
    set_name: str,
    base_url: str = DEFAULT_BASE_URL,
    checksums: str = DEFAULT_CHECKSUMS_URL,
    progress: Callable[[FileProgress], None] | None = None,
    retries: int = RETRIES,
    timeout: float = TIMEOUT,
    backoff: float = BACKOFF,
) -> dict[str, Any]:
    """Download a set's missing files into a folder; return counts. Fails listing bad files."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = set_files(read_checksum_list(checksums, timeout, retries, backoff), set_name, base_url)
    state = _State(folder)
    skipped = fetched = 0
    failed: list[str] = []
    started = time.monotonic()
    for index, table in enumerate(files, 1):
        if state.is_complete(folder / table.name, table.sha256):
            skipped += 1
            continue

        def report(done: int, size: int | None, index: int = index, name: str = table.name) -> None:
            if progress is not None:
                progress(
                    FileProgress(index, len(files), name, done, size, time.monotonic() - started)
                )

        try:
            path = download_file(
                table.url,
                folder / table.name,
                folder / f"{table.name}.part",
                table.sha256,
                report,
                timeout,
                retries,
                backoff,
            )
        except ChesspipeError as exc:
            failed.append(str(exc))
            continue
        state.remember(path, table.sha256)
        fetched += 1
    summary = {
        "folder": str(folder),
        "set": set_name,
        "files": len(files),
        "already_complete": skipped,
        "downloaded": fetched,
        "failed": failed,
        "seconds": round(time.monotonic() - started, 3),
    }
    if failed:
        raise ChesspipeError(f"{len(failed)} of {len(files)} files failed; first: {failed[0]}")
    return summary


def check_space(folder: Path, set_name: str, stream: TextIO = sys.stderr) -> int:
    """Warn about a set's size; return the bytes free where it goes."""
    size = SETS[set_name][1] if set_name in SETS else 0
    probe = folder
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if set_name == "6":
        stream.write(
            f"chesspipe: warning: the 6-piece set is about {size / (1 << 30):.0f} GiB "
            f"({free / (1 << 30):.0f} GiB free at {probe})\n"
        )
    return free


class DownloadProgress:
    """The progress bar of a download: file n of N, bytes of the file, drawn when a file ends."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.bar = ProgressBar(stream, interval=5.0, tty_interval=0.2)
        self._name = ""

    def __call__(self, report: FileProgress) -> None:
        finished = report.size is not None and report.done >= report.size
        size = f"/{report.size / 1e6:.1f}" if report.size else ""
        fraction = report.done / report.size if report.size else 0.0
        line = (
            f"[{report.index}/{report.total_files}] {bar(fraction)} {report.name} "
            f"{report.done / 1e6:.1f}{size} MB"
        )
        self.bar.show(line, report.seconds, force=finished or report.name != self._name)
        self._name = report.name

    def close(self) -> None:
        """End the progress line."""
        self.bar.close()
