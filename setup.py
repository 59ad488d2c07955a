"""The compiled part of chesspipe, the hot paths of reading games and counting them: the game
filter's fast path (pipelines/games/_scan.c), the SAN walk (pipelines/games/_sanwalk.c) and the
summing of move statistics (pipelines/ingest/_sums.c), built from source at install by the
system C compiler against Python's headers. Everything else is in pyproject.toml."""

from setuptools import Extension, setup

#: Warnings are errors: the code must build clean with the compiler at hand.
FLAGS = ["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror"]

#: Each compiled module, by its room.
MODULES = ("games._scan", "games._sanwalk", "ingest._sums", "training._codec", "search._scout")

setup(
    ext_modules=[
        Extension(
            f"pipelines.{name}",
            [f"pipelines/{name.replace('.', '/')}.c"],
            extra_compile_args=FLAGS,
        )
        for name in MODULES
    ]
)
