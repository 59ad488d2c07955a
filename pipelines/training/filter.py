"""`training filter`: a training file's records without those nnue-pytorch's loader would skip.

The test is `skips.SkipPredicate`, asked of every record in file order; the records kept are
written in their order, so a `.binpack`'s chains stay chains wherever the kept records still
follow one another (the writer's rule), and break where one was skipped.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.progress import ReadCallback
from pipelines.training.files import BadInput, read_training, training_format, write_training
from pipelines.training.skips import SKIP_REASONS, SkipPredicate, SkipSettings
from schemas.plain import PlainRecord


@dataclass
class FilterResult:
    """What a filter run read, kept and skipped."""

    input: str
    output: str
    settings: SkipSettings
    records_read: int = 0
    records_kept: int = 0
    #: Records skipped, by the first of SKIP_REASONS that applied.
    skipped: dict[str, int] = field(default_factory=dict)
    #: Input passed over with skip_bad (None: bad input fails the run).
    bad_input: BadInput | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def kept_records(
    records: Iterator[PlainRecord], settings: SkipSettings, skipped: Counter[str]
) -> Iterator[PlainRecord]:
    """Yield the records the predicate keeps, counting the others under their reason."""
    predicate = SkipPredicate(settings)
    for record in records:
        reason = predicate.record_reason(record)
        if reason is None:
            yield record
        else:
            skipped[reason] += 1


def filter_file(
    source: Path,
    out: Path,
    settings: SkipSettings,
    *,
    skip_bad: bool = False,
    progress: ReadCallback | None = None,
) -> FilterResult:
    """Write the records of `source` that `settings` keep to `out` (whole or not at all);
    `progress` hears of the read (read_training)."""
    started = time.monotonic()
    training_format(out)
    bad = BadInput() if skip_bad else None
    read = [0]

    def counted() -> Iterator[PlainRecord]:
        for record in read_training(source, legal=True, bad=bad, progress=progress):
            read[0] += 1
            yield record

    skipped: Counter[str] = Counter()
    kept = write_training(
        kept_records(counted(), settings, skipped), out, lambda _: f"{source}: record {read[0]}"
    )
    return FilterResult(
        str(source),
        str(out),
        settings,
        records_read=read[0],
        records_kept=kept,
        skipped={reason: skipped[reason] for reason in SKIP_REASONS if skipped[reason]},
        bad_input=bad,
        seconds=round(time.monotonic() - started, 3),
    )
