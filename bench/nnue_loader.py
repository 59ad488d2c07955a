"""nnue-pytorch's data loader, built from its source, against `chesspipe training filter`.

    python bench/nnue_loader.py --nnue-pytorch DIR [--input FILE.binpack] [--build-dir DIR]

DIR is a checkout of official-stockfish/nnue-pytorch. `bench/nnue_loader_driver.cpp` (ours: it
includes the loader's headers and links with its `data_loader/cpp/training_data_loader.cpp`)
is built with g++ into --build-dir and prints the positions the loader yields from the input
through `make_skip_predicate`: one thread, file order (the loader's sequential reader), not
cyclic. `training filter` runs on the same file with the same options, and the kept positions
are compared as FEN (its move number aside) + move + score + ply + result, in order and as multisets. Exits 1 on any difference among the
compared rows.

Inputs: the file given (default Stockfish's fixture, 9,958 records) and a copy of it with some
scores set to VALUE_NONE (32002) and to 0, as tests/test_training_tools.py marks them, so the
loader's two unconditional skips are exercised.

What the loader does that cannot be compared position by position, and how it is handled:
- its adaptive piece-count filter is part of every predicate and draws at random. It is turned
  off through its own options: weights pc_y = (1, -100, -100, -100, 0) leave piece count 0
  the only positive weight, so every real position has weight 0, accept probability 0, and a
  reject bar of uint64((1 - 0) x 2^64), which baseline x86-64 code converts to 0 (never
  rejected). That conversion is out of range in C++; the driver is therefore built without
  -march=native (on an AVX-512 machine vcvttsd2usi gives 2^64 - 1 and every position would be
  rejected; --native shows it);
- the soft early-ply filter is off (soft_early_fen_skipping 0);
- random_fen_skipping and wld_filtered draw from the loader's per-thread mt19937_64 and from
  Python's generator here: only their counts are shown, not compared;
- with no skip at all, or only simple_eval_skipping, the loader makes no predicate (its guard
  does not look at simple_eval_skipping) and keeps every record, VALUE_NONE included, while
  `filter` always drops VALUE_NONE and placeholder zeros: shown apart, not compared.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DRIVER = ROOT / "bench" / "nnue_loader_driver.cpp"
#: Piece-count weights under which the loader's piece-count filter rejects nothing (above).
PC_OFF = (1.0, -100.0, -100.0, -100.0, 0.0)


@dataclass
class Case:
    """One set of skips, in the loader's terms and as `training filter` options."""

    filtered: bool = False
    random_fen_skipping: int = 0
    wld_filtered: bool = False
    early_fen_skipping: int = -1
    simple_eval_skipping: int = 0
    #: "compared", "random" (counts only) or "no-predicate" (the loader skips nothing).
    kind: str = "compared"
    extra: list[str] = field(default_factory=list)

    def options(self) -> list[str]:
        words: list[str] = []
        if self.filtered:
            words.append("--filtered")
        if self.wld_filtered:
            words.append("--wld-filtered")
        if self.random_fen_skipping:
            words += ["--random-fen-skipping", str(self.random_fen_skipping)]
        if self.early_fen_skipping >= 0:
            words += ["--early-fen-skipping", str(self.early_fen_skipping)]
        if self.simple_eval_skipping > 0:
            words += ["--simple-eval-skipping", str(self.simple_eval_skipping)]
        return words

    def loader_args(self) -> list[str]:
        numbers = [
            int(self.filtered),
            self.random_fen_skipping,
            int(self.wld_filtered),
            self.early_fen_skipping,
            0,  # soft_early_fen_skipping
            self.simple_eval_skipping,
            0,  # param_index
        ]
        return [str(n) for n in numbers] + [repr(y) for y in PC_OFF]


CASES = [
    Case(early_fen_skipping=0),
    Case(early_fen_skipping=16),
    Case(filtered=True),
    Case(filtered=True, early_fen_skipping=16),
    Case(early_fen_skipping=0, simple_eval_skipping=1000),
    Case(filtered=True, early_fen_skipping=8, simple_eval_skipping=300),
    Case(filtered=True, early_fen_skipping=60, simple_eval_skipping=2000),
    Case(random_fen_skipping=3, kind="random"),
    Case(wld_filtered=True, kind="random"),
    Case(wld_filtered=True, filtered=True, early_fen_skipping=16, kind="random"),
    Case(kind="no-predicate"),
    Case(simple_eval_skipping=1000, kind="no-predicate"),
]


def build(checkout: Path, build_dir: Path, native: bool) -> Path:
    """Compile the driver with the loader's sources; return the program."""
    source = checkout / "data_loader" / "cpp"
    build_dir.mkdir(parents=True, exist_ok=True)
    program = build_dir / ("nnue_loader_driver" + ("-native" if native else ""))
    command = [
        "g++",
        "-std=c++20",
        "-O2",
        "-DNDEBUG",
        "-w",
        *(["-march=native"] if native else []),
        "-I",
        str(source),
        "-o",
        str(program),
        str(DRIVER),
        str(source / "training_data_loader.cpp"),
        "-lpthread",
    ]
    inputs = [DRIVER, *source.glob("*.cpp"), *source.glob("*.h"), *source.glob("lib/*.h")]
    if not program.exists() or program.stat().st_mtime < max(p.stat().st_mtime for p in inputs):
        print("$ " + " ".join(command), file=sys.stderr)
        subprocess.run(command, check=True)
    return program


def key(fen: str, move: str, score: str, ply: str, result: str) -> str:
    """A position as compared: FEN without its move number, move, score, ply, result.

    The loader's FEN gives the move number as ply // 2 (0 at the start position), one less
    than a FEN's 1 + ply // 2; the ply itself is compared."""
    return "|".join([" ".join(fen.split()[:5]), move, score, ply, result])


def loader_kept(program: Path, source: Path, case: Case) -> tuple[list[str], float]:
    started = time.monotonic()
    out = subprocess.run(
        [str(program), str(source), *case.loader_args()],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.monotonic() - started
    kept = []
    for line in out.stdout.splitlines():
        fen, move, score, ply, result = line.split("|")
        kept.append(key(fen, move, score, ply, result))
    return kept, seconds


def chesspipe_kept(source: Path, case: Case, scratch: Path) -> tuple[list[str], float]:
    out_path = scratch / "kept.plain"
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pipelines", "training", "filter", str(source), str(out_path)]
        + case.options(),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    seconds = time.monotonic() - started
    kept: list[str] = []
    fields: dict[str, str] = {}
    for line in out_path.read_text().splitlines():
        if line == "e":
            kept.append(key(*(fields[k] for k in ("fen", "move", "score", "ply", "result"))))
            fields = {}
        else:
            name, _, value = line.partition(" ")
            fields[name] = value
    return kept, seconds


def marked_copy(source: Path, scratch: Path) -> Path:
    """`source` with some scores set to VALUE_NONE and 0 (the tests' marks), as a .binpack."""
    sys.path.insert(0, str(ROOT))
    from pipelines.training.files import read_training, write_training
    from schemas.plain import PlainRecord

    def marked() -> list[PlainRecord]:
        out = []
        for index, r in enumerate(read_training(source)):
            score = r.score
            if index % 97 == 5:
                score = 32002
            elif index % 89 == 7:
                score = 0
            out.append(PlainRecord(r.fen, r.move, score, r.ply, r.result))
        return out

    path = scratch / f"{source.stem}-marked.binpack"
    write_training(marked(), path, str(source))
    return path


def first_difference(a: list[str], b: list[str]) -> str:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"position {index}: loader {x!r}, chesspipe {y!r}"
    return f"lengths {len(a)} and {len(b)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nnue-pytorch", type=Path, required=True, help="its checkout")
    parser.add_argument("--input", type=Path, default=SHARED / "stockfish" / "games-eval.binpack")
    parser.add_argument("--build-dir", type=Path, default=Path("/work/scratch/nnue-loader"))
    parser.add_argument(
        "--native",
        action="store_true",
        help="also run the -march=native build on one row (its piece-count filter then "
        "rejects everything on AVX-512 machines)",
    )
    args = parser.parse_args()
    program = build(args.nnue_pytorch, args.build_dir, native=False)
    commit = subprocess.run(
        ["git", "-C", str(args.nnue_pytorch), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"nnue-pytorch {commit or args.nnue_pytorch}; driver {program}")

    failures = 0
    header = (
        "| input | options | loader kept | chesspipe kept | same order | same multiset "
        "| loader s | chesspipe s |"
    )
    with tempfile.TemporaryDirectory() as name:
        scratch = Path(name)
        inputs = [args.input, marked_copy(args.input, scratch)]
        print(header)
        print("|" + "---|" * 8)
        notes: list[str] = []
        for source in inputs:
            for case in CASES:
                loader, loader_s = loader_kept(program, source, case)
                ours, ours_s = chesspipe_kept(source, case, scratch)
                if case.kind == "compared":
                    order = loader == ours
                    multiset = Counter(loader) == Counter(ours)
                    same = ("yes" if order else "no", "yes" if multiset else "no")
                    if not (order and multiset):
                        failures += 1
                        notes.append(
                            f"{source.name} {' '.join(case.options())}: "
                            + first_difference(loader, ours)
                        )
                else:
                    same = (f"({case.kind})", f"({case.kind})")
                options = " ".join(case.options()) or "(none)"
                print(
                    f"| {source.name} | {options} | {len(loader)} | {len(ours)} | {same[0]} "
                    f"| {same[1]} | {loader_s:.2f} | {ours_s:.2f} |"
                )
        if args.native:
            native = build(args.nnue_pytorch, args.build_dir, native=True)
            case = CASES[0]
            kept, _ = loader_kept(native, args.input, case)
            print(f"-march=native build, {' '.join(case.options())}: loader kept {len(kept)}")
        for note in notes:
            print("difference: " + note)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
