"""The monthly schedule: when a month's dump is built, from where, and which month a run builds."""

from __future__ import annotations

from datetime import date, datetime

#: The dumps of a month appear in the first days of the next: build on the 3rd at 06:00 UTC.
MONTHLY_CRON = "0 6 3 * *"

#: Where each month's games come from by default: the official dump (`{month}` is replaced).
SOURCE_TEMPLATE = "lichess:{month}"


def month_to_build(scheduled: datetime | date) -> str:
    """Return the month a run scheduled at this time builds: the previous calendar month."""
    year, month = scheduled.year, scheduled.month - 1
    if month == 0:
        year, month = year - 1, 12
    return f"{year:04d}-{month:02d}"
