"""The compiled part of chesspipe, the hot path of reading games (pipelines/games/): the game
filter's fast path (_scan.c) and the SAN walk (_sanwalk.c), built from source at install by the
system C compiler against Python's headers. Everything else is in pyproject.toml."""

from setuptools import Extension, setup

#: Warnings are errors: the code must build clean with the compiler at hand.
FLAGS = ["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror"]

setup(
    ext_modules=[
        Extension(
            f"pipelines.games.{name}", [f"pipelines/games/{name}.c"], extra_compile_args=FLAGS
        )
        for name in ("_scan", "_sanwalk")
    ]
)
