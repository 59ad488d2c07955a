"""Syzygy labels: Fathom and python-chess agree, best moves keep the result and make progress."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import chess
import chess.syzygy
import pytest

from pipelines.endgames import fathom
from pipelines.endgames.labeller import Labeller
from pipelines.endgames.positions import sample_positions
from pipelines.endgames.probing import TablebaseError, dtz_to_wdl, move_rank
from pipelines.endgames.tables import TableSet


def need_fathom() -> None:
    if not fathom.available():
        if os.environ.get("CI"):
            pytest.fail(f"libfathom is needed in CI: {fathom.unavailable_reason()}")
        pytest.skip(f"libfathom not installed: {fathom.unavailable_reason()}")


def all_materials(syzygy_dir: Path) -> list[str]:
    return sorted(TableSet([syzygy_dir]).tables)


def test_the_shared_tables_hold_every_3_4_piece_material(syzygy_dir: Path) -> None:
    expected = {name for name in chess.syzygy.tablenames(piece_count=4)}
    assert set(all_materials(syzygy_dir)) == expected


@pytest.mark.slow
def test_fathom_and_python_chess_agree_on_wdl_and_dtz_of_every_material(syzygy_dir: Path) -> None:
    need_fathom()
    tablebase = chess.syzygy.open_tablebase(str(syzygy_dir))
    labeller = Labeller([syzygy_dir], "fathom")
    compared = 0
    for material in all_materials(syzygy_dir):
        kinds = set()
        for position in sample_positions(material, 300, seed=20261130):
            board = position.board
            label = labeller.label(board)
            assert label.wdl == tablebase.probe_wdl(board), board.fen()
            assert label.dtz == tablebase.probe_dtz(board), board.fen()
            assert labeller.backend.probe_wdl(board) == label.wdl, board.fen()
            kinds.add(label.wdl)
            compared += 1
        assert kinds, material
    assert compared == 300 * 35


@pytest.mark.slow
def test_both_backends_choose_best_moves_of_equal_rank(syzygy_dir: Path) -> None:
    need_fathom()
    with_python = Labeller([syzygy_dir], "python")
    with_fathom = Labeller([syzygy_dir], "fathom")
    same_move = compared = 0
    for material in all_materials(syzygy_dir):
        for position in sample_positions(material, 12, seed=7):
            board = position.board
            # Also with a halfmove clock, which moves wins into 50-move draws.
            for clock in (0, 60):
                board.halfmove_clock = clock
                py_moves = with_python.ranked_moves(board)
                fa_moves = with_fathom.ranked_moves(board)
                assert {(m.move, m.dtz) for m in py_moves} == {(m.move, m.dtz) for m in fa_moves}
                py, fa = with_python.label(board), with_fathom.label(board)
                assert (py.wdl, py.dtz, py.wdl50) == (fa.wdl, fa.dtz, fa.wdl50)
                if py.best_move is None:
                    assert fa.best_move is None and board.is_game_over()
                    continue
                assert move_rank(py.best_move_dtz, clock) == move_rank(fa.best_move_dtz, clock)
                same_move += py.best_move == fa.best_move
                compared += 1
    assert compared > 700
    assert same_move == compared  # ties broken the same way


def test_our_ranking_agrees_with_fathoms_own_choice(syzygy_dir: Path) -> None:
    """Fathom's tb_probe_root picks the fastest win / slowest loss / a drawing move itself."""
    need_fathom()
    labeller = Labeller([syzygy_dir], "fathom")
    checked = 0
    for material in all_materials(syzygy_dir):
        for position in sample_positions(material, 60, seed=13):
            board = position.board
            root = labeller.backend.root(board)
            if not root.moves:
                continue
            label = labeller.label(board)
            theirs = dict(root.moves)[root.suggested]
            assert root.suggested in board.legal_moves
            assert move_rank(theirs, 0) == move_rank(label.best_move_dtz, 0), board.fen()
            checked += 1
    assert checked > 1800


def test_best_move_keeps_the_best_result_checked_by_python_chess(syzygy_dir: Path) -> None:
    tablebase = chess.syzygy.open_tablebase(str(syzygy_dir))
    labeller = Labeller([syzygy_dir], "auto")
    for material in ("KRvKP", "KQvKR", "KBNvK", "KPvKP", "KRvKB"):
        for position in sample_positions(material, 25, seed=3):
            board = position.board
            label = labeller.label(board)
            if label.best_move is None:
                continue
            assert label.best_move in board.legal_moves
            results = []
            for move in board.legal_moves:
                board.push(move)
                results.append(-tablebase.probe_wdl(board))
                board.pop()
            board.push(label.best_move)
            assert -tablebase.probe_wdl(board) == max(results) == label.wdl, board.fen()
            board.pop()


@pytest.mark.slow
def test_playout_invariant(syzygy_dir: Path) -> None:
    """Play the labelled move, re-probe with python-chess: the result holds, DTZ falls by one."""
    tablebase = chess.syzygy.open_tablebase(str(syzygy_dir))
    labeller = Labeller([syzygy_dir], "auto")
    plies = 0
    for material in ("KQvKR", "KRvKB", "KBNvK", "KRvKP", "KPvKP", "KQvKP", "KRPvK"):
        for position in sample_positions(material, 6, seed=11):
            board = position.board
            wdl = tablebase.probe_wdl(board)
            if wdl == 0 or board.is_game_over():
                continue
            while True:
                dtz = tablebase.probe_dtz(board)
                label = labeller.label(board)
                assert (label.wdl, label.dtz) == (wdl, dtz)
                move = label.best_move
                assert move is not None
                zeroing = board.is_zeroing(move)
                board.push(move)
                plies += 1
                if board.is_checkmate():
                    assert wdl > 0
                    break
                child_wdl = tablebase.probe_wdl(board)
                assert child_wdl == -wdl, f"result changed after {move} in {board.fen()}"
                if zeroing:
                    break
                child_dtz = tablebase.probe_dtz(board)
                if dtz == -1:
                    # The loser's last move before the zeroing: the winner zeroes (or mates) next.
                    assert child_dtz == 1, board.fen()
                else:
                    assert abs(child_dtz) == abs(dtz) - 1, f"DTZ {dtz}, {child_dtz}: {board.fen()}"
                wdl = child_wdl
    assert plies > 200


def test_wdl50_follows_the_halfmove_clock() -> None:
    assert dtz_to_wdl(30, 70) == 2
    assert dtz_to_wdl(30, 71) == 1
    assert dtz_to_wdl(-30, 71) == -1
    assert dtz_to_wdl(0, 99) == 0
    assert dtz_to_wdl(101, 0) == 1


def test_clear_errors_for_positions_the_tables_cannot_answer(syzygy_dir: Path) -> None:
    labeller = Labeller([syzygy_dir], "auto")
    with pytest.raises(TablebaseError, match="castling"):
        labeller.label(chess.Board("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1"))
    with pytest.raises(TablebaseError, match="5 pieces"):
        labeller.label(chess.Board("4k3/8/8/8/8/8/8/RR2K2R w - - 0 1"))
    with pytest.raises(TablebaseError, match="not a legal position"):
        labeller.label(chess.Board("4k3/8/8/8/8/8/4R3/4K3 w - - 0 1"))


def test_missing_tables_are_named(syzygy_dir: Path, tmp_path: Path) -> None:
    for name in ("KQvK", "KRvK", "KRvKP"):
        for ext in (".rtbw", ".rtbz"):
            shutil.copy(syzygy_dir / (name + ext), tmp_path)
    for backend in ("python", "fathom") if fathom.available() else ("python",):
        labeller = Labeller([tmp_path], backend)
        assert labeller.label(chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 0 1")).wdl == 2
        with pytest.raises(TablebaseError, match="KQvKN is missing"):
            labeller.label(chess.Board("4k3/4n3/8/8/8/8/8/Q3K3 w - - 0 1"))
        # The table is there, but not the tables its captures and promotions lead to.
        with pytest.raises(TablebaseError, match="is missing"):
            labeller.label(chess.Board("4k3/4p3/8/8/8/8/8/R3K3 w - - 0 1"))
    # The tables found again with all of them present.
    assert Labeller([syzygy_dir], "auto").label(chess.Board("4k3/4p3/8/8/8/8/8/R3K3 w - - 0 1"))


def test_an_empty_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TablebaseError, match="no Syzygy tables"):
        Labeller([tmp_path], "python")


def test_two_fathom_labellers_on_different_tables_do_not_mix(
    syzygy_dir: Path, tmp_path: Path
) -> None:
    need_fathom()
    for name in ("KQvK", "KRvK"):
        for ext in (".rtbw", ".rtbz"):
            shutil.copy(syzygy_dir / (name + ext), tmp_path)
    full = Labeller([syzygy_dir], "fathom")
    small = Labeller([tmp_path], "fathom")  # Fathom's global tables now point here
    board = chess.Board("4k3/4p3/8/8/8/8/8/R3K3 w - - 0 1")
    assert full.label(board).wdl == chess.syzygy.open_tablebase(str(syzygy_dir)).probe_wdl(board)
    assert small.label(chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 0 1")).wdl == 2
    assert full.label(board).wdl == 2
