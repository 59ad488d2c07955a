"""The Fathom backend: Syzygy probing in C through `libfathom` (Debian `libfathom1`), by ctypes.

Debian's header makes `tb_probe_wdl` and `tb_probe_root` inline wrappers; the library exports
`tb_probe_wdl_impl` and `tb_probe_root_impl`, called here directly (castling must be absent, the
WDL probe assumes a halfmove clock of 0). Squares and bitboards use python-chess's numbering
(a1 = 0); promotion codes are Q 1, R 2, B 3, N 4. Fathom keeps its tables in global state, so one
process probes one tablebase path at a time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import chess

from pipelines.endgames.probing import RootProbe, TablebaseError

#: Where Debian installs the library, tried when the loader cache does not know it.
DEBIAN_PATHS = (
    "/usr/lib/x86_64-linux-gnu/libfathom.so.1",
    "/usr/lib/aarch64-linux-gnu/libfathom.so.1",
    "/usr/lib/libfathom.so.1",
)

TB_MAX_MOVES = 193
TB_RESULT_FAILED = 0xFFFFFFFF
TB_RESULT_CHECKMATE = 4  # TB_SET_WDL(0, TB_WIN): no move, side to move mated
TB_RESULT_STALEMATE = 2  # TB_SET_WDL(0, TB_DRAW)

_PROMOTIONS = (None, chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT, None, None, None)

_lib: ctypes.CDLL | None = None
_load_error: str | None = None
_initialised_path: str | None = None


def _find_library() -> str | None:
    override = os.environ.get("CHESSPIPE_LIBFATHOM")
    if override:
        return override
    found = ctypes.util.find_library("fathom")
    if found:
        return found
    for path in DEBIAN_PATHS:
        if os.path.exists(path):
            return path
    return None


def _load() -> ctypes.CDLL | None:
    global _lib, _load_error
    if _lib is not None or _load_error is not None:
        return _lib
    path = _find_library()
    if path is None:
        _load_error = "libfathom not found (install Debian package libfathom1)"
        return None
    try:
        lib = ctypes.CDLL(path)
        u64, uint = ctypes.c_uint64, ctypes.c_uint
        lib.tb_init.argtypes = [ctypes.c_char_p]
        lib.tb_init.restype = ctypes.c_bool
        lib.tb_free.argtypes = []
        lib.tb_free.restype = None
        lib.tb_probe_wdl_impl.argtypes = [u64] * 8 + [uint, ctypes.c_bool]
        lib.tb_probe_wdl_impl.restype = uint
        lib.tb_probe_root_impl.argtypes = [u64] * 8 + [
            uint,
            uint,
            ctypes.c_bool,
            ctypes.POINTER(uint),
        ]
        lib.tb_probe_root_impl.restype = uint
    except (OSError, AttributeError) as exc:
        _load_error = f"cannot use {path}: {exc}"
        return None
    _lib = lib
    return lib


def available() -> bool:
    """Tell whether libfathom can be loaded."""
    return _load() is not None


def unavailable_reason() -> str:
    """Return why libfathom cannot be loaded ('' when it can)."""
    _load()
    return _load_error or ""


def largest() -> int:
    """Return the largest piece count of the loaded tables (0 when none)."""
    lib = _load()
    return ctypes.c_uint.in_dll(lib, "TB_LARGEST").value if lib is not None else 0


def _pieces(board: chess.Board) -> tuple[int, ...]:
    """Return a board's bitboards as Fathom's probes take them first: white's and black's
    squares, then the kings, queens, rooks, bishops, knights and pawns."""
    black, white = board.occupied_co  # indexed by colour: BLACK = 0, WHITE = 1
    return (
        white,
        black,
        board.kings,
        board.queens,
        board.rooks,
        board.bishops,
        board.knights,
        board.pawns,
    )


def _en_passant(board: chess.Board) -> int:
    """Return the en passant square as Fathom takes it: 0 unless a capture there is legal."""
    return board.ep_square if board.ep_square is not None and board.has_legal_en_passant() else 0


@contextmanager
def _output_kept() -> Iterator[list[str]]:
    """Keep what C code writes to standard output and error meanwhile (Fathom prints a line
    for each table it cannot read, one to each): the lines it wrote, without duplicates and
    without its `info string ` prefix, are in the list once the block ends."""
    import sys
    import tempfile

    said: list[str] = []
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as kept:
        try:
            os.dup2(kept.fileno(), 1)
            os.dup2(kept.fileno(), 2)
            yield said
        finally:
            libc.fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            kept.seek(0)
            for line in kept.read().decode(errors="replace").splitlines():
                line = line.removeprefix("info string ").strip()
                if line and line not in said:
                    said.append(line)


class FathomBackend:
    """Probes with Fathom's C code."""

    name = "fathom"

    def __init__(self, folders: Sequence[Path]) -> None:
        lib = _load()
        if lib is None:
            raise TablebaseError(f"Fathom backend unavailable: {_load_error}")
        self.lib = lib
        self.path = ":".join(str(Path(f).resolve()) for f in folders)
        self._load_tables()
        self._results = (ctypes.c_uint * TB_MAX_MOVES)()
        self._root = lib.tb_probe_root_impl
        self._wdl = lib.tb_probe_wdl_impl

    def _load_tables(self) -> None:
        """Point Fathom's global state at this backend's tables, unless it is there already."""
        global _initialised_path
        if self.path != _initialised_path:
            _initialised_path = None
            with _output_kept() as said:
                loaded = self.lib.tb_init(self.path.encode())
            why = f" ({'; '.join(said)})" if said else ""
            if not loaded:
                raise TablebaseError(f"Fathom could not load tables from {self.path}{why}")
            _initialised_path = self.path
            if largest() == 0:
                raise TablebaseError(f"Fathom found no tables in {self.path}{why}")
            for line in said:  # tables it skipped, while others loaded
                logging.getLogger(__name__).warning("Fathom: %s", line)

    def root(self, board: chess.Board) -> RootProbe:
        if self.path != _initialised_path:
            self._load_tables()
        results = self._results
        res = self._root(*_pieces(board), 0, _en_passant(board), board.turn, results)
        if res == TB_RESULT_FAILED:
            raise TablebaseError(f"{board.fen()}: Fathom probe failed (table missing?)")
        if res == TB_RESULT_CHECKMATE:
            return RootProbe(-2, -1, ())
        if res == TB_RESULT_STALEMATE:
            return RootProbe(0, 0, ())
        wdl = (res & 0xF) - 2
        dtz = res >> 20
        if wdl < 0:
            dtz = -dtz
        elif wdl == 0:
            dtz = 0
        moves = []
        for r in results:
            if r == TB_RESULT_FAILED:
                break
            move_wdl = r & 0xF
            v = r >> 20
            if move_wdl < 2:
                v = -v
            elif move_wdl == 2:
                v = 0
            moves.append((chess.Move((r >> 10) & 63, (r >> 4) & 63, _PROMOTIONS[(r >> 16) & 7]), v))
        suggested = chess.Move((res >> 10) & 63, (res >> 4) & 63, _PROMOTIONS[(res >> 16) & 7])
        return RootProbe(wdl, dtz, tuple(moves), suggested)

    def probe_wdl(self, board: chess.Board) -> int:
        if self.path != _initialised_path:
            self._load_tables()
        res = self._wdl(*_pieces(board), _en_passant(board), board.turn)
        if res == TB_RESULT_FAILED:
            raise TablebaseError(f"{board.fen()}: Fathom probe failed (table missing?)")
        return int(res) - 2

    def close(self) -> None:
        """Fathom's tables stay loaded for the process (its state is global)."""
