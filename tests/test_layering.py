"""The house rules of imports: no cycles, and no room reaching up or sideways where it must not.

Read from the source with `ast`, lazy imports inside functions included: a cycle through a
function-level import is still a cycle for the reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("schemas", "pipelines", "engine")

#: The rooms of pipelines/, lowest first: a room may import its own modules and lower rooms only.
#: Modules of one step (the sets) do not import each other.
ROOMS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            "pipelines.arrow_arrays",
            "pipelines.errors",
            "pipelines.files",
            "pipelines.lifetime",
            "pipelines.progress",
        }
    ),
    frozenset({"pipelines.sources"}),
    frozenset({"pipelines.warehouse"}),
    frozenset({"pipelines.games"}),
    frozenset({"pipelines.evals"}),
    frozenset(
        {
            "pipelines.ingest",
            "pipelines.books",
            "pipelines.endgames",
            "pipelines.training",
        }
    ),
    frozenset({"pipelines.suites"}),
    frozenset({"pipelines.explorer"}),
    frozenset({"pipelines.search"}),
    frozenset({"pipelines.monthly", "pipelines.serve"}),
    frozenset({"pipelines.flows"}),
    frozenset({"pipelines.commands"}),
    frozenset({"pipelines.cli"}),
    frozenset({"pipelines.__main__"}),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def our_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """Our modules a file imports, at any depth of the file (lazy imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        for name in names:
            # `from pkg import module` names a module; `from module import name` does not
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name.split(".")[0] in PACKAGES:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = our_modules()
    graph = {}
    for name, path in modules.items():
        targets = imports_of(path, modules) - {name}
        # a module's own package (an empty __init__) is no dependency
        graph[name] = {t for t in targets if not name.startswith(t + ".")}
    return graph


def room_of(module: str) -> int | None:
    for level, rooms in enumerate(ROOMS):
        for room in rooms:
            if module == room or module.startswith(room + "."):
                return level
    return None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    ("package", "allowed"),
    [("schemas", {"schemas"}), ("engine", {"engine", "schemas"})],
)
def test_schemas_and_engine_import_no_pipelines(package: str, allowed: set[str]) -> None:
    wrong = {
        (module, target)
        for module, targets in import_graph().items()
        if module.split(".")[0] == package
        for target in targets
        if target.split(".")[0] not in allowed
    }
    assert wrong == set()


def test_rooms_import_only_lower_rooms() -> None:
    graph = import_graph()
    unplaced = sorted(m for m in graph if m.startswith("pipelines.") and room_of(m) is None)
    assert unplaced == [], "every module of pipelines/ lives in a room of ROOMS"
    wrong = []
    for module, targets in graph.items():
        level = room_of(module)
        if level is None:
            continue
        for target in targets:
            target_level = room_of(target)
            if target_level is None:
                continue
            same_room = target.split(".")[:2] == module.split(".")[:2]
            if target_level > level or (target_level == level and not same_room):
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_the_room_rule_catches_a_plain_module_importing_flows() -> None:
    assert room_of("pipelines.ingest.run") is not None
    flows, ingest = room_of("pipelines.flows.monthly"), room_of("pipelines.ingest.run")
    assert flows is not None and ingest is not None and flows > ingest


def test_ingest_training_and_endgames_stand_side_by_side_on_games() -> None:
    """None of the rooms that read games may import another's modules: they share games/."""
    ingest, training, endgames, games = (
        room_of(f"pipelines.{room}.x") for room in ("ingest", "training", "endgames", "games")
    )
    assert ingest is not None and games is not None
    assert ingest == training == endgames
    assert games < ingest


def test_benchmarks_import_nothing_of_the_tests() -> None:
    """What benchmarks and tests share lives in bench/ (data.py, peers.py): tests import bench/,
    never the reverse."""
    wrong = []
    for path in sorted((ROOT / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            wrong += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "tests"]
    assert wrong == []
