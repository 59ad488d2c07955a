"""`chesspipe syzygy download` against a real HTTP server on 127.0.0.1 with the mirror's layout."""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import run_cli


class Mirror:
    """Files by URL path; names to cut off mid-file on their first request; a request log."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.drop_once: set[str] = set()
        self.log: list[tuple[str, str | None]] = []
        self.lock = threading.Lock()


def make_handler(mirror: Mirror) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            with mirror.lock:
                mirror.log.append((self.path, self.headers.get("Range")))
                data = mirror.files.get(self.path)
                drop = self.path in mirror.drop_once
                mirror.drop_once.discard(self.path)
            if data is None:
                self.send_error(404)
                return
            start = 0
            match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            if match:
                start = int(match.group(1))
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if drop:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(body)

    return Handler


@pytest.fixture
def mirror() -> Iterator[tuple[Mirror, str]]:
    state = Mirror()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/syzygy"
    finally:
        server.shutdown()
        server.server_close()


def sha256sum_list(files: dict[str, bytes], tmp_path: Path) -> str:
    """The checksum list as coreutils' sha256sum writes it (an independent hasher)."""
    folder = tmp_path / "hashing"
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    names = sorted(files)
    return subprocess.run(
        ["sha256sum", *names], cwd=folder, capture_output=True, text=True, check=True
    ).stdout


def publish(state: Mirror, files: dict[str, bytes], checksums: str) -> None:
    for name, data in files.items():
        pieces = len(name.split(".")[0]) - 1
        folder = "3-4-5" if pieces <= 5 else ("6-WDL" if name.endswith("w") else "6-DTZ")
        state.files[f"/syzygy/{folder}/{name}"] = data
    state.files["/syzygy/SHA256SUM"] = checksums.encode()


def download(base: str, dest: Path, *extra: str, check: bool = True):  # type: ignore[no-untyped-def]
    return run_cli("syzygy", "download", str(dest), "--base-url", base, "--checksums",
                   base + "/SHA256SUM", "--quiet", *extra, check=check)  # fmt: skip


def test_download_real_tables_resumes_a_dropped_file_and_the_tables_work(
    mirror: tuple[Mirror, str], syzygy_dir: Path, tmp_path: Path
) -> None:
    state, base = mirror
    files = {p.name: p.read_bytes() for p in syzygy_dir.iterdir() if p.suffix in (".rtbw", ".rtbz")}
    extra = {"KQRvKRN.rtbw": os.urandom(5000)}  # 6 pieces: not in set 3-4
    extra["KQRvKB.rtbw"] = os.urandom(3000)  # 5 pieces: not in set 3-4
    publish(state, files | extra, sha256sum_list(files | extra, tmp_path))
    state.drop_once.add("/syzygy/3-4-5/KQvKR.rtbz")
    dest = tmp_path / "tables"
    proc = download(base, dest, "--set", "3-4")
    assert '"downloaded": 70' in proc.stdout
    got = {p.name for p in dest.iterdir() if not p.name.startswith(".")}
    assert got == set(files)
    for name, data in files.items():
        assert (dest / name).read_bytes() == data
    ranges = [r for path, r in state.log if path.endswith("KQvKR.rtbz")]
    size = len(files["KQvKR.rtbz"])
    assert ranges == [None, f"bytes={size // 2}-"]
    # The downloaded folder works as a tablebase.
    out = run_cli("probe", "8/8/8/8/3k4/8/8/KR6 w - - 0 1", env={"SYZYGY_PATH": str(dest)})
    assert "WDL = 2 (win)" in out.stdout and "Found 35 WDL" in out.stdout

    # Again: nothing fetched but the checksum list.
    state.log.clear()
    proc = download(base, dest, "--set", "3-4")
    assert '"already_complete": 70' in proc.stdout
    assert [path for path, _ in state.log] == ["/syzygy/SHA256SUM"]

    # A partial file from an interrupted run is resumed where it stopped.
    (dest / "KQvK.rtbz").unlink()
    (dest / "KQvK.rtbz.part").write_bytes(files["KQvK.rtbz"][:1000])
    state.log.clear()
    download(base, dest, "--set", "3-4")
    assert (dest / "KQvK.rtbz").read_bytes() == files["KQvK.rtbz"]
    assert [r for p, r in state.log if p.endswith("KQvK.rtbz")] == ["bytes=1000-"]
    assert not list(dest.glob("*.part"))


def test_wrong_checksum_and_missing_file_fail_clearly_and_leave_nothing(
    mirror: tuple[Mirror, str], tmp_path: Path
) -> None:
    state, base = mirror
    names = ["KQvK.rtbw", "KQvK.rtbz", "KRvK.rtbw", "KRvK.rtbz", "KPvK.rtbw"]
    files = {name: os.urandom(20000 + i) for i, name in enumerate(names)}
    checksums = sha256sum_list(files, tmp_path)
    good = hashlib.sha256(files["KRvK.rtbw"]).hexdigest()
    checksums = checksums.replace(good, "0" * 64)
    publish(state, files, checksums)
    del state.files["/syzygy/3-4-5/KPvK.rtbw"]
    dest = tmp_path / "tables"
    proc = download(base, dest, "--set", "3-4", check=False)
    assert proc.returncode == 1
    assert "2 of 5 files failed" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in dest.iterdir() if not p.name.startswith(".")) == [
        "KQvK.rtbw", "KQvK.rtbz", "KRvK.rtbz"]  # fmt: skip
    assert not list(dest.glob("*.part"))
    proc = download(base, dest, "--set", "3-4", "--retries", "0", check=False)
    assert "checksum mismatch" in proc.stderr or "HTTP 404" in proc.stderr


def test_six_piece_layout_and_size_warning(mirror: tuple[Mirror, str], tmp_path: Path) -> None:
    state, base = mirror
    files = {"KQRvKRN.rtbw": os.urandom(4000), "KQRvKRN.rtbz": os.urandom(3000),
             "KQvK.rtbw": os.urandom(100)}  # fmt: skip
    publish(state, files, sha256sum_list(files, tmp_path))
    dest = tmp_path / "six"
    proc = download(base, dest, "--set", "6", "--yes")
    assert "6-piece set is about 149 GiB" in proc.stderr
    assert sorted(p.name for p in dest.iterdir() if not p.name.startswith(".")) == [
        "KQRvKRN.rtbw", "KQRvKRN.rtbz"]  # fmt: skip
    assert {p for p, _ in state.log} >= {"/syzygy/6-WDL/KQRvKRN.rtbw", "/syzygy/6-DTZ/KQRvKRN.rtbz"}
    if shutil.disk_usage(tmp_path).free < 150 << 30:
        proc = download(base, tmp_path / "other", "--set", "6", check=False)
        assert proc.returncode == 1 and "--yes" in proc.stderr


def test_bad_checksum_list(mirror: tuple[Mirror, str], tmp_path: Path) -> None:
    state, base = mirror
    state.files["/syzygy/SHA256SUM"] = b"this is not a checksum list\n"
    proc = download(base, tmp_path / "t", check=False)
    assert proc.returncode == 1 and "checksum list line 1" in proc.stderr
    del state.files["/syzygy/SHA256SUM"]
    proc = download(base, tmp_path / "t", check=False)
    assert proc.returncode == 1 and "HTTP 404" in proc.stderr


def test_a_part_longer_than_its_file_is_dropped_and_fetched_anew(
    mirror: tuple[Mirror, str], tmp_path: Path
) -> None:
    state, base = mirror
    files = {"KQvK.rtbw": os.urandom(3000), "KQvK.rtbz": os.urandom(2000)}
    publish(state, files, sha256sum_list(files, tmp_path))
    dest = tmp_path / "tables"
    dest.mkdir()
    (dest / "KQvK.rtbw.part").write_bytes(os.urandom(5000))  # left by another file
    download(base, dest, "--set", "3-4")
    assert (dest / "KQvK.rtbw").read_bytes() == files["KQvK.rtbw"]
    assert [r for p, r in state.log if p.endswith("KQvK.rtbw")] == ["bytes=5000-", None]
    assert not list(dest.glob("*.part"))


def test_progress_prints_a_line_when_each_file_ends() -> None:
    from pipelines.endgames.syzygy_download import DownloadProgress, FileProgress

    out = io.StringIO()
    progress = DownloadProgress(out)
    for done in (0, 1_000_000, 2_000_000):
        progress(FileProgress(1, 2, "KQvK.rtbw", done, 2_000_000, 0.1))
    progress(FileProgress(2, 2, "KQvK.rtbz", 500_000, 500_000, 0.2))
    progress.close()
    assert out.getvalue().splitlines() == [
        "[1/2] [                    ] KQvK.rtbw 0.0/2.0 MB",
        "[1/2] [####################] KQvK.rtbw 2.0/2.0 MB",
        "[2/2] [####################] KQvK.rtbz 0.5/0.5 MB",
    ]
