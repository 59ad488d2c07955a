"""`chesspipe-engine`: the UCI protocol on stdin/stdout, with the search in its own thread."""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

import chess

from engine.book import book_move
from engine.chess960 import start_fen
from engine.search import (
    MATE,
    MATE_BOUND,
    TB_BOUND,
    TB_WIN,
    Info,
    Limits,
    Searcher,
    time_budget,
)
from engine.tablebase import Tablebases
from schemas.polyglot import Book, open_book

ENGINE_NAME = "chesspipe"
ENGINE_AUTHOR = "the chesspipe authors"

_GO_NUMBERS = ("depth", "nodes", "movetime", "wtime", "btime", "winc", "binc", "movestogo")
_GO_KEYWORDS = frozenset((*_GO_NUMBERS, "infinite", "searchmoves", "ponder", "mate"))


@dataclass(frozen=True)
class Spin:
    """A numeric option."""

    default: int
    low: int
    high: int


DEFAULT_HASH_MB = 16

#: The options `uci` announces: name -> spin range, bool (check) or str (string).
OPTIONS: dict[str, Spin | bool | str] = {
    "Hash": Spin(DEFAULT_HASH_MB, 1, 1024),
    "OwnBook": False,
    "BookFile": "",
    "SyzygyPath": "",
    "SyzygyProbeDepth": Spin(1, 1, 100),
    "SyzygyProbeLimit": Spin(7, 0, 7),
    "UCI_Chess960": False,
    "Move Overhead": Spin(50, 0, 5000),
}


#: Characters of the GUI's own text an `info string` echoes before '...'.
ECHOED_CHARS = 80


def echoed(text: str) -> str:
    """Return the GUI's text as an `info string` quotes it: its first ECHOED_CHARS characters,
    then '...' where it was longer."""
    return text if len(text) <= ECHOED_CHARS else text[:ECHOED_CHARS] + "..."


def parse_move(board: chess.Board, text: str) -> chess.Move | None:
    """Return the legal move `text` names (castling as king-takes-rook or king-two-squares)."""
    try:
        return board.parse_uci(text)
    except ValueError:
        pass
    try:
        named = chess.Move.from_uci(text)
    except ValueError:
        return None
    # The other castling notation: the king's destination square instead of its rook.
    for move in board.generate_castling_moves():
        rook_file = chess.square_file(move.to_square)
        king_file = chess.square_file(move.from_square)
        if not board.chess960:
            continue
        destination = chess.square(
            6 if rook_file > king_file else 2, chess.square_rank(move.from_square)
        )
        if (
            named.from_square == move.from_square
            and named.to_square == destination
            and named.promotion is None
        ):
            return move
    return None


#: The centipawns a tablebase win shows at ply 0, as Stockfish (16 and later) shows its
#: tablebase wins: `cp 20000 - N`, N plies from the root to where the win is secured.
TB_WIN_CP = 20000


def uci_score(score: int) -> str:
    """Return a score as UCI text: `mate N` (moves, negative when being mated), a tablebase win
    or loss as `cp` 20000 - N (N plies; Syzygy gives no distance to mate), else `cp N`."""
    if score >= MATE_BOUND:
        return f"mate {(MATE - score + 1) // 2}"
    if score <= -MATE_BOUND:
        return f"mate {-((MATE + score) // 2)}"
    if score >= TB_BOUND:
        return f"cp {TB_WIN_CP - (TB_WIN - score)}"
    if score <= -TB_BOUND:
        return f"cp {-TB_WIN_CP + (TB_WIN + score)}"
    return f"cp {score}"


def uci_line(board: chess.Board, moves: Sequence[chess.Move]) -> list[str]:
    """Return moves as UCI text in the board's castling notation, up to the first illegal one."""
    copy = board.copy(stack=False)
    line = []
    for move in moves:
        if not copy.is_legal(move):
            break
        line.append(copy.uci(move))
        copy.push(move)
    return line


#: How long `stop` and `quit` wait for the search thread before answering for it: a search
#: stuck where it cannot see the stop (a probe of a damaged table) must not hold the GUI.
STOP_WAIT = 0.08


class _Answer:
    """A search's one `bestmove`: given by the search thread when it ends, or by `stop` for a
    thread that does not end in time (the best move reported so far, else a legal move)."""

    def __init__(self, board: chess.Board) -> None:
        self.board = board
        self.best: chess.Move | None = None
        self._lock = threading.Lock()
        self._given = False

    def take(self) -> bool:
        """Whether the caller is the one to give the answer (once only)."""
        with self._lock:
            given, self._given = self._given, True
            return not given


class UciEngine:
    """The engine's state between commands: position, options, book, tables, search thread."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._output_lock = threading.Lock()
        self.board = chess.Board()
        self.searcher = Searcher(DEFAULT_HASH_MB)
        self.own_book = False
        self.book: Book | None = None
        self.chess960 = False
        self.overhead_ms = 50
        self.rng = random.Random(int.from_bytes(os.urandom(8), "little"))
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._answer: _Answer | None = None
        #: True from `go` until the search thread has decided on its bestmove.
        self._busy = False

    # Output -------------------------------------------------------------------------------

    def send(self, line: str) -> None:
        """Write one line to the GUI."""
        with self._output_lock:
            self._write(line)

    def tell(self, text: str) -> None:
        """Send a free-text `info string` line."""
        self.send(f"info string {text}")

    # Commands ----------------------------------------------------------------------------

    def handle(self, line: str) -> bool:
        """Act on one command line; return False when the engine should quit."""
        tokens = line.split()
        if not tokens:
            return True
        command = tokens[0]
        if command == "quit":
            self.stop_search()
            return False
        handler = {
            "uci": self._uci,
            "isready": lambda _: self.send("readyok"),
            "ucinewgame": self._ucinewgame,
            "position": self._position,
            "go": self._go,
            "stop": lambda _: self.stop_search(),
            "setoption": self._setoption,
            "d": lambda _: self.tell(f"fen {self.board.fen()}"),
            "debug": lambda _: None,
            "ponderhit": lambda _: self.tell("ponderhit ignored: pondering is not supported"),
        }.get(command)
        if handler is None:
            self.tell(f"unknown command ignored: {echoed(line.strip())}")
            return True
        try:
            handler(line)
        except Exception as exc:  # a bad command must never end the engine
            reason = f"{type(exc).__name__}: {echoed(str(exc))}"
            self.tell(f"command ignored ({reason}): {echoed(line.strip())}")
        return True

    def _searching(self) -> bool:
        return self._busy

    def _refuse_while_searching(self, line: str) -> bool:
        if self._searching():
            self.tell(f"ignored while searching (send stop first): {echoed(line.strip())}")
            return True
        return False

    def _uci(self, _line: str) -> None:
        from schemas.version import __version__

        self.send(f"id name {ENGINE_NAME} {__version__}")
        self.send(f"id author {ENGINE_AUTHOR}")
        for name, kind in OPTIONS.items():
            if isinstance(kind, Spin):
                self.send(
                    f"option name {name} type spin default {kind.default} "
                    f"min {kind.low} max {kind.high}"
                )
            elif isinstance(kind, bool):
                self.send(f"option name {name} type check default {str(kind).lower()}")
            else:
                self.send(f"option name {name} type string default {kind or '<empty>'}")
        self.send("uciok")

    def _ucinewgame(self, line: str) -> None:
        if self._refuse_while_searching(line):
            return
        self.searcher.clear()
        self.board = chess.Board(chess960=self.chess960)

    def _position(self, line: str) -> None:
        # The search works on its own copy of the board, so a new position may arrive any time.
        tokens = line.split()[1:]
        if "moves" in tokens:
            cut = tokens.index("moves")
            setup, moves = tokens[:cut], tokens[cut + 1 :]
        else:
            setup, moves = tokens, []
        if setup[:1] == ["startpos"] and len(setup) == 1:
            board = chess.Board(chess960=self.chess960)
        elif setup[:1] == ["fen"] and len(setup) > 1:
            fen = " ".join(setup[1:])
            try:
                board = chess.Board(fen, chess960=self.chess960)
            except ValueError as exc:
                reason = str(exc).partition(": ")[0]  # python-chess's message ends with the FEN
                self.tell(f"bad FEN, position unchanged: {reason}: {echoed(fen)!r}")
                return
            if not board.is_valid():
                self.tell(f"invalid position, position unchanged: {board.status()!r}")
                return
        else:
            self.tell("position needs 'startpos' or 'fen FEN'; position unchanged")
            return
        for text in moves:
            move = parse_move(board, text)
            if move is None:
                self.tell(f"illegal move {echoed(text)} in {board.fen()}; position unchanged")
                return
            board.push(move)
        self.board = board

    def _setoption(self, line: str) -> None:
        if self._refuse_while_searching(line):
            return
        match = re.match(r"\s*setoption\s+name\s+(.*?)(?:\s+value\s*(.*?))?\s*$", line)
        if match is None:
            self.tell(f"setoption needs 'name NAME [value VALUE]': {echoed(line.strip())}")
            return
        wanted, value = match.group(1).strip(), (match.group(2) or "").strip()
        name = next((n for n in OPTIONS if n.lower() == wanted.lower()), None)
        if name is None:
            self.tell(f"unknown option ignored: {echoed(wanted)}")
            return
        kind = OPTIONS[name]
        if isinstance(kind, Spin):
            try:
                number = int(value)
            except ValueError:
                self.tell(f"option {name} needs a whole number, not {echoed(value)!r}; unchanged")
                return
            if not kind.low <= number <= kind.high:
                self.tell(f"option {name} must be {kind.low}-{kind.high}, not {number}; unchanged")
                return
            self._set_spin(name, number)
        elif isinstance(kind, bool):
            if value.lower() not in ("true", "false"):
                self.tell(f"option {name} needs true or false, not {echoed(value)!r}; unchanged")
                return
            self._set_check(name, value.lower() == "true")
        else:
            self._set_string(name, "" if value == "<empty>" else value)

    def _set_spin(self, name: str, number: int) -> None:
        if name == "Hash":
            self.searcher.resize(number)
        elif name == "SyzygyProbeDepth":
            self.searcher.probe_depth = number
        elif name == "SyzygyProbeLimit":
            self.searcher.probe_limit = number
        elif name == "Move Overhead":
            self.overhead_ms = number

    def _set_check(self, name: str, on: bool) -> None:
        if name == "OwnBook":
            self.own_book = on
        elif name == "UCI_Chess960":
            self.chess960 = on
            self.board.chess960 = on

    def _set_string(self, name: str, value: str) -> None:
        if name == "BookFile":
            self.book = None
            if value:
                try:
                    self.book = open_book(value)
                except ValueError as exc:
                    self.tell(f"no book loaded: {exc}")
                    return
                self.tell(f"book {value}: {len(self.book)} entries")
        elif name == "SyzygyPath":
            if self.searcher.tablebases is not None:
                self.searcher.tablebases.close()
                self.searcher.tablebases = None
            if value:
                try:
                    self.searcher.tablebases = Tablebases(value, on_drop=self.tell)
                except ValueError as exc:
                    self.tell(f"no tablebases loaded: {exc}")
                    return
                tables = self.searcher.tablebases
                for why in tables.dropped:
                    self.tell(f"tablebase left out: {why}")
                self.tell(
                    f"tablebases {value}: {tables.files} files, up to {tables.max_pieces} pieces"
                )

    def _go(self, line: str) -> None:
        if self._refuse_while_searching(line):
            return
        limits = self._parse_go(line.split()[1:])
        self._stop = threading.Event()
        board = self.board.copy()
        self._busy = True
        self._answer = answer = _Answer(board.copy())
        self._thread = threading.Thread(
            target=self._think, args=(board, limits, self._stop, answer), name="search",
            daemon=True,
        )  # fmt: skip
        self._thread.start()

    def _parse_go(self, tokens: list[str]) -> Limits:
        limits = Limits()
        index = 0
        while index < len(tokens):
            word = tokens[index]
            index += 1
            if word in _GO_NUMBERS:
                text = tokens[index] if index < len(tokens) else ""
                try:
                    setattr(limits, word, int(text))
                    index += 1
                except ValueError:
                    self.tell(f"go {word} needs a whole number, not {echoed(text)!r}; ignored")
            elif word == "infinite":
                limits.infinite = True
            elif word == "searchmoves":
                while index < len(tokens) and tokens[index] not in _GO_KEYWORDS:
                    move = parse_move(self.board, tokens[index])
                    if move is None:
                        text = echoed(tokens[index])
                        self.tell(f"searchmoves: {text} is not legal here; ignored")
                    else:
                        limits.searchmoves.append(move)
                    index += 1
            elif word == "ponder":
                self.tell("go ponder: pondering is not supported; searching normally")
            elif word == "mate":
                self.tell("go mate is not supported; searching normally")
                if index < len(tokens) and tokens[index].lstrip("-").isdigit():
                    index += 1
            else:
                self.tell(f"go: unknown word {echoed(word)!r} ignored")
        return limits

    def stop_search(self) -> None:
        """Stop a running search and wait for its `bestmove`, STOP_WAIT at most: a thread that
        has not ended by then is left (it answers nothing more) and the best move it reported
        so far is sent for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT)
            answer = self._answer
            if self._thread.is_alive() and answer is not None and answer.take():
                board = answer.board
                move = answer.best or next(iter(board.legal_moves), None)
                self._busy = False
                self.tell("the search did not stop in time; its best move so far is played")
                self.send(f"bestmove {board.uci(move) if move else '(none)'}")
            self._thread = None

    # The search thread -------------------------------------------------------------------

    def _think(
        self, board: chess.Board, limits: Limits, stop: threading.Event, answer: _Answer
    ) -> None:
        move: chess.Move | None = None
        ponder: chess.Move | None = None
        try:
            if (
                self.own_book
                and self.book is not None
                and not limits.infinite
                and not limits.searchmoves
            ):
                move = book_move(self.book, board, self.rng)
                if move is not None:
                    answer.best = move
                    self.tell(f"book move {board.uci(move)}")
                    # A GUI analysing wants a score: the book move's, from a one-ply search.
                    self.searcher.search(
                        board,
                        Limits(depth=1, searchmoves=[move]),
                        stop,
                        self._report(board, answer),
                    )
            if move is None:
                budget = time_budget(limits, board.turn, self.overhead_ms)
                result = self.searcher.search(
                    board, limits, stop, self._report(board, answer), budget
                )
                move = result.best_move
                if len(result.pv) > 1 and result.pv[0] == move:
                    ponder = result.pv[1]
                if move is None:
                    self.send(f"info depth 0 score {'mate 0' if board.is_check() else 'cp 0'}")
        except Exception as exc:  # never leave the GUI without a bestmove
            self.tell(f"search failed ({type(exc).__name__}: {exc})")
            move = next(iter(board.legal_moves), None)
        if limits.infinite:
            stop.wait()
        line = uci_line(board, [move, ponder] if ponder else [move]) if move else []
        if not line:
            fallback = next(iter(board.legal_moves), None)
            line = [board.uci(fallback)] if fallback else ["(none)"]
        text = f"bestmove {line[0]}" + (f" ponder {line[1]}" if len(line) > 1 else "")
        if not answer.take():
            return  # `stop` answered for this search already
        # Idle before the GUI can read the bestmove, so its next commands are never refused.
        self._busy = False
        self.send(text)

    def _report(self, board: chess.Board, answer: _Answer) -> Callable[[Info], None]:
        def report(info: Info) -> None:
            if info.pv:  # the best move so far, which `stop` plays for a search stuck
                answer.best = info.pv[0]
            millis = int(info.seconds * 1000)
            nps = int(info.nodes / info.seconds) if info.seconds > 0 else info.nodes * 1000
            score = "" if info.score is None else f"score {uci_score(info.score)} "
            self.send(
                f"info depth {info.depth} seldepth {info.seldepth} multipv 1 {score}"
                f"nodes {info.nodes} nps {nps} tbhits {info.tbhits} time {millis} "
                f"pv {' '.join(uci_line(board, info.pv))}"
            )

        return report


def _print_line(stream: IO[str]) -> Callable[[str], None]:
    def write(line: str) -> None:
        stream.write(line + "\n")
        stream.flush()

    return write


def run(stdin: IO[str], stdout: IO[str]) -> None:
    """Serve the UCI protocol until `quit` or the end of input."""
    engine = UciEngine(_print_line(stdout))
    try:
        while True:
            line = stdin.readline()
            if not line or not engine.handle(line):
                break
    finally:
        engine.stop_search()


def _position_number(text: str) -> int:
    """A Chess960 start position's number, 0-959 (argparse's one-line error otherwise)."""
    if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) > 959:
        raise argparse.ArgumentTypeError(f"must be from 0 to 959, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    """Return the `chesspipe-engine` command line's parser."""
    parser = argparse.ArgumentParser(
        prog="chesspipe-engine",
        description="A UCI chess engine that plays Polyglot books and uses Syzygy tablebases.",
    )
    parser.add_argument(
        "--chess960",
        type=_position_number,
        metavar="N",
        help="print the FEN of Chess960 start position N (0-959, 518 = standard) and exit",
    )
    parser.add_argument(
        "--shredder",
        action="store_true",
        help="with --chess960, write castling rights as rook files (HAha)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the UCI engine on stdin/stdout, or print a Chess960 start position."""
    args = build_parser().parse_args(argv)
    if args.chess960 is not None:
        try:
            print(start_fen(args.chess960, shredder=args.shredder))
        except ValueError as exc:
            print(f"chesspipe-engine: error: {exc}", file=sys.stderr)
            return 1
        return 0
    try:
        run(sys.stdin, sys.stdout)
    except (KeyboardInterrupt, BrokenPipeError):
        return 0
    return 0
