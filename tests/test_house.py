"""The house rules the code's shape keeps: values stay typed until the edges.

Read from the source with `ast`: a `dict[str, Any]` in a function's parameters or a class's
fields is a value whose shape no reader (and no type checker) can see. JSON happens at files,
HTTP and the Prefect flow boundary; inside, values are dataclasses and named tuples.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The most `dict[str, Any]` allowed in the parameters and fields of pipelines/.
MOST_UNTYPED = 10

#: The functions that turn a file's parsed JSON into a typed value: their parameter is the
#: edge the rule allows, and is not counted.
JSON_READERS = frozenset({"from_json"})


def is_untyped_dict(node: ast.AST) -> bool:
    """Whether a node is the annotation `dict[str, Any]` (or `Dict[str, Any]`)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
        return False
    if node.value.id not in ("dict", "Dict") or not isinstance(node.slice, ast.Tuple):
        return False
    names = [elt.id if isinstance(elt, ast.Name) else None for elt in node.slice.elts]
    return names == ["str", "Any"]


def untyped_dicts(annotation: ast.expr | None) -> int:
    """How many `dict[str, Any]` an annotation holds (one written as a string included)."""
    if annotation is None:
        return 0
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    return sum(is_untyped_dict(node) for node in ast.walk(annotation))


def untyped_places(source: str, name: str) -> list[str]:
    """The parameters and class fields of a module annotated with `dict[str, Any]`."""
    places = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name in JSON_READERS:
                continue  # the edge itself: the parsed JSON of a file, typed on its way in
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            for arg in every:
                if arg is not None:
                    places += [f"{name}:{arg.lineno} {arg.arg}"] * untyped_dicts(arg.annotation)
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign):
                    field = f"{name}:{statement.lineno} {ast.unparse(statement.target)}"
                    places += [field] * untyped_dicts(statement.annotation)
    return places


def test_the_count_sees_parameters_fields_and_strings() -> None:
    source = (
        "from typing import Any\n"
        "def f(a: dict[str, Any], b: dict[str, Any] | None, c: dict[str, int], *d: Any,\n"
        "      e: 'Dict[str, Any]', **f: dict[str, Any]) -> dict[str, Any]: ...\n"
        "class C:\n"
        "    x: dict[str, Any]\n"
        "    y: list[dict[str, Any]]\n"
        "    z: dict[Any, str]\n"
        "    def m(self) -> None:\n"
        "        local: dict[str, Any] = {}\n"
        "    @classmethod\n"
        "    def from_json(cls, data: dict[str, Any]) -> C: ...\n"
    )
    assert [p.split()[1] for p in untyped_places(source, "m")] == ["a", "b", "e", "f", "x", "y"]


def test_few_untyped_dicts_in_parameters_and_fields() -> None:
    places = [
        place
        for path in sorted((ROOT / "pipelines").rglob("*.py"))
        for place in untyped_places(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert len(places) <= MOST_UNTYPED, "\n".join(places)


def test_python_chess_is_used_through_its_public_api() -> None:
    """No module reaches into python-chess (its hasher's parts, names with an underscore):
    chesspipe works with the release installed and those that keep its public API."""
    import re

    inside = re.compile(r"\bchess(?:\.[a-z0-9_]+)*\.(?:ZobristHasher|_[A-Za-z]\w*)")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for package in ("schemas", "pipelines", "engine")
        for path in sorted((ROOT / package).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if inside.search(line)
    ]
    assert found == []
