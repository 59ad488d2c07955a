"""`chesspipe evals`: engine evaluations of book positions into the warehouse's store."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "evals",
        help="evaluate book positions with a UCI engine, or import Lichess's evaluations",
        description="Fill the warehouse's evaluation store (DIR/evals/, the `evals` view in "
        "SQL): by a UCI engine on a book's positions, or from the Lichess evaluation dump.",
    )
    actions = parser.add_subparsers(dest="evals_command", metavar="ACTION", required=True)
    for name in ("analyse", "import"):
        module = __import__(f"pipelines.commands.evals_{name}", fromlist=["register"])
        module.register(actions)
