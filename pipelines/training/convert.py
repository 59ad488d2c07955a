"""`.plain` <-> `.binpack`, either direction by the files' extensions, streaming."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pipelines.progress import ReadCallback
from pipelines.training import codec
from pipelines.training.files import read_training, training_format, write_training


def convert(source: Path, out: Path, *, progress: ReadCallback | None = None) -> dict[str, Any]:
    """Copy every record of `source` into `out` (format by extension); summarise.

    `progress` hears of the read (read_training). Between the two formats, the compiled codec
    does the work where it is built (pipelines/training/codec.py), with the same bytes and errors.
    """
    started = time.monotonic()
    if training_format(out) != training_format(source) and codec.available():
        records = codec.convert_file(source, out, progress=progress)
    else:
        records = write_training(read_training(source, progress=progress), out, str(source))
    seconds = time.monotonic() - started
    return {
        "input": str(source),
        "output": str(out),
        "records": records,
        "input_bytes": source.stat().st_size,
        "output_bytes": out.stat().st_size,
        "seconds": round(seconds, 3),
        "records_per_second": round(records / seconds) if seconds else None,
    }
