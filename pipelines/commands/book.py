"""`chesspipe book`: build, show and report Polyglot books."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("book", help="build and inspect Polyglot books")
    actions = parser.add_subparsers(dest="book_command", metavar="ACTION", required=True)
    for name in ("build", "show", "report", "merge", "dump", "check"):
        module = __import__(f"pipelines.commands.book_{name}", fromlist=["register"])
        module.register(actions)
