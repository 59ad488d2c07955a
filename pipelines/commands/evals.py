"""`chesspipe evals`: engine evaluations of book positions into the warehouse's store."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    from pipelines.commands.options import add_actions

    actions = add_actions(
        subparsers,
        "evals",
        dest="evals_command",
        help="evaluate book positions with a UCI engine, or import Lichess's evaluations",
        description="Fill the warehouse's evaluation store (DIR/evals/, the `evals` view in "
        "SQL): by a UCI engine on a book's positions, or from the Lichess evaluation dump.",
    )
    for name in ("analyse", "import", "from_games"):
        module = __import__(f"pipelines.commands.evals_{name}", fromlist=["register"])
        module.register(actions)
