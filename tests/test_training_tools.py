"""The trainers' data tools: filter, rescore, dedupe, to-pgn.

Truths: nnue-pytorch's loader predicate recomputed here with python-chess (filter);
python-chess's own Syzygy prober on the shared 3-4-piece tables (rescore); a python-chess set
of positions (dedupe); python-chess's PGN reader replaying the games (to-pgn). The records are
the shared Stockfish fixture (`../shared/data/stockfish/`, whole games) and its `.binpack`.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

import chess
import chess.pgn
import chess.syzygy
import pytest

from pipelines.errors import ChesspipeError, CorruptInput
from pipelines.training import dedupe
from pipelines.training.dedupe import dedupe_file
from pipelines.training.filter import filter_file
from pipelines.training.rescore import RescoreManifest, rescore_file
from pipelines.training.skip_settings import SkipSettings
from pipelines.training.skips import threshold
from pipelines.training.to_pgn import to_pgn_file
from schemas.binpack import read_binpack, write_binpack
from schemas.plain import PlainRecord, read_records, write_records
from tests.conftest import SYZYGY_DIR, need, run_cli


@pytest.fixture(scope="module")
def records(plain_fixture: Path) -> list[PlainRecord]:
    return list(read_records(plain_fixture))


def record_texts(path: Path) -> list[str]:
    """The six-line texts of a .plain file's records, as they are in the file."""
    lines = path.read_text().splitlines(keepends=True)
    return ["".join(lines[i : i + 6]) for i in range(0, len(lines), 6)]


# --- filter: nnue-pytorch's make_skip_predicate, recomputed -----------------------------------


Parsed = list[tuple[PlainRecord, chess.Board, chess.Move]]


def parsed(records: list[PlainRecord]) -> Parsed:
    return [(r, chess.Board(r.fen), chess.Move.from_uci(r.move)) for r in records]


def loader_keeps(records: Parsed, options: dict[str, int | bool]) -> list[bool]:
    """Which records nnue-pytorch's loader keeps (training_data_loader.cpp, make_skip_predicate;
    training_data_entry.h, win_rate_model), recomputed with python-chess; random draws are 64
    bits of random.Random(seed), compared below p x 2^64 as the loader compares its own."""
    rng = random.Random(options.get("seed", 0))
    random_n = int(options.get("random_fen_skipping", 0))
    early = int(options.get("early_fen_skipping", -1))
    simple = int(options.get("simple_eval_skipping", -1))
    last_ply, last_score = -1, 32002
    kept = []
    for r, board, move in records:
        placeholder = (
            r.ply > last_ply and last_score != 32002 and abs(last_score) > 100
            and r.result != 0 and r.score == 0
        )  # fmt: skip
        last_ply = r.ply
        if r.score == 32002 or placeholder:
            kept.append(False)
            continue
        last_score = r.score
        skip = r.ply <= early
        if not skip and random_n > 0:
            skip = rng.getrandbits(64) < int(random_n / (random_n + 1) * 2.0**64)
        if not skip and options.get("filtered"):
            target = board.piece_at(move.to_square)
            mover = board.piece_at(move.from_square)
            assert mover is not None
            skip = (target is not None and target.color != mover.color) or board.is_check()
        if not skip and options.get("wld_filtered"):
            m = min(240, r.ply) / 64
            a = (((-3.68389304 * m + 30.07065921) * m + -60.52878723) * m) + 149.53378557
            b = 1.5 * ((((-2.0181857 * m + 15.85685038) * m + -29.83452023) * m) + 47.59078827)
            x = min(max(100 * r.score / 208, -2000.0), 2000.0)
            w = 1 / (1 + math.exp((a - x) / b))
            loss = 1 / (1 + math.exp((a + x) / b))
            p = w if r.result > 0 else loss if r.result < 0 else 1 - w - loss
            bar = int((1 - p) * 2.0**64)
            skip = rng.getrandbits(64) < (bar if bar < 2**64 else 0)
        if not skip and simple > 0:
            values = {chess.PAWN: 208, chess.KNIGHT: 781, chess.BISHOP: 825, chess.ROOK: 1276}
            values[chess.QUEEN] = 2538
            balance = sum(
                v * (len(board.pieces(k, chess.WHITE)) - len(board.pieces(k, chess.BLACK)))
                for k, v in values.items()
            )
            skip = abs(balance) < simple
        if not skip:
            low, high = options.get("min_score", -32768), options.get("max_score", 32767)
            skip = not low <= r.score <= high
        if not skip:
            pieces = len(board.piece_map())
            skip = not options.get("min_pieces", 2) <= pieces <= options.get("max_pieces", 32)
        kept.append(not skip)
    return kept


#: Records of the fixture the filter tests take (whole games; about a fifth of it).
FILTER_RECORDS = 2000


@pytest.fixture(scope="module")
def marked(records: list[PlainRecord], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture's first games, some scores set to VALUE_NONE and to placeholder zeros."""
    out = []
    for index, r in enumerate(records[:FILTER_RECORDS]):
        score = r.score
        if index % 97 == 5:
            score = 32002
        elif index % 89 == 7:
            score = 0
        out.append(PlainRecord(r.fen, r.move, score, r.ply, r.result))
    path = tmp_path_factory.mktemp("marked") / "marked.plain"
    write_records(out, path)
    return path


@pytest.fixture(scope="module")
def marked_parsed(marked: Path) -> Parsed:
    return parsed(list(read_records(marked)))


OPTION_SETS = [
    {"filtered": True},
    {"early_fen_skipping": 20, "random_fen_skipping": 3, "seed": 7},
    {"wld_filtered": True, "seed": 11},
    {"filtered": True, "wld_filtered": True, "random_fen_skipping": 1, "early_fen_skipping": 8,
     "simple_eval_skipping": 300, "seed": 3},
    {"min_score": -400, "max_score": 400, "min_pieces": 6, "max_pieces": 28},
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("options", OPTION_SETS)
def test_filter_keeps_what_the_loader_keeps(
    marked: Path, marked_parsed: Parsed, tmp_path: Path, options: dict[str, int | bool]
) -> None:
    source = [r for r, _, _ in marked_parsed]
    keeps = loader_keeps(marked_parsed, options)
    expected = [r for r, keep in zip(source, keeps, strict=True) if keep]
    out = tmp_path / "kept.plain"
    result = filter_file(marked, out, SkipSettings(**options))  # type: ignore[arg-type]
    got = list(read_records(out))
    assert got == expected
    assert result.records_read == len(source) and result.records_kept == len(expected)
    assert sum(result.skipped.values()) == len(source) - len(expected)
    assert result.skipped["value_none"] == sum(r.score == 32002 for r in source)
    assert result.skipped["placeholder_zero"] > 0
    assert 0 < len(expected) < len(source)


def test_filter_to_binpack_keeps_chains_where_the_records_follow(
    binpack_fixture: Path, records: list[PlainRecord], tmp_path: Path
) -> None:
    out = tmp_path / "late.binpack"
    settings = SkipSettings(early_fen_skipping=9)
    result = filter_file(binpack_fixture, out, settings)  # no question needs a board
    keeps = loader_keeps([(r, chess.Board(), chess.Move.null()) for r in records], {
        "early_fen_skipping": 9
    })  # fmt: skip
    kept = [r for r, keep in zip(records, keeps, strict=True) if keep]
    assert kept[0].ply == 10 and any(r.score == 0 and r.ply > 9 for r in records)
    assert list(read_binpack(out)) == kept and result.records_kept == len(kept)
    # whole games less their first ten plies: one chain a game, not a stem a record
    assert out.stat().st_size < 4 * len(kept)


def test_the_loaders_bar_converts_a_certain_skip_to_no_skip() -> None:
    # uint64(1.0 * double(~0ULL)) is 0 on x86-64 (measured with g++ -O2): never skipped
    assert threshold(1.0) == 0
    assert threshold(0.5) == 1 << 63
    assert threshold(0.0) == 0


def test_filter_settings_errors_name_the_flag(plain_fixture: Path, tmp_path: Path) -> None:
    proc = run_cli(
        "training", "filter", str(plain_fixture), str(tmp_path / "o.plain"),
        "--min-score", "10", "--max-score", "-10", check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "--min-score" in proc.stderr and "--max-score" in proc.stderr
    assert not (tmp_path / "o.plain").exists()


# --- rescore: python-chess's prober --------------------------------------------------------------


def tb_result(tablebase: chess.syzygy.Tablebase, board: chess.Board) -> int | None:
    """The side to move's result under the 50-move rule, or None when the tables do not cover."""
    if board.castling_rights or len(board.piece_map()) > 4:
        return None
    if board.is_checkmate():
        return -1
    try:
        dtz = tablebase.probe_dtz(board)
    except chess.syzygy.MissingTableError:
        return None
    if dtz > 0 and dtz + board.halfmove_clock <= 100:
        return 1
    if dtz < 0 and -dtz + board.halfmove_clock <= 100:
        return -1
    return 0


def rescored_truth(records: list[PlainRecord], tables: Path) -> list[int]:
    """Each record's result rescored: games are runs from ply 0 (the fixture's whole games)."""
    results: list[int] = []
    with chess.syzygy.open_tablebase(str(tables)) as tablebase:
        starts = [i for i, r in enumerate(records) if r.ply == 0] + [len(records)]
        for begin, end in zip(starts, starts[1:], strict=False):
            game = records[begin:end]
            boards = [chess.Board(r.fen) for r in game]
            last = boards[-1].copy()
            last.push_uci(game[-1].move)
            own = [tb_result(tablebase, b) for b in [*boards, last]]
            first = next((i for i, o in enumerate(own) if o is not None), None)
            for i, r in enumerate(game):
                if first is None:
                    results.append(r.result)
                elif own[i] is not None:
                    results.append(own[i])  # type: ignore[arg-type]
                else:
                    first_result = own[first]
                    assert first_result is not None
                    results.append(first_result if (first - i) % 2 == 0 else -first_result)
    return results


@pytest.fixture(scope="module")
def rescored_plain(
    plain_fixture: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, RescoreManifest]:
    from pipelines.commands.training import TableOutcomes

    syzygy_dir = need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables").parent
    out = tmp_path_factory.mktemp("rescore") / "rescored.plain"
    outcomes = TableOutcomes([syzygy_dir], "python")
    try:
        manifest = rescore_file(plain_fixture, out, outcomes, [str(syzygy_dir)])
    finally:
        outcomes.close()
    return out, manifest


@pytest.mark.slow
def test_rescore_agrees_with_python_chess_and_leaves_the_rest_byte_for_byte(
    plain_fixture: Path,
    records: list[PlainRecord],
    syzygy_dir: Path,
    rescored_plain: tuple[Path, RescoreManifest],
) -> None:
    out, manifest = rescored_plain
    truth = rescored_truth(records, syzygy_dir)
    got = list(read_records(out))
    before, after = record_texts(plain_fixture), record_texts(out)
    assert len(got) == len(records) == len(after)
    changed = 0
    for index, (old, new, expected) in enumerate(zip(records, got, truth, strict=True)):
        assert new.result == expected, index
        assert (new.fen, new.move, new.score, new.ply) == (old.fen, old.move, old.score, old.ply)
        if new == old:
            assert after[index] == before[index]
        changed += new.result != old.result
    assert changed > 0
    assert manifest.records_result_changed == changed
    assert manifest.records == len(records)
    directions = Counter(
        f"{w[o.result]}_to_{w[n.result]}"
        for o, n in zip(records, got, strict=True)
        if o.result != n.result
        for w in [{1: "win", 0: "draw", -1: "loss"}]
    )
    assert manifest.results_changed == dict(directions)
    assert json.loads(Path(f"{out}.json").read_text()) == manifest.to_json()


@pytest.mark.slow
def test_rescore_reads_the_binpack_to_the_same_records_and_tb_scores_are_in_range(
    binpack_fixture: Path,
    syzygy_dir: Path,
    rescored_plain: tuple[Path, RescoreManifest],
    tmp_path: Path,
) -> None:
    from pipelines.commands.training import TableOutcomes

    scored = tmp_path / "scored.plain"
    outcomes = TableOutcomes([syzygy_dir], "auto")
    try:
        manifest = rescore_file(binpack_fixture, scored, outcomes, [], tb_scores=True)
    finally:
        outcomes.close()
    plain_out, plain_manifest = rescored_plain
    assert manifest.results_changed == plain_manifest.results_changed
    with chess.syzygy.open_tablebase(str(syzygy_dir)) as tablebase:
        changed = 0
        for old, new in zip(read_records(plain_out), read_records(scored), strict=True):
            assert (new.fen, new.move, new.ply, new.result) == (
                old.fen,
                old.move,
                old.ply,
                old.result,
            )
            if tb_result(tablebase, chess.Board(old.fen)) is None:
                assert new.score == old.score
            else:
                assert (new.score == 0) == (new.result == 0)
                assert new.result == 0 or 31507 <= abs(new.score) <= 31753
                assert new.score * new.result >= 0
                changed += new.score != old.score
    assert changed == manifest.records_score_changed > 0


# --- dedupe: a python-chess set ---------------------------------------------------------------


def position(fen: str) -> str:
    board = chess.Board(fen)
    return " ".join(board.epd(en_passant="legal").split()[:4])


def test_dedupe_keeps_the_last_record_of_each_position(
    small: tuple[Path, Path], tmp_path: Path
) -> None:
    plain, _ = small
    records = list(read_records(plain))
    last = {position(r.fen): i for i, r in enumerate(records)}
    expected = [r for i, r in enumerate(records) if last[position(r.fen)] == i]
    out = tmp_path / "dd.plain"
    result = dedupe_file(plain, out)
    assert list(read_records(out)) == expected
    assert result.records_kept == len(set(last)) == len(expected) < len(records)
    assert result.duplicates == len(records) - len(expected)


def test_dedupe_of_the_binpack_through_many_runs_gives_the_same_bytes(
    records: list[PlainRecord], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in.binpack"
    write_binpack(records[:FILTER_RECORDS], source)
    one = tmp_path / "one.binpack"
    dedupe_file(source, one)
    last = {position(r.fen): i for i, r in enumerate(records[:FILTER_RECORDS])}
    expected = [r for i, r in enumerate(records[:FILTER_RECORDS]) if last[position(r.fen)] == i]
    assert list(read_binpack(one)) == expected
    monkeypatch.setattr(dedupe, "MERGE_FAN_IN", 3)
    many = tmp_path / "many.binpack"
    result = dedupe_file(source, many, run_lines=100)
    assert result.runs > 3 * 3  # merged in rounds
    assert many.read_bytes() == one.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "in.binpack",
        "many.binpack",
        "one.binpack",
    ]


# --- to-pgn: python-chess reads the games back ----------------------------------------------


def test_to_pgn_games_replay_to_the_records(small: tuple[Path, Path], tmp_path: Path) -> None:
    _, binpack = small
    records = list(read_binpack(binpack))
    out = tmp_path / "games.pgn"
    result = to_pgn_file(binpack, out)
    games = sum(r.ply == 0 for r in records)
    assert result.games == games and result.records == len(records)
    replayed = []
    with open(out) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            assert not game.errors
            board = game.board()
            for node in game.mainline():
                assert node.comment.startswith("score ")
                replayed.append((board.fen(), node.move.uci(), int(node.comment.split()[1])))
                board.push(node.move)
    assert len(replayed) == len(records)
    assert replayed == [(r.fen, r.move, r.score) for r in records]


# --- bad input: one line, or skipped and counted ---------------------------------------------


@pytest.fixture(scope="module")
def small(
    plain_fixture: Path, records: list[PlainRecord], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """The fixture's first FILTER_RECORDS records, as its own lines and as a .binpack."""
    folder = tmp_path_factory.mktemp("small")
    plain = folder / "small.plain"
    lines = plain_fixture.read_text().splitlines(keepends=True)
    plain.write_text("".join(lines[: 6 * FILTER_RECORDS]))
    write_binpack(records[:FILTER_RECORDS], folder / "small.binpack")
    return plain, folder / "small.binpack"


def test_bad_input_fails_in_one_line_or_is_counted_with_skip_bad(
    small: tuple[Path, Path], records: list[PlainRecord], tmp_path: Path
) -> None:
    plain, binpack = small
    lines = plain.read_text().splitlines(keepends=True)
    lines[6 * 4 + 1] = "move e2e5\n"  # record 5: an illegal move
    lines[6 * 9 + 2] = "score x\n"  # record 10: garbage
    bad_plain = tmp_path / "bad.plain"
    bad_plain.write_text("".join(lines))
    data = binpack.read_bytes()
    cut = tmp_path / "cut.binpack"
    cut.write_bytes(data + data[: len(data) - 100])  # a whole block, then one cut short
    garbled = bytearray(data)
    garbled[500:540] = bytes(40)
    garbage = tmp_path / "garbage.binpack"
    garbage.write_bytes(bytes(garbled))
    inputs = ["bad.plain", "cut.binpack", "garbage.binpack"]
    for source, where in (
        (bad_plain, "bad.plain:26: record 5: move e2e5 is not legal"),
        (cut, "is cut short"),
        (garbage, "chain at offset"),
    ):
        out = tmp_path / "out.plain"
        with pytest.raises(CorruptInput, match=where):
            filter_file(source, out, SkipSettings())
        with pytest.raises(CorruptInput, match=where):
            dedupe_file(source, out)
        assert sorted(p.name for p in tmp_path.iterdir()) == inputs  # nothing written
    kept = to_pgn_file(bad_plain, tmp_path / "kept.pgn", skip_bad=True)
    assert kept.bad_input is not None and kept.bad_input.counts == {"bad_record": 2}
    assert kept.bad_input.first is not None and "record 5" in kept.bad_input.first
    assert kept.records == FILTER_RECORDS - 2
    out = tmp_path / "kept.plain"
    result = filter_file(bad_plain, out, SkipSettings(), skip_bad=True)
    assert result.records_read == FILTER_RECORDS - 2
    wanted = records[:4] + records[5:9] + records[10:FILTER_RECORDS]
    assert set(read_records(out)) <= set(wanted)
    result = filter_file(cut, out, SkipSettings(), skip_bad=True)
    assert result.bad_input is not None and result.bad_input.counts == {"bad_block": 1}
    assert result.records_read == FILTER_RECORDS
    result = filter_file(garbage, out, SkipSettings(), skip_bad=True)
    assert result.bad_input is not None and result.bad_input.counts == {"bad_chain": 1}
    assert 0 < result.records_read < FILTER_RECORDS


def test_the_commands_write_their_outputs_and_say_what_they_did(
    small: tuple[Path, Path], syzygy_dir: Path, tmp_path: Path
) -> None:
    _, binpack = small
    games = sum(r.ply == 0 for r in read_binpack(binpack))
    pgn = tmp_path / "g.pgn"
    summary = json.loads(run_cli("training", "to-pgn", str(binpack), str(pgn)).stdout)
    assert summary["games"] == games == pgn.read_text().count("[Event ")
    out = tmp_path / "r.binpack"
    run_cli("training", "rescore", str(binpack), str(out), "--syzygy", str(syzygy_dir))
    manifest = RescoreManifest.from_json(json.loads(Path(f"{out}.json").read_text()))
    assert manifest.records == FILTER_RECORDS and manifest.games == games
    proc = run_cli("training", "dedupe", str(tmp_path / "none.plain"), str(tmp_path / "d.plain"),
                   check=False)  # fmt: skip
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "none.plain" in proc.stderr
    with pytest.raises(ChesspipeError, match=r"\.plain or \.binpack"):
        filter_file(binpack, tmp_path / "x.txt", SkipSettings())


# --- progress on a terminal ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("action", ["convert", "filter", "dedupe"])
def test_a_file_tool_on_a_terminal_draws_a_bar_over_its_input(
    tmp_path: Path, plain_fixture: Path, action: str
) -> None:
    """Bytes of IN read, an ETA while under way, records; it ends full, on all the records."""
    import re

    from tests.test_build_month_output import on_a_terminal

    out, terminal = on_a_terminal("training", action, str(plain_fixture),
                                  str(tmp_path / "out.binpack"))  # fmt: skip
    summary = json.loads(out)
    records = len(list(read_records(plain_fixture)))
    assert summary.get("records", summary.get("records_read")) == records
    drawn = [part for line in terminal.split("\n") for part in line.split("\r")[1:] if part]
    drawn = [line.removesuffix("\x1b[K") for line in drawn]
    assert len(drawn) >= 2, terminal
    assert all(re.match(r"\[#* *\] +\d+\.\d% ", line) for line in drawn), drawn
    assert any("ETA " in line for line in drawn[:-1]), drawn
    assert plain_fixture.stat().st_size < 1 << 20  # shown in KB
    size = f"{plain_fixture.stat().st_size / 1024:.1f} KB"
    assert drawn[-1].startswith(f"[{'#' * 20}] 100.0%  {size}/{size}"), drawn
    assert f"{records:,} records (" in drawn[-1], drawn
    # Not on a terminal, or --quiet: no bar.
    for quiet in ((), ("--quiet",)):
        again = run_cli("training", action, str(plain_fixture), str(tmp_path / "q.binpack"),
                        *quiet)  # fmt: skip
        assert again.stderr == ""
