"""Shared fixtures: where the real data lives, and running the command line as a user would."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Where the real data is (Lichess games, a Polyglot book, Syzygy tables) is written once, in
# bench/data.py, which the benchmarks read too.
from bench.data import (  # noqa: F401 (the tests import them from here)
    GAMES_2013,
    GAMES_2021,
    LICHESS_DIR,
    ODD_CASES,
    POLYGLOT_BOOK,
    SHARED_DATA,
    SYZYGY_DIR,
)

ROOT = Path(__file__).resolve().parent.parent


def need(path: Path, what: str) -> Path:
    """Return a data file's path, or skip (outside CI) / fail (in CI) when it is absent.

    Under CI (`CI=true`) missing data is a failure: a green run must not hide skipped tests.
    """
    if not path.exists():
        reason = f"{what} not found at {path}; set CHESSPIPE_SHARED_DATA to the shared data folder"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def need_built(path: Path, name: str) -> str:
    """Return the path of a peer program `bench/build_tools.sh` builds (fastchess, Scoutfish),
    or skip (outside CI) / fail (in CI) when it is not built."""
    if not path.exists():
        reason = f"{name} is not built at {path}: run bash bench/build_tools.sh"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return str(path)


def need_program(name: str) -> str:
    """Return a program's path, or skip (outside CI) / fail (in CI) when it is not installed."""
    found = shutil.which(name) or shutil.which(name, path="/usr/games")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed; .ci/run must install it")
        pytest.skip(f"{name} is not installed (Debian package); install it to run this test")
    return found


def need_module(name: str, install: str) -> None:
    """Skip (outside CI) or fail (in CI) when a Python package a test needs is not installed."""
    import importlib.util

    if importlib.util.find_spec(name) is None:
        reason = f"{name} is not installed: pip install {install}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; .ci/run must install it")
        pytest.skip(reason)


def run_cli(
    *args: str,
    stdin: bytes | None = None,
    check: bool = True,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `chesspipe ARGS` in a subprocess from this checkout and return the finished process."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=full_env,
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"chesspipe {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}"
        )
    return proc


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A running Prefect server (`prefect server start`, no UI, no services) and the
    environment that points commands at it (PREFECT_API_URL), as docs/orchestration.md advises
    for many runs: for the tests of what a flow command prints or refuses, which need a Prefect
    API but not the command's own server (its start-up, some 5 s of CPU a command, is tested
    elsewhere). It uses the Prefect home the commands use; the test processes start theirs one
    at a time (two at once would both migrate a new database, and one would fail)."""
    import fcntl

    from pipelines.flows.server import wait_until_healthy
    from tests.serving import free_port

    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
               "--port", str(port), "--no-ui", "--analytics-off", "--no-services"]  # fmt: skip
    lock_file = tmp_path_factory.getbasetemp().parent / "prefect-server-start.lock"
    with open(lock_file, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        server = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=env, start_new_session=True,
        )  # fmt: skip
        try:
            wait_until_healthy(server, url, timeout=180, hint="prefect server start failed")
        except BaseException:
            _stop(server)
            raise
    try:
        yield {"PREFECT_API_URL": url, "PREFECT_UI_URL": ""}
    finally:
        _stop(server)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process started in a session of its own, and what it started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def first_games(path: Path, count: int, out: Path) -> Path:
    """The first `count` games of a real sample, as it has them, in the file `out`."""
    from bench.data import read_text

    text = read_text(need(path, "real Lichess games"))
    cut = -1
    for _ in range(count):
        cut = text.find("\n\n[Event ", cut + 1)
        if cut < 0:
            break
    out.write_text(text[: cut + 2] if cut >= 0 else text)
    return out


def file_hashes(folder: Path) -> dict[str, str]:
    """Every file below `folder` (by its path in it) and its sha256."""
    import hashlib

    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


#: Over-the-board collections (../shared/data/otb).
OTB = SHARED_DATA / "otb"


@pytest.fixture
def capablanca() -> Path:
    return need(OTB / "Capablanca.pgn", "the Capablanca collection (otb/)")


@pytest.fixture
def london() -> Path:
    return need(OTB / "London1851.pgn", "the London 1851 collection (otb/)")


@pytest.fixture
def games_2021() -> Path:
    return need(GAMES_2021, "real Lichess games (2021-10 sample)")


@pytest.fixture
def games_2013() -> Path:
    return need(GAMES_2013, "real Lichess games (2013-01 part 1)")


@pytest.fixture
def odd_cases() -> Path:
    return need(ODD_CASES, "real Lichess odd cases")


@pytest.fixture
def polyglot_book() -> Path:
    return need(POLYGLOT_BOOK, "a real Polyglot book (performance.bin)")


#: Stockfish's own records of whole games: .plain, and the chained .binpack its tool wrote.
STOCKFISH_DATA = SHARED_DATA / "stockfish"


@pytest.fixture(scope="module")
def plain_fixture() -> Path:
    return need(STOCKFISH_DATA / "games-eval.plain", "Stockfish .plain fixture (games-eval.plain)")


@pytest.fixture(scope="module")
def binpack_fixture() -> Path:
    return need(
        STOCKFISH_DATA / "games-eval.binpack", "Stockfish .binpack fixture (games-eval.binpack)"
    )


@pytest.fixture
def syzygy_dir() -> Path:
    return need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables").parent


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One cache folder (CHESSPIPE_CACHE: the openings, downloads) for the module that asks
    for it (`pytestmark = pytest.mark.usefixtures("module_cache")`), away from the user's."""
    patch = pytest.MonkeyPatch()
    patch.setenv("CHESSPIPE_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def sample_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse of the bundled sample's first month, every game kept: read it, or copy it
    before changing it (it is shared by the whole session)."""
    from pipelines.games.game_filter import GameFilter
    from pipelines.ingest.run import ingest
    from pipelines.ingest.settings import IngestSettings
    from schemas.speed import Speed
    from tests.sample_tool import make_sample

    folder = tmp_path_factory.mktemp("sample-warehouse")
    month = make_sample.SAMPLE_MONTHS[0]
    every_game = IngestSettings(GameFilter(0, frozenset(Speed), allow_bots=True))
    ingest(str(make_sample.sample_path(month)), month, folder, every_game)
    return folder


#: The test files that take longest (seconds summed over their tests, measured with
#: `--durations`), run first: xdist's `--dist loadfile` hands files out in collection order, so
#: a long file collected last would run alone at the end while the other worker waits.
LONGEST_FILES = (
    "test_full_disk.py",
    "test_build_month_output.py",
    "test_flows.py",
    "test_object_storage.py",
    "test_monthly_build.py",
    "test_any_games.py",
    "test_games_packed.py",
    "test_search.py",
    "test_sql_chess_terms.py",
    "test_training_from_games.py",
    "test_stopping.py",
    "test_serve.py",
    "test_endgame_labels.py",
    "test_explorer_games.py",
    "test_notebooks.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the longest files first (LONGEST_FILES, in that order), the rest as collected."""
    rank = {name: place for place, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
