"""The bundled sample: what data/make_sample.py generates, byte for byte."""

from __future__ import annotations

import io

import pytest
import zstandard

from tests.sample_tool import make_sample


@pytest.mark.slow
def test_bundled_sample_is_what_the_script_generates() -> None:
    month = make_sample.SAMPLE_MONTHS[0]
    stored = (
        zstandard.ZstdDecompressor()
        .stream_reader(
            io.BytesIO(make_sample.sample_path(month).read_bytes()), read_across_frames=True
        )
        .read()
    )
    assert stored == make_sample.generate_month(month).encode("utf-8")
    text = stored.decode()
    assert '[WhiteTitle "BOT"]' in text or '[BlackTitle "BOT"]' in text
    assert "[%clk" in text and "[%eval" in text
