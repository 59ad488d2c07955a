"""Outputs appear whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_atomic_path_publishes_whole_or_nothing(tmp_path: Path) -> None:
    from schemas.atomic_files import atomic_path

    target = tmp_path / "deep" / "out.bin"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("killed half-way")
    assert not target.exists() and list(target.parent.iterdir()) == []
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"whole")
        assert not target.exists()
    assert target.read_bytes() == b"whole" and list(target.parent.iterdir()) == [target]
