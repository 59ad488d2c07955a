"""The generator of the bundled sample, a tool in data/ rather than an importable module."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def _load_sample_tool():  # type: ignore[no-untyped-def]
    path = Path(__file__).resolve().parent.parent / "data" / "make_sample.py"
    spec = importlib.util.spec_from_file_location("make_sample", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_sample = _load_sample_tool()
