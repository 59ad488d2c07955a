"""`chesspipe book`: build, show and report Polyglot books."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    from pipelines.commands.options import add_actions

    actions = add_actions(
        subparsers, "book", dest="book_command", help="build and inspect Polyglot books"
    )
    for name in ("build", "show", "report", "merge", "dump", "check"):
        module = __import__(f"pipelines.commands.book_{name}", fromlist=["register"])
        module.register(actions)
