"""Downloads against a real misbehaving HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.errors import ChesspipeError
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Download
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.sources.checksums import checksums_url, parse_checksums, published_sha256
from pipelines.sources.download import cache_paths, open_url
from pipelines.sources.http import HttpStream, remote_identity
from pipelines.warehouse.layout import manifest_path, partition_file
from tests.loopback_http import LoopbackServer

FAST = {"backoff": 0.01, "timeout": 5.0}
NAME = "lichess_db_standard_rated_2021-10.pgn.zst"


def read_all(stream: HttpStream, size: int = 10_000) -> bytes:
    parts = []
    while block := stream.read(size):
        parts.append(block)
    return b"".join(parts)


def ranges(server: LoopbackServer, path: str) -> list[str | None]:
    return [r for method, p, r in server.requests if p == path and method == "GET"]


def test_a_remote_identity_moves_no_byte_of_the_file() -> None:
    """A month's identity (size, ETag) is asked with HEAD: a GET closed at once would still
    move what the connection buffers take. A server that refuses HEAD is asked with a GET."""
    data = bytes(range(256)) * 8192
    with LoopbackServer() as server:
        url = server.add("/month.pgn.zst", data, etag='"v1"')
        assert remote_identity(url, timeout=5.0) == (len(data), '"v1"')
        assert server.requests == [("HEAD", "/month.pgn.zst", None)]
        assert server.bytes_sent == 0
        refused = server.add("/no-head.pgn.zst", data, errors=[405])
        assert remote_identity(refused, timeout=5.0) == (len(data), None)
        assert [m for m, p, _ in server.requests if p == "/no-head.pgn.zst"] == ["HEAD", "GET"]
        with pytest.raises(ChesspipeError, match="HTTP 404"):
            remote_identity(server.base + "/missing.pgn.zst", timeout=5.0)


def test_plain_download_is_exact(games_2021: Path) -> None:
    data = games_2021.read_bytes()
    with LoopbackServer() as server:
        url = server.add("/a.zst", data)
        stream = HttpStream(url, **FAST)
        assert stream.size == len(data)
        assert read_all(stream) == data
        assert ranges(server, "/a.zst") == [None]


def test_dropped_connections_resume_with_range(games_2021: Path) -> None:
    data = games_2021.read_bytes()
    drops = [1000, 150_000, 150_001, 400_000]
    with LoopbackServer() as server:
        url = server.add("/a.zst", data, drops=list(drops), chunk=4096)
        stream = HttpStream(url, **FAST)
        assert read_all(stream) == data
        assert ranges(server, "/a.zst") == [None] + [f"bytes={d}-" for d in drops]
        assert stream.reconnects == len(drops)


def test_server_ignoring_range_is_skipped_forward(games_2021: Path) -> None:
    data = games_2021.read_bytes()
    with LoopbackServer() as server:
        url = server.add("/a.zst", data, drops=[200_000], ignore_range=True)
        assert read_all(HttpStream(url, **FAST)) == data
        assert ranges(server, "/a.zst") == [None, "bytes=200000-"]


def test_a_file_changed_during_the_download_fails(games_2021: Path) -> None:
    data = games_2021.read_bytes()
    with LoopbackServer() as server:
        grown = server.add("/a.zst", data, drops=[5000], after_drop=data + b"more")
        with pytest.raises(ChesspipeError, match="changed on the server"):
            read_all(HttpStream(grown, **FAST))
        # A server without Range support answers the resume with the whole file: a new ETag
        # means new content.
        retagged = server.add("/b.zst", data, drops=[5000], ignore_range=True, etag='"v1"')
        stream = HttpStream(retagged, **FAST)
        server.files["/b.zst"].etag = '"v2"'
        with pytest.raises(ChesspipeError, match="changed on the server during the download"):
            read_all(stream)


def test_5xx_is_retried_then_served(games_2021: Path) -> None:
    data = games_2021.read_bytes()
    with LoopbackServer() as server:
        url = server.add("/a.zst", data, errors=[500, 503, 502])
        stream = HttpStream(url, retries=3, **FAST)
        assert read_all(stream) == data
        assert stream.reconnects == 3


def test_persistent_5xx_gives_up_with_one_line() -> None:
    with LoopbackServer() as server:
        url = server.add("/a.zst", b"x" * 100, errors=[500] * 10)
        with pytest.raises(ChesspipeError) as info:
            HttpStream(url, retries=2, **FAST)
        message = str(info.value)
        assert "giving up after 2 retries" in message and "HTTP 500" in message
        assert "\n" not in message
        assert len(ranges(server, "/a.zst")) == 3


def test_404_fails_at_once() -> None:
    with LoopbackServer() as server:
        with pytest.raises(ChesspipeError, match=r"/missing.zst: HTTP 404"):
            HttpStream(server.base + "/missing.zst", retries=5, **FAST)
        assert len(server.requests) == 1


def test_slow_and_stalling_server(games_2021: Path) -> None:
    data = games_2021.read_bytes()[:60_000]
    with LoopbackServer() as server:
        slow = server.add("/slow.zst", data, chunk=2048, delay=0.005)
        assert read_all(HttpStream(slow, **FAST)) == data
        # Pauses longer than the read timeout after every chunk: each stall is a timeout,
        # each reconnect resumes, and the bytes still come out whole.
        stalls = server.add("/stall.zst", data, chunk=20_000, delay=1.0)
        stream = HttpStream(stalls, retries=2, backoff=0.01, timeout=0.3)
        assert read_all(stream, 100_000) == data
        assert stream.reconnects >= 2
        assert ranges(server, "/stall.zst")[1] == "bytes=20000-"


def test_checksum_list() -> None:
    text = f"{'a' * 64}  x.pgn.zst\n{'B' * 64} *dir/y.pgn.zst\nnot a line\n"
    assert parse_checksums(text, skip_bad_lines=True) == {
        "x.pgn.zst": "a" * 64,
        "y.pgn.zst": "b" * 64,
    }
    with pytest.raises(ChesspipeError, match="checksum list line 3 is not .*'not a line'"):
        parse_checksums(text)
    assert parse_checksums(f"# made by sha256sum\n\n{'c' * 64}  z.pgn.zst\n") == {
        "z.pgn.zst": "c" * 64
    }
    url = "https://database.lichess.org/standard/lichess_db_standard_rated_2013-01.pgn.zst"
    assert checksums_url(url) == "https://database.lichess.org/standard/sha256sums.txt"
    with LoopbackServer() as server:
        url = server.add_dump("/standard", NAME, b"abc")
        assert published_sha256(url, **FAST) == hashlib.sha256(b"abc").hexdigest()
        # The dump's own line is enough: a stray line elsewhere in the list does not matter.
        server.add("/standard/sha256sums.txt", b"a stray line\n" + server.files[
            "/standard/sha256sums.txt"].data)  # fmt: skip
        assert published_sha256(url, **FAST) == hashlib.sha256(b"abc").hexdigest()
        with pytest.raises(ChesspipeError, match="is not listed in"):
            published_sha256(server.base + "/standard/other.pgn.zst", **FAST)
        with pytest.raises(ChesspipeError, match="sha256sums.txt answered HTTP 404"):
            published_sha256(server.base + "/nowhere/a.pgn.zst", **FAST)


@pytest.mark.slow
def test_ingest_verifies_before_publishing(tmp_path: Path, games_2021: Path) -> None:
    data = games_2021.read_bytes()
    rules = GameFilter(min_rating=0)
    reference = ingest(str(games_2021), "2021-10", tmp_path / "ref", IngestSettings(rules))
    with LoopbackServer() as server:
        good = server.add_dump("/good", NAME, data, drops=[123_456])
        bad = server.add_dump("/bad", NAME, data, digest="f" * 64)
        digest = published_sha256(good, **FAST)
        manifest = ingest(
            good,
            "2021-10",
            tmp_path / "wh",
            IngestSettings(rules),
            download=Download(expected_sha256=digest, http_options=FAST),
        )
        assert manifest.source_sha256_verified is True
        assert manifest.source_sha256 == reference.source_sha256
        assert manifest.games_kept == reference.games_kept
        assert pq.read_table(partition_file(tmp_path / "wh", "2021-10")).equals(
            pq.read_table(partition_file(tmp_path / "ref", "2021-10"))
        )
        with pytest.raises(ChesspipeError, match="sha256 mismatch.*nothing published"):
            ingest(
                bad,
                "2021-10",
                tmp_path / "bad",
                IngestSettings(rules),
                download=Download(expected_sha256=published_sha256(bad, **FAST), http_options=FAST),
            )
    assert not partition_file(tmp_path / "bad", "2021-10").exists()
    assert not manifest_path(tmp_path / "bad", "2021-10").exists()
    visible = [
        p
        for p in (tmp_path / "bad").rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(tmp_path).parts)
    ]
    assert visible == []


def test_cache_resumes_a_part_and_reuses_a_complete_file(tmp_path: Path, games_2021: Path) -> None:
    data = games_2021.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    cache = tmp_path / "cache"
    with LoopbackServer() as server:
        url = server.add_dump("/standard", NAME, data, chunk=8192)
        final, part = cache_paths(cache, url)
        # A run that stops after 100 kB (killed): the part stays, nothing final.
        with open_url(url, cache=cache, expected_sha256=digest, **FAST) as (stream, size):
            assert size == len(data)
            got = stream.read(100_000)
        assert not final.exists() and part.stat().st_size == len(got) == 100_000
        # The next run reads the part, then asks only for the rest.
        with open_url(url, cache=cache, expected_sha256=digest, **FAST) as (stream, size):
            assert stream.read() == data
        assert ranges(server, f"/standard/{NAME}")[-1] == "bytes=100000-"
        assert final.read_bytes() == data and not part.exists()
        # A complete copy is read without asking the server.
        before = len(server.requests)
        with open_url(url, cache=cache, expected_sha256=digest, **FAST) as (stream, size):
            assert stream.read() == data and size == len(data)
        assert len(server.requests) == before
        # A part that already holds every byte (killed before its rename): the server answers
        # 416 to the Range past the end, and the part is verified and renamed.
        final.rename(part)
        with open_url(url, cache=cache, expected_sha256=digest, **FAST) as (stream, size):
            assert stream.read() == data and size == len(data)
        assert ranges(server, f"/standard/{NAME}")[-1] == f"bytes={len(data)}-"
        assert final.read_bytes() == data and not part.exists()
        # A damaged cached copy is caught at its end and deleted.
        final.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
        with (
            pytest.raises(
                ChesspipeError,
                match=r"does not match its published sha256 \(got [0-9a-f]+\); deleted it",
            ),
            open_url(url, cache=cache, expected_sha256=digest, **FAST) as (stream, _),
        ):
            stream.read()
        assert not final.exists()
        # A download that does not match its checksum leaves neither a file nor a part.
        bad = server.add("/standard/b.pgn.zst", data)
        bad_final, bad_part = cache_paths(cache, bad)
        with (
            pytest.raises(ChesspipeError, match="sha256 mismatch"),
            open_url(bad, cache=cache, expected_sha256="0" * 64, **FAST) as (stream, _),
        ):
            stream.read()
        assert not bad_final.exists() and not bad_part.exists()


def test_retries_say_what_they_try_as_they_try(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    with LoopbackServer() as server:
        url = server.add("/a.zst", b"x" * 100, errors=[503, 502])
        with caplog.at_level(logging.INFO, logger="pipelines.sources.http"):
            stream = HttpStream(url, retries=5, **FAST)
            assert read_all(stream) == b"x" * 100
    said = [record.getMessage() for record in caplog.records]
    assert said == [
        f"connecting to {url}",
        f"{url}: HTTP 503 Service Unavailable; retry 1 of 5 in 0.01 s",
        f"connecting to {url}",
        f"{url}: HTTP 502 Bad Gateway; retry 2 of 5 in 0.02 s",
        f"connecting to {url}",
    ]


@pytest.mark.slow
def test_the_command_says_its_retries_and_fails_at_once_on_a_host_it_cannot_resolve(
    tmp_path: Path,
) -> None:
    import time

    from tests.conftest import ROOT, run_cli

    sample = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"
    with LoopbackServer() as server:
        url = server.add("/sample.pgn.zst", sample.read_bytes(), errors=[503])
        args = ("--month", "2024-01", "--warehouse", str(tmp_path), "--progress")
        proc = run_cli("ingest", url, *args)
    lines = proc.stderr.splitlines()
    assert lines[:3] == [
        f"chesspipe: connecting to {url}",
        f"chesspipe: {url}: HTTP 503 Service Unavailable; retry 1 of 5 in 1 s",
        f"chesspipe: connecting to {url}",
    ], proc.stderr
    # No network, or no such host (.invalid is never a host's name: RFC 2606): one line, at once.
    nowhere = "http://chesspipe.invalid/lichess.pgn.zst"
    started = time.monotonic()
    proc = run_cli("ingest", nowhere, *args, check=False)
    assert time.monotonic() - started < 10  # (31 s of backoff before)
    assert proc.returncode == 1
    *tried, last = proc.stderr.splitlines()
    assert tried == [f"chesspipe: connecting to {nowhere}"], proc.stderr
    cannot = f"chesspipe: error: {nowhere}: cannot resolve the host chesspipe.invalid ("
    assert last.startswith(cannot), proc.stderr


def test_a_redirected_remote_identity_is_still_asked_with_head() -> None:
    data = bytes(range(256)) * 8192
    with LoopbackServer() as server:
        server.add("/real.pgn.zst", data, etag='"v2"')
        url = server.add("/signed.pgn.zst", b"", moved_to="/real.pgn.zst")
        assert remote_identity(url, timeout=5.0) == (len(data), '"v2"')
        assert [(m, p) for m, p, _ in server.requests] == [
            ("HEAD", "/signed.pgn.zst"),
            ("HEAD", "/real.pgn.zst"),
        ]
        assert server.bytes_sent == 0
