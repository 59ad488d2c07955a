"""The UCI protocol: python-chess's client drives the engine; bad input never ends it."""

from __future__ import annotations

import random

import chess
import chess.engine
import pytest

from tests.conftest import need_program
from tests.engine_support import raw_engine, uci_engine


def random_positions(count: int, seed: int) -> list[chess.Board]:
    """Positions reached by random legal moves from the start, none of them over."""
    rng = random.Random(seed)
    positions = []
    while len(positions) < count:
        board = chess.Board()
        for _ in range(rng.randrange(4, 80)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if not board.is_game_over():
            positions.append(board)
    return positions


LIMITS = [
    chess.engine.Limit(depth=2),
    chess.engine.Limit(nodes=400),
    chess.engine.Limit(time=0.05),
    chess.engine.Limit(white_clock=2, black_clock=2, white_inc=0.05, black_inc=0.05),
    chess.engine.Limit(white_clock=1, black_clock=1, remaining_moves=5),
]


@pytest.mark.slow
def test_searches_legal_moves_in_random_positions() -> None:
    with uci_engine() as engine:
        for index, board in enumerate(random_positions(15, seed=6)):
            limit = LIMITS[index % len(LIMITS)]
            result = engine.play(board, limit, info=chess.engine.INFO_ALL)
            assert result.move is not None and board.is_legal(result.move), (board.fen(), limit)
            info = result.info
            for key in ("depth", "nodes", "nps", "time", "pv", "tbhits"):
                assert key in info, (key, info)
            # The principal variation is a legal line starting with the move played.
            assert info["pv"][0] == result.move
            line = board.copy()
            for move in info["pv"]:
                assert line.is_legal(move)
                line.push(move)


def test_node_limit_is_honoured() -> None:
    with uci_engine() as engine:
        for board in random_positions(4, seed=8):
            info = engine.analyse(board, chess.engine.Limit(nodes=300))
            assert info["nodes"] <= 300


MATES = [
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "6rk/6pp/8/6N1/8/8/8/1Q4K1 w - - 0 1",
    "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1",
    "6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1",
]


def test_finds_the_mates_stockfish_finds() -> None:
    stockfish_path = need_program("stockfish")
    with chess.engine.SimpleEngine.popen_uci(stockfish_path) as stockfish, uci_engine() as engine:
        for fen in MATES:
            board = chess.Board(fen)
            theirs = stockfish.analyse(board, chess.engine.Limit(depth=15))["score"].relative
            info = engine.analyse(board, chess.engine.Limit(depth=5))
            ours = info["score"].relative
            assert theirs.is_mate() and ours == theirs, (fen, ours, theirs)
            # The reported line is a mate of that length (python-chess replays it).
            line = board.copy()
            for move in info["pv"]:
                line.push(move)
            assert line.is_checkmate(), (fen, info["pv"])
            assert len(info["pv"]) == 2 * ours.mate() - 1


def test_stop_ends_infinite_analysis_with_a_bestmove() -> None:
    board = random_positions(1, seed=3)[0]
    with uci_engine() as engine, engine.analysis(board) as analysis:
        for info in analysis:
            if info.get("depth", 0) >= 2:
                break
        analysis.stop()
        best = analysis.wait()
        assert best.move is not None and board.is_legal(best.move)


def test_infinite_waits_for_stop_even_when_done() -> None:
    with raw_engine() as engine:
        # A depth-1 search is over at once, but `go infinite` must wait for `stop`.
        engine.ask("position fen 7k/8/8/8/8/8/6q1/7K w - - 0 1")
        engine.send("go infinite depth 1")
        assert engine.until("info depth 1")[-1].endswith("pv h1g2")
        assert not any(line.startswith("bestmove") for line in engine.ask())
        engine.send("stop")
        assert engine.until("bestmove")[-1].split()[:2] == ["bestmove", "h1g2"]


@pytest.mark.parametrize(
    ("fen", "expected"),
    [("7k/5QQ1/8/8/8/8/8/K7 b - - 0 1", "mate 0"), ("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "cp 0")],
)
def test_no_legal_moves_answers_bestmove_none(fen: str, expected: str) -> None:
    with raw_engine() as engine:
        engine.send(f"position fen {fen}", "go depth 3")
        lines = engine.until("bestmove")
        assert lines[-1] == "bestmove (none)"
        assert any(expected in line for line in lines[:-1]), lines
    with uci_engine() as client:
        assert client.play(chess.Board(fen), chess.engine.Limit(depth=3)).move is None


def test_bad_commands_are_reported_and_ignored() -> None:
    with raw_engine() as engine:
        start = chess.Board()
        start.push_uci("d2d4")
        engine.ask("position startpos moves d2d4")
        bad = {
            "flibbertigibbet": "unknown command",
            "position": "position needs",
            "position fen not/a/fen w - - 0 1": "bad FEN",
            "position fen 8/8/8/8/8/8/8/8 w - - 0 1": "invalid position",
            "position startpos moves d2d4 d7d5 e1e3": "illegal move e1e3",
            "position startpos moves d2d4 zz99": "illegal move zz99",
            "setoption": "setoption needs",
            "setoption name Hash value lots": "needs a whole number",
            "setoption name Hash value 0": "must be 1-1024",
            "setoption name OwnBook value maybe": "needs true or false",
            "setoption name Contempt value 20": "unknown option",
            "setoption name SyzygyPath value /nonexistent/tables": "Syzygy directory not found",
        }
        for command, reason in bad.items():
            lines = engine.ask(command)
            assert len(lines) == 1 and lines[0].startswith("info string"), (command, lines)
            assert reason in lines[0], (command, lines)
        # The position is still the last good one.
        assert engine.ask("d") == [f"info string fen {start.fen()}"]
        # Malformed go parameters are reported, the rest of the command still runs.
        engine.send("go depth two nodes 200")
        lines = engine.until("bestmove")
        assert lines[0].startswith("info string go depth needs a whole number")
        assert start.is_legal(start.parse_uci(lines[-1].split()[1]))
        engine.send("go searchmoves a2a4 e7e5 depth 1")
        lines = engine.until("bestmove")
        assert lines[0].startswith("info string searchmoves: a2a4")
        assert lines[-1].split()[1] == "e7e5"


def test_what_the_gui_sent_is_echoed_short() -> None:
    """A 100 KB FEN, move or option value is quoted by its first 80 characters and '...'."""
    long_fen = "rnbqkbnr/" + "p" * 100_000 + " w - - 0 1"
    with raw_engine() as engine:
        for command, reason, echo in [
            (f"position fen {long_fen}", "bad FEN, position unchanged: ", long_fen[:80]),
            ("position startpos moves " + "e" * 100_000, "illegal move ", "e" * 80),
            ("setoption name Hash value " + "9x" * 50_000, "needs a whole number", "9x" * 40),
            ("flibbertigibbet" * 10_000, "unknown command", ("flibbertigibbet" * 6)[:80]),
        ]:
            lines = engine.ask(command)
            assert len(lines) == 1 and lines[0].startswith("info string "), (command[:80], lines)
            assert reason in lines[0] and f"{echo}..." in lines[0], lines[0][:200]
            assert len(lines[0]) < 250, lines[0][:300]


def test_uci_handshake_and_options() -> None:
    with uci_engine() as engine:
        assert engine.id["name"].startswith("chesspipe")
        options = engine.options
        for name, kind in [
            ("OwnBook", "check"),
            ("BookFile", "string"),
            ("SyzygyPath", "string"),
            ("SyzygyProbeDepth", "spin"),
            ("SyzygyProbeLimit", "spin"),
            ("UCI_Chess960", "check"),
            ("Hash", "spin"),
            ("Move Overhead", "spin"),
        ]:
            assert options[name].type == kind
        assert options["OwnBook"].default is False
        assert options["UCI_Chess960"].default is False
        assert options["SyzygyProbeDepth"].default == 1
        assert options["SyzygyProbeLimit"].default == 7
        engine.configure({"Hash": 1, "Move Overhead": 10})
        board = chess.Board()
        assert board.is_legal(engine.play(board, chess.engine.Limit(depth=2)).move)


def test_engine_package_never_imports_pipelines() -> None:
    import ast
    from pathlib import Path

    engine_dir = Path(__file__).resolve().parent.parent / "engine"
    sources = sorted(engine_dir.glob("*.py"))
    assert sources
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] != "pipelines", f"{source.name} imports {name}"


FUZZ_WORDS = [
    "uci",
    "isready",
    "ucinewgame",
    "position",
    "startpos",
    "fen",
    "moves",
    "go",
    "depth",
    "nodes",
    "movetime",
    "wtime",
    "btime",
    "winc",
    "binc",
    "movestogo",
    "searchmoves",
    "stop",
    "setoption",
    "name",
    "value",
    "Hash",
    "OwnBook",
    "BookFile",
    "SyzygyPath",
    "UCI_Chess960",
    "SyzygyProbeLimit",
    "Move",
    "Overhead",
    "true",
    "false",
    "e2e4",
    "e7e5",
    "e1g1",
    "e1h1",
    "a7a8q",
    "0000",
    "-1",
    "0",
    "1",
    "2",
    "99999999999999999999",
    "rnbqkbnr/pppppppp/8/8",
    "8/8/8/8/8/8/8/8",
    "w",
    "b",
    "KQkq",
    "-",
    "\u00e9\u00e8",
    "\x00",
    "debug",
    "ponderhit",
]


def test_random_command_lines_never_end_the_engine() -> None:
    rng = random.Random(2026)
    with raw_engine() as engine:
        for _ in range(300):
            words = [rng.choice(FUZZ_WORDS) for _ in range(rng.randrange(1, 9))]
            if words[0] == "quit":
                words[0] = "go"
            engine.send(" ".join(words))
        assert engine.ask("stop") != ["<eof>"]
        engine.ask("setoption name UCI_Chess960 value false", "position startpos")
        engine.send("go depth 1")
        move = engine.until("bestmove")[-1].split()[1]
        assert chess.Board().is_legal(chess.Move.from_uci(move))
