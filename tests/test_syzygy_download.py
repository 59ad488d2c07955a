"""`chesspipe syzygy download` against a real HTTP server on 127.0.0.1 with the mirror's layout."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.loopback_http import LoopbackServer

Mirror = tuple[LoopbackServer, str]


@pytest.fixture
def mirror() -> Iterator[Mirror]:
    """A mirror with the public layout under /syzygy, on the tests' one loopback server."""
    with LoopbackServer() as server:
        yield server, server.base + "/syzygy"


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


def publish(state: LoopbackServer, files: dict[str, bytes], checksums: str) -> None:
    for name, data in files.items():
        pieces = len(name.split(".")[0]) - 1
        folder = "3-4-5" if pieces <= 5 else ("6-WDL" if name.endswith("w") else "6-DTZ")
        state.add(f"/syzygy/{folder}/{name}", data)
    state.add("/syzygy/SHA256SUM", checksums.encode())


def download(base: str, dest: Path, *extra: str, check: bool = True):  # type: ignore[no-untyped-def]
    return run_cli("syzygy", "download", str(dest), "--base-url", base, "--checksums",
                   base + "/SHA256SUM", "--quiet", *extra, check=check)  # fmt: skip


@pytest.mark.slow
def test_download_real_tables_resumes_a_dropped_file_and_the_tables_work(
    mirror: Mirror, syzygy_dir: Path, tmp_path: Path
) -> None:
    state, base = mirror
    files = {p.name: p.read_bytes() for p in syzygy_dir.iterdir() if p.suffix in (".rtbw", ".rtbz")}
    extra = {"KQRvKRN.rtbw": os.urandom(5000)}  # 6 pieces: not in set 3-4
    extra["KQRvKB.rtbw"] = os.urandom(3000)  # 5 pieces: not in set 3-4
    publish(state, files | extra, sha256sum_list(files | extra, tmp_path))
    state.files["/syzygy/3-4-5/KQvKR.rtbz"].drops.append(len(files["KQvKR.rtbz"]) // 2)
    dest = tmp_path / "tables"
    proc = download(base, dest, "--set", "3-4")
    assert '"downloaded": 70' in proc.stdout
    got = {p.name for p in dest.iterdir() if not p.name.startswith(".")}
    assert got == set(files)
    for name, data in files.items():
        assert (dest / name).read_bytes() == data
    ranges = [r for _, path, r in state.requests if path.endswith("KQvKR.rtbz")]
    size = len(files["KQvKR.rtbz"])
    assert ranges == [None, f"bytes={size // 2}-"]
    # The downloaded folder works as a tablebase.
    out = run_cli("probe", "8/8/8/8/3k4/8/8/KR6 w - - 0 1", env={"SYZYGY_PATH": str(dest)})
    assert "WDL = 2 (win)" in out.stdout and "Found 35 WDL" in out.stdout

    # Again: nothing fetched but the checksum list.
    state.requests.clear()
    proc = download(base, dest, "--set", "3-4")
    assert '"already_complete": 70' in proc.stdout
    assert [path for _, path, _ in state.requests] == ["/syzygy/SHA256SUM"]

    # A partial file from an interrupted run is resumed where it stopped.
    (dest / "KQvK.rtbz").unlink()
    (dest / "KQvK.rtbz.part").write_bytes(files["KQvK.rtbz"][:1000])
    state.requests.clear()
    download(base, dest, "--set", "3-4")
    assert (dest / "KQvK.rtbz").read_bytes() == files["KQvK.rtbz"]
    assert [r for _, p, r in state.requests if p.endswith("KQvK.rtbz")] == ["bytes=1000-"]
    assert not list(dest.glob("*.part"))


def test_wrong_checksum_and_missing_file_fail_clearly_and_leave_nothing(
    mirror: Mirror, tmp_path: Path
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


def test_six_piece_layout_and_size_warning(mirror: Mirror, tmp_path: Path) -> None:
    state, base = mirror
    files = {"KQRvKRN.rtbw": os.urandom(4000), "KQRvKRN.rtbz": os.urandom(3000),
             "KQvK.rtbw": os.urandom(100)}  # fmt: skip
    publish(state, files, sha256sum_list(files, tmp_path))
    dest = tmp_path / "six"
    proc = download(base, dest, "--set", "6", "--yes")
    assert "6-piece set is about 149 GiB" in proc.stderr
    assert sorted(p.name for p in dest.iterdir() if not p.name.startswith(".")) == [
        "KQRvKRN.rtbw", "KQRvKRN.rtbz"]  # fmt: skip
    assert {p for _, p, _ in state.requests} >= {
        "/syzygy/6-WDL/KQRvKRN.rtbw",
        "/syzygy/6-DTZ/KQRvKRN.rtbz",
    }
    if shutil.disk_usage(tmp_path).free < 150 << 30:
        proc = download(base, tmp_path / "other", "--set", "6", check=False)
        assert proc.returncode == 1 and "--yes" in proc.stderr


def test_bad_checksum_list(mirror: Mirror, tmp_path: Path) -> None:
    state, base = mirror
    state.add("/syzygy/SHA256SUM", b"this is not a checksum list\n")
    proc = download(base, tmp_path / "t", check=False)
    assert proc.returncode == 1 and "checksum list line 1" in proc.stderr
    del state.files["/syzygy/SHA256SUM"]
    proc = download(base, tmp_path / "t", check=False)
    assert proc.returncode == 1 and "HTTP 404" in proc.stderr


def test_a_part_longer_than_its_file_is_dropped_and_fetched_anew(
    mirror: Mirror, tmp_path: Path
) -> None:
    state, base = mirror
    files = {"KQvK.rtbw": os.urandom(3000), "KQvK.rtbz": os.urandom(2000)}
    publish(state, files, sha256sum_list(files, tmp_path))
    dest = tmp_path / "tables"
    dest.mkdir()
    (dest / "KQvK.rtbw.part").write_bytes(os.urandom(5000))  # left by another file
    download(base, dest, "--set", "3-4")
    assert (dest / "KQvK.rtbw").read_bytes() == files["KQvK.rtbw"]
    assert [r for _, p, r in state.requests if p.endswith("KQvK.rtbw")] == ["bytes=5000-", None]
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
