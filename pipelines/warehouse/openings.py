"""Named openings (the lichess-org/chess-openings data set, CC0) and their Polyglot keys.

The five TSV files in `data/openings/` (`eco`, `name`, `pgn`) name 3,807 positions. The key,
plies and FEN of each line's position are computed once with python-chess (about 1 s) and kept
in a cache file named after the files' sha256, so later runs only read it (a few ms).
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import threading
from pathlib import Path

from pipelines.files import write_bytes_atomic

ROOT = Path(__file__).resolve().parents[2]
FILES = ("a.tsv", "b.tsv", "c.tsv", "d.tsv", "e.tsv")
#: Bumped when the cache's columns or their meaning change.
CACHE_VERSION = "1"

#: (key, plies, FEN) of the position each line (`pgn`) reaches.
Facts = dict[str, tuple[int, int, str]]

_loaded: dict[Path, Facts] = {}
_names: dict[Path, dict[int, tuple[str, str]]] = {}
_lock = threading.Lock()


def openings_dir() -> Path:
    """The folder of the TSV files: `CHESSPIPE_OPENINGS`, else `data/openings` of the checkout."""
    return Path(os.environ.get("CHESSPIPE_OPENINGS") or ROOT / "data" / "openings")


def opening_files(folder: Path) -> list[Path]:
    """The data set's files, or an empty list when any is missing."""
    paths = [folder / name for name in FILES]
    return paths if all(path.is_file() for path in paths) else []


def cache_dir() -> Path:
    """`CHESSPIPE_CACHE`, else `$XDG_CACHE_HOME/chesspipe`, else `~/.cache/chesspipe`."""
    if explicit := os.environ.get("CHESSPIPE_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "chesspipe"


def read_lines(folder: Path) -> list[dict[str, str]]:
    """Every opening as read from the files: `eco`, `name`, `pgn`."""
    rows: list[dict[str, str]] = []
    for path in opening_files(folder):
        with open(path, encoding="utf-8", newline="") as handle:
            rows.extend(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows


def cache_path(folder: Path) -> Path:
    digest = hashlib.sha256(CACHE_VERSION.encode())
    for path in opening_files(folder):
        digest.update(path.read_bytes())
    return cache_dir() / f"openings-{digest.hexdigest()[:16]}.tsv"


def compute(folder: Path) -> Facts:
    """Replay every line with python-chess."""
    from pipelines.warehouse.chess_functions import opening_facts

    return {row["pgn"]: opening_facts(row["pgn"]) for row in read_lines(folder)}


def facts(folder: Path) -> Facts:
    """Key, plies and FEN per line, from the cache, or computed and then cached."""
    with _lock:
        if folder in _loaded:
            return _loaded[folder]
        path = cache_path(folder)
        found: Facts | None = None
        try:
            with open(path, encoding="utf-8", newline="") as handle:
                found = {
                    pgn: (int(key), int(plies), fen)
                    for pgn, key, plies, fen in csv.reader(
                        handle, delimiter="\t", quoting=csv.QUOTE_NONE
                    )
                }
        except (OSError, ValueError):
            found = None
        if found is None:
            found = compute(folder)
            text = io.StringIO()
            writer = csv.writer(text, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
            writer.writerows((pgn, key, n, fen) for pgn, (key, n, fen) in found.items())
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_bytes_atomic(path, text.getvalue().encode())
            except OSError:
                pass  # a read-only home: compute again next time
        _loaded[folder] = found
        return found


def names_by_key(folder: Path | None = None) -> dict[int, tuple[str, str]]:
    """Polyglot key -> (eco, name) of the named positions (a transposition: the shortest line's).

    Empty when the files are absent. `folder` defaults to openings_dir().
    """
    folder = openings_dir() if folder is None else Path(folder)
    if folder in _names:
        return _names[folder]
    known = facts(folder)
    shortest: dict[int, tuple[int, str, str]] = {}
    for row in read_lines(folder):
        found = known.get(row["pgn"])
        if found is None:
            continue
        key, plies, _ = found
        if key not in shortest or plies < shortest[key][0]:
            shortest[key] = (plies, row["eco"], row["name"])
    names = {key: (eco, name) for key, (_, eco, name) in shortest.items()}
    with _lock:
        _names[folder] = names
    return names
