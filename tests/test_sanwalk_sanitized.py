"""The compiled SAN walk built with AddressSanitizer and UndefinedBehaviorSanitizer, fed real
movetexts, mangled movetexts and random bytes: no read past a text, no undefined behaviour, no
crash, and the same answers as the build chesspipe runs."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import GAMES_2013, ROOT, need, need_program

#: Fed to the sanitized module in a process of its own (the sanitizer's runtime preloaded):
#: every text from argv[2] (one movetext a line, escaped) and mutations of them.
FEED = r"""
import random, sys
import chess.polyglot, numpy as np
sys.path.insert(0, sys.argv[1])
import _sanwalk
_sanwalk.set_randoms(np.array(chess.polyglot.POLYGLOT_RANDOM_ARRAY, dtype=np.uint64).tobytes())
texts = [line.encode("latin-1").decode("unicode_escape").encode("latin-1")
         for line in open(sys.argv[2], encoding="latin-1").read().splitlines()]
rng = random.Random(1)
alphabet = b"abcdefgh12345678NBRQKOx=+#!?$.-{}()/;%* \n\r\t0\xe9["
fed = []
for text in texts:
    fed.append(text)
    for _ in range(8):
        cut = text[: rng.randrange(len(text) + 1)]  # a text cut anywhere
        fed.append(cut)
        mangled = bytearray(text)
        for _ in range(rng.randrange(1, 6)):
            if mangled:
                mangled[rng.randrange(len(mangled))] = rng.choice(alphabet)
        fed.append(bytes(mangled))
for _ in range(20000):
    fed.append(bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))))
    fed.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))))
for plies in (-1, 0, 1, 20, 50):
    keys, moves, lengths = _sanwalk.walk_openings(fed, plies)
    print(plies, len(keys) // 8, sum(np.frombuffer(lengths, dtype=np.int32) >= 0), flush=True)
"""


def sanitized_build(folder: Path) -> Path:
    """Build `_sanwalk` with the sanitizers, each text walked in a buffer of its exact size."""
    compiler = need_program("gcc")
    module = folder / f"_sanwalk{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
         "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-DSANWALK_EXACT_BUFFERS",
         "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{sysconfig.get_paths()['include']}",
         str(ROOT / "pipelines/games/_sanwalk.c"), "-o", str(module)],
        check=True,
    )  # fmt: skip
    return module


def movetexts(path: Path, count: int) -> list[bytes]:
    """The movetexts of the first games of a real dump."""
    from pipelines.games.game_filter import GameFilter, ScanStats
    from pipelines.games.scan import kept_games, split_games
    from schemas.speed import Speed
    from tests.recount import read_text

    stats = ScanStats()
    games = kept_games(
        split_games([read_text(path).encode()], stats), GameFilter(0, frozenset(Speed)), stats
    )
    return [game.movetext for _, game in zip(range(count), games, strict=False)]


def test_the_sanitized_walk_reads_nothing_past_any_text(tmp_path: Path) -> None:
    module = sanitized_build(tmp_path)
    runtime = subprocess.run(
        [need_program("gcc"), "-print-file-name=libasan.so"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if not Path(runtime).exists():
        reason = f"AddressSanitizer's runtime is not installed (gcc found {runtime!r})"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    texts = tmp_path / "texts.txt"
    games = movetexts(need(GAMES_2013, "real Lichess games"), 3000)
    texts.write_text(
        "\n".join(text.decode("latin-1").encode("unicode_escape").decode() for text in games),
        encoding="latin-1",
    )
    env = dict(
        os.environ,
        LD_PRELOAD=runtime,
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:exitcode=99",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=98",
        PYTHONMALLOC="malloc",
    )
    run = subprocess.run(
        [sys.executable, "-c", FEED, str(module.parent), str(texts)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    # The real games are read as the build chesspipe runs reads them: most, whole.
    from pipelines.games.sanwalk import walk_openings

    whole = walk_openings(games)
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    assert set(lines) == {"-1", "0", "1", "20", "50"}
    assert int((whole.lengths >= 0).sum()) > len(games) * 0.9
