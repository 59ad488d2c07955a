"""The compiled part of chesspipe, the hot path of reading games (pipelines/games/): built from
source at install by the system C compiler against Python's headers. Everything else is in
pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pipelines.games._sanwalk",
            sources=["pipelines/games/_sanwalk.c"],
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror"],
        )
    ]
)
