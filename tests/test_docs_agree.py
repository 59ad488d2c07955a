"""README and docs/ say what the code does: every option a documented command line shows exists,
and the numbers they give for formats are the formats' own."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.uci import build_parser as engine_parser
from pipelines.cli import build_parser
from schemas import binpack
from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def command_lines(text: str) -> Iterator[str]:
    """Yield the `chesspipe ...` command lines of a Markdown text's fenced blocks, continuation
    lines (indented, or after a trailing backslash) joined on, comments left out."""
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        current: str | None = None
        for line in block.splitlines():
            code = line.split(" #", 1)[0].rstrip()
            if re.match(r"\s*chesspipe(-engine)?(\s|$)", code) and not line.startswith(" " * 4):
                if current is not None:
                    yield current
                current = code.strip().rstrip("\\")
            elif current is not None and (line[:1].isspace() or current.endswith("\\")):
                current += " " + code.strip().rstrip("\\")
            else:
                if current is not None:
                    yield current
                current = None
        if current is not None:
            yield current


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def documented_parsers(line: str) -> list[argparse.ArgumentParser]:
    """The parsers of a documented command line (`a|b` alternatives give several)."""
    words = line.split()
    parsers = [engine_parser() if words[0] == "chesspipe-engine" else build_parser()]
    for word in words[1:]:
        choices = [_subparsers(p) for p in parsers]
        if not any(choices):
            break
        names = word.split("|")
        found = [c[n] for c in choices for n in names if n in c]
        if not found:
            break
        parsers = found
    return parsers


def documented_commands() -> list[tuple[str, str]]:
    return [(path.name, line) for path in DOCS for line in command_lines(path.read_text())]


def test_the_docs_show_command_lines() -> None:
    shown = {line.split()[1] for _, line in documented_commands() if line.startswith("chesspipe ")}
    # Every subcommand appears in some documented command line.
    assert shown >= set(_subparsers(build_parser())), set(_subparsers(build_parser())) - shown


@pytest.mark.parametrize(("doc", "line"), documented_commands())
def test_every_documented_option_exists(doc: str, line: str) -> None:
    parsers = documented_parsers(line)
    known = {option for p in parsers for a in p._actions for option in a.option_strings}
    missing = sorted(set(_FLAG.findall(line)) - known)
    assert not missing, f"{doc}: {line!r} shows {missing}, which {parsers[0].prog} lacks"


def test_readme_shows_every_option_of_the_commands_it_spells_out() -> None:
    """The options users asked for that README left out; their absence is the bug."""
    readme = "\n".join(line for _, line in documented_commands() if _ == "README.md")
    for wanted in ("--chess960",):
        assert re.search(rf"chesspipe book show [^\n]*{wanted}", readme), wanted
        assert re.search(rf"chesspipe-engine [^\n]*{wanted} N", readme), wanted


def test_binpack_sizes_in_the_docs_are_the_formats() -> None:
    chain = binpack.STEM_SIZE + 2  # a stem and its u16 count of further plies
    texts = {path.name: path.read_text() for path in DOCS}
    texts["export --help"] = " ".join(
        a.description or "" for a in _subparsers(_subparsers(build_parser())["export"]).values()
    )
    texts["schemas/binpack.py"] = (ROOT / "schemas" / "binpack.py").read_text()
    checked = 0
    for name, text in texts.items():
        flat = " ".join(text.split())
        for size in re.findall(r"(\d+)-byte stem", flat):
            assert int(size) == binpack.STEM_SIZE, (name, size)
            checked += 1
        for size in re.findall(r"(\d+) bytes (?:a record|for a position|per position)", flat):
            assert int(size) == chain, (name, size)
            checked += 1
        assert not re.search(r"chain \(\d+ bytes\) per position", flat), name
    assert checked >= 4


@pytest.mark.slow
def test_readme_first_command_makes_and_uses_its_own_virtual_environment(tmp_path: Path) -> None:
    """README's first block: the main job, one line, installing into a `.venv` it makes and
    activates (not into whatever Python is active); then `bash .ci/run`. The line's steps up
    to the install are run here, in a scratch folder: the install's `python` is the venv's."""
    import subprocess

    block = re.search(r"^```[^\n]*\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)
    assert block is not None
    first, second = block.group(1).splitlines()
    assert second == "bash .ci/run"
    steps = first.split(" && ")
    installs = [n for n, step in enumerate(steps) if " pip install " in f" {step} "]
    assert len(installs) == 1 and steps[installs[0]].startswith("python -m pip install -e ")
    before = steps[: installs[0]]
    assert before[0] == "python3 -m venv .venv", first
    assert steps[-1].startswith("chesspipe build-month "), first
    build_parser().parse_args(steps[-1].split()[1:])  # options that exist
    shown = "python -c 'import sys; print(sys.prefix)'"
    proc = subprocess.run(
        ["sh", "-c", " && ".join([*before, shown])],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert Path(proc.stdout.strip()).resolve() == (tmp_path / ".venv").resolve(), proc.stderr
