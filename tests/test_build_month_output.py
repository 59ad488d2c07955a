"""What `chesspipe build-month --verbose` writes on a terminal: a bar apart from log lines,
ending on the manifest's numbers (quiet by default: see test_flows.test_cli_and_flow_run);
and what a build or backfill failing on a user error writes: its one line."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.monthly.publish import published_paths
from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"
#: The start of a Prefect log record: `06:05:37.847 | INFO    | ...`.
LOG_RECORD = re.compile(r"\d\d:\d\d:\d\d\.\d{3} \| ")
COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def on_a_terminal(
    *args: str, env: dict[str, str] | None = None, status: int = 0
) -> tuple[str, str]:
    """Run `chesspipe ARGS` with its stderr on a pseudo-terminal; return (stdout, terminal).

    `env` replaces the environment (PYTHONPATH and COLUMNS are set in any case); the command
    must end with `status`.
    """
    master, slave = os.openpty()
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    env.pop("PREFECT_API_URL", None)
    env["COLUMNS"] = "250"  # Prefect's console keeps its records on one line each
    process = subprocess.Popen(
        [sys.executable, "-m", "pipelines", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    seen = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 600)
            assert ready, "no output for ten minutes"
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the command ended
                break
            if not chunk:
                break
            seen += chunk
        assert process.stdout is not None
        out = process.stdout.read().decode()
        assert process.wait(60) == status, seen.decode(errors="replace")
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    return out, COLOURS.sub("", seen.decode())


@pytest.mark.slow
def test_the_bar_stays_apart_from_log_lines_and_ends_on_the_manifest_numbers(
    tmp_path: Path,
) -> None:
    out, terminal = on_a_terminal(
        "build-month", str(SAMPLE), "--month", "2024-01", "--warehouse", str(tmp_path / "wh"),
        "--books", str(tmp_path / "books"), "--verbose",
    )  # fmt: skip
    manifest = json.loads(published_paths(tmp_path / "books", "2024-01")[1].read_text())
    read, kept = manifest["ingest"]["games_read"], manifest["ingest"]["games_kept"]
    assert json.loads(out)["games_read"] == read
    lines = terminal.replace("\r\n", "\n").split("\n")
    drawn = [line for line in lines if "\r[" in line]  # the bar, redrawn in place
    assert drawn, terminal
    # The bar never shares a line with a log record.
    assert not [line for line in drawn if LOG_RECORD.search(line)], terminal
    # --verbose shows Prefect's log lines; the last progress shown, drawn or logged, is the
    # manifest's.
    logged = [line for line in lines if LOG_RECORD.search(line)]
    assert any("Finished in state Completed" in line for line in logged), terminal
    last_drawn = drawn[-1].rsplit("\r", 1)[-1]
    last_logged = [line for line in logged if " games (" in line][-1]
    for shown in (last_drawn, last_logged):
        assert f"{read:,} games (" in shown and f"{kept:,} kept" in shown, shown


@pytest.mark.slow
def test_a_backfill_on_a_terminal_draws_one_bar_over_its_months(tmp_path: Path) -> None:
    """Months done of all, games and kept, an ETA while under way; it ends on the months'
    manifests' numbers (the months build on threads, at once)."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    for month in ("2024-01", "2024-02"):
        source = ROOT / "data" / "sample" / f"lichess_sample_{month}.pgn.zst"
        (dumps / f"{month}.pgn.zst").symlink_to(source)
    books = tmp_path / "books"
    out, terminal = on_a_terminal(
        "backfill", "--months", "2024-01..2024-02", "--source", str(dumps / "{month}.pgn.zst"),
        "--warehouse", str(tmp_path / "wh"), "--books", str(books), "--workers", "1",
    )  # fmt: skip
    summary = json.loads(out)
    assert [m["status"] for m in summary] == ["built", "built"], summary
    lines = terminal.replace("\r\n", "\n").split("\n")
    drawn = [part for line in lines for part in line.split("\r")[1:] if part]
    assert drawn, terminal
    assert all(re.search(r"\] [0-2] of 2 months", line) for line in drawn), terminal
    assert any("ETA " in line for line in drawn), terminal  # while months were under way
    # The bar fills as the months are done: full only once both are.
    assert all(line.startswith(f"[{'#' * 20}] 2 of") for line in drawn if "#" * 20 in line), drawn
    read = kept = 0
    for month in ("2024-01", "2024-02"):
        manifest = json.loads(published_paths(books, month)[1].read_text())
        read += manifest["ingest"]["games_read"]
        kept += manifest["ingest"]["games_kept"]
    last = drawn[-1].replace("\x1b[K", "")
    assert last.startswith(f"[{'#' * 20}] 2 of 2 months "), last
    assert f"{read:,} games (" in last and last.endswith(f"{kept:,} kept"), last


@pytest.mark.slow
def test_no_prefect_telemetry_notice_on_a_terminal(tmp_path: Path) -> None:
    """Prefect's client shows a first-run usage-data notice on a terminal (outside CI); the
    command's own server is nobody else's: no notice, only the command's one line."""
    from_ci = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "CI_NAME", "DO_NOT_TRACK")
    env = {k: v for k, v in os.environ.items() if k not in from_ci}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # a first run
    (tmp_path / "not-a-game.txt").write_text("no game here\n")  # fails in the flow run
    _, terminal = on_a_terminal(
        "build-month", str(tmp_path / "not-a-game.txt"), "--month", "2024-01",
        "--warehouse", str(tmp_path / "wh"), "--books", str(tmp_path / "books"),
        env=env, status=1,
    )  # fmt: skip
    lines = [line for line in terminal.replace("\r\n", "\n").split("\n") if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("chesspipe: error: "), terminal


@pytest.mark.slow
def test_a_book_no_move_enters_is_never_published(
    tmp_path: Path, prefect_api: dict[str, str]
) -> None:
    """Refused, naming the settings by their flags; accepted with --allow-empty, a build ends
    without a book (never a 0-byte one), with a warning naming the settings."""
    from tests.conftest import run_cli

    books = tmp_path / "books"
    args = (
        "build-month", str(SAMPLE), "--month", "2024-01", "--warehouse", str(tmp_path / "wh"),
        "--books", str(books), "--min-games", "1000000", "--min-score", "0.25",
    )  # fmt: skip
    refused = run_cli(*args, check=False, env=prefect_api)
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert refused.stderr.splitlines() == [
        "chesspipe: error: no move of 2024-01 passes the book settings (--min-games 1000000, "
        "--min-score 0.25): the book would be empty; nothing written "
        "(--allow-empty accepts it: no book is published then)"
    ]
    assert list(books.glob("*.bin")) == list(books.glob("*.json")) == []
    proc = run_cli(*args, "--allow-empty", env=prefect_api)
    summary = json.loads(proc.stdout)
    assert summary["status"] == "empty" and summary["book"] is None, summary
    assert summary["entries"] == 0 and summary["games_kept"] > 0, summary
    assert list(books.glob("*.bin")) == list(books.glob("*.json")) == []
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, proc.stderr
    assert warnings[0].startswith("chesspipe: warning: no move of 2024-01 passes"), warnings
    assert "--min-games 1000000" in warnings[0] and "--min-score 0.25" in warnings[0]
    assert warnings[0].endswith("no book published (--allow-empty)"), warnings


def user_error_lines(api: dict[str, str], *args: str) -> list[str]:
    """Run `chesspipe ARGS` against the Prefect server `api` (the prefect_api fixture), which
    must fail on a user error; return its stderr's lines."""
    from tests.conftest import run_cli

    proc = run_cli(*args, check=False, env={"COLUMNS": "250", **api})  # a record a line
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    return proc.stderr.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("verbose", [False, True])
@pytest.mark.parametrize("source", ["missing.pgn", "not-a-game.txt", "nothing-kept.pgn.zst"])
def test_a_build_failing_on_its_source_says_so_in_one_line(
    tmp_path: Path, source: str, verbose: bool, prefect_api: dict[str, str]
) -> None:
    """Prefect's `Finished in state Failed(...)` of the task and flow runs stays off the
    terminal: the command's own line says it (a missing file, said before any flow run
    starts; a file without a game, a file of which the default filter keeps no game)."""
    if source.endswith(".txt"):
        (tmp_path / source).write_text("no game here\n")
    if source.startswith("nothing-kept"):
        from tests.conftest import GAMES_2013, need

        (tmp_path / source).symlink_to(need(GAMES_2013, "real Lichess games (2013-01)"))
    lines = user_error_lines(
        prefect_api, "build-month", str(tmp_path / source), "--month", "2024-01",
        "--warehouse", str(tmp_path / "wh"), "--books", str(tmp_path / "books"),
        *(["--verbose"] if verbose else []),
    )  # fmt: skip
    *logged, last = lines
    assert last.startswith("chesspipe: error: ") and source in last, lines
    if source == "missing.pgn":  # said at once: no flow run, no Prefect line
        assert logged == [], lines
    elif verbose:  # Prefect's lines of the runs up to the failure, none of it
        assert logged and all(LOG_RECORD.match(line) for line in logged), lines
        assert not [line for line in logged if "Failed" in line or "| ERROR" in line], lines
    else:
        assert logged == []


@pytest.mark.slow
def test_a_backfill_whose_months_fail_says_so_in_one_line(
    tmp_path: Path, prefect_api: dict[str, str]
) -> None:
    lines = user_error_lines(
        prefect_api,
        "backfill", "--months", "2024-01..2024-02", "--source", str(tmp_path / "{month}.pgn"),
        "--warehouse", str(tmp_path / "wh"), "--books", str(tmp_path / "books"),
    )  # fmt: skip
    assert len(lines) == 1, lines
    assert lines[0].startswith("chesspipe: error: backfill: 2 of 2 months failed: 2024-01 (")


@pytest.mark.slow
@pytest.mark.parametrize("ui_url", [None, "http://prefect.example/ui"])
def test_verbose_points_at_a_prefect_ui_only_where_one_is_served(
    tmp_path: Path, ui_url: str | None
) -> None:
    """The command's own Prefect server serves no UI: no `View at` line points at it; a
    configured PREFECT_UI_URL is shown as Prefect shows it."""
    from tests.conftest import run_cli

    (tmp_path / "not-a-game.txt").write_text("no game here\n")  # fails in the flow run
    proc = run_cli(
        "build-month", str(tmp_path / "not-a-game.txt"), "--month", "2024-01",
        "--warehouse", str(tmp_path / "wh"), "--books", str(tmp_path / "books"), "--verbose",
        check=False, env={"COLUMNS": "250", **({"PREFECT_UI_URL": ui_url} if ui_url else {})},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Beginning flow run" in proc.stderr  # the flow run's lines are shown
    views = [line for line in proc.stderr.splitlines() if "View at" in line]
    if ui_url is None:
        assert views == [], proc.stderr
    else:
        assert len(views) == 1 and f"View at {ui_url}/runs/flow-run/" in views[0], proc.stderr


#: Runs `chesspipe ARGS` with the build's book step failing as on a full disk (ENOSPC).
_FULL_DISK = (
    "import errno, sys\n"
    "import pipelines.monthly.build as build\n"
    "def full(*args):\n"
    "    raise OSError(errno.ENOSPC, 'No space left on device')\n"
    "build.book_step = full\n"
    "from pipelines.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KB tmpfs (root only: skipped elsewhere, except on CI, where the tests run as root)."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("a full disk is a tmpfs mounted as root")
        pytest.skip("mounting a tmpfs needs root")
    folder = tmp_path / "tiny"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [True, False])
@pytest.mark.parametrize(
    "failure", ["books is a file", "books under a device", "warehouse under a file", "ENOSPC"]
)
def test_a_build_failing_on_the_os_says_so_in_one_line(
    tmp_path: Path, failure: str, quiet: bool, prefect_api: dict[str, str]
) -> None:
    """What the OS says of a path (raised inside the flow's tasks) is one line, as elsewhere:
    none of Prefect's logged tracebacks of the task and flow runs."""
    (tmp_path / "file").write_text("a file\n")
    warehouse, books = str(tmp_path / "wh"), str(tmp_path / "books")
    prefix: tuple[str, ...] = ()
    expected = {
        "books is a file": f"{tmp_path / 'file'}: exists and is not a folder",
        "books under a device": "/dev/null/books: Not a directory",
        "warehouse under a file": f"{tmp_path / 'file'}/wh/.locks: Not a directory",
        "ENOSPC": "No space left on device",
    }[failure]
    if failure == "books is a file":
        books = str(tmp_path / "file")
    elif failure == "books under a device":
        books = "/dev/null/books"
    elif failure == "warehouse under a file":
        warehouse = str(tmp_path / "file" / "wh")
    else:
        prefix = ("-c", _FULL_DISK)
    lines = os_error_lines(
        prefect_api,
        *prefix, "build-month", str(SAMPLE), "--month", "2024-01", "--warehouse", warehouse,
        "--books", books, *(["--quiet"] if quiet else []),
    )  # fmt: skip
    assert lines == [f"chesspipe: error: {expected}"]


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [True, False])
def test_a_build_on_a_full_disk_says_so_in_one_line(
    small_tmpfs: Path, quiet: bool, prefect_api: dict[str, str]
) -> None:
    lines = os_error_lines(
        prefect_api, "build-month", str(SAMPLE), "--month", "2024-01", "--warehouse",
        str(small_tmpfs / "wh"), "--books", str(small_tmpfs / "books"),
        *(["--quiet"] if quiet else []),
    )  # fmt: skip
    # The disk fills while the month is counted: the line names the warehouse given.
    assert lines == [f"chesspipe: error: {small_tmpfs / 'wh'}: No space left on device"]


def os_error_lines(api: dict[str, str], *args: str) -> list[str]:
    """Run `python -m pipelines ARGS` (or `python -c SCRIPT ARGS`) against the Prefect server
    `api`, which must fail in one line; return its stderr's lines."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.update(api)
    env["COLUMNS"] = "250"
    command = [sys.executable, *(args[:2] if args[0] == "-c" else ("-m", "pipelines"))]
    rest = args[2:] if args[0] == "-c" else args
    proc = subprocess.run(
        [*command, *rest], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    return proc.stderr.splitlines()
