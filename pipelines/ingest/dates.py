"""The month a game was played, from its Date tag: where ingest by date puts it.

A PGN date is `YYYY.MM.DD`, a part not known written as question marks (`1921.??.??`).
A game lands in its year and month (`1921.03.15` and `1921.03.??`: `1921-03`); a date with
a year only (`1921.??.??`, or a month that is no month) in that year's January,
`YEAR_ONLY_MONTH`, so that every range of whole years holds it; a game without a year (no Date
tag, `????.??.??`, a text that is no date, a year before `EARLIEST_YEAR` or after next year:
no game's) in `UNDATED`, a month that no game with a date reaches. Both are months as every
command reads them (`YYYY-MM`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

#: Where a game whose date has no year lands.
UNDATED = "0000-01"
#: The month of a year a game whose date has a year only lands in.
YEAR_ONLY_MONTH = "01"
#: Before it a year is no game's (the first games recorded with today's rules are of 1475).
EARLIEST_YEAR = 1400

#: The tag section: the text before the first blank line.
_END_OF_TAGS = re.compile(rb"\r?\n[ \t]*\r?\n")
#: The Date tag, whatever its case (a game's text may come without its leading "[").
_DATE_TAG = re.compile(rb'^\[?[ \t]*date[ \t]+"([^"\r\n]*)"', re.IGNORECASE | re.MULTILINE)
#: A date's year, and its month when it has one (dots as the standard writes them; dashes and
#: slashes as some programs do).
_DATE = re.compile(r"\s*([0-9]{4})(?:[.\-/]([0-9?]{1,2}))?")


def date_month(date: str) -> str:
    """Return the month (`YYYY-MM`) a Date tag's value puts a game in."""
    found = _DATE.match(date)
    if found is None or not EARLIEST_YEAR <= int(found.group(1)) <= datetime.now(UTC).year + 1:
        return UNDATED
    year, month = found.group(1), found.group(2)
    if month is not None and month.isdigit() and 1 <= int(month) <= 12:
        return f"{year}-{int(month):02d}"
    return f"{year}-{YEAR_ONLY_MONTH}"


def game_date(game: bytes) -> str | None:
    """Return the value of a game's Date tag, or None when its tags have none."""
    tags = _END_OF_TAGS.split(game, maxsplit=1)[0]
    found = _DATE_TAG.search(tags)
    return found.group(1).decode("latin-1") if found is not None else None


def game_month(game: bytes) -> str:
    """Return the month (`YYYY-MM`) a game's text puts it in by its Date tag."""
    date = game_date(game)
    return date_month(date) if date is not None else UNDATED
