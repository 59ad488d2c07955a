"""Query parameters read strictly, as lila-openingexplorer reads them.

Numbers are ASCII digits of bounded length (`str.isdigit` and `int` also take "²", "١٦٠٠" and
"１６００", and `int` refuses 5,000 digits with a ValueError), months are exactly `YYYY-MM`, and
`play` is UCI moves (`0000`, python-chess's null move, is not one), at most `MAX_PLAY` of them.
Anything else raises `BadRequest` with a one-line reason (HTTP 400).
"""

from __future__ import annotations

import re

#: The longest `play` accepted (plies): longer than nearly every game (a game of 150 moves), and
#: replayed in a few milliseconds. The statistics hold the first plies of games, so a longer
#: line from the start position has no moves anyway.
MAX_PLAY = 300
#: Digits of a number parameter (`moves`, `ratings`): up to 99,999.
MAX_DIGITS = 5

_DIGITS = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
_UCI = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")


class BadRequest(ValueError):
    """A request the API refuses (HTTP 400), with the reason."""


def _shown(text: str) -> str:
    """A parameter's value for a message: short, on one line."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def number(text: str, name: str) -> int:
    """A non-negative number of ASCII digits, at most `MAX_DIGITS` of them."""
    if not _DIGITS.fullmatch(text):
        raise BadRequest(
            f"{name} must be a number of at most {MAX_DIGITS} ASCII digits, not {_shown(text)}"
        )
    return int(text)


def month(text: str | None, name: str) -> str | None:
    """`YYYY-MM` in ASCII digits, month 01 to 12 (None or empty: no bound)."""
    if not text:
        return None
    found = _MONTH.fullmatch(text)
    if found is None or not 1 <= int(found.group(2)) <= 12:
        raise BadRequest(f"{name} must be YYYY-MM, not {_shown(text)}")
    return text


def play(text: str | None) -> tuple[str, ...]:
    """The comma-separated UCI moves of `play` (empty items skipped), at most `MAX_PLAY`."""
    if not text:
        return ()
    moves = tuple(m for m in text.split(",") if m)
    if len(moves) > MAX_PLAY:
        raise BadRequest(f"play holds {len(moves)} moves; at most {MAX_PLAY} are replayed")
    for move in moves:
        if not _UCI.fullmatch(move):
            raise BadRequest(f"illegal move {_shown(move)} in play: not a UCI move")
    return moves


def flag(text: str | None, name: str) -> bool | None:
    """`true` or `false` (None or empty: not given)."""
    if not text:
        return None
    if text not in ("true", "false"):
        raise BadRequest(f"{name} must be true or false, not {_shown(text)}")
    return text == "true"
