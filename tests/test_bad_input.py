"""Bad input: bad games are dropped under a reason; bad streams fail clearly, publish nothing."""

from __future__ import annotations

import argparse
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from pipelines.errors import ChesspipeError, CorruptInput
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.manifest import IngestManifest
from pipelines.ingest.options import RunPolicy, Runtime, Tuning
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import manifest_path, partition_dir, partition_file
from schemas.speed import Speed
from tests.conftest import run_cli
from tests.recount import read_text

ANY = GameFilter(0, frozenset(Speed), allow_bots=True)
#: Every game with both ratings and a known time control (the Lichess filter, opened up).
RATED = GameFilter(1, frozenset(Speed) - {Speed.OTB}, allow_bots=True)


def game(moves: str = "1. e4 e5 2. Nf3 Nc6 1-0", result: str = "1-0", **tags: str) -> bytes:
    base = {
        "Event": "Rated Blitz game",
        "Site": "https://lichess.org/x",
        "White": "a",
        "Black": "b",
        "Result": result,
        "WhiteElo": "2300",
        "BlackElo": "2250",
        "TimeControl": "300+0",
    }
    base.update(tags)
    header = "\n".join(f'[{k} "{v}"]' for k, v in base.items() if v is not None)
    return f"{header}\n\n{moves}\n\n".encode()


def run(
    tmp_path: Path,
    data: bytes,
    name: str = "in.pgn",
    rules: GameFilter = ANY,
    **kwargs: object,
) -> IngestManifest:
    source = tmp_path / name
    source.write_bytes(data)
    return ingest(str(source), "2024-01", tmp_path / "wh", IngestSettings(rules), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("rules", [RATED, ANY], ids=["rated", "every_game"])
def test_each_bad_game_is_dropped_under_its_reason(tmp_path: Path, rules: GameFilter) -> None:
    data = b"".join(
        [
            game(),
            game(WhiteElo="?"),
            game(BlackElo=None),  # type: ignore[arg-type]
            game(moves="1. e4 e5 2. Ke3 Nc6 1-0"),  # illegal
            game(moves="1. e4 e5 2. Zz9 Nc6 1-0"),  # unparsable
            game(moves="1-0"),  # no moves
            game(result="*", moves="1. e4 *"),
            game(Result=None, moves="1. e4 1-0"),  # type: ignore[arg-type]
            game(TimeControl="fast"),
            game(Variant="Atomic"),
            game(White="J\xfcrgen").replace("J\xfcrgen".encode(), b"J\xfcrgen"),  # latin-1 byte
            game(moves="1. d4 {unclosed comment 1-0"),
            game(),
        ]
    )
    manifest = run(tmp_path, data, rules=rules)
    assert manifest.games_read == 13
    # Two good, the latin-1 name, the unclosed comment's d4; every game also keeps the two
    # without a rating and the one whose time control is not known.
    assert manifest.games_kept == (4 if rules is RATED else 7)
    expected = {"illegal_move": 2, "no_moves": 1, "result": 2, "variant": 1}
    if rules is RATED:
        expected.update(rating_missing=2, time_control=1)
    assert manifest.games_dropped == expected


def test_huge_game_is_dropped_and_the_rest_counted(tmp_path: Path) -> None:
    huge = game(moves="1. e4 " + "{ " + "x" * (5 << 20) + " } e5 1-0")
    manifest = run(tmp_path, game() + huge + game())
    assert manifest.games_dropped == {"oversized": 1}
    assert manifest.games_kept == 2
    assert manifest.games_read == 3


@pytest.mark.slow
def test_absurd_rating_is_counted_not_fatal(tmp_path: Path) -> None:
    """A rating beyond 16 bits counts as 65535 in the rating sums (its game's group is 2500)."""
    import chess
    import chess.polyglot
    import pyarrow.parquet as pq

    manifest = run(tmp_path, game(WhiteElo="99999999999") + game())
    assert manifest.games_kept == 2
    rows = pq.read_table(partition_file(tmp_path / "wh", "2024-01")).to_pylist()
    start = chess.polyglot.zobrist_hash(chess.Board())
    first = sorted((r["rating_group"], r["rating_sum"]) for r in rows if r["key"] == start)
    assert first == [(2200, 2300), (2500, 65535)]


def test_both_ratings_beyond_16_bits_are_counted_not_fatal(tmp_path: Path) -> None:
    """Both players rated beyond 16 bits: the game's band is MAX_RATING's, no traceback."""
    import chess
    import chess.polyglot
    import pyarrow.parquet as pq

    manifest = run(tmp_path, game(WhiteElo="99999", BlackElo="88888") + game())
    assert manifest.games_kept == 2
    rows = pq.read_table(partition_file(tmp_path / "wh", "2024-01")).to_pylist()
    start = chess.polyglot.zobrist_hash(chess.Board())
    bands = sorted(r["rating_band"] for r in rows if r["key"] == start)
    assert bands == [2200, 65500]


def zst(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(data)


def test_truncated_zstd_fails_and_publishes_nothing(tmp_path: Path, games_2021: Path) -> None:
    data = games_2021.read_bytes()
    source = tmp_path / "cut.pgn.zst"
    source.write_bytes(data[: len(data) // 2])
    proc = run_cli(
        "ingest",
        str(source),
        "--month",
        "2021-10",
        "--warehouse",
        str(tmp_path / "wh"),
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("chesspipe: error: truncated zstd stream")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not partition_dir(tmp_path / "wh", "2021-10").exists() or not any(
        partition_dir(tmp_path / "wh", "2021-10").glob("*.parquet")
    )
    assert not manifest_path(tmp_path / "wh", "2021-10").exists()


def test_truncated_zstd_with_keep_partial(tmp_path: Path, games_2021: Path) -> None:
    data = games_2021.read_bytes()
    source = tmp_path / "cut.pgn.zst"
    source.write_bytes(data[: len(data) // 2])
    manifest = ingest(
        str(source),
        "2021-10",
        tmp_path / "wh",
        IngestSettings(ANY),
        policy=RunPolicy(keep_partial=True),
    )
    assert manifest.partial is True
    assert "truncated" in manifest.error
    assert 0 < manifest.games_read < 999
    assert partition_file(tmp_path / "wh", "2021-10").exists()


def test_garbage_inside_zstd_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(CorruptInput, match="corrupt zstd data"):
        run(tmp_path, zst(game()) + b"\x00garbage" * 100, name="g.pgn.zst")


def test_failed_run_keeps_the_previous_partition(tmp_path: Path, games_2021: Path) -> None:
    good = ingest(str(games_2021), "2021-10", tmp_path, IngestSettings(ANY))
    before = partition_file(tmp_path, "2021-10").read_bytes()
    cut = tmp_path / "cut.pgn.zst"
    cut.write_bytes(games_2021.read_bytes()[:50000])
    with pytest.raises(CorruptInput):
        ingest(str(cut), "2021-10", tmp_path, IngestSettings(ANY))
    assert partition_file(tmp_path, "2021-10").read_bytes() == before
    assert manifest_path(tmp_path, "2021-10").read_text().count(good.source_sha256) == 1
    assert not list((tmp_path / ".staging").iterdir())


def test_plain_garbage_is_read_as_games_that_fail(tmp_path: Path) -> None:
    manifest = run(tmp_path, bytes(range(256)) * 50 + b"\n\n" + game())
    assert manifest.games_kept == 1
    assert manifest.games_read == 2
    assert manifest.games_dropped == {"malformed": 1}


def test_crlf_and_bom_and_no_trailing_newline(tmp_path: Path) -> None:
    text = (b"\xef\xbb\xbf" + game() + game()).replace(b"\n", b"\r\n").rstrip()
    manifest = run(tmp_path, text)
    assert manifest.games_kept == 2


def test_empty_input_publishes_an_empty_month_when_allowed(tmp_path: Path) -> None:
    from pipelines.games.game_filter import NothingKept

    with pytest.raises(NothingKept, match=r"in\.pgn holds no game; nothing published"):
        run(tmp_path, b"")
    assert not partition_file(tmp_path / "wh", "2024-01").exists()
    manifest = run(tmp_path, b"", policy=RunPolicy(allow_empty=True))
    assert manifest.games_read == 0
    assert manifest.rows == 0


def test_lock_refuses_a_second_run(tmp_path: Path) -> None:
    from pipelines.warehouse.locks import month_lock

    with month_lock(tmp_path / "wh", "2024-01"), pytest.raises(ChesspipeError, match="another run"):
        run(tmp_path, game())


def test_odd_cases_file(tmp_path: Path, odd_cases: Path) -> None:
    import chess.pgn

    manifest = ingest(str(odd_cases), "2013-01", tmp_path, IngestSettings(RATED))
    stream = io.StringIO(read_text(odd_cases))
    unrated = total = 0
    while (headers := chess.pgn.read_headers(stream)) is not None:
        total += 1
        unrated += not (
            headers.get("WhiteElo", "").isdigit() and headers.get("BlackElo", "").isdigit()
        )
    assert manifest.games_read == total == 95
    assert manifest.games_dropped["rating_missing"] == unrated
    assert manifest.games_dropped["no_moves"] == 13  # 11 abandoned + 2 others (SOURCE.md)
    assert manifest.games_kept == total - unrated - 13


# Commands fail with one line naming the path, not a traceback.


def _one_line_error(proc: object, *needles: str) -> None:
    assert proc.returncode not in (0, None), proc.stdout  # type: ignore[attr-defined]
    err = proc.stderr.strip()  # type: ignore[attr-defined]
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("chesspipe: error:") or err.startswith("usage:") or "error:" in err
    for needle in needles:
        assert needle in err, err


def test_warehouse_that_is_a_file_is_one_line(tmp_path: Path, games_2021: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    for warehouse in (str(afile), "/dev/null"):
        proc = run_cli(
            "ingest", str(games_2021), "--month", "2021-10", "--warehouse", warehouse,
            check=False,
        )  # fmt: skip
        _one_line_error(proc, warehouse)


def test_endgames_out_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    tables = tmp_path / "tables"
    tables.mkdir()
    proc = run_cli(
        "endgames", "sample", "--syzygy", str(tables), "--materials", "KRvK:1",
        "--out", str(afile), check=False,
    )  # fmt: skip
    _one_line_error(proc)


def test_book_show_on_a_directory_is_one_line(tmp_path: Path) -> None:
    proc = run_cli("book", "show", str(tmp_path), check=False)
    _one_line_error(proc, str(tmp_path))


def test_ingest_stdin_closed_is_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines", "ingest", "-", "--month", "2024-01",
         "--warehouse", str(tmp_path / "wh")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ROOT, env=env,
        close_fds=True, preexec_fn=lambda: os.close(0),
    )  # fmt: skip
    _one_line_error(proc)


@pytest.mark.parametrize("value", ["0", "-1", "x"])
def test_workers_must_be_a_positive_integer(tmp_path: Path, value: str) -> None:
    proc = run_cli(
        "ingest", "x.pgn", "--month", "2024-01", "--warehouse", str(tmp_path),
        "--workers", value, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--workers" in proc.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("option", "value"), [("--plies", "0"), ("--plies", "-3"), ("--min-rating", "-1")]
)
def test_numeric_ingest_options_are_checked(tmp_path: Path, option: str, value: str) -> None:
    proc = run_cli(
        "ingest", "x.pgn", "--month", "2024-01", "--warehouse", str(tmp_path), option, value,
        check=False,
    )  # fmt: skip
    assert proc.returncode in (1, 2)  # argparse, or the settings (--plies)
    assert option in proc.stderr
    assert "Traceback" not in proc.stderr


def test_option_validators() -> None:
    import argparse

    from pipelines.commands.options import fraction, non_negative_int, positive_int

    assert positive_int("3") == 3
    assert non_negative_int("0") == 0
    assert fraction("0.5") == 0.5
    for check, bad in [
        (positive_int, "0"), (positive_int, "-2"), (positive_int, "1.5"), (positive_int, "３"),
        (non_negative_int, "-1"), (fraction, "1.5"), (fraction, "-0.1"), (fraction, "nan"),
    ]:  # fmt: skip
        with pytest.raises(argparse.ArgumentTypeError):
            check(bad)


def _all_parsers() -> Iterator[argparse.ArgumentParser]:
    from engine.uci import build_parser as engine_parser
    from pipelines.cli import build_parser

    waiting = [build_parser(), engine_parser()]
    while waiting:
        parser = waiting.pop()
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                waiting.extend(action.choices.values())


def test_no_numeric_option_takes_a_bare_int_or_float() -> None:
    """Every number a command reads goes through a checker that names the option when bad."""
    checked = 0
    for parser in _all_parsers():
        for action in parser._actions:
            name = f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
            assert action.type not in (int, float), f"{name} takes a bare {action.type.__name__}"
            numeric = isinstance(action.default, int | float) and not isinstance(
                action.default, bool
            )
            if numeric and action.nargs != 0:
                assert action.type is not None, f"{name} reads a number as text"
            checked += action.type is not None and action.type is not Path
    assert checked >= 25


_BOOK = ["book", "build", "--warehouse", "w", "--months", "2024-01", "--out", "b"]
_REPORT = ["book", "report", "b.bin", "--out", "r.html"]
_MONTH = ["build-month", "s", "--month", "2024-01", "--warehouse", "w", "--books", "b"]
_BACKFILL = ["backfill", "--months", "2024-01", "--warehouse", "w", "--books", "b"]
_GAMES = ["training", "from-games", "s", "--month", "2024-01", "--out", "o.plain"]


@pytest.mark.parametrize(
    "argv",
    [
        [*_BOOK, "--min-games", "0"], [*_BOOK, "--min-score", "1.5"], [*_BOOK, "--min-band", "-1"],
        [*_REPORT, "--plies", "0"], [*_REPORT, "--max-positions", "-5"],
        [*_REPORT, "--max-plies", "x"],
        [*_MONTH, "--retries", "-1"], [*_MONTH, "--timeout", "0"], [*_MONTH, "--timeout", "nan"],
        [*_MONTH, "--plies", "0"],
        [*_BACKFILL, "--threads", "0"], [*_BACKFILL, "--dask-workers", "-2"],
        ["serve-monthly", "--warehouse", "w", "--books", "b", "--port", "70000"],
        ["serve", "--warehouse", "w", "--port", "0"],
        ["training", "shuffle", "a.plain", "b.plain", "--seed", "x"],
        ["training", "shuffle", "a.plain", "b.plain", "--seed", "1", "--buckets", "0"],
        ["training", "interleave", "a.plain", "--out", "b.plain", "--seed", "1.5"],
        [*_GAMES, "--from-ply", "-1"], [*_GAMES, "--min-pieces", "1"],
        [*_GAMES, "--max-pieces", "33"],
        ["endgames", "sample", "--materials", "KQvK:5", "--out", "o", "--seed", "one"],
        ["syzygy", "download", "d", "--retries", "-1"],
        ["chess960", "960"],
        ["chess960", "--", "-1"],
    ],
)  # fmt: skip
def test_a_bad_number_is_argparses_one_line_naming_the_option(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from pipelines.cli import build_parser

    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    option = argv[-2] if argv[-2].startswith("--") and len(argv[-2]) > 2 else "N"
    assert error.startswith(f"chesspipe {argv[0]}") and f"argument {option}" in error, error


def test_engine_chess960_number_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.uci import build_parser as engine_parser

    for bad in ("960", "-1", "x", "５"):
        with pytest.raises(SystemExit):
            engine_parser().parse_args(["--chess960", bad])
        assert "argument --chess960" in capsys.readouterr().err
    assert engine_parser().parse_args(["--chess960", "518"]).chess960 == 518


def test_a_sample_larger_than_its_material_is_refused_at_once(tmp_path: Path) -> None:
    import itertools

    from pipelines.endgames.positions import most_positions

    # The bound counts placements, both sides to move: checked by brute force on small materials.
    for material in ("KvK", "KQvK", "KPvK"):
        pieces = material.replace("v", "")
        placements = sum(
            1
            for squares in itertools.permutations(range(64), len(pieces))
            if not any(p == "P" and s // 8 in (0, 7) for p, s in zip(pieces, squares, strict=True))
        )
        assert most_positions(material) == 2 * placements, material
    assert most_positions("KNNvK") == 2 * 64 * 63 * (62 * 61 // 2)
    proc = run_cli(
        "endgames", "sample", "--syzygy", str(tmp_path), "--materials", "KRvK:10,KQvK:100000000",
        "--out", str(tmp_path / "out"), check=False,
    )  # fmt: skip
    _one_line_error(proc, "KQvK has at most 499,968 distinct positions")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_big_sample_shows_progress(syzygy_dir: Path, tmp_path: Path) -> None:
    proc = run_cli(
        "endgames", "sample", "--syzygy", str(syzygy_dir), "--materials", "KRvK:1500,KQvK:700",
        "--out", str(tmp_path), "--progress",
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].endswith("100.0%  2,200 of 2,200 positions"), lines
    assert "1,024 of 2,200 positions" in lines[0]
    quiet = run_cli(
        "endgames", "sample", "--syzygy", str(syzygy_dir), "--materials", "KRvK:1500",
        "--seed", "2", "--out", str(tmp_path), "--quiet",
    )  # fmt: skip
    assert quiet.stderr == ""


@pytest.mark.parametrize("month", ["２０２１-10", "2021-１0", "2021-10\n", "٢٠٢١-10"])
def test_month_must_be_ascii(month: str) -> None:
    from pipelines.warehouse.layout import check_month

    with pytest.raises(ChesspipeError):
        check_month(month)


def test_missing_source_leaves_no_trace(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    with pytest.raises(ChesspipeError):
        ingest(str(tmp_path / "missing.pgn"), "2024-01", warehouse, IngestSettings(ANY))
    assert not warehouse.exists() or not any(warehouse.rglob("*"))


# A source whose text ends inside a game was cut: it is refused (or kept partial, on request).


def _nothing_published(warehouse: Path, month: str = "2024-01") -> None:
    assert not manifest_path(warehouse, month).exists()
    assert not partition_dir(warehouse, month).exists() or not any(
        partition_dir(warehouse, month).iterdir()
    )
    staging = warehouse / ".staging"
    assert not staging.exists() or not any(staging.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize(
    "tail",
    [
        b"",  # whole: passes
        b'[Event "Rated Blitz game"]\n[Site "https://lichess.org/y"]\n',  # mid-headers
        b'[Event "Rated Blitz game"]\n[Whi',  # mid-tag
        game()[:-12],  # mid-movetext
        game(moves="1. e4 { a comment } e5")[:-2],  # movetext with no result
        game()[:-3] + b"{ 1-0",  # an open comment
    ],
)
def test_plain_pgn_cut_inside_a_game_is_refused(tmp_path: Path, tail: bytes) -> None:
    data = game() + game() + tail
    if not tail:
        assert run(tmp_path, data).games_kept == 2
        return
    with pytest.raises(CorruptInput, match=r"in\.pgn.*ends inside a game"):
        run(tmp_path, data)
    _nothing_published(tmp_path / "wh")
    manifest = run(tmp_path, data, policy=RunPolicy(keep_partial=True))
    assert manifest.partial is True
    assert "ends inside a game" in (manifest.error or "")
    assert manifest.games_kept == 2
    assert manifest.games_dropped == {"truncated": 1}


@pytest.mark.slow
@pytest.mark.parametrize("ending", [b"1-0", b"0-1", b"1/2-1/2", b"*", b"1-0\r\n", b"* \n\n\n"])
def test_a_game_ending_in_a_result_is_whole(tmp_path: Path, ending: bytes) -> None:
    data = game() + game(moves="1. d4 d5 " + ending.decode()).rstrip() + ending[3:]
    assert run(tmp_path, data).games_read == 2


def _framed_sample(tmp_path: Path, games_2021: Path) -> tuple[Path, list[int]]:
    """The 2021 sample as a pzstd-style file of small frames, and where each frame ends."""
    from pipelines.games.frames import frame_index, write_framed_zstd

    text = read_text(games_2021).encode()
    framed = tmp_path / "framed.pgn.zst"
    write_framed_zstd(framed, text, frame_size=200_000, level=1)
    with open(framed, "rb") as handle:
        frames = frame_index(handle, framed.stat().st_size)
    assert frames is not None and len(frames) > 4
    return framed, [f.offset + f.size for f in frames]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_dump_cut_at_a_frame_boundary_is_refused(
    tmp_path: Path, games_2021: Path, workers: int
) -> None:
    framed, ends = _framed_sample(tmp_path, games_2021)
    data = framed.read_bytes()
    whole = ingest(
        str(framed),
        "2024-01",
        tmp_path / "whole",
        IngestSettings(ANY),
        runtime=Runtime(workers=workers),
        tuning=Tuning(parallel_min_bytes=0),
    )
    assert not whole.partial
    for end in (ends[0], ends[len(ends) // 2], ends[-2]):
        cut = tmp_path / f"cut-{end}.pgn.zst"
        cut.write_bytes(data[:end])
        with pytest.raises(CorruptInput, match=rf"cut-{end}\.pgn\.zst.*ends inside a game"):
            ingest(
                str(cut),
                "2024-01",
                tmp_path / "wh",
                IngestSettings(ANY),
                runtime=Runtime(workers=workers),
                tuning=Tuning(parallel_min_bytes=0),
            )
        _nothing_published(tmp_path / "wh")
    partial = ingest(
        str(cut),
        "2024-01",
        tmp_path / "wh",
        IngestSettings(ANY),
        policy=RunPolicy(keep_partial=True),
    )
    assert partial.partial and partial.games_dropped.get("truncated") == 1
    assert 0 < partial.games_read < whole.games_read


def test_a_cut_source_names_keep_partial_on_the_command_line_only(tmp_path: Path) -> None:
    from pipelines.errors import CutShort

    data = game() + game()[:-12]
    with pytest.raises(CutShort) as raised:
        run(tmp_path, data)
    assert str(raised.value).endswith("it was cut short; nothing published")
    proc = run_cli(
        "ingest", str(tmp_path / "in.pgn"), "--month", "2024-01",
        "--warehouse", str(tmp_path / "wh"), "--workers", "1", check=False,
    )  # fmt: skip
    _one_line_error(proc, "ends inside a game")
    assert proc.stderr.strip().endswith(
        "it was cut short; nothing published (--keep-partial keeps what was read)"
    )
    _nothing_published(tmp_path / "wh")


def test_cut_dump_on_the_command_line(tmp_path: Path, games_2021: Path) -> None:
    framed, ends = _framed_sample(tmp_path, games_2021)
    cut = tmp_path / "cut.pgn.zst"
    cut.write_bytes(framed.read_bytes()[: ends[2]])
    proc = run_cli(
        "ingest", str(cut), "--month", "2024-01", "--warehouse", str(tmp_path / "wh"),
        check=False,
    )  # fmt: skip
    _one_line_error(proc, str(cut), "ends inside a game")
    _nothing_published(tmp_path / "wh")


# Input with no game in it fails; mostly unreadable input is flagged.


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("random.pgn", os.urandom(300_000)),
        ("text.pgn", b"Just some notes.\n\nNothing [here] is a game.\n" * 500),
        ("plain.pgn.zst", b"hello, this is not zstd\n" * 100),
        ("nul.pgn", b"\x00" * 100_000),
    ],
)
def test_no_game_found_fails(tmp_path: Path, name: str, data: bytes) -> None:
    with pytest.raises(ChesspipeError, match=rf"no PGN game found in .*{name}"):
        run(tmp_path, data, name=name)
    _nothing_published(tmp_path / "wh")


@pytest.mark.slow
def test_mostly_unreadable_input_warns(tmp_path: Path) -> None:
    data = bytes(range(256)) * 50 + b"\n\n" + game()
    manifest = run(tmp_path, data)
    assert manifest.games_kept == 1
    assert manifest.unreadable_bytes > len(data) // 2
    assert any("unreadable" in w for w in manifest.warnings)
    source = tmp_path / "in.pgn"
    proc = run_cli(
        "ingest", str(source), "--month", "2024-01", "--warehouse", str(tmp_path / "wh2"),
        "--min-rating", "0", "--speeds", "blitz",
    )  # fmt: skip
    assert "chesspipe: warning:" in proc.stderr and "unreadable" in proc.stderr


@pytest.mark.slow
def test_a_run_with_far_fewer_games_never_replaces_a_good_month(
    tmp_path: Path, games_2021: Path
) -> None:
    good = ingest(str(games_2021), "2021-10", tmp_path, IngestSettings(ANY))
    before = partition_file(tmp_path, "2021-10").read_bytes()
    published = manifest_path(tmp_path, "2021-10").read_text()
    empty = tmp_path / "empty.pgn.zst"
    empty.write_bytes(b"")
    few = tmp_path / "few.pgn"
    few.write_bytes(game() * max(1, good.games_read // 20))  # a twentieth of the games
    for source in (empty, few):
        proc = run_cli("ingest", str(source), "--month", "2021-10", "--warehouse", str(tmp_path),
                       "--min-rating", "0", check=False)  # fmt: skip
        assert proc.returncode == 1
        assert proc.stderr.strip().startswith("chesspipe: error: month 2021-10 is published with")
        assert proc.stderr.strip().endswith("pass --force to replace it")
        assert partition_file(tmp_path, "2021-10").read_bytes() == before
        assert manifest_path(tmp_path, "2021-10").read_text() == published
        assert not list((tmp_path / ".staging").iterdir())
    # a tenth or more replaces it; so does a run that states the intent
    enough = tmp_path / "enough.pgn"
    enough.write_bytes(game() * (good.games_read // 10 + 1))
    assert run_cli("ingest", str(enough), "--month", "2021-10", "--warehouse", str(tmp_path),
                   "--min-rating", "0").returncode == 0  # fmt: skip
    forced = ingest(
        str(empty),
        "2021-10",
        tmp_path,
        IngestSettings(ANY),
        policy=RunPolicy(replace_month=True, allow_empty=True),
    )
    assert forced.games_read == 0


# --- errors that name the right thing (what an adversarial run found named wrongly) ----------


def test_a_symlink_loop_is_named_in_one_line(tmp_path: Path) -> None:
    """`book merge` of a symlink loop printed a RuntimeError traceback."""
    loop = tmp_path / "loop.bin"
    loop.symlink_to(loop)
    proc = run_cli("book", "merge", str(loop), str(loop), str(tmp_path / "m.bin"), check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "Too many levels of symbolic links" in proc.stderr and "loop.bin" in proc.stderr


def test_a_sidecar_in_the_way_is_named_not_the_output(tmp_path: Path) -> None:
    """A symlinked OUT.json was reported as OUT."""
    from tests.sample_tool import make_sample

    month = make_sample.SAMPLE_MONTHS[0]
    out = tmp_path / "t.binpack"
    sidecar = tmp_path / "t.binpack.json"
    sidecar.symlink_to(tmp_path / "elsewhere.json")
    proc = run_cli("training", "from-games", str(make_sample.sample_path(month)), "--month",
                   month, "--out", str(out), "--no-tables", "--no-require-eval",
                   "--min-rating", "0", "--speeds", "all", check=False)  # fmt: skip
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"chesspipe: error: {sidecar}: exists and is a symlink")
    assert not out.exists()


@pytest.mark.slow
def test_statements_are_named_as_they_are(sample_warehouse: Path) -> None:
    """`UPDATE EXTENSIONS` was refused as "29 is not a valid StatementType", and PIVOT, which
    reads, as "MULTI statements"."""
    wh = str(sample_warehouse)
    refused = run_cli("sql", "--warehouse", wh, "UPDATE EXTENSIONS", check=False)
    assert refused.returncode == 1
    assert refused.stderr.startswith("chesspipe: error: UPDATE EXTENSIONS statements are refused")
    pivot = run_cli("sql", "--warehouse", wh, "PIVOT move_stats ON speed USING sum(games) "
                    "GROUP BY rating_band ORDER BY rating_band", "--format", "csv")  # fmt: skip
    header = pivot.stdout.splitlines()[0].split(",")
    assert header[0] == "rating_band" and "blitz" in header
    for sneaked in ("PIVOT move_stats ON speed USING sum(games); COPY (SELECT 1) TO 'x.csv'",
                    "/* PIVOT */ COPY (SELECT 1) TO 'x.csv'"):  # fmt: skip
        proc = run_cli("sql", "--warehouse", wh, sneaked, check=False)
        assert proc.returncode == 1 and "COPY statements are refused" in proc.stderr


def test_probe_with_corrupt_tables_says_one_line(tmp_path: Path) -> None:
    """Fathom printed its own three lines before chesspipe's."""
    from pipelines.endgames import fathom

    if not fathom.available():
        if os.environ.get("CI") == "true":
            pytest.fail(f"libfathom is needed in CI: {fathom.unavailable_reason()}")
        pytest.skip(f"libfathom not installed: {fathom.unavailable_reason()}")
    tables = tmp_path / "tables"
    tables.mkdir()
    for suffix in (".rtbw", ".rtbz"):
        (tables / f"KQvK{suffix}").write_bytes(os.urandom(5000))
    proc = run_cli("probe", "4k3/8/8/8/8/8/8/4KQ2 w - - 0 1", "--syzygy", str(tables),
                   "--backend", "fathom", check=False)  # fmt: skip
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "Fathom found no tables" in proc.stderr and "KQvK" in proc.stderr


def test_a_corrupt_parquet_dump_and_a_non_utf8_list_say_one_line(
    tmp_path: Path, sample_warehouse: Path
) -> None:
    """`evals import` of a corrupt .parquet printed 23 lines of traceback, `endgames from-epd`
    of a file that is not UTF-8 20 lines."""
    from tests.conftest import SYZYGY_DIR

    corrupt = tmp_path / "evals.parquet"
    corrupt.write_bytes(b"PAR1" + os.urandom(64) + b"PAR1")
    wh = tmp_path / "wh"
    wh.mkdir()
    proc = run_cli("evals", "import", str(corrupt), "--warehouse", str(wh), check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"chesspipe: error: {corrupt}: not readable as Parquet")
    epd = tmp_path / "list.epd"
    epd.write_bytes(b"8/8/8/8/8/8/8/K1k5 w - - 0 1\n\xff\xfe\n")
    proc = run_cli("endgames", "from-epd", str(epd), "--out", str(tmp_path / "labels"),
                   "--syzygy", str(SYZYGY_DIR), check=False)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == f"chesspipe: error: {epd}:2: not UTF-8 text\n"


def test_no_help_shows_a_doubled_percent() -> None:
    """argparse formats `help` with %, not `description`: `[%%eval]` showed as written."""
    import argparse

    from pipelines.cli import build_parser

    def walk(parser: argparse.ArgumentParser) -> None:
        assert "%%" not in parser.format_help(), parser.prog
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    walk(child)

    walk(build_parser())


def test_an_engine_is_found_where_debian_puts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Debian installs stockfish in /usr/games, which is not on every PATH."""
    import shutil

    from pipelines.evals.analyse import EngineProblem, check_engine

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    if not Path("/usr/games/stockfish").exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Debian's stockfish (/usr/games/stockfish) is needed in CI")
        pytest.skip("Debian's stockfish is not installed")
    assert shutil.which("stockfish") is None
    assert check_engine("stockfish") == "/usr/games/stockfish"
    with pytest.raises(EngineProblem, match="no such program on PATH nor in /usr/games"):
        check_engine("no-such-engine-here")


def test_ci_installs_trust_the_systems_certificates() -> None:
    """uv ignores the system's certificate authorities unless asked (pip uses them): behind a
    proxy with its own authority, README's second command failed."""
    from tests.conftest import ROOT

    script = (ROOT / ".ci" / "run").read_text()
    assert script.index('export UV_NATIVE_TLS="${UV_NATIVE_TLS:-1}"') < script.index("uv pip")
