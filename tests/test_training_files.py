"""Training files: chained .binpack as Stockfish's tools write it, and the trainers' file tools.

The truth is `../shared/data/stockfish/`: 9,958 records of whole games (`games-eval.plain`) and
the `.binpack` Stockfish's own `convert` wrote from them.
"""

from __future__ import annotations

import io
import json
import random
import re
from collections import Counter
from pathlib import Path

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.training.mixing import shuffle_file
from schemas.binpack import (
    BinpackFormatError,
    BinpackWriter,
    fen_prefix,
    iter_binpack,
    read_binpack,
    write_binpack,
)
from schemas.plain import PlainFormatError, PlainRecord, read_records, write_records
from tests.conftest import run_cli
from tests.random_moves import random_move


@pytest.fixture(scope="module")
def records(plain_fixture: Path) -> list[PlainRecord]:
    return list(read_records(plain_fixture))


def binpack_bytes(records: list[PlainRecord]) -> bytes:
    out = io.BytesIO()
    writer = BinpackWriter(out)
    for record in records:
        writer.add(record)
    writer.close()
    return out.getvalue()


# --- the fixture: Stockfish's bytes and records ----------------------------------------------


def test_writer_gives_stockfish_bytes(records: list[PlainRecord], binpack_fixture: Path) -> None:
    assert len(records) == 9958
    assert binpack_bytes(records) == binpack_fixture.read_bytes()


def test_reader_gives_the_plain_records(records: list[PlainRecord], binpack_fixture: Path) -> None:
    got = list(read_binpack(binpack_fixture))
    assert len(got) == len(records)
    for index, (mine, theirs) in enumerate(zip(got, records, strict=True)):
        assert mine == theirs, index  # fen, move, score, ply, result


def test_plain_binpack_plain_round_trip_is_byte_identical(
    plain_fixture: Path, tmp_path: Path
) -> None:
    packed = tmp_path / "a.binpack"
    assert write_binpack(read_records(plain_fixture), packed) == 9958
    back = tmp_path / "a.plain"
    assert write_records(read_binpack(packed), back) == 9958
    assert back.read_bytes() == plain_fixture.read_bytes()


def test_every_fixture_move_is_legal_and_chains_are_real(records: list[PlainRecord]) -> None:
    stems = 0
    previous: PlainRecord | None = None
    for record in records:
        board = chess.Board(record.fen)
        assert chess.Move.from_uci(record.move) in board.legal_moves
        assert board.fullmove_number == record.ply // 2 + 1
        if previous is None or record.ply != previous.ply + 1:
            stems += 1
        previous = record
    # every game starts at ply 0 and is one chain (SOURCE.md's "96 + 135" counts 231 games,
    # the files hold 151)
    assert stems == sum(r.ply == 0 for r in records) == 151


# --- chains from random legal games ----------------------------------------------------------


def random_game_records(seed: int, plies: int, special_share: float = 0.6) -> list[PlainRecord]:
    """A random legal game (castling, en passant, promotions made likely) as records."""
    rng = random.Random(seed)
    board = chess.Board()
    result = rng.choice((-1, 0, 1))
    records = []
    for ply in range(plies):
        move = random_move(board, rng, special_share)
        if move is None:
            break
        score = rng.choice((rng.randint(-400, 400), rng.randint(-32768, 32767), 32002, -32000))
        records.append(PlainRecord(board.fen(en_passant="legal"), move.uci(), score, ply, result))
        board.push(move)
        result = -result
    return records


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seeds=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4),
    plies=st.integers(1, 300),
    skip=st.integers(0, 40),
)
def test_random_games_round_trip_as_chains(seeds: list[int], plies: int, skip: int) -> None:
    # each game from its `skip`th ply: stems of mid-game positions (castling rights partly
    # gone, en-passant squares) as well as of the start position
    games = [random_game_records(seed, plies) for seed in seeds]
    records = [r for game in games for r in game[skip:]]
    data = binpack_bytes(records)
    assert list(iter_binpack(io.BytesIO(data))) == records
    games = sum(len(game) > skip for game in games)
    # one chain per game: a 34-byte stem, then at most 4 bytes per further ply
    assert len(data) <= 8 + 34 * games + 4 * (len(records) - games)


@pytest.mark.slow
def test_random_games_cover_the_special_moves() -> None:
    records = [r for seed in range(30) for r in random_game_records(seed, 250)]
    kinds = {"castling": 0, "en passant": 0, "promotion": 0, "underpromotion": 0}
    for record in records:
        board, move = chess.Board(record.fen), chess.Move.from_uci(record.move)
        kinds["castling"] += board.is_castling(move)
        kinds["en passant"] += board.is_en_passant(move)
        kinds["promotion"] += move.promotion is not None
        kinds["underpromotion"] += move.promotion not in (None, chess.QUEEN)
    assert all(kinds.values()), kinds
    for record in records:
        board = chess.Board(record.fen)
        assert f"{fen_prefix(board)} {board.fullmove_number}" == board.fen(en_passant="legal")
    assert list(iter_binpack(io.BytesIO(binpack_bytes(records)))) == records


def test_chains_break_where_stockfish_would_not_lose_the_halfmove_clock() -> None:
    records = random_game_records(3, 40)
    fields = records[10].fen.split(" ")
    fields[4] = str(int(fields[4]) + 7)
    records[10] = PlainRecord(" ".join(fields), *[getattr(records[10], k) for k in
                              ("move", "score", "ply", "result")])  # fmt: skip
    assert list(iter_binpack(io.BytesIO(binpack_bytes(records)))) == records


def test_a_needless_en_passant_square_does_not_break_the_chain() -> None:
    board = chess.Board()
    records = []
    for ply, move in enumerate(["e2e4", "e7e5", "g1f3"]):
        records.append(PlainRecord(board.fen(en_passant="fen"), move, 10, ply, 0))
        board.push_uci(move)
    assert " e3 " in records[1].fen  # written by a tool that always names the square
    data = binpack_bytes(records)
    assert data[8 + 32 : 8 + 34] == b"\x00\x02" and len(data) == 8 + 34 + 4  # one chain
    back = list(iter_binpack(io.BytesIO(data)))
    # read back as every reader of the format gives it: no en-passant square where none is legal
    assert back[0] == records[0]
    assert back[1] == PlainRecord(records[1].fen.replace(" e3 ", " - "), "e7e5", 10, 1, 0)
    assert back[2] == PlainRecord(records[2].fen.replace(" e6 ", " - "), "g1f3", 10, 2, 0)


class CountingReads(io.BytesIO):
    largest = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.largest = max(self.largest, len(data))
        return data


@pytest.mark.slow
def test_blocks_start_at_a_chain_once_they_hold_one_mebibyte(records: list[PlainRecord]) -> None:
    isolated = list(reversed(records)) * 4  # no record follows its predecessor: one stem each
    data = binpack_bytes(isolated)
    first = int.from_bytes(data[4:8], "little")
    assert data[:4] == b"BINP" and first == -(-(1 << 20) // 34) * 34
    assert data[8 + first : 12 + first] == b"BINP"
    assert int.from_bytes(data[12 + first : 16 + first], "little") == 34 * len(isolated) - first
    stream = CountingReads(data)
    assert list(iter_binpack(stream)) == isolated
    assert stream.largest == first  # one block in memory at a time


# --- bad input: one clear error, naming the file and where -----------------------------------

START = chess.Board()


def start_chain(plies: int, movetext: bytes) -> bytes:
    """A chain from the start position (1. e4 scored 20), with `plies` more plies of movetext."""
    stem = binpack_bytes([PlainRecord(START.fen(), "e2e4", 20, 0, 1)])[8 : 8 + 32]
    block = stem + plies.to_bytes(2, "big") + movetext
    return b"BINP" + len(block).to_bytes(4, "little") + block


def read_error(data: bytes) -> str:
    with pytest.raises(BinpackFormatError) as caught:
        list(iter_binpack(io.BytesIO(data), "x.binpack"))
    message = str(caught.value)
    assert "\n" not in message and message.startswith("x.binpack: ")
    return message


def test_hand_made_chain_reads() -> None:
    # Black's e-pawn is piece 4 of 16 (4 bits); e7e5 is destination 0 of 2 (1 bit); score delta
    # 0 in one 5-bit block: 0100 0 00000, padded.
    records = list(iter_binpack(io.BytesIO(start_chain(1, b"\x40\x00"))))
    assert [(r.move, r.score, r.ply, r.result) for r in records] == [
        ("e2e4", 20, 0, 1), ("e7e5", -20, 1, -1),
    ]  # fmt: skip


def test_corrupt_binpack_inputs_give_clear_errors(binpack_fixture: Path) -> None:
    good = binpack_fixture.read_bytes()
    assert "no block header at byte 0" in read_error(b"BINX" + good[4:])
    assert "no block header at byte 24404" in read_error(good + b"BIN")
    assert "cut short (24395 of 24396 bytes)" in read_error(good[:-1])
    assert "claims 4294967295 bytes" in read_error(b"BINP\xff\xff\xff\xff" + good[8:])
    # the last chain's movetext cut by a byte, the block size told the truth
    cut = b"BINP" + (24395).to_bytes(4, "little") + good[8:-1]
    assert "runs past the end of its block" in read_error(cut)
    assert "runs past the end of its block" in read_error(start_chain(1, b"\x40"))
    assert "ply 2 of 2: move 0 of 0" in read_error(start_chain(2, b"\x40\x00"))  # Ra1 stuck
    # the black king (piece 12) castles kingside through its own pieces: 1100 1 00000
    assert "illegal move e8g8" in read_error(start_chain(1, b"\xc8\x00"))
    assert "ply 1 of 1" in read_error(start_chain(1, b"\xc8\x00"))
    assert "stray bytes" in read_error(start_chain(0, b"\x00\x00\x00"))
    bad_result = bytearray(start_chain(0, b""))
    bad_result[8 + 28] |= 0xC0  # result -2
    assert "bad stem: result -2" in read_error(bytes(bad_result))
    bad_move = bytearray(start_chain(0, b""))
    bad_move[8 + 24 : 8 + 26] = (chess.E2 << 8 | chess.E5 << 2).to_bytes(2, "big")
    assert "bad stem: illegal move e2e5" in read_error(bytes(bad_move))


def test_castling_as_king_takes_rook_is_refused() -> None:
    # Stockfish's tools read e1h1 as long castling, python-chess as short: neither is written
    fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
    with pytest.raises(ValueError, match="castling is written as the king's destination, not e1h1"):
        binpack_bytes([PlainRecord(fen, "e1h1", 0, 0, 0)])
    assert [r.move for r in iter_binpack(io.BytesIO(binpack_bytes(
        [PlainRecord(fen, "e1g1", 0, 0, 0), PlainRecord(fen, "e1c1", 0, 0, 0)]
    )))] == ["e1g1", "e1c1"]  # fmt: skip


def plain_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "x.plain"
    path.write_bytes(text.encode())
    with pytest.raises(PlainFormatError) as caught:
        list(read_records(path))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}:")
    return message.removeprefix(f"{path}:")


def test_bad_plain_inputs_give_clear_errors(tmp_path: Path) -> None:
    good = PlainRecord(START.fen(), "e2e4", 20, 0, 1).format()
    assert plain_error(tmp_path, good + good.replace("score 20\n", "")).startswith(
        "9: record 2: expected 'score ...', got 'ply 0'"
    )
    assert plain_error(tmp_path, good + good.replace("ply 0", "ply 1.5")) == (
        "7: record 2: ply '1.5' is not an integer"
    )
    assert plain_error(tmp_path, good.replace("score 20", "score x")) == (
        "1: record 1: score 'x' is not an integer"
    )
    assert "ends inside a record" in plain_error(tmp_path, good + good[:40])
    assert "carriage return" in plain_error(tmp_path, good.replace("\n", "\r\n"))
    assert "result 2 is not -1, 0 or 1" in plain_error(
        tmp_path, good.replace("result 1", "result 2")
    )


# --- the command line -------------------------------------------------------------------------


def test_convert_both_ways_on_the_command_line(
    plain_fixture: Path, binpack_fixture: Path, tmp_path: Path
) -> None:
    proc = run_cli("training", "convert", str(plain_fixture), str(tmp_path / "a.binpack"))
    assert json.loads(proc.stdout)["records"] == 9958
    assert (tmp_path / "a.binpack").read_bytes() == binpack_fixture.read_bytes()
    run_cli("training", "convert", str(binpack_fixture), str(tmp_path / "a.plain"))
    assert (tmp_path / "a.plain").read_bytes() == plain_fixture.read_bytes()
    run_cli("training", "convert", str(tmp_path / "a.plain"), str(tmp_path / "b.plain"))
    assert (tmp_path / "b.plain").read_bytes() == plain_fixture.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.binpack", "a.plain", "b.plain"]


@pytest.mark.slow
def test_stats_counts_what_python_chess_counts(
    records: list[PlainRecord], binpack_fixture: Path
) -> None:
    stats = json.loads(run_cli("training", "stats", str(binpack_fixture), "--json").stdout)
    boards = [chess.Board(r.fen) for r in records]
    assert stats["records"] == 9958
    assert stats["results"] == {
        "win": sum(r.result == 1 for r in records),
        "draw": sum(r.result == 0 for r in records),
        "loss": sum(r.result == -1 for r in records),
    }
    assert stats["in_check_share"] == round(sum(b.is_check() for b in boards) / 9958, 4)
    captures = sum(b.is_capture(chess.Move.from_uci(r.move)) for b, r in zip(boards, records,
                   strict=True))  # fmt: skip
    assert stats["capture_share"] == round(captures / 9958, 4)
    assert stats["pieces"]["32"] == sum(len(b.piece_map()) == 32 for b in boards)
    assert sum(stats["pieces"].values()) == sum(stats["scores"].values()) == 9958
    assert sum(stats["plies"].values()) == 9958
    assert (stats["ply_min"], stats["ply_max"]) == (0, max(r.ply for r in records))
    text = run_cli("training", "stats", str(binpack_fixture)).stdout
    assert "9958 records" in text and "in check: " in text


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".plain", ".binpack"])
def test_shuffle_keeps_the_records_and_follows_the_seed(
    records: list[PlainRecord], binpack_fixture: Path, tmp_path: Path, suffix: str
) -> None:
    outs = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        out = tmp_path / f"{name}{suffix}"
        run_cli("training", "shuffle", str(binpack_fixture), str(out), "--seed", str(seed),
                "--buckets", "4")  # fmt: skip
        outs[name] = out
    shuffled = list(read_binpack(outs["a"]) if suffix == ".binpack" else read_records(outs["a"]))
    assert Counter(shuffled) == Counter(records) and shuffled != records
    assert outs["a"].read_bytes() == outs["b"].read_bytes()
    assert outs["a"].read_bytes() != outs["c"].read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in outs.values())


@pytest.mark.slow
def test_shuffle_in_memory_and_through_buckets_both_permute(
    plain_fixture: Path, tmp_path: Path
) -> None:
    one = shuffle_file(plain_fixture, tmp_path / "one.plain", seed=5, buckets=1)
    many = shuffle_file(plain_fixture, tmp_path / "many.plain", seed=5, buckets=50)
    assert one["records"] == many["records"] == 9958
    a, b = list(read_records(tmp_path / "one.plain")), list(read_records(tmp_path / "many.plain"))
    assert Counter(a) == Counter(b) and a != b
    # a record's new place is spread over the whole file, not kept near the old one
    where = {r: i for i, r in enumerate(a)}
    moved = sum(abs(where[r] - i) > 1000 for i, r in enumerate(list(read_records(plain_fixture))))
    assert moved > 0.7 * 9958


@pytest.mark.slow
def test_interleave_mixes_by_size_keeps_each_order_and_follows_the_seed(
    records: list[PlainRecord], plain_fixture: Path, tmp_path: Path
) -> None:
    others = [r for seed in range(100, 200) for r in random_game_records(seed, 10)]
    assert len(others) == 1000 and not set(others) & set(records)
    small = tmp_path / "small.binpack"
    write_binpack(others, small)
    outs = {}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        outs[name] = tmp_path / f"{name}.plain"
        run_cli("training", "interleave", str(plain_fixture), str(small), "--out",
                str(outs[name]), "--seed", str(seed))  # fmt: skip
    mixed = list(read_records(outs["a"]))
    assert Counter(mixed) == Counter(records) + Counter(others)
    assert outs["a"].read_bytes() == outs["b"].read_bytes() != outs["c"].read_bytes()
    # the small file's records are spread over the output in proportion (1000 of 10958)
    others_set = set(others)
    assert 380 <= sum(r in others_set for r in mixed[: len(mixed) // 2]) <= 620
    # each input keeps its own order
    assert [r for r in mixed if r in others_set] == others
    assert [r for r in mixed if r not in others_set] == records


def cli_error(*args: str) -> str:
    proc = run_cli(*args, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("chesspipe: error: "), proc.stderr
    return lines[0].removeprefix("chesspipe: error: ")


@pytest.mark.slow
def test_bad_inputs_on_the_command_line_write_nothing(
    plain_fixture: Path, binpack_fixture: Path, tmp_path: Path
) -> None:
    good = binpack_fixture.read_bytes()
    cut = tmp_path / "cut.binpack"
    cut.write_bytes(good[: len(good) // 2])
    flipped = tmp_path / "flipped.binpack"
    # a bit flip may decode into other legal moves (the format has no checksum); this one not
    flipped.write_bytes(good[:5001] + bytes([good[5001] ^ 0x5A]) + good[5002:])
    plain = plain_fixture.read_bytes()
    missing = tmp_path / "missing.plain"
    missing.write_bytes(plain[:600] + re.sub(rb"score -?[0-9]+\n", b"", plain[600:], count=1))
    fraction = tmp_path / "fraction.plain"
    fraction.write_bytes(plain.replace(b"\nscore -32\n", b"\nscore -32.5\n", 1))
    illegal = tmp_path / "illegal.plain"
    illegal.write_bytes(plain.replace(b"move c7c5\n", b"move c7c4\n", 1))
    out = tmp_path / "out" / "o.binpack"

    assert "cut.binpack: block at byte 0 is cut short" in cli_error(
        "training", "convert", str(cut), str(out)
    )
    message = cli_error("training", "convert", str(flipped), str(out))
    assert message == (
        f"{flipped}: block at byte 0: chain at offset 4957, ply 2 of 43: illegal move e1g1 in "
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"
    )
    assert f"{missing}:39: record 7: expected 'score ...', got 'ply 6'" in cli_error(
        "training", "shuffle", str(missing), str(out), "--seed", "1"
    )
    assert f"{fraction}:7: record 2: score '-32.5' is not an integer" in cli_error(
        "training", "interleave", str(plain_fixture), str(fraction), "--out", str(out),
        "--seed", "1",
    )  # fmt: skip
    assert f"{illegal}: record 2: move c7c4 is not legal" in cli_error(
        "training", "convert", str(illegal), str(out)
    )
    assert "ends in .plain or .binpack" in cli_error(
        "training", "convert", str(plain_fixture), str(tmp_path / "o.txt")
    )
    assert "cannot read" in cli_error("training", "stats", str(tmp_path / "none.plain"))
    assert not out.exists() and not list(out.parent.iterdir())


#: Records Stockfish's tools cannot take, as the second of two: (what is wrong, record text,
#: the line the error names: the FEN's or the move's, and what it says).
GOOD_RECORD = PlainRecord(START.fen(), "e2e4", 20, 0, 0).format()
BAD_RECORDS = {
    "illegal move": (GOOD_RECORD.replace("e2e4", "e2e5"), 8, "move e2e5 is not legal in"),
    "bad FEN": (
        GOOD_RECORD.replace("/pppppppp/", "/ppppXppp/"), 7, "invalid character in position",
    ),
    "no kings": (
        "fen 8/8/8/8/8/8/PPPPPPPP/8 w - - 0 1\nmove e2e4\nscore 0\nply 0\nresult 0\ne\n",
        7, "not one white king",
    ),
    "castling as king takes rook": (
        "fen 4k3/8/8/8/8/8/8/4K2R w K - 0 1\nmove e1h1\nscore 0\nply 0\nresult 0\ne\n",
        8, "castling is written as the king's destination, not e1h1",
    ),
    "NUL byte": (GOOD_RECORD.replace(" w KQkq", " w\x00KQkq"), 7, "for turn part of fen"),
    "NUL byte in the move": (GOOD_RECORD.replace("e2e4", "e2e4\x00"), 8, "invalid uci"),
}  # fmt: skip


@pytest.mark.parametrize("kind", BAD_RECORDS)
@pytest.mark.parametrize("command", ["shuffle", "interleave", "stats", "convert"])
def test_bad_records_fail_in_one_line_naming_the_line_and_publish_nothing(
    tmp_path: Path, kind: str, command: str
) -> None:
    """Every tool checks every record as the .binpack writer does (schemas/legal_record.py);
    convert, whose .binpack writer checks them, names the record as it did."""
    text, line, reason = BAD_RECORDS[kind]
    bad = tmp_path / "bad.plain"
    bad.write_bytes((GOOD_RECORD + text).encode())
    outs = tmp_path / "out"
    outs.mkdir()
    args = {
        "shuffle": ("shuffle", str(bad), str(outs / "o.plain"), "--seed", "1"),
        "interleave": ("interleave", str(bad), "--out", str(outs / "o.plain"), "--seed", "1"),
        "stats": ("stats", str(bad)),
        "convert": ("convert", str(bad), str(outs / "o.binpack")),
    }[command]
    message = cli_error("training", *args)
    where = f"{bad}: record 2: " if command == "convert" else f"{bad}:{line}: record 2: "
    assert message.startswith(where) and reason in message, message
    assert list(outs.iterdir()) == []


@pytest.mark.slow
def test_checked_tools_still_take_every_fixture_record(plain_fixture: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.plain"
    run_cli("training", "shuffle", str(plain_fixture), str(out), "--seed", "3", "--buckets", "1")
    assert Counter(read_records(out)) == Counter(read_records(plain_fixture))
    assert json.loads(run_cli("training", "stats", str(out), "--json").stdout)["records"] == 9958
