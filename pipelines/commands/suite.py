"""`chesspipe suite`: opening suites for engine testing (EPD/PGN for fastchess)."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    from pipelines.commands.options import add_actions

    actions = add_actions(
        subparsers,
        "suite",
        dest="suite_command",
        help="build, check and prune opening suites for engine testing",
        description="Opening suites as engine testers play them (fastchess, cutechess-cli: "
        "-openings file=SUITE.epd format=epd): popular exits of the statistics in an "
        "evaluation window, checked, and pruned by the matches played with them.",
    )
    for name in ("build", "check", "learn"):
        module = __import__(f"pipelines.commands.suite_{name}", fromlist=["register"])
        module.register(actions)
