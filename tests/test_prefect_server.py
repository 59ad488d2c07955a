"""The command's own Prefect server process (flows.prefect_internals): when it may skip
Prefect's migration check, and the Prefect versions its patches were written for."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pipelines.flows.prefect_internals import database_at_head, migrations_head


def sqlite_versions() -> Path:
    from prefect.server.database.orm_models import AioSqliteORMConfiguration

    return Path(AioSqliteORMConfiguration().versions_dir)


@pytest.mark.slow  # (1.5 s or more: the fast lane leaves it out)
def test_the_migrations_head_is_alembics() -> None:
    """Read from the scripts' text, the head is the one Alembic finds by importing them."""
    from alembic.script import ScriptDirectory

    versions = sqlite_versions()
    scripts = ScriptDirectory(str(versions.parent.parent), version_locations=[str(versions)])
    assert [migrations_head()] == scripts.get_heads()


def database(path: Path, *revisions: str) -> str:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.executemany("INSERT INTO alembic_version VALUES (?)", [(r,) for r in revisions])
    db.close()
    return f"sqlite+aiosqlite:///{path}"


@pytest.mark.slow
def test_only_a_sqlite_file_at_the_head_skips_the_check(tmp_path: Path) -> None:
    head = migrations_head()
    assert head is not None
    assert database_at_head(database(tmp_path / "at-head.db", head))
    older = sorted(sqlite_versions().glob("20*.py"))[0].name.split("_")[4]  # the first
    assert older != head
    assert not database_at_head(database(tmp_path / "older.db", older))
    assert not database_at_head(database(tmp_path / "two.db", head, older))
    assert not database_at_head(database(tmp_path / "none.db"))
    (tmp_path / "empty.db").touch()
    assert not database_at_head(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    (tmp_path / "text.db").write_text("not a database")
    assert not database_at_head(f"sqlite+aiosqlite:///{tmp_path / 'text.db'}")
    assert not database_at_head(f"sqlite+aiosqlite:///{tmp_path / 'absent.db'}")
    assert not database_at_head("sqlite+aiosqlite:///relative.db")
    assert not database_at_head("sqlite+aiosqlite:///:memory:")
    assert not database_at_head("postgresql+asyncpg://user@localhost/prefect")
    # Looking does not create or change the file.
    assert not (tmp_path / "absent.db").exists()
    assert (tmp_path / "text.db").read_text() == "not a database"


@pytest.mark.slow
def test_the_routers_runs_use_come_first_and_no_path_changes_hands() -> None:
    """Moving the routers a run uses to the front keeps every router, and no route of the
    others matches a path of theirs (so every request reaches the route it reached before)."""
    import re as regex

    from prefect.server.api.server import API_ROUTERS
    from starlette.routing import compile_path

    from pipelines.flows.prefect_internals import RUN_ROUTERS, runs_first

    ordered = runs_first(API_ROUTERS)
    assert sorted(map(id, ordered)) == sorted(map(id, API_ROUTERS))
    assert [r.prefix for r in ordered[: len(RUN_ROUTERS)]] == list(RUN_ROUTERS)
    moved = [route for router in ordered[: len(RUN_ROUTERS)] for route in router.routes]
    others = [route for router in ordered[len(RUN_ROUTERS) :] for route in router.routes]
    for route in moved:
        path = regex.sub(r"\{[^}]+\}", "00000000-0000-0000-0000-000000000000", route.path)
        for other in others:
            if set(getattr(route, "methods", ())) & set(getattr(other, "methods", ())):
                assert not compile_path(other.path)[0].match(path), (route.path, other.path)


def test_prefect_is_a_version_the_patches_were_written_for() -> None:
    """pipelines.flows.prefect_internals patches Prefect's internals (Settings.hash_key,
    server.API_ROUTERS, the SQLite migrations' folder and revisions): on a Prefect outside
    KNOWN_PREFECT, re-check each patch against its source, then move KNOWN_PREFECT."""
    import re

    import prefect

    from pipelines.flows.prefect_internals import KNOWN_PREFECT

    found = re.match(r"(\d+)\.(\d+)", prefect.__version__)
    assert found is not None, prefect.__version__
    version = (int(found.group(1)), int(found.group(2)))
    first, beyond = KNOWN_PREFECT
    known = f"{first[0]}.{first[1]} up to {beyond[0]}.{beyond[1]} (excluded)"
    assert first <= version < beyond, (
        f"Prefect {prefect.__version__} is not one pipelines/flows/prefect_internals.py was "
        f"written for ({known}): re-check its patches of Prefect's internals "
        "(Settings.hash_key, server.API_ROUTERS, the SQLite migrations' revisions), then move "
        "KNOWN_PREFECT"
    )
