"""Running this checkout's UCI engine as a real process, for the engine tests."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import chess.engine

ROOT = Path(__file__).resolve().parent.parent
ENGINE_COMMAND = [sys.executable, "-m", "engine"]


def engine_env() -> dict[str, str]:
    """Environment that makes the subprocess import this checkout's code."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextmanager
def uci_engine(**options: object) -> Iterator[chess.engine.SimpleEngine]:
    """Start the engine under python-chess's UCI client, configured with `options`."""
    engine = chess.engine.SimpleEngine.popen_uci(ENGINE_COMMAND, env=engine_env(), cwd=ROOT)
    try:
        if options:
            engine.configure(options)  # type: ignore[arg-type]
        yield engine
    finally:
        engine.quit()


class RawEngine:
    """The engine process spoken to line by line, for protocol details a client hides."""

    def __init__(self) -> None:
        self.errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by raw_engine()
        self.proc = subprocess.Popen(
            ENGINE_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            env=engine_env(),
            cwd=ROOT,
            bufsize=1,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("<eof>")

    def send(self, *lines: str) -> None:
        assert self.proc.stdin is not None
        for line in lines:
            self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def until(self, prefix: str, timeout: float = 60) -> list[str]:
        """Return the lines read up to and including the first starting with `prefix`."""
        seen: list[str] = []
        while True:
            line = self.lines.get(timeout=timeout)
            if line == "<eof>":
                raise AssertionError(f"engine exited before {prefix!r}; saw {seen}")
            seen.append(line)
            if line.startswith(prefix):
                return seen

    def ask(self, *lines: str) -> list[str]:
        """Send lines, then `isready`; return everything answered before `readyok`."""
        self.send(*lines, "isready")
        return self.until("readyok")[:-1]

    def close(self) -> int:
        self.send("quit")
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def stderr(self) -> str:
        """Everything the engine wrote to stderr so far."""
        self.errors.seek(0)
        return self.errors.read()


@contextmanager
def raw_engine() -> Iterator[RawEngine]:
    """Start the engine process for line-by-line talk; check it exits cleanly on quit."""
    engine = RawEngine()
    try:
        yield engine
    finally:
        status = engine.close()
        errors = engine.stderr()
        engine.errors.close()
    assert status == 0
    assert errors == "", errors
