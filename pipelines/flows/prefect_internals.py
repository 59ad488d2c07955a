"""Prefect's internals, in the one module that reaches into them: the process of a command's
own Prefect server, started by `flows.server.LocalApi`.

    python -m pipelines.flows.prefect_internals COMMAND_PID UVICORN_ARGUMENTS...

What it relies on is no public API of Prefect: it replaces `prefect.settings.Settings.hash_key`,
reorders `prefect.server.api.server.API_ROUTERS`, and reads the revisions of the SQLite
migrations' scripts (`server/database/_migrations/versions/sqlite`) and of the database's
`alembic_version` table. It was written for the Prefect versions of `KNOWN_PREFECT`; a test
fails on another one, to have these re-checked first.

Prefect's app under uvicorn, as Prefect's own temporary server runs it, with what makes its
start-up cost less than the command's work on a month of sample data:

- the kernel kills this process when the command dies (even by SIGKILL);
- Python's garbage collector is off while Prefect is imported and its app made (about a quarter
  less time), and what was built then is frozen, never scanned again;
- Prefect's app caches get a constant key (one app is made here; the key, all settings written
  out as environment variables twice, costs ~0.2 s);
- Prefect's migrations are not checked when the database is a SQLite file already at their last
  revision (the check imports every migration script, ~0.1 s); any doubt leaves the check on;
- the API's routers that a flow run uses come first: FastAPI makes each router's routes on the
  first request that passes it, so the routers no run uses are never made (~0.1 s).
"""

from __future__ import annotations

import gc
import importlib.util
import re
import runpy
import sqlite3
import sys
import types
from collections.abc import Sequence
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

from pipelines.lifetime import die_with_parent

#: The Prefect versions (major, minor) the patches here were read against: from the first,
#: included, to the second, excluded. Moving it means re-checking each patch against that
#: Prefect's source (tests/test_prefect_server.py).
KNOWN_PREFECT = ((3, 9), (3, 10))

#: The name under which uvicorn finds the app factory (`--factory NAME:create_app`).
FACTORY_MODULE = "chesspipe_prefect_server"

#: The API's routers a flow run (and its task runs, logs, events and artifacts) uses, by prefix.
RUN_ROUTERS = (
    "/admin",
    "/csrf-token",
    "/flows",
    "/flow_runs",
    "/task_runs",
    "/logs",
    "/artifacts",
    "/events",
)

_SQLITE = "sqlite+aiosqlite:///"
_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*['\"](\w+)['\"]", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(.+)$", re.MULTILINE)


def migrations_head() -> str | None:
    """Return the last revision of the installed Prefect's SQLite migrations, read from their
    scripts without importing them; None when they do not name exactly one."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(spec.submodule_search_locations[0], "server/database/_migrations/versions/sqlite")
    revisions: set[str] = set()
    replaced: set[str] = set()
    for script in folder.glob("*.py"):
        text = script.read_text(encoding="utf-8", errors="replace")
        revision, down = _REVISION.search(text), _DOWN_REVISION.search(text)
        if revision is None or down is None:
            if script.name != "__init__.py":
                return None  # a script read otherwise than expected: let Prefect check
            continue
        revisions.add(revision.group(1))
        replaced.update(re.findall(r"['\"](\w+)['\"]", down.group(1)))
    heads = revisions - replaced
    return heads.pop() if len(heads) == 1 else None


def database_at_head(url: str) -> bool:
    """Whether `url` names a SQLite file whose Prefect schema is at the migrations' head."""
    if not url.startswith(_SQLITE):
        return False
    path = Path(url.removeprefix(_SQLITE))
    if not path.is_absolute() or not path.is_file():
        return False
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as database:
            rows = database.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        return False
    return len(rows) == 1 and rows[0][0] == migrations_head()


def runs_first(routers: Sequence[Any]) -> tuple[Any, ...]:
    """The routers with those of RUN_ROUTERS first, in its order, then the others in theirs.

    Their prefixes are distinct, so no request finds another route than before.
    """
    first = [r for r in routers if getattr(r, "prefix", None) in RUN_ROUTERS]
    first.sort(key=lambda router: RUN_ROUTERS.index(router.prefix))
    return (*first, *(r for r in routers if r not in first))


def create_app() -> Any:
    """Prefect's server app (uvicorn's factory)."""
    from prefect.server.api import server
    from prefect.settings import Settings

    Settings.hash_key = lambda self: FACTORY_MODULE  # type: ignore[method-assign]
    server.API_ROUTERS = runs_first(server.API_ROUTERS)
    app = server.create_app()
    gc.freeze()  # what is built so far lives as long as the server: never scan it again
    gc.enable()
    return app


def main(argv: list[str]) -> int:
    """Serve Prefect's API for the command whose pid is argv[0]; the rest goes to uvicorn."""
    die_with_parent(int(argv[0]))
    gc.disable()  # until the app is made: its imports build many objects and little garbage
    factory = types.ModuleType(FACTORY_MODULE)
    factory.create_app = create_app  # type: ignore[attr-defined]
    sys.modules[FACTORY_MODULE] = factory
    with ExitStack() as stack:
        from prefect.settings import (
            PREFECT_API_DATABASE_CONNECTION_URL,
            PREFECT_API_DATABASE_MIGRATE_ON_START,
            temporary_settings,
        )

        url = PREFECT_API_DATABASE_CONNECTION_URL.value()
        if PREFECT_API_DATABASE_MIGRATE_ON_START.value() and database_at_head(str(url)):
            updates = {PREFECT_API_DATABASE_MIGRATE_ON_START: False}
            stack.enter_context(temporary_settings(updates=updates))
        sys.argv = ["uvicorn", *argv[1:]]
        try:
            runpy.run_module("uvicorn", run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            return stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
