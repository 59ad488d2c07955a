"""Records per second of `chesspipe training convert`, both ways, beside a python-chess script.

    python bench/training_files.py [--copies 30] [--plain games-eval.plain]

Input: Stockfish's fixture `games-eval.plain` (9,958 records of whole games) repeated `--copies`
times (about 300,000 records). Measured in one process, one core, wall and CPU seconds:

- plain -> binpack: chesspipe's reader and chained writer (every move checked legal);
- binpack -> plain: chesspipe's chained reader (every move checked legal) and the text writer;
- plain -> plain: chesspipe's streaming reader and writer (no chess);
- the baseline, a plain python-chess script: read the six lines of each record, `chess.Board`
  of the FEN, the move checked legal, the record written back as text.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import chess

from bench.measure import Clock  # noqa: E402
from pipelines.training.convert import convert

DEFAULT_PLAIN = (
    Path(__file__).resolve().parent.parent.parent
    / "shared" / "data" / "stockfish" / "games-eval.plain"
)  # fmt: skip


def naive_plain_copy(source: Path, out: Path) -> int:
    """The python-chess baseline: parse, check each move, write each record back."""
    count = 0
    with open(source, encoding="ascii") as inp, open(out, "w", encoding="ascii") as outp:
        while True:
            lines = [inp.readline() for _ in range(6)]
            if not lines[0]:
                return count
            fen = lines[0][4:].rstrip("\n")
            move = lines[1][5:].rstrip("\n")
            score, ply, result = (int(line.split()[1]) for line in lines[2:5])
            board = chess.Board(fen)
            if chess.Move.from_uci(move) not in board.legal_moves:
                raise ValueError(f"illegal move {move} in {fen}")
            outp.write(f"fen {board.fen()}\nmove {move}\nscore {score}\nply {ply}\n"
                       f"result {result}\ne\n")  # fmt: skip
            count += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plain", type=Path, default=DEFAULT_PLAIN)
    parser.add_argument("--copies", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / "in.plain"
        data = args.plain.read_bytes()
        with open(source, "wb") as handle:
            for _ in range(args.copies):
                handle.write(data)
        rows = []
        steps = (
            ("chesspipe plain -> binpack", lambda: convert(source, work / "a.binpack")["records"]),
            ("chesspipe binpack -> plain",
             lambda: convert(work / "a.binpack", work / "b.plain")["records"]),
            ("chesspipe plain -> plain", lambda: convert(source, work / "c.plain")["records"]),
            ("python-chess plain -> plain", lambda: naive_plain_copy(source, work / "d.plain")),
        )  # fmt: skip
        for name, step in steps:
            with Clock() as clock:
                records = step()
            rows.append((name, records, clock.wall, clock.cpu))
            print(f"{name:<30} {records:>9,} records {clock.wall:7.2f} s wall "
                  f"{records / clock.wall:>9,.0f}/s  {clock.cpu:7.2f} s CPU "
                  f"{records / clock.cpu:>9,.0f}/s", flush=True)  # fmt: skip
        assert (work / "b.plain").read_bytes() == source.read_bytes()
        sizes = {p.name: p.stat().st_size for p in work.iterdir()}
        print(f"sizes: .plain {sizes['in.plain']:,} bytes, .binpack {sizes['a.binpack']:,} bytes")


if __name__ == "__main__":
    main()
