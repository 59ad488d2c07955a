"""The game filter: which games are kept, decided from raw header bytes.

What "kept" means, written once: a game passes the filter (filter_game) and its movetext holds
a move (keep_game; ingest's counting decides the move with its batch parser, to the same
effect).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from pipelines.errors import ChesspipeError, SettingError
from pipelines.games import _scan
from pipelines.progress import Progress
from schemas.dimensions import MAX_RATING, average_rating_group, rating_band
from schemas.movetext import has_moves
from schemas.speed import Speed

RESULTS = {b"1-0": 2, b"1/2-1/2": 1, b"0-1": 0}

#: The standard start position's FEN: a Standard game whose FEN tag holds it starts there.
_START_FEN = b"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


#: The variants ingest reads: Standard, or Chess960 games only.
VARIANTS = ("standard", "chess960")


@dataclass(frozen=True)
class GameFilter:
    """Which games to keep: both ratings, speeds, bots and variant.

    `speeds` may be given as names ("all" for every one); they are kept as Speed members
    (unknown names raise SettingError, a ValueError, as does an unknown variant). A game whose
    time control is not known has Speed.OTB; at `min_rating` 0 a game without a rating (the
    tag absent, empty, `?`) is kept, its ratings counted as 0. A Standard game from another
    position than the start (`[SetUp "1"][FEN "..."]`, as engine matches from an opening suite
    are) is dropped as `from_position`, or with `from_position` "keep" counted from its FEN.
    """

    min_rating: int = 2200
    speeds: frozenset[Speed] = frozenset(
        {Speed.BLITZ, Speed.RAPID, Speed.CLASSICAL, Speed.CORRESPONDENCE}
    )
    allow_bots: bool = False
    variant: str = "standard"
    from_position: Literal["drop", "keep"] = "drop"

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "speeds", Speed.parse_many(self.speeds))
        except ValueError as exc:
            raise SettingError("GameFilter", "speeds", says=str(exc)) from None
        if self.variant not in VARIANTS:
            says = f"unknown variant {self.variant!r}; choose standard or chess960"
            raise SettingError("GameFilter", "variant", says=says)
        if self.from_position not in ("drop", "keep"):
            raise SettingError("GameFilter", "from_position", "must be drop or keep")

    def to_json(self) -> dict[str, Any]:
        """Return the filter as plain JSON values, speeds in Lichess's order (`from_position`
        only where it keeps them, so that what was recorded before reads the same)."""
        data: dict[str, Any] = {
            "min_rating": self.min_rating,
            "speeds": [speed.value for speed in Speed if speed in self.speeds],
            "allow_bots": self.allow_bots,
            "variant": self.variant,
        }
        if self.from_position == "keep":
            data["from_position"] = "keep"
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GameFilter:
        """Return the filter to_json recorded (other keys of `data` are ignored)."""
        return cls(
            data["min_rating"],
            frozenset(data["speeds"]),
            data["allow_bots"],
            data["variant"],
            data.get("from_position", "drop"),
        )


class KeptGame(NamedTuple):
    """A game that passed the filter: what move counting needs."""

    white_elo: int
    black_elo: int
    speed: Speed
    result: int  # White's points: 2 win, 1 draw, 0 loss
    fen: str | None
    movetext: bytes

    @property
    def rating_band(self) -> int:
        """The lower-rated player's rating, floored to the band width (ratings beyond 16 bits
        count as MAX_RATING, as in the rating sums)."""
        return rating_band(min(self.white_elo, self.black_elo, MAX_RATING))

    @property
    def rating_group(self) -> int:
        """Lichess's rating group of the players' average rating."""
        return average_rating_group(self.white_elo, self.black_elo)


@dataclass
class ScanStats:
    """What the scanner saw: games read and kept, and dropped games by reason.

    The reasons: malformed (no tag section), oversized (longer than scan.MAX_GAME_BYTES),
    rating_missing (absent or not a number, at a min_rating above 0), rating_low,
    time_control (absent or unreadable: Speed.OTB, when it is not asked for), speed (not asked
    for), bot, variant, from_position (a Standard game that starts from a FEN other than the
    start position), result (not 1-0, 0-1 or 1/2-1/2), truncated (the last game of a source
    that ends inside it), and, found while counting, no_moves, illegal_move (illegal,
    ambiguous or unparsable SAN), bad_fen and duplicate (ingest's dedupe).
    """

    games_read: int = 0
    games_kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    pgn_bytes: int = 0
    #: Bytes of text skipped as malformed or oversized games.
    unreadable_bytes: int = 0
    #: The text ended inside a game (no result after its movetext): the source was cut.
    ends_inside_game: bool = False
    #: The text's line ends are CRLF (the scanner reads them as LF).
    crlf: bool = False
    #: Which games that passed the filter counting then dropped (no_moves, illegal_move,
    #: bad_fen): their places among this scan's games that passed it, from 0. Local to one
    #: scan of text in order (merge leaves it out).
    rejected: list[int] = field(default_factory=list)

    @property
    def games_found(self) -> int:
        """Games read that look like PGN games (not malformed nor oversized)."""
        return self.games_read - self.dropped["malformed"] - self.dropped["oversized"]

    def progress(
        self, bytes_read: int, bytes_total: int | None, seconds: float, done: bool = False
    ) -> Progress:
        """Return a progress report of these games, `seconds` in: `bytes_read` of `bytes_total`."""
        return Progress(bytes_read, bytes_total, self.games_read, self.games_kept, seconds, done)

    def drop(self, reason: str) -> None:
        """Count a dropped game under its reason."""
        self.dropped[reason] += 1

    def merge(self, other: ScanStats) -> None:
        """Add another scan's counts to this one."""
        self.games_read += other.games_read
        self.games_kept += other.games_kept
        self.dropped.update(other.dropped)
        self.pgn_bytes += other.pgn_bytes
        self.unreadable_bytes += other.unreadable_bytes
        self.ends_inside_game = self.ends_inside_game or other.ends_inside_game
        self.crlf = self.crlf or other.crlf


#: How a message says why games were dropped, by reason: (the filter's setting that keeps
#: them, or None when none does; what the games are, `{setting}` standing for the setting's
#: name and `{value}` for its value).
DROP_REASONS: dict[str, tuple[str | None, str]] = {
    "rating_low": ("min_rating", "are below {setting} {value}"),
    "speed": ("speeds", "are of other speeds than {setting} {value}"),
    "bot": ("allow_bots", "have a BOT player ({setting} keeps them)"),
    "variant": ("variant", "are not of {setting} {value}"),
    "rating_missing": (None, "lack a numeric rating"),
    "time_control": (None, "have no readable time control"),
    "result": (None, "have no result (1-0, 0-1 or 1/2-1/2)"),
    "malformed": (None, "are not PGN games (no tag section)"),
    "oversized": (None, "are too long to read"),
    "truncated": (None, "are cut short"),
    "no_moves": (None, "have no moves"),
    "illegal_move": (None, "have an illegal move"),
    "bad_fen": (None, "have an unreadable FEN"),
    "from_position": ("from_position", "start from a FEN ({setting} keep counts them from it)"),
}


class NothingKept(ChesspipeError):
    """A run kept no game (so it would publish nothing of use), and an empty result was not
    asked for: the message names the reason most games were dropped and, where one does, the
    filter's setting that keeps them ("25,557 of 25,611 games are below min_rating 2200").

    The command line calls the setting by its flag through `named` (as SettingError's).
    """

    def __init__(self, source: str, stats: ScanStats, rules: GameFilter) -> None:
        self.source = source
        self.games_read = stats.games_read
        self.dropped = dict(stats.dropped)
        self.rules = rules
        super().__init__(self.named({}))

    def __reduce__(self) -> tuple[object, ...]:
        stats = ScanStats(games_read=self.games_read, dropped=Counter(self.dropped))
        return NothingKept, (self.source, stats, self.rules)

    @property
    def reason(self) -> str | None:
        """The reason most games were dropped (None when the source held no game)."""
        return max(self.dropped, key=lambda r: self.dropped[r]) if self.dropped else None

    def named(self, names: Mapping[str, str]) -> str:
        """The message, the filter's setting called `names["GameFilter.field"]` where it has
        one (a command's flags)."""
        reason = self.reason
        if self.games_read == 0 or reason is None:
            return f"{self.source} holds no game; nothing published"
        field_name, says = DROP_REASONS.get(reason, (None, f"were dropped as {reason}"))
        setting = value = ""
        if field_name is not None:
            setting = names.get(f"GameFilter.{field_name}", field_name)
            value = self.rules.to_json().get(field_name, "")
            value = ",".join(value) if isinstance(value, list) else value
        why = says.format(setting=setting, value=value)
        count = self.dropped[reason]
        hint = ""
        if reason in ("rating_missing", "time_control"):
            # Games without ratings mostly lack a time control too (over-the-board games),
            # and only the first reason is counted: name both settings that keep them.
            speeds = names.get("GameFilter.speeds", "speeds")
            rating = names.get("GameFilter.min_rating", "min_rating")
            hint = (
                f" ({speeds} all {rating} 0 keep games without ratings or time control, as "
                "over-the-board games are)"
            )
        return (
            f"no game of {self.source} is kept: {count:,} of {self.games_read:,} games {why}"
            f"{hint}; nothing published"
        )


def _needles(name: bytes) -> tuple[bytes, bytes]:
    """Return what a tag pair starts with after a line end, and at a game's start, in lower
    case (tag names are read whatever their case)."""
    return (b"\n[" + name + b' "').lower(), (name + b' "').lower()


#: The tags the filter reads, with their needles (see _needles).
_NEEDLES = {
    name: _needles(name)
    for name in (
        b"WhiteElo",
        b"BlackElo",
        b"TimeControl",
        b"WhiteTitle",
        b"BlackTitle",
        b"Variant",
        b"FEN",
        b"Result",
    )
}
_WHITE_ELO, _BLACK_ELO, _TIME_CONTROL, _WHITE_TITLE, _BLACK_TITLE, _VARIANT, _FEN, _RESULT = (
    _NEEDLES.values()
)


def _value(
    game: bytes, lowered: bytes, needle: bytes, prefix: bytes, header_end: int
) -> bytes | None:
    """Return the raw value of the tag whose needles (see _needles) are given, or None.

    `lowered` is the game's tag section in lower case, where the tag's name is looked for.
    """
    start = lowered.find(needle, 0, header_end)
    if start < 0:
        if not lowered.startswith(prefix):
            return None
        start = len(prefix)
    else:
        start += len(needle)
    end = game.find(b'"]', start, header_end + 2)
    if end < 0:
        return None
    return game[start:end]


def _rating(value: bytes | None) -> int | None:
    if value is None or not value.isdigit():
        return None
    return int(value)


#: The drop reasons the compiled filter counts, in the order of its counts (see _scan.c):
#: after the games read, before the bytes of oversized games.
_COMPILED_REASONS = ("rating_low", "time_control", "speed", "bot", "variant", "result", "oversized")


@lru_cache(maxsize=16)
def compiled_rules(rules: GameFilter) -> tuple[object, ...]:
    """The filter as the compiled fast path (`_scan.c`) takes it."""
    return (
        rules.min_rating,
        rules.allow_bots,
        rules.variant == "standard",
        rules.speeds,
        _speed,
        Speed.OTB,
        KeptGame,
    )


def add_compiled_counts(stats: ScanStats, counts: tuple[int, ...]) -> None:
    """Add the counts of the games the compiled fast path decided (see _scan.c) to stats."""
    stats.games_read += counts[0]
    for reason, count in zip(_COMPILED_REASONS, counts[1:8], strict=True):
        if count:
            stats.dropped[reason] += count
    stats.unreadable_bytes += counts[8]


def filter_game(game: bytes, rules: GameFilter, stats: ScanStats) -> KeptGame | None:
    """Return the game's filter data if it passes, else count its drop reason and return None.

    A game whose tag section is laid out as Lichess lays it out is decided by compiled code
    (`_scan.c`), from the tags it reads at once; any other by looking for each tag on its own,
    to the same effect.
    """
    decided, counts = _scan.decide_game(game, compiled_rules(rules))
    if decided is game:
        return _filter_any_game(game, rules, stats)
    add_compiled_counts(stats, counts)
    return decided


def keep_game(game: bytes, rules: GameFilter, stats: ScanStats) -> KeptGame | None:
    """Return a game's filter data if it is kept: it passes the filter and has a move (else
    counted under its reason, `no_moves` as ingest counts it); `stats.games_kept` counts it."""
    kept = filter_game(game, rules, stats)
    if kept is None:
        return None
    if not has_moves(kept.movetext):
        stats.drop("no_moves")
        return None
    stats.games_kept += 1
    return kept


#: Pieces on the board at the start of a Standard game.
START_PIECES = 32


def may_reach(movetext: bytes, pieces: int) -> bool:
    """Tell whether a Standard game's movetext may reach `pieces` pieces or fewer: it needs
    at least 32 - `pieces` captures (SAN "x"; promotions only add pieces). A byte count, so
    only the games that pass it need their moves replayed."""
    return movetext.count(b"x") >= START_PIECES - pieces


def _rated_speed(
    white: int, black: int, time_control: bytes | None, rules: GameFilter, stats: ScanStats
) -> Speed | None:
    """Return the game's speed if its ratings and speed pass, else count why not and return
    None."""
    if white < rules.min_rating or black < rules.min_rating:
        stats.drop("rating_low")
        return None
    speed = _speed(time_control) if time_control is not None else None
    if speed is None:
        if Speed.OTB not in rules.speeds:
            stats.drop("time_control")
            return None
        speed = Speed.OTB
    if speed not in rules.speeds:
        stats.drop("speed")
        return None
    return speed


def _filter_any_game(game: bytes, rules: GameFilter, stats: ScanStats) -> KeptGame | None:
    """filter_game for any game: each tag looked for on its own."""
    stats.games_read += 1
    header_end = game.find(b"\n\n")
    if header_end < 0:
        header_end = len(game)
    first_line = game.find(b"\n")
    if not game.endswith(b"]", 0, first_line if first_line >= 0 else len(game)):
        stats.drop("malformed")
        stats.unreadable_bytes += len(game)
        return None
    lowered = game[: header_end + 2].lower()
    white = _rating(_value(game, lowered, *_WHITE_ELO, header_end))
    black = _rating(_value(game, lowered, *_BLACK_ELO, header_end))
    if white is None or black is None:
        if rules.min_rating > 0:
            stats.drop("rating_missing")
            return None
        white, black = white or 0, black or 0  # kept when asked: counted as rating 0
    time_control = _value(game, lowered, *_TIME_CONTROL, header_end)
    speed = _rated_speed(white, black, time_control, rules, stats)
    if speed is None:
        return None
    if not rules.allow_bots and (
        _value(game, lowered, *_WHITE_TITLE, header_end) == b"BOT"
        or _value(game, lowered, *_BLACK_TITLE, header_end) == b"BOT"
    ):
        stats.drop("bot")
        return None
    variant = _value(game, lowered, *_VARIANT, header_end)
    raw_fen = _value(game, lowered, *_FEN, header_end)
    fen = None
    if rules.variant == "standard":
        if variant is not None and variant.lower() != b"standard":
            stats.drop("variant")
            return None
        if raw_fen is not None and raw_fen.strip() != _START_FEN:
            if rules.from_position == "drop":
                stats.drop("from_position")
                return None
            fen = raw_fen.strip().decode("ascii", "replace")
    else:
        if variant is None or variant.lower() not in (b"chess960", b"fischerandom"):
            stats.drop("variant")
            return None
        # (absent for start position 518)
        fen = raw_fen.decode("ascii", "replace") if raw_fen is not None else None
    result = RESULTS.get(_value(game, lowered, *_RESULT, header_end) or b"")
    if result is None:
        stats.drop("result")
        return None
    movetext = game[header_end + 2 :] if header_end < len(game) else b""
    return KeptGame(white, black, speed, result, fen, movetext)


def _speed(time_control: bytes) -> Speed | None:
    """Return Speed.from_time_control(time_control), remembered for the first few thousand
    time controls seen (a month has a few hundred)."""
    try:
        return _SPEEDS[time_control]
    except KeyError:
        speed = Speed.from_time_control(time_control)
        if len(_SPEEDS) < 4096:
            _SPEEDS[time_control] = speed
        return speed


_SPEEDS: dict[bytes, Speed | None] = {}
