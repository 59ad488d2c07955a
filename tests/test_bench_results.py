"""bench/run_benchmarks.py rewrites only its own part of bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

from bench.run_benchmarks import BEGIN, END, splice, write_results
from tests.conftest import ROOT

FAKE = f"""{BEGIN}
# Benchmarks

| program | wall |
|---|---|
| (a) | 0.42 |
{END}

## Book tools side by side with PolyGlot (bench/book_tools.py)

Kept by hand: 1.23 s.

## Training records from whole games (bench/training_from_games.py)

Kept by hand too.
"""

NEW = "# Benchmarks\n\n| program | wall |\n|---|---|\n| (a) | 0.40 |\n"


def test_only_the_generated_part_is_replaced() -> None:
    spliced = splice(FAKE, NEW)
    assert spliced == FAKE.replace("0.42", "0.40")
    assert splice(spliced, NEW) == spliced


def test_text_before_the_generated_part_is_kept_too() -> None:
    text = "A note kept by hand.\n\n" + FAKE
    assert splice(text, NEW) == text.replace("0.42", "0.40")


def test_a_results_file_without_the_marks_is_kept_after_the_new_part() -> None:
    old = "# Benchmarks\n\nAn old run.\n\n## Book tools\n\nKept by hand.\n"
    spliced = splice(old, NEW)
    assert spliced == f"{BEGIN}\n{NEW}{END}\n\n{old}"
    assert splice("", NEW) == f"{BEGIN}\n{NEW}{END}\n"


def test_the_results_file_is_written_around_its_hand_kept_sections(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    write_results(results, NEW)
    assert results.read_text() == f"{BEGIN}\n{NEW}{END}\n"
    results.write_text(FAKE)
    write_results(results, NEW)
    assert results.read_text() == FAKE.replace("0.42", "0.40")
    # The project's own file has its marks: a new run keeps the sections of other benchmarks.
    real = (ROOT / "bench" / "RESULTS.md").read_text()
    assert real.count(BEGIN) == 1 and real.count(END) == 1
    assert real.index(END) < real.index("## Book tools side by side with PolyGlot")
