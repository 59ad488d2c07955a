"""A kept game's record for the explorer: the tags topGames, recentGames and /player show.

Read from the game's text as the scanner split it (tags first), independently of the game
filter, which reads only what it decides by.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import NamedTuple

from pipelines.games._scan import header_tags

#: A tag line: name and value (escaped quotes and backslashes inside).
_TAG = re.compile(rb'\[?([A-Za-z0-9_]+) "((?:[^"\\\n]|\\.)*)"\]')
#: A Lichess game's Site: its id is the 8 letters and digits after the host.
_LICHESS_SITE = re.compile(r"https?://lichess\.org/([A-Za-z0-9]{8})")
#: Event names of tournament games on Lichess (arenas, swiss) and elsewhere.
_TOURNAMENT = re.compile(r"\b(?:arena|swiss|tournament)\b", re.IGNORECASE)
_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class GameRecord(NamedTuple):
    """The explorer's fields of a game (schemas.explorer.GAMES_SCHEMA, less seq and moves)."""

    id: str
    event: str
    site: str
    round: str
    date: str
    white: str
    black: str
    white_elo: int | None
    black_elo: int | None
    white_title: str | None
    black_title: str | None
    rated: bool
    tournament: bool
    time_control: str | None
    eco: str | None
    opening: str | None


def tags(game: bytes) -> dict[str, str]:
    """The tags of a game's text (up to its first blank line), values unescaped."""
    end = game.find(b"\n\n")
    found: dict[str, str] = {}
    for match in _TAG.finditer(game, 0, end if end >= 0 else len(game)):
        value = match.group(2).decode("utf-8", "replace")
        if "\\" in value:
            value = value.replace('\\"', '"').replace("\\\\", "\\")
        found.setdefault(match.group(1).decode("ascii"), value)
    return found


def _rating(text: str | None) -> int | None:
    if text is None or not text.isascii() or not text.isdigit() or len(text) > 5:
        return None
    return min(int(text), 65535)


def game_id(site: str, game: bytes) -> str:
    """The Lichess id in Site, else 8 letters and digits from the sha256 of the game's text
    (the same game, the same id)."""
    found = _LICHESS_SITE.match(site)
    if found:
        return found.group(1)
    number = int.from_bytes(hashlib.sha256(game.strip()).digest()[:8], "big")
    letters = []
    for _ in range(8):
        number, digit = divmod(number, len(_ID_ALPHABET))
        letters.append(_ID_ALPHABET[digit])
    return "".join(letters)


def is_tournament(event: str) -> bool:
    """Whether an Event names an arena, a swiss or a tournament (Lichess: "Rated Blitz
    tournament https://lichess.org/tournament/...", "Rated Blitz swiss ...")."""
    return _TOURNAMENT.search(event) is not None


def read_record(game: bytes) -> GameRecord:
    """The record of a game's text, its tags read by tags() (read_records() reads them in
    compiled code, and agrees)."""
    found = tags(game)
    columns = [[found.get(name.decode())] for name in _RECORD_TAGS]
    return GameRecord._make(column[0] for column in _records([game], columns))


class RecordColumns(NamedTuple):
    """The records of many games, a list per field (GameRecord's fields, in its order)."""

    id: list[str]
    event: list[str]
    site: list[str]
    round: list[str]
    date: list[str]
    white: list[str]
    black: list[str]
    white_elo: list[int | None]
    black_elo: list[int | None]
    white_title: list[str | None]
    black_title: list[str | None]
    rated: list[bool]
    tournament: list[bool]
    time_control: list[str | None]
    eco: list[str | None]
    opening: list[str | None]


#: The tags records read, in the order header_tags() answers them.
_RECORD_TAGS = (b"Site", b"Event", b"UTCDate", b"Date", b"Round", b"White", b"Black",
                b"WhiteElo", b"BlackElo", b"WhiteTitle", b"BlackTitle", b"TimeControl", b"ECO",
                b"Opening")  # fmt: skip


def read_records(games: Sequence[bytes]) -> RecordColumns:
    """The records of many games' texts, as read_record() reads each (their tags read by the
    compiled scanner, as tags() reads them)."""
    return _records(games, header_tags(games, _RECORD_TAGS))


def _records(games: Sequence[bytes], values: Sequence[Sequence[str | None]]) -> RecordColumns:
    """The records of games from their tags' values (a column per tag of _RECORD_TAGS, None
    where a game has none)."""
    site, event, utc_date, date, round_, white, black, white_elo, black_elo, white_title, \
        black_title, time_control, eco, opening = values  # fmt: skip
    sites = [s or "" for s in site]
    events = [e or "" for e in event]
    return RecordColumns(
        id=[game_id(where, text) for text, where in zip(games, sites, strict=True)],
        event=events,
        site=sites,
        round=[r if r is not None else "-" for r in round_],
        date=[u or d or "????.??.??" for u, d in zip(utc_date, date, strict=True)],
        white=[w if w is not None else "?" for w in white],
        black=[b if b is not None else "?" for b in black],
        white_elo=[_rating(r) for r in white_elo],
        black_elo=[_rating(r) for r in black_elo],
        white_title=[t or None for t in white_title],
        black_title=[t or None for t in black_title],
        rated=[not e.lower().startswith("casual") for e in events],
        tournament=[is_tournament(e) for e in events],
        time_control=[t or None for t in time_control],
        eco=[e or None for e in eco],
        opening=[o or None for o in opening],
    )
