"""Labelled positions as Parquet: a folder of label files, each with a JSON manifest beside it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chess
import chess.syzygy
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.endgames.labeller import Labeller
from pipelines.endgames.positions import Position
from pipelines.endgames.probing import TablebaseError
from pipelines.errors import ChesspipeError
from pipelines.files import write_json
from schemas.atomic_files import OutputSet
from schemas.endgame_labels import ENDGAME_LABELS_SCHEMA
from schemas.version import __version__

#: Rows held in memory before they are written as one Parquet row group.
BATCH_ROWS = 100_000

_COLUMNS = [field.name for field in ENDGAME_LABELS_SCHEMA]


def sparse_fen(board: chess.Board) -> str:
    """Return `board.fen()` (en passant only when legal), faster for boards with few pieces."""
    rows = []
    occupied = board.occupied
    for rank in range(7, -1, -1):
        bits = (occupied >> (8 * rank)) & 0xFF
        if not bits:
            rows.append("8")
            continue
        row = ""
        file = 0
        while bits:
            low = (bits & -bits).bit_length() - 1
            if low > file:
                row += str(low - file)
            piece = board.piece_at(8 * rank + low)
            row += piece.symbol() if piece else "?"
            file = low + 1
            bits &= bits - 1
        if file < 8:
            row += str(8 - file)
        rows.append(row)
    ep = board.ep_square
    ep_text = chess.SQUARE_NAMES[ep] if ep is not None and board.has_legal_en_passant() else "-"
    return (
        f"{'/'.join(rows)} {'w' if board.turn else 'b'} {board.castling_xfen()} {ep_text} "
        f"{board.halfmove_clock} {board.fullmove_number}"
    )


def _empty_batch() -> dict[str, list[Any]]:
    return {name: [] for name in _COLUMNS}


def label_batches(
    positions: Iterable[Position],
    labeller: Labeller,
    skip_uncovered: bool = False,
    counts: dict[str, int] | None = None,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Label positions; yield Arrow record batches in ENDGAME_LABELS_SCHEMA."""
    counts = counts if counts is not None else {}
    counts.setdefault("labelled", 0)
    counts.setdefault("uncovered", 0)
    batch = _empty_batch()
    for position in positions:
        board = position.board
        try:
            label = labeller.label(board, validated=True)
        except TablebaseError:
            if not skip_uncovered:
                raise
            counts["uncovered"] += 1
            continue
        batch["fen"].append(sparse_fen(board))
        batch["material"].append(chess.syzygy.calc_key(board))
        batch["pieces"].append(chess.popcount(board.occupied))
        batch["in_check"].append(board.is_check())
        batch["wdl"].append(label.wdl)
        batch["dtz"].append(label.dtz)
        batch["wdl50"].append(label.wdl50)
        batch["best_move"].append(label.best_move.uci() if label.best_move else None)
        batch["best_move_dtz"].append(label.best_move_dtz)
        batch["ply"].append(position.ply)
        batch["source"].append(position.source)
        batch["game_move"].append(position.game_move)
        batch["game_result"].append(position.game_result)
        counts["labelled"] += 1
        if len(batch["fen"]) >= batch_rows:
            yield pa.RecordBatch.from_pydict(batch, schema=ENDGAME_LABELS_SCHEMA)
            batch = _empty_batch()
    if batch["fen"]:
        yield pa.RecordBatch.from_pydict(batch, schema=ENDGAME_LABELS_SCHEMA)


def check_name(name: str) -> str:
    """Return a label file name stem if it is safe as a file name."""
    if not name or "/" in name or name.startswith(".") or os.sep in name:
        raise ChesspipeError(f"bad label set name {name!r}")
    return name


class LabelSetExists(ChesspipeError):
    """A label set of that name is already in the folder, and overwriting was not asked for."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} exists: not replaced (overwrite is off)")
        self.path = path


def label_set_paths(out_dir: Path, name: str) -> tuple[Path, Path]:
    """Return the Parquet file and the manifest of the label set NAME in a folder."""
    out_dir = Path(out_dir)
    return out_dir / f"{check_name(name)}.parquet", out_dir / f"{name}.json"


def check_label_set_free(out_dir: Path, name: str, *, overwrite: bool = False) -> None:
    """Fail with LabelSetExists when NAME's files are in the folder, unless `overwrite`."""
    if overwrite:
        return
    for path in label_set_paths(out_dir, name):
        if path.exists():
            raise LabelSetExists(path)


def write_label_set(
    positions: Iterable[Position],
    labeller: Labeller,
    out_dir: Path,
    name: str,
    settings: dict[str, Any],
    skip_uncovered: bool = False,
    extra: Callable[[], dict[str, Any]] | None = None,
    *,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Label positions into OUT/NAME.parquet + OUT/NAME.json; each appears whole or not at all.

    An existing label set of that name is never replaced unless `overwrite` (LabelSetExists).
    """
    started = time.monotonic()
    out_dir = Path(out_dir)
    check_label_set_free(out_dir, name, overwrite=overwrite)
    out_dir.mkdir(parents=True, exist_ok=True)
    target, manifest_file = label_set_paths(out_dir, name)
    counts: dict[str, int] = {}
    with OutputSet(target, manifest_file) as outputs:  # the labels, then their manifest
        tmp = outputs.path(target)
        with pq.ParquetWriter(tmp, ENDGAME_LABELS_SCHEMA, compression="zstd") as writer:
            for batch in label_batches(positions, labeller, skip_uncovered, counts):
                writer.write_batch(batch)
        seconds = time.monotonic() - started
        manifest: dict[str, Any] = {
            "chesspipe_version": __version__,
            "name": name,
            "output": target.name,
            "rows": counts["labelled"],
            "uncovered_skipped": counts["uncovered"],
            "backend": labeller.backend_name,
            "tables": [str(f) for f in labeller.tables.folders],
            "settings": settings,
            "seconds": round(seconds, 3),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if extra is not None:
            manifest.update(extra())
        # Labelling can take long: a run that started meanwhile must not be replaced either.
        check_label_set_free(out_dir, name, overwrite=overwrite)
        write_json(outputs.path(manifest_file), manifest)
    return manifest


def label_files(labels_dir: Path) -> list[Path]:
    """Return the label Parquet files of a folder, in name order; fail when there are none."""
    labels_dir = Path(labels_dir)
    if not labels_dir.is_dir():
        raise ChesspipeError(f"labels folder {labels_dir} does not exist")
    files = sorted(p for p in labels_dir.glob("*.parquet") if not p.name.startswith("."))
    if not files:
        raise ChesspipeError(f"no label files (*.parquet) in {labels_dir}")
    return files


def read_label_batches(labels_dir: Path) -> Iterator[pa.RecordBatch]:
    """Yield the record batches of every label file of a folder, checking their schema."""
    for path in label_files(labels_dir):
        try:
            parquet = pq.ParquetFile(path)
        except (OSError, pa.ArrowInvalid) as exc:
            raise ChesspipeError(f"{path}: not a readable Parquet file ({exc})") from None
        missing = {"fen", "wdl", "dtz", "wdl50", "best_move", "ply"} - set(
            parquet.schema_arrow.names
        )
        if missing:
            raise ChesspipeError(f"{path}: not a label file (missing {', '.join(sorted(missing))})")
        yield from parquet.iter_batches()
