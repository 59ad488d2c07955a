"""Endgame label sets (sample, EPD list, games) and their .plain export, checked by python-chess."""

from __future__ import annotations

import io
import json
from pathlib import Path

import chess
import chess.pgn
import chess.syzygy
import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.endgames.probing import dtz_to_wdl
from schemas.binpack import (
    BinpackFormatError,
    pack_move,
    pack_position,
    pack_record,
    read_binpack,
    unpack_move,
    unpack_position,
    unpack_record,
    unzigzag,
    zigzag,
)
from schemas.endgame_labels import ENDGAME_LABELS_SCHEMA
from schemas.plain import PlainFormatError, PlainRecord, read_records, write_records
from schemas.speed import Speed
from tests.conftest import ROOT, run_cli

SAMPLE = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"


def read_rows(path: Path) -> list[dict]:
    table = pq.read_table(path)
    assert table.schema.equals(ENDGAME_LABELS_SCHEMA, check_metadata=False)
    return table.to_pylist()


def check_labels_with_python_chess(rows: list[dict], syzygy_dir: Path) -> None:
    tablebase = chess.syzygy.open_tablebase(str(syzygy_dir))
    for row in rows:
        board = chess.Board(row["fen"])
        assert board.is_valid() and not board.castling_rights
        assert row["material"] == chess.syzygy.calc_key(board)
        assert row["pieces"] == chess.popcount(board.occupied)
        assert row["in_check"] == board.is_check()
        assert row["wdl"] == tablebase.probe_wdl(board), row["fen"]
        assert row["dtz"] == tablebase.probe_dtz(board), row["fen"]
        assert row["wdl50"] == dtz_to_wdl(row["dtz"], board.halfmove_clock)
        if row["best_move"] is None:
            assert board.is_game_over()
            continue
        move = chess.Move.from_uci(row["best_move"])
        assert move in board.legal_moves
        board.push(move)
        after = -tablebase.probe_wdl(board) if not board.is_checkmate() else 2
        assert after == row["wdl"], row


@pytest.mark.slow
def test_sample_is_reproducible_uniform_material_and_correctly_labelled(
    syzygy_dir: Path, tmp_path: Path
) -> None:
    for out in ("a", "b"):
        run_cli(
            "endgames",
            "sample",
            "--syzygy",
            str(syzygy_dir),
            "--materials",
            "KRvKP:300,KQvKR:200,KBNvK:100",
            "--seed",
            "5",
            "--out",
            str(tmp_path / out),
        )
    rows = read_rows(tmp_path / "a" / "sample-seed5.parquet")
    assert rows == read_rows(tmp_path / "b" / "sample-seed5.parquet")
    manifest = json.loads((tmp_path / "a" / "sample-seed5.json").read_text())
    assert manifest["rows"] == 600
    counts = {m: sum(r["material"] == m for r in rows) for m in ("KRvKP", "KQvKR", "KBNvK")}
    assert counts == {"KRvKP": 300, "KQvKR": 200, "KBNvK": 100}
    assert len({r["fen"] for r in rows}) == 600
    assert {r["source"] for r in rows} == {"sample"} and {r["ply"] for r in rows} == {0}
    # Uniform: both sides to move, kings everywhere.
    assert 0.4 < sum(" w " in r["fen"] for r in rows) / 600 < 0.6
    check_labels_with_python_chess(rows, syzygy_dir)
    other = tmp_path / "c"
    run_cli(
        "endgames",
        "sample",
        "--syzygy",
        str(syzygy_dir),
        "--materials",
        "KRvKP:300",
        "--seed",
        "6",
        "--out",
        str(other),
        "--backend",
        "python",
    )
    assert read_rows(other / "sample-seed6.parquet") != rows[:300]


@pytest.mark.slow
def test_sample_reads_syzygy_path_and_fails_clearly(syzygy_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_cli(
        "endgames",
        "sample",
        "--materials",
        "KQvK:5",
        "--out",
        str(out),
        env={"SYZYGY_PATH": str(syzygy_dir)},
    )
    assert len(read_rows(out / "sample-seed1.parquet")) == 5
    bad = tmp_path / "bad"
    cases = [
        (["--materials", "KQRvKR:5"], "5 pieces"),
        (["--materials", "KQvKX:5"], "bad material"),
        (["--materials", "QvK:5"], "exactly one king"),
        (["--materials", "KQvK"], "MATERIAL:COUNT"),
    ]
    for extra, message in cases:
        proc = run_cli(
            "endgames",
            "sample",
            "--syzygy",
            str(syzygy_dir),
            "--out",
            str(bad),
            *extra,
            check=False,
        )
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    proc = run_cli(
        "endgames",
        "sample",
        "--materials",
        "KQvK:5",
        "--out",
        str(bad),
        check=False,
        env={"SYZYGY_PATH": ""},
    )
    assert proc.returncode == 1 and "SYZYGY_PATH" in proc.stderr
    proc = run_cli(
        "endgames",
        "sample",
        "--syzygy",
        str(tmp_path / "nowhere"),
        "--materials",
        "KQvK:5",
        "--out",
        str(bad),
        check=False,
    )
    assert proc.returncode == 1 and "does not exist" in proc.stderr
    assert not bad.exists() or not list(bad.iterdir())


@pytest.mark.slow
def test_a_run_never_replaces_earlier_labels_unless_asked(syzygy_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    tables = ("--syzygy", str(syzygy_dir), "--out", str(out))
    run_cli("endgames", "sample", "--materials", "KRvK:30", *tables)
    first = read_rows(out / "sample-seed1.parquet")
    assert {r["material"] for r in first} == {"KRvK"} and len(first) == 30
    # The same seed with other materials: refused, naming the file and the way to replace it.
    proc = run_cli("endgames", "sample", "--materials", "KQvK:10", *tables, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert str(out / "sample-seed1.parquet") in proc.stderr and "--overwrite" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert read_rows(out / "sample-seed1.parquet") == first
    assert json.loads((out / "sample-seed1.json").read_text())["rows"] == 30
    assert sorted(p.name for p in out.iterdir()) == ["sample-seed1.json", "sample-seed1.parquet"]
    # Another seed is another file; --overwrite replaces.
    run_cli("endgames", "sample", "--materials", "KQvK:10", "--seed", "2", *tables)
    assert read_rows(out / "sample-seed1.parquet") == first
    run_cli("endgames", "sample", "--materials", "KQvK:10", "--overwrite", *tables)
    assert {r["material"] for r in read_rows(out / "sample-seed1.parquet")} == {"KQvK"}
    assert json.loads((out / "sample-seed1.json").read_text())["rows"] == 10
    # The EPD list and games writers refuse alike.
    epd = tmp_path / "list.epd"
    epd.write_text("8/8/8/8/8/8/2k5/1q5K w - - 30 71\n")
    run_cli("endgames", "from-epd", str(epd), *tables)
    proc = run_cli("endgames", "from-epd", str(epd), *tables, check=False)
    assert proc.returncode == 1 and str(out / "epd-list.parquet") in proc.stderr
    (out / "games-2024-01.json").write_text("{}")
    proc = run_cli(
        "endgames", "from-games", str(SAMPLE), "--month", "2024-01", *tables, check=False
    )
    assert proc.returncode == 1 and str(out / "games-2024-01.json") in proc.stderr
    assert (out / "games-2024-01.json").read_text() == "{}"
    assert not (out / "games-2024-01.parquet").exists()


@pytest.mark.slow
def test_epd_list(syzygy_dir: Path, tmp_path: Path) -> None:
    epd = tmp_path / "list.epd"
    epd.write_text(
        "# a comment\n"
        '8/8/8/8/3pP3/8/8/K1k5 b - e3 bm d4d3; id "ep";\n'
        "\n"
        "8/8/8/8/8/8/2k5/1q5K w - - 30 71\n"
        "7k/6Q1/6K1/8/8/8/8/8 b - -\n"
    )
    out = tmp_path / "out"
    run_cli("endgames", "from-epd", str(epd), "--syzygy", str(syzygy_dir), "--out", str(out))
    rows = read_rows(out / "epd-list.parquet")
    assert [r["ply"] for r in rows] == [1, 140, 1]
    assert rows[0]["fen"] == "8/8/8/8/3pP3/8/8/K1k5 b - e3 0 1"
    assert rows[2]["best_move"] is None and rows[2]["wdl"] == -2
    check_labels_with_python_chess(rows, syzygy_dir)

    for line, message in [
        ("8/8/8/8/8/8/8/K1k5 w - - 0 1\nnot a fen at all\n", "list.epd:2: invalid FEN"),
        ("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1\n", "castling"),
        ("4k3/8/8/8/8/8/8/RR2K2R w - - 0 1\n", "5 pieces"),
        ("4k3/8/8/8/8/8/4R3/4K3 w - - 0 1\n", "not a legal position"),
    ]:
        epd.write_text(line)
        fresh = tmp_path / "fresh"
        proc = run_cli(
            "endgames",
            "from-epd",
            str(epd),
            "--syzygy",
            str(syzygy_dir),
            "--out",
            str(fresh),
            check=False,
        )
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not fresh.exists() or not [p for p in fresh.iterdir()]
    epd.write_text("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1\n8/8/8/8/8/8/2k5/1q5K w - - 30 71\n")
    run_cli(
        "endgames",
        "from-epd",
        str(epd),
        "--syzygy",
        str(syzygy_dir),
        "--out",
        str(out),
        "--skip-uncovered",
        "--overwrite",
    )
    assert json.loads((out / "epd-list.json").read_text())["uncovered_skipped"] == 1
    assert len(read_rows(out / "epd-list.parquet")) == 1


def label_games_2021(games_2021: Path, syzygy_dir: Path, out: Path) -> None:
    """Label the endgame positions of every game of the 2021-10 sample into out."""
    run_cli("endgames", "from-games", str(games_2021), "--month", "2021-10", "--min-rating", "0",
            "--syzygy", str(syzygy_dir), "--out", str(out))  # fmt: skip


def recount_game_positions(path: Path, largest: int) -> dict[str, tuple]:
    """A plain python-chess pass over every game: the filter, the replay, first occurrences."""
    with open(path, "rb") as raw:
        text = zstandard.ZstdDecompressor().stream_reader(raw).read().decode()
    handle = io.StringIO(text)
    seen: dict[str, tuple] = {}
    while (game := chess.pgn.read_game(handle)) is not None:
        h = game.headers
        elos = (h.get("WhiteElo", ""), h.get("BlackElo", ""))
        if not all(e.isdigit() for e in elos):
            continue
        if Speed.from_time_control(h.get("TimeControl", "").encode()) not in (
            "blitz",
            "rapid",
            "classical",
            "correspondence",
        ):
            continue
        if "BOT" in (h.get("WhiteTitle"), h.get("BlackTitle")) or "Variant" in h:
            continue
        points = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}.get(h.get("Result"))
        if points is None:
            continue
        board = game.board()
        moves = list(game.mainline_moves()) + [None]
        for move in moves:
            if chess.popcount(board.occupied) <= largest and not board.castling_rights:
                key = board.epd()
                if key not in seen:
                    result = points if board.turn == chess.WHITE else -points
                    seen[key] = (board.fen(), move.uci() if move else None, board.ply(), result)
            if move is not None:
                board.push(move)
    return seen


@pytest.mark.slow
def test_games_positions_match_a_python_chess_recount(
    games_2021: Path, syzygy_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    label_games_2021(games_2021, syzygy_dir, out)
    rows = read_rows(out / "games-2021-10.parquet")
    expected = recount_game_positions(games_2021, 4)
    got = {
        chess.Board(r["fen"]).epd(): (r["fen"], r["game_move"], r["ply"], r["game_result"])
        for r in rows
    }
    assert len(got) == len(rows) > 100
    assert got == expected
    manifest = json.loads((out / "games-2021-10.json").read_text())
    assert manifest["games_replayed"] < manifest["games_kept"] / 5  # the capture count pays off
    check_labels_with_python_chess(rows[:150], syzygy_dir)


@pytest.mark.slow
def test_units_of_frames_in_workers_give_the_same_label_set(
    games_2021: Path, syzygy_dir: Path, tmp_path: Path
) -> None:
    """A pzstd-style dump read by units of frames in worker processes: the positions of a
    python-chess recount, in the order a reading in order finds them."""
    from pipelines.endgames.build import game_labels
    from pipelines.games.frames import frame_index, write_framed_zstd
    from pipelines.games.game_filter import GameFilter
    from tests.recount import read_text

    framed = tmp_path / "framed.pgn.zst"
    write_framed_zstd(framed, read_text(games_2021).encode(), frame_size=150_000, level=1)
    with open(framed, "rb") as handle:
        frames = frame_index(handle, framed.stat().st_size)
    assert frames is not None and len(frames) > 10
    rules = GameFilter(min_rating=0)
    runs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        manifest = game_labels([syzygy_dir], str(framed), "2021-10", out, rules,
                               workers=workers, parallel_min_bytes=0)  # fmt: skip
        assert manifest["workers"] == workers
        runs[workers] = (read_rows(out / "games-2021-10.parquet"), manifest)
    (in_order, one), (by_units, two) = runs[1], runs[2]
    assert by_units == in_order
    counts = ("games_read", "games_kept", "games_replayed", "positions_seen", "positions_repeated")
    assert {k: one[k] for k in counts} == {k: two[k] for k in counts}
    got = {
        chess.Board(r["fen"]).epd(): (r["fen"], r["game_move"], r["ply"], r["game_result"])
        for r in by_units
    }
    assert len(got) == len(by_units) > 100
    assert got == recount_game_positions(games_2021, 4)


@pytest.mark.slow
def test_export_plain_records_are_legal_and_agree_with_wdl(
    syzygy_dir: Path, tmp_path: Path, games_2021: Path
) -> None:
    labels = tmp_path / "labels"
    run_cli(
        "endgames",
        "sample",
        "--syzygy",
        str(syzygy_dir),
        "--materials",
        "KRvKP:200,KQvKR:100,KPvKP:100,KBNvK:50,KQvK:50",
        "--seed",
        "2",
        "--out",
        str(labels),
    )
    label_games_2021(games_2021, syzygy_dir, labels)
    tablebase = chess.syzygy.open_tablebase(str(syzygy_dir))
    rows = [r for p in sorted(labels.glob("*.parquet")) for r in read_rows(p)]
    for scheme in ("tb", "cp", "wdl"):
        plain = tmp_path / f"out-{scheme}.plain"
        proc = run_cli(
            "export",
            "plain",
            "--labels",
            str(labels),
            "--out",
            str(plain),
            "--score-scheme",
            scheme,
        )
        summary = json.loads(proc.stdout)
        data = plain.read_bytes()
        assert b"\r" not in data and data.endswith(b"e\n")
        records = list(read_records(plain))
        assert summary["records"] == len(records) == sum(r["best_move"] is not None for r in rows)
        with_moves = [r for r in rows if r["best_move"] is not None]
        for record, row in zip(records, with_moves, strict=True):
            board = chess.Board(record.fen)
            assert board.fullmove_number == record.ply // 2 + 1 and record.ply == row["ply"]
            assert board.fen(en_passant="legal") == record.fen
            move = chess.Move.from_uci(record.move)
            assert move in board.legal_moves, record
            wdl50 = dtz_to_wdl(tablebase.probe_dtz(board), board.halfmove_clock)
            assert record.result == (1 if wdl50 == 2 else -1 if wdl50 == -2 else 0)
            assert -32768 <= record.score <= 32767
            assert (record.score > 0) == (record.result > 0)
            assert (record.score < 0) == (record.result < 0)
            if scheme == "tb" and record.result:
                assert 31507 <= abs(record.score) < 31755
        assert any(r.result == 1 for r in records) and any(r.result == -1 for r in records)
        assert any(r.result == 0 for r in records)


def test_export_errors(tmp_path: Path) -> None:
    proc = run_cli(
        "export",
        "plain",
        "--labels",
        str(tmp_path / "none"),
        "--out",
        str(tmp_path / "x.plain"),
        check=False,
    )
    assert proc.returncode == 1 and "does not exist" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = run_cli(
        "export",
        "plain",
        "--labels",
        str(tmp_path / "empty"),
        "--out",
        str(tmp_path / "x.plain"),
        check=False,
    )
    assert proc.returncode == 1 and "no label files" in proc.stderr
    (tmp_path / "empty" / "junk.parquet").write_bytes(b"not parquet")
    proc = run_cli(
        "export",
        "plain",
        "--labels",
        str(tmp_path / "empty"),
        "--out",
        str(tmp_path / "x.plain"),
        check=False,
    )
    assert proc.returncode == 1 and "Parquet" in proc.stderr
    assert not (tmp_path / "x.plain").exists() and not list(tmp_path.glob(".x.plain*"))


@pytest.mark.slow
def test_export_refuses_a_label_row_with_an_illegal_move(tmp_path: Path) -> None:
    import pyarrow as pa

    labels = tmp_path / "labels"
    labels.mkdir()
    row = {
        "fen": "8/8/8/8/3k4/8/8/KR6 w - - 0 1",
        "material": "KRvK",
        "pieces": 3,
        "in_check": False,
        "wdl": 2,
        "dtz": 29,
        "wdl50": 2,
        "best_move": "b1b8",
        "best_move_dtz": 31,
        "ply": 0,
        "source": "epd",
        "game_move": None,
        "game_result": None,
    }
    good = dict(row, best_move="a1b2")
    table = pa.Table.from_pylist([good, row], schema=ENDGAME_LABELS_SCHEMA)
    pq.write_table(table, labels / "hand.parquet")
    row["best_move"] = "a1a3"
    for fmt in ("plain", "binpack"):
        out = tmp_path / f"x.{fmt}"
        proc = run_cli("export", fmt, "--labels", str(labels), "--out", str(out), check=False)
        assert proc.returncode == 0, proc.stderr  # b1b8 is legal
    pq.write_table(pa.Table.from_pylist([good, row], schema=ENDGAME_LABELS_SCHEMA),
                   labels / "hand.parquet")  # fmt: skip
    for fmt in ("plain", "binpack"):
        out = tmp_path / f"y.{fmt}"
        proc = run_cli("export", fmt, "--labels", str(labels), "--out", str(out), check=False)
        assert proc.returncode == 1 and "a1a3 is not legal" in proc.stderr, proc.stderr
        assert not out.exists() and not list(tmp_path.glob(".y.*"))


def test_plain_records_round_trip_and_reject_bad_files(tmp_path: Path) -> None:
    records = [PlainRecord("8/8/8/8/8/8/2k5/1q5K w - - 30 71", "h1h2", -31700, 140, -1)]
    path = tmp_path / "a.plain"
    assert write_records(records, path) == 1
    assert list(read_records(path)) == records
    with pytest.raises(ValueError):
        PlainRecord("8/8/8/8/8/8/2k5/1q5K w - - 30 71", "h1h2", 40000, 140, -1)
    with pytest.raises(ValueError):
        PlainRecord("8/8/8/8/8/8/2k5/1q5K w - - 30 71", "h1h2", 0, 140, 2)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    with pytest.raises(PlainFormatError):
        list(read_records(path))
    path.write_text("fen x\nmove a\nscore 1.5\nply 0\nresult 0\ne\n")
    with pytest.raises(PlainFormatError):
        list(read_records(path))


def test_sparse_fen_equals_python_chess_fen() -> None:
    from pipelines.endgames.dataset import sparse_fen
    from pipelines.endgames.positions import sample_positions

    boards = [p.board for m in ("KRvKP", "KPPvK", "KQvKQ", "KBNvK") for p in
              sample_positions(m, 200, seed=4)]  # fmt: skip
    boards.append(chess.Board("8/8/8/8/3pP3/8/8/K1k5 b - e3 0 1"))
    boards.append(chess.Board("8/8/8/8/4P3/8/8/K1k5 b - e3 12 40"))  # e3 not capturable
    boards.append(chess.Board())
    for board in boards:
        assert sparse_fen(board) == board.fen()


@pytest.mark.slow
def test_binpack_holds_the_plain_records(
    syzygy_dir: Path, tmp_path: Path, games_2021: Path
) -> None:
    labels = tmp_path / "labels"
    run_cli("endgames", "sample", "--syzygy", str(syzygy_dir), "--materials",
            "KPvKP:150,KRvKP:100,KQvKR:50", "--seed", "8", "--out", str(labels))  # fmt: skip
    label_games_2021(games_2021, syzygy_dir, labels)
    epd = tmp_path / "ep.epd"
    epd.write_text("8/8/8/8/3pP3/8/8/K1k5 b - e3 0 31\n8/1P6/8/8/8/8/2k5/K7 w - - 3 70\n")
    run_cli("endgames", "from-epd", str(epd), "--syzygy", str(syzygy_dir), "--out", str(labels))
    run_cli("export", "plain", "--labels", str(labels), "--out", str(tmp_path / "a.plain"))
    proc = run_cli(
        "export", "binpack", "--labels", str(labels), "--out", str(tmp_path / "a.binpack")
    )
    assert json.loads(proc.stdout)["format"] == "binpack"
    plain = list(read_records(tmp_path / "a.plain"))
    packed = list(read_binpack(tmp_path / "a.binpack"))
    assert packed == plain and len(plain) > 800
    # A chain per run of consecutive plies (the position after the move, ply + 1, result
    # negated): 34 bytes per chain, at most 4 bytes of movetext per further ply.
    follows = sum(
        b.ply == a.ply + 1 and b.result == -a.result and _after(a) == b.fen.rsplit(" ", 1)[0]
        for a, b in zip(plain, plain[1:], strict=False)
    )
    size = (tmp_path / "a.binpack").stat().st_size
    assert 8 + 34 * (len(plain) - follows) <= size <= 8 + 34 * (len(plain) - follows) + 4 * follows
    fens = {r.fen for r in packed}
    assert "8/8/8/8/3pP3/8/8/K1k5 b - e3 0 31" in fens  # an en-passant square that round-trips
    assert any(" b " in f for f in fens) and any(r.move[-1] == "q" for r in packed)
    for record in packed:
        assert chess.Move.from_uci(record.move) in chess.Board(record.fen).legal_moves


def _after(record: PlainRecord) -> str:
    board = chess.Board(record.fen)
    board.push_uci(record.move)
    return board.fen(en_passant="legal").rsplit(" ", 1)[0]


def test_binpack_fields_and_bad_files(tmp_path: Path) -> None:
    for value, raw in ((0, 0), (-1, 1), (1, 2), (-2, 3), (2, 4), (32767, 65534), (-32768, 65535)):
        assert zigzag(value) == raw and unzigzag(raw) == value
    record = PlainRecord("8/8/8/8/3pP3/8/8/K1k5 b - e3 0 31", "d4e3", -31700, 60, -1)
    stem = pack_record(record)
    assert len(stem) == 32
    assert int.from_bytes(stem[:8], "big") == chess.Board(record.fen).occupied
    assert unpack_record(stem) == record
    # Castling is stored king-takes-rook and read back as the king's destination.
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    assert unpack_move(board, pack_move(board, chess.Move.from_uci("e1g1"))).uci() == "e1g1"
    assert (pack_move(board, chess.Move.from_uci("e1c1")) >> 2) & 63 == chess.A1
    assert unpack_position(pack_position(board)).castling_rights == board.castling_rights
    path = tmp_path / "bad.binpack"
    path.write_bytes(b"NOPE" + bytes(40))
    with pytest.raises(BinpackFormatError, match="block header"):
        list(read_binpack(path))
    path.write_bytes(b"BINP" + (100).to_bytes(4, "little") + stem + b"\x00\x00")
    with pytest.raises(BinpackFormatError, match="cut short"):
        list(read_binpack(path))
    path.write_bytes(b"BINP" + (34).to_bytes(4, "little") + stem + b"\x00\x03")
    with pytest.raises(BinpackFormatError, match="past the end of its block"):
        list(read_binpack(path))
    with pytest.raises(ValueError, match="not legal"):
        pack_record(PlainRecord(record.fen, "a1a2", 0, 60, 0))


def test_games_from_a_truncated_source_fail_and_write_nothing(
    games_2021: Path, syzygy_dir: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "cut.pgn.zst"
    data = games_2021.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    out = tmp_path / "out"
    proc = run_cli("endgames", "from-games", str(cut), "--month", "2021-10", "--syzygy",
                   str(syzygy_dir), "--out", str(out), check=False)  # fmt: skip
    assert proc.returncode == 1 and "truncated" in proc.stderr, proc.stderr
    assert not out.exists() or not list(out.iterdir())
    proc = run_cli("endgames", "from-games", str(games_2021), "--month", "2021-13", "--syzygy",
                   str(syzygy_dir), "--out", str(out), check=False)  # fmt: skip
    assert proc.returncode == 1 and "month" in proc.stderr.lower()
