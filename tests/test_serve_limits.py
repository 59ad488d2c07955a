"""`chesspipe serve` against hostile requests, on loopback with a real HTTP client.

- Numbers, months and moves are read strictly: ASCII digits of bounded length, UCI moves only;
  anything else is a 400 with a one-line reason (never a 500, never accepted).
- `play` is capped; the answer cache is keyed on the position reached and bounded in bytes.
- Long replays run off the event loop: two clients sending huge `play` lists do not stall an
  ordinary request.
- Too long request lines and headers answer 414 and 431 (not a TCP reset); half-sent headers
  are dropped after the head timeout; connections over the limit are refused at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.speed import Speed
from tests.conftest import GAMES_2013, ROOT, need
from tests.serving import free_port

#: A legal line of any length: the knights go out and back.
SHUFFLE = ("g1f3", "g8f6", "f3g1", "f6g8")


def shuffle(plies: int) -> str:
    return ",".join(SHUFFLE[i % 4] for i in range(plies))


#: One openings cache for this module, away from the user's (conftest.module_cache).
pytestmark = pytest.mark.usefixtures("module_cache")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("warehouse")
    need(GAMES_2013, "real Lichess games (2013-01)")
    rules = GameFilter(min_rating=1600, speeds=frozenset(Speed))
    ingest(
        str(GAMES_2013),
        "2013-01",
        folder,
        IngestSettings(rules, plies=20),
        runtime=Runtime(workers=1),
    )
    return folder


def wait_for(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            assert process is None or process.poll() is None, "the server stopped"
            assert time.monotonic() < deadline, "no server"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def served(warehouse: Path) -> Iterator[str]:
    """`chesspipe serve` in its own process, with its defaults; its base URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pipelines", "serve", "--warehouse", str(warehouse),
               "--port", str(port)]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        wait_for(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(30)


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, json.loads(body)
        except ValueError:
            return exc.code, body.decode()


def exchange(port: int, request: bytes, timeout: float = 10.0) -> tuple[int | None, bytes]:
    """Send raw bytes, read until the server closes: (status or None, response). A reset
    raises (ConnectionResetError, BrokenPipeError)."""
    with socket.create_connection(("127.0.0.1", port), timeout) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    data = b"".join(chunks)
    if not data.startswith(b"HTTP/1.1 "):
        return None, data
    return int(data.split(b" ", 2)[1]), data


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


# --- strict parameters -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("moves=\u00b2", "moves"),
        ("ratings=\u00b2", "rating"),
        ("since=2024-\u00b2", "since"),
        ("moves=" + "9" * 5000, "moves"),
        ("ratings=" + "1" * 5000, "rating"),
        ("since=2013-01ZZZ", "since"),
        ("until=2013-01-15", "until"),
        ("since=\u00b2\u00b2\u00b2\u00b2-01", "since"),
        ("play=0000", "move"),
        ("play=e2e4,0000", "move"),
        ("play=E2E4", "move"),
        ("ratings=\u0661\u0666\u0660\u0660", "rating"),
        ("ratings=\uff11\uff16\uff10\uff10", "rating"),
        ("moves=+5", "moves"),
    ],
)
def test_strict_parameters(served: str, query: str, words: str) -> None:
    status, body = get(f"{served}/lichess?{urllib.parse.quote(query, safe='=,')}")
    assert status == 400, (query, body)
    assert isinstance(body, dict) and words in body["error"], (query, body)
    assert "\n" not in body["error"] and "Traceback" not in body["error"]


@pytest.mark.slow
def test_strict_parameters_still_take_what_lichess_takes(served: str) -> None:
    accepted = (
        "moves=0",
        "moves=12",
        "ratings=1600,1800",
        "ratings=0",
        "since=2013-01",
        "until=2013-12&since=2013-01",
        "play=e2e4,e7e5",
        "play=",
        "ratings=2900",
    )
    for query in accepted:
        status, body = get(f"{served}/lichess?{query}")
        assert status == 200, (query, body)


def test_page_helpers_read_play_strictly(served: str) -> None:
    for path in ("/board.svg", "/position"):
        status, body = get(f"{served}{path}?play=0000")
        assert status == 400 and "move" in body["error"], (path, body)


# --- play cap and the cache ------------------------------------------------------------------


def test_play_is_capped(served: str) -> None:
    from pipelines.serve.params import MAX_PLAY

    status, body = get(f"{served}/lichess?play={shuffle(MAX_PLAY)}")
    assert status == 200, body
    for path in ("/lichess", "/board.svg", "/position"):
        status, body = get(f"{served}{path}?play={shuffle(MAX_PLAY + 1)}")
        assert status == 400 and str(MAX_PLAY) in body["error"], (path, body)


def test_cache_is_keyed_on_the_position_and_bounded_in_bytes(warehouse: Path) -> None:
    """Many `play` lists reaching one position share its answer; the cache holds at most its
    bytes, however many distinct positions are asked."""
    from pipelines.serve.explorer import Explorer

    explorer = Explorer(warehouse, cache_bytes=40_000)

    def without_opening(answer: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in answer.items() if k != "opening"}

    first = without_opening(explorer.lichess({"play": "e2e4"}))
    for plies in range(4, 200, 4):
        answer = explorer.lichess({"play": f"{shuffle(plies)},e2e4"})
        assert without_opening(answer) == first
    assert len(explorer.cache) <= 4  # one position, a few opening names on the way
    line = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]
    for n in range(1, 400):
        explorer.lichess({"play": ",".join(line[: n % 6 + 1]), "moves": str(n)})
        assert explorer.cache.bytes <= 40_000
    assert len(explorer.cache) > 1
    none = Explorer(warehouse, cache_bytes=0)
    none.lichess({"play": "e2e4"})
    assert len(none.cache) == 0


# --- the event loop is not stalled -----------------------------------------------------------


def test_huge_play_lists_do_not_stall_others(served: str) -> None:
    """Two clients sending distinct 10,000-ply `play` lists (50 KB, under the server's
    default bound on a request's head before this was guarded), and one sending long lines
    within the cap; an ordinary request stays fast."""
    port = port_of(served)
    stop = threading.Event()

    def hostile(plies: int) -> None:
        sent = 0
        while not stop.is_set():
            sent += 1
            line = f"/lichess?history=true&play={shuffle(plies - 4 * (sent % 500))}"
            request = f"GET {line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            try:
                with socket.create_connection(("127.0.0.1", port), 30) as sock:
                    sock.sendall(request.encode())
                    while sock.recv(65536):
                        pass
            except OSError:
                pass

    clients = [threading.Thread(target=hostile, args=(n,)) for n in (10_000, 10_000, 200)]
    get(f"{served}/lichess?play=e2e4")
    for client in clients:
        client.start()
    try:
        times = []
        for _ in range(30):
            start = time.perf_counter()
            status, _ = get(f"{served}/lichess?play=e2e4")
            times.append(time.perf_counter() - start)
            assert status == 200
    finally:
        stop.set()
        for client in clients:
            client.join(60)
    assert statistics.median(times) < 0.05, times


# --- the HTTP guard --------------------------------------------------------------------------


@pytest.mark.slow
def test_refusals_wait_so_that_clients_sending_them_do_not_take_the_server(served: str) -> None:
    """Every refusal (the application's 400, the 414 of a head read whole, the 414 and 431 of
    a head refused while it arrives) is sent `REFUSAL_DELAY` late; so four clients sending
    refused requests back to back get at most one refusal each per delay (before, thousands a
    second, which took an ordinary request's p95 from 1.7 to 17 ms), while ordinary requests
    are answered meanwhile."""
    from pipelines.serve.http_guard import REFUSAL_DELAY

    port = port_of(served)
    filler = "".join(f"X-Filler-{i}: {'a' * 1000}\r\n" for i in range(130))
    refused = [  # (status, target, headers)
        (400, "/lichess?moves=%C2%B2&play=e2e4", ""),
        (414, f"/lichess?play={shuffle(2_000)}", ""),  # 10 KB: read whole, then refused
        (414, f"/lichess?play={shuffle(26_000)}", ""),  # 130 KB: refused as it arrives
        (431, "/lichess", filler),
    ]
    requests = [f"GET {t} HTTP/1.1\r\nHost: x\r\n{h}\r\n".encode() for _, t, h in refused]
    for (expected, _, _), request in zip(refused, requests, strict=True):
        start = time.perf_counter()
        status, data = exchange(port, request)
        assert status == expected, data[:200]
        assert time.perf_counter() - start >= REFUSAL_DELAY, data[:200]

    stop = threading.Event()
    answered = [0] * 4

    def hostile(k: int) -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                exchange(port, requests[(k + answered[k]) % len(requests)])
            answered[k] += 1

    clients = [threading.Thread(target=hostile, args=(k,)) for k in range(4)]
    start = time.perf_counter()
    for client in clients:
        client.start()
    try:
        while time.perf_counter() - start < 2.0:
            assert get(f"{served}/lichess?play=e2e4")[0] == 200
    finally:
        stop.set()
        for client in clients:
            client.join(60)
    elapsed = time.perf_counter() - start
    assert sum(answered) <= len(clients) * (elapsed / REFUSAL_DELAY + 1), answered


def test_long_request_lines_and_headers(served: str) -> None:
    port = port_of(served)
    url = "/lichess?play=" + "e2e4," * 26_000
    status, data = exchange(port, f"GET {url} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert status == 414, data[:200]
    assert b"request line" in data
    headers = "".join(f"X-Filler-{i}: {'a' * 1000}\r\n" for i in range(130))
    status, data = exchange(port, f"GET /lichess HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
    assert status == 431, data[:200]
    # sent in pieces, so that the server sees the head grow past its bound
    with socket.create_connection(("127.0.0.1", port), 10) as sock:
        sock.sendall(f"GET {url[:4000]}".encode())
        time.sleep(0.2)
        sock.sendall(f"{url[4000:]} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 414"), answer[:200]
    assert get(f"{served}/lichess?play=e2e4")[0] == 200


@pytest.fixture
def guarded(warehouse: Path) -> Iterator[tuple[int, Any]]:
    """A server in a thread with short timeouts and a small connection limit."""
    import uvicorn

    from pipelines.serve.app import ServeSettings, open_app
    from pipelines.serve.http_guard import server_config

    port = free_port()
    config = server_config(
        open_app(ServeSettings(str(warehouse))), host="127.0.0.1", port=port,
        head_timeout=1.0, keep_alive=1, connections=8,
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(port)
    yield port, config
    server.should_exit = True
    thread.join(10)


@pytest.mark.slow
def test_half_sent_headers_are_dropped(guarded: tuple[int, Any]) -> None:
    port, _ = guarded
    held = []
    for _ in range(5):
        sock = socket.create_connection(("127.0.0.1", port), 10)
        sock.sendall(b"GET /lichess HTTP/1.1\r\nHost: x\r\n")
        held.append(sock)
    dribbling = socket.create_connection(("127.0.0.1", port), 10)
    start = time.monotonic()
    try:
        for sock in held:
            answer = sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 408") or answer == b"", answer
            assert time.monotonic() - start < 5
        # one byte at a time does not hold it longer
        dribbling.sendall(b"GET /lichess HTTP/1.1\r\n")
        dribbling.settimeout(0.1)
        closed = False
        for _ in range(40):
            try:
                dribbling.sendall(b"X")
                answer = dribbling.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
            assert answer.startswith(b"HTTP/1.1 408") or answer == b"", answer
            closed = True
            break
        assert closed and time.monotonic() - start < 6
    finally:
        for sock in [*held, dribbling]:
            sock.close()


@pytest.mark.slow
def test_connection_limit(guarded: tuple[int, Any]) -> None:
    """Over the limit, a request is refused at once (503); once the held connections are
    dropped (head timeout), it is served."""
    from pipelines.serve.http_guard import LINGER

    port, _ = guarded
    held = [socket.create_connection(("127.0.0.1", port), 10) for _ in range(8)]
    try:
        for sock in held:
            sock.sendall(b"GET /lichess HTTP/1.1\r\n")
        time.sleep(0.2)
        start = time.monotonic()
        status, _ = exchange(port, b"GET /lichess HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert status == 503 and time.monotonic() - start < 2
        time.sleep(1 + LINGER + 0.5)  # the head timeout, then the refusal's linger
        status, data = exchange(
            port, b"GET /lichess?play=e2e4 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert status == 200, data[:200]
    finally:
        for sock in held:
            sock.close()


@pytest.mark.slow
def test_keep_alive_timeout(guarded: tuple[int, Any]) -> None:
    port, _ = guarded
    with socket.create_connection(("127.0.0.1", port), 10) as sock:
        sock.sendall(b"GET /lichess?play=e2e4 HTTP/1.1\r\nHost: x\r\n\r\n")
        start = time.monotonic()
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 200") and time.monotonic() - start < 4
