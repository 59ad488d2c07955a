"""The compiled `.plain` <-> `.binpack` codec (pipelines/training/codec.py, `_codec.c`) against
the Python path it stands in for (write_training over read_training): the same bytes, the same
one-line errors, on Stockfish's fixture, our own exports and hand-made records (castling, en
passant, promotions, chains that break, and records the compiled code refuses and hands over).
"""

from __future__ import annotations

import random
from pathlib import Path

import chess
import pytest

from pipelines.errors import ChesspipeError
from pipelines.training import codec
from pipelines.training.convert import convert
from pipelines.training.files import read_training, write_training
from schemas.plain import PlainRecord, read_records
from tests.conftest import GAMES_2021, SYZYGY_DIR, need, run_cli
from tests.random_moves import random_move

pytestmark = pytest.mark.skipif(not codec.available(), reason="the compiled codec is not built")


def python_path(source: Path, out: Path) -> str | None:
    """Convert as `training convert` did before the codec; the error's message, or None."""
    try:
        write_training(read_training(source), out, str(source))
    except ChesspipeError as exc:
        return str(exc)
    return None


class HandedOver:
    """Counts of the records and blocks the compiled code handed to the Python path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.records = self.blocks = 0
        by_python, block_records = codec._by_python, codec.block_records

        def count_records(*args: object) -> tuple[int, int, bool]:
            before = args[-1]
            got = by_python(*args)  # type: ignore[arg-type]
            self.records += got[1] - before  # type: ignore[operator]
            return got

        def count_blocks(*args: object) -> object:
            self.blocks += 1
            return block_records(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(codec, "_by_python", count_records)
        monkeypatch.setattr(codec, "block_records", count_blocks)


def same_as_python(source: Path, out_suffix: str, folder: Path) -> bytes | str:
    """Convert both ways of working; assert the same bytes or the same error; return it."""
    ours, theirs = folder / f"compiled{out_suffix}", folder / f"python{out_suffix}"
    for path in (ours, theirs):
        path.unlink(missing_ok=True)
    expected = python_path(source, theirs)
    try:
        codec.convert_file(source, ours)
        got = None
    except ChesspipeError as exc:
        got = str(exc)
    assert got == expected
    if expected is not None:
        assert not ours.exists()
        return expected
    data = ours.read_bytes()
    assert data == theirs.read_bytes()
    return data


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> HandedOver:
    return HandedOver(monkeypatch)


def test_the_fixture_both_ways_is_stockfishs_bytes_all_compiled(
    tmp_path: Path, plain_fixture: Path, binpack_fixture: Path, handed: HandedOver
) -> None:
    assert same_as_python(plain_fixture, ".binpack", tmp_path) == binpack_fixture.read_bytes()
    assert same_as_python(binpack_fixture, ".plain", tmp_path) == plain_fixture.read_bytes()
    assert handed.records == handed.blocks == 0


def test_our_own_export_both_ways(tmp_path: Path, handed: HandedOver) -> None:
    need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables")
    plain = tmp_path / "own.plain"
    run_cli("training", "from-games", str(need(GAMES_2021, "real Lichess games")), "--month",
            "2021-10", "--out", str(plain), "--syzygy", str(SYZYGY_DIR), "--no-require-eval",
            "--quiet")  # fmt: skip
    packed = tmp_path / "own.binpack"
    packed.write_bytes(same_as_python(plain, ".binpack", tmp_path))  # type: ignore[arg-type]
    assert same_as_python(packed, ".plain", tmp_path) == plain.read_bytes()
    assert handed.records == handed.blocks == 0


def random_records(games: int, seed: int) -> list[PlainRecord]:
    """Random games (castling, en passant and promotions made likely) as records, each FEN
    written with python-chess's en-passant square after any double step or only a legal one;
    some plies dropped (the chain breaks) and some halfmove clocks changed."""
    rng = random.Random(seed)
    records = []
    for _ in range(games):
        board = chess.Board()
        result = rng.choice((-1, 0, 1))
        for ply in range(rng.randrange(20, 160)):
            move = random_move(board, rng, 0.6)
            if move is None:
                break
            if rng.random() > 0.03:
                ep = "fen" if rng.random() < 0.5 else "legal"
                fen = board.fen(en_passant=ep)  # type: ignore[arg-type]
                if rng.random() < 0.02:  # a halfmove clock the chain does not lead to
                    parts = fen.split()
                    parts[4] = str(int(parts[4]) + 1)
                    fen = " ".join(parts)
                score = rng.choice((0, 1, -1, 32767, -32768, 32002, rng.randrange(-3000, 3000)))
                records.append(PlainRecord(fen, move.uci(), score, ply, result))
            board.push(move)
            result = -result
    return records


def write_plain(path: Path, records: list[PlainRecord]) -> Path:
    path.write_bytes("".join(r.format() for r in records).encode())
    return path


@pytest.mark.slow
def test_random_games_with_special_moves_and_broken_chains(
    tmp_path: Path, handed: HandedOver
) -> None:
    records = random_records(50, 5)
    moves = [chess.Move.from_uci(r.move) for r in records]
    assert any(m.promotion for m in moves)
    assert sum(r.move == "e1g1" or r.move == "e8c8" for r in records) > 5
    plain = write_plain(tmp_path / "in.plain", records)
    packed = tmp_path / "in.binpack"
    packed.write_bytes(same_as_python(plain, ".binpack", tmp_path))  # type: ignore[arg-type]
    assert handed.records == 0
    back = tmp_path / "back.plain"
    back.write_bytes(same_as_python(packed, ".plain", tmp_path))  # type: ignore[arg-type]
    assert handed.blocks == 0
    # the round trip keeps every record but for the FEN's en-passant square where none is legal
    again = list(read_records(back))
    assert [(r.move, r.score, r.ply, r.result) for r in again] == [
        (r.move, r.score, r.ply, r.result) for r in records
    ]
    assert [r.fen for r in again] == [chess.Board(r.fen).fen() for r in records]
    assert same_as_python(back, ".binpack", tmp_path) == packed.read_bytes()


CHAIN = [
    PlainRecord("r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R w KQkq - 4 8",
                "e1g1", 30, 14, 0),
    PlainRecord("r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R4RK1 b kq - 5 8",
                "e8c8", -25, 15, 0),
    PlainRecord("2kr3r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R4RK1 w - - 6 9",
                "a2a4", 31, 16, 0),
    PlainRecord("2kr3r/pppq1ppp/2n1bn2/3pp3/P2PP3/2N1BN2/1PPQ1PPP/R4RK1 b - - 0 9",
                "h7h5", -20, 17, 0),
]  # fmt: skip

#: Changes to the second record of CHAIN + CHAIN-like records (text in, text out), each a
#: record the compiled code refuses and the Python path reads, writes or fails on.
ODD_RECORDS = {
    "two spaces after fen": ("fen r3k2r", "fen  r3k2r"),
    "king takes rook": ("move e8c8", "move e8a8"),
    "illegal move": ("move e8c8", "move e8e6"),
    "a FEN that does not parse": ("fen r3k2r/pppq1ppp/2n1bn2", "fen r3k2r/pppq1pxp/2n1bn2"),
    "a FEN without clocks": (" b kq - 5 8\n", " b kq -\n"),
    "castling letters out of order": (" b kq - 5 8", " b qk - 5 8"),
    "a castling right without its rook": ("R4RK1 b kq - 5 8", "R4RK1 b KQkq - 5 8"),
    "an en-passant square on the wrong rank": (" b kq - 5 8", " b kq e4 5 8"),
    "a fullmove number of zero": (" b kq - 5 8", " b kq - 5 0"),
    "a fullmove number with a leading zero": (" b kq - 5 8", " b kq - 5 08"),
    "a score with a leading zero": ("score -25", "score -025"),
    "minus zero": ("score -25", "score -0"),
    "a score out of range": ("score -25", "score -40000"),
    "a result of 2": ("result 0\ne\nfen 2kr", "result 2\ne\nfen 2kr"),
    "a ply past 14 bits": ("ply 15", "ply 16384"),
    "an upper-case promotion": ("move e8c8", "move e8c8Q"),
    "a carriage return": ("move e8c8\n", "move e8c8\r\n"),
    "a blank line": ("e\nfen 2kr3r", "e\n\nfen 2kr3r"),
    "a byte that is not ASCII": ("score -25", "score -2\xe95"),
    "a line too long": ("move e8c8", "move e8c8" + " " * 5000),
    "the side not to move in check": ("fen r3k2r/pppq1ppp", "fen r3k2r/pppqQppp"),
    "a pawn on the back rank": ("r3k2r/pppq1ppp", "r3k1Pr/pppq1ppp"),
    "a halfmove clock past 16 bits": (" b kq - 5 8", " b kq - 70000 8"),
    "a null move": ("move e8c8", "move 0000"),
    "no 'e' line": ("e\nfen 2kr3r", "fen 2kr3r"),
    "a file that ends inside a record": ("h7h5\nscore -20\nply 17\nresult 0\ne\n\x00", "h7h5\n"),
    "no newline at the end": ("result 0\ne\n" + "\x00", "result 0\ne"),
}


@pytest.mark.parametrize("case", sorted(ODD_RECORDS))
def test_records_the_compiled_code_refuses_come_out_as_the_python_paths(
    tmp_path: Path, case: str, handed: HandedOver
) -> None:
    old, new = ODD_RECORDS[case]
    text = "".join(r.format() for r in CHAIN) * 2 + "\x00"
    assert old in text, case
    text = text.replace(old, new, 1).removesuffix("\x00")
    plain = tmp_path / "odd.plain"
    plain.write_bytes(text.encode("latin-1"))
    got = same_as_python(plain, ".binpack", tmp_path)
    assert handed.records >= 1 or isinstance(got, str)
    if isinstance(got, bytes):  # the records after the odd one went back to the compiled code
        assert handed.records <= 2


@pytest.mark.slow
def test_mangled_plain_files_give_the_python_paths_bytes_or_error(tmp_path: Path) -> None:
    rng = random.Random(3)
    text = "".join(r.format() for r in random_records(3, 11)).encode()
    outcomes = set()
    for _ in range(150):
        mangled = bytearray(text)
        for _ in range(rng.randrange(1, 4)):
            mangled[rng.randrange(len(mangled))] = rng.choice(b"abcdefgh12345678 -\nKQkqwb/0e")
        plain = tmp_path / "mangled.plain"
        plain.write_bytes(bytes(mangled))
        outcomes.add(type(same_as_python(plain, ".binpack", tmp_path)))
    assert outcomes == {bytes, str}


@pytest.mark.slow
def test_mangled_binpack_files_give_the_python_paths_bytes_or_error(tmp_path: Path) -> None:
    rng = random.Random(4)
    plain = write_plain(tmp_path / "few.plain", random_records(4, 12))
    data = same_as_python(plain, ".binpack", tmp_path)
    assert isinstance(data, bytes)
    outcomes = set()
    for _ in range(150):
        mangled = bytearray(data)
        for _ in range(rng.randrange(1, 3)):
            mangled[rng.randrange(8, len(mangled))] = rng.randrange(256)
        if rng.random() < 0.1:
            mangled = mangled[: rng.randrange(len(mangled))]
        packed = tmp_path / "mangled.binpack"
        packed.write_bytes(bytes(mangled))
        outcomes.add(type(same_as_python(packed, ".plain", tmp_path)))
    assert outcomes == {bytes, str}


def test_a_block_with_a_pawn_on_the_back_rank_is_decoded_by_python(
    tmp_path: Path, handed: HandedOver
) -> None:
    plain = write_plain(tmp_path / "odd.plain", [
        PlainRecord("P3k3/8/8/8/8/8/8/4K3 w - - 0 1", "e1d2", 5, 0, 1),
        *CHAIN,
    ])  # fmt: skip
    packed = tmp_path / "odd.binpack"
    packed.write_bytes(same_as_python(plain, ".binpack", tmp_path))  # type: ignore[arg-type]
    assert handed.records == 2  # its own, and the next (the compiled writer cannot take its board)
    assert same_as_python(packed, ".plain", tmp_path) == plain.read_bytes()
    assert handed.blocks == 1


@pytest.mark.slow
def test_blocks_past_a_mebibyte_with_records_handed_over_between(
    tmp_path: Path, plain_fixture: Path, handed: HandedOver
) -> None:
    """Every record a chain's stem (the fixture backwards), 1.4 MB of them, a FEN without
    clocks every 4,000 records: the blocks end where the Python writer ends them."""
    records = list(reversed(list(read_records(plain_fixture)))) * 4
    for index in range(3999, len(records), 4000):
        record = records[index]
        records[index] = PlainRecord(record.fen.rsplit(" ", 2)[0], *list(vars(record).values())[1:])
    plain = write_plain(tmp_path / "stems.plain", records)
    data = same_as_python(plain, ".binpack", tmp_path)
    assert isinstance(data, bytes) and data.count(b"BINP") == 2
    assert handed.records == len(records) // 4000


def test_convert_keeps_to_the_python_path_without_the_compiled_module(
    tmp_path: Path, plain_fixture: Path, binpack_fixture: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codec, "_codec", None)
    monkeypatch.setattr(codec, "convert_file", None)  # never called
    summary = convert(binpack_fixture, tmp_path / "out.plain")
    assert summary["records"] == 9958
    assert (tmp_path / "out.plain").read_bytes() == plain_fixture.read_bytes()
