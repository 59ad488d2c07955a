"""Splitting PGN text into games and reading the few headers the filter needs, at byte level.

Games that fail the filter never reach python-chess: the scanner looks at raw bytes only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from schemas.dimensions import RATING_BAND_WIDTH, SPEEDS

#: Games start after a blank line, with a tag. Splitting consumes the leading "[".
_BOUNDARY = b"\n\n["

#: Longest game (headers and movetext) kept; longer ones are dropped as "oversized".
MAX_GAME_BYTES = 4 << 20

DEFAULT_SPEEDS = frozenset({"blitz", "rapid", "classical", "correspondence"})

#: Drop reasons, in the order the filter checks them.
REASONS = (
    "malformed",  # no tag section
    "oversized",  # a game longer than MAX_GAME_BYTES
    "rating_missing",  # a rating absent or not a number ("?")
    "rating_low",
    "speed",  # a speed not asked for
    "time_control",  # TimeControl absent or unreadable
    "bot",
    "variant",
    "result",  # Result not 1-0, 0-1 or 1/2-1/2
    "no_moves",
    "illegal_move",  # SAN that is illegal, ambiguous or unparsable in its position
    "bad_fen",
)

RESULTS = {b"1-0": 2, b"1/2-1/2": 1, b"0-1": 0}


@dataclass(frozen=True)
class GameFilter:
    """Which games to keep: both ratings, speeds, bots and variant."""

    min_rating: int = 2200
    speeds: frozenset[str] = DEFAULT_SPEEDS
    allow_bots: bool = False
    variant: str = "standard"

    def __post_init__(self) -> None:
        unknown = set(self.speeds) - set(SPEEDS)
        if unknown:
            raise ValueError(f"unknown speed(s) {sorted(unknown)}; choose from {', '.join(SPEEDS)}")
        if self.variant not in ("standard", "chess960"):
            raise ValueError(f"unknown variant {self.variant!r}; choose standard or chess960")


@dataclass(frozen=True)
class KeptGame:
    """A game that passed the filter: what move counting needs."""

    white_elo: int
    black_elo: int
    speed: str
    result: int  # White's points: 2 win, 1 draw, 0 loss
    fen: str | None
    movetext: bytes

    @property
    def rating_band(self) -> int:
        """The lower-rated player's rating, floored to the band width."""
        return min(self.white_elo, self.black_elo) // RATING_BAND_WIDTH * RATING_BAND_WIDTH


@dataclass
class ScanStats:
    """What the scanner saw: games read and kept, and dropped games by reason."""

    games_read: int = 0
    games_kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    pgn_bytes: int = 0

    def drop(self, reason: str) -> None:
        """Count a dropped game under its reason."""
        self.dropped[reason] += 1

    def merge(self, other: ScanStats) -> None:
        """Add another scan's counts to this one."""
        self.games_read += other.games_read
        self.games_kept += other.games_kept
        self.dropped.update(other.dropped)
        self.pgn_bytes += other.pgn_bytes


def speed_of(time_control: bytes) -> str | None:
    """Return Lichess's speed category for a TimeControl value, or None if unreadable."""
    if time_control == b"-":
        return "correspondence"
    base, plus, increment = time_control.partition(b"+")
    if not plus or not base.isdigit() or not increment.isdigit():
        return None
    seconds = int(base) + 40 * int(increment)
    if seconds < 30:
        return "ultrabullet"
    if seconds < 180:
        return "bullet"
    if seconds < 480:
        return "blitz"
    if seconds < 1500:
        return "rapid"
    if seconds < 21600:
        return "classical"
    return "correspondence"


def split_games(
    chunks: Iterable[bytes], stats: ScanStats, max_game_bytes: int = MAX_GAME_BYTES
) -> Iterator[bytes]:
    """Yield each game's bytes without its leading "[", from chunks of PGN text."""
    for block in game_blocks(chunks, stats, max_game_bytes):
        yield from _block_games(block, stats, max_game_bytes)


def _block_games(block: bytes, stats: ScanStats, max_game_bytes: int) -> list[bytes]:
    """Return the games of a block (from game_blocks), counting oversized ones as dropped."""
    pieces = block.split(_BOUNDARY)
    if pieces and max(map(len, pieces)) > max_game_bytes:
        oversized = sum(1 for piece in pieces if len(piece) > max_game_bytes)
        stats.games_read += oversized
        stats.dropped["oversized"] += oversized
    return [p for p in pieces if p and len(p) <= max_game_bytes and not p.isspace()]


def game_blocks(
    chunks: Iterable[bytes], stats: ScanStats, max_game_bytes: int = MAX_GAME_BYTES
) -> Iterator[bytes]:
    """Yield blocks of whole games from chunks of PGN text, each game after a blank line.

    Every block starts with a game boundary (a blank line, then "[") and holds only whole games.
    Games longer than `max_game_bytes` whose end is not in sight are skipped and counted as
    "oversized".
    """
    pending: list[bytes] = []
    pending_size = 0
    skipping = False  # inside an oversized game, waiting for the next boundary
    crlf: bool | None = None
    first = True
    for chunk in chunks:
        if not chunk:
            continue
        stats.pgn_bytes += len(chunk)
        if crlf is None:
            crlf = b"\r\n" in chunk[:65536]
        if crlf:
            chunk = chunk.replace(b"\r\n", b"\n")
        if first:
            chunk = chunk.lstrip(b"\n\r\t \xef\xbb\xbf")
            if not chunk:
                continue
            first = False
            # Text before the first tag is read as a game with no tags.
            chunk = (b"\n\n" if chunk[:1] == b"[" else b"\n\n[") + chunk
        pending.append(chunk)
        pending_size += len(chunk)
        if _BOUNDARY not in chunk and pending_size < max_game_bytes + len(chunk):
            # No boundary in this chunk (or straddling it): look at the joined tail only.
            tail = b"".join(pending[-2:]) if len(pending) > 1 else chunk
            if _BOUNDARY not in tail:
                if pending_size > max_game_bytes and not skipping:
                    skipping = True
                    stats.games_read += 1
                    stats.drop("oversized")
                if skipping:
                    keep = pending[-1][-2:]
                    pending = [keep]
                    pending_size = len(keep)
                continue
        buffer = b"".join(pending)
        last = buffer.rfind(_BOUNDARY)
        if last < 0:
            pending = [buffer]
            pending_size = len(buffer)
            continue
        start = buffer.find(_BOUNDARY) if skipping else 0  # skip the rest of an oversized game
        skipping = False
        pending = [buffer[last:]]
        pending_size = len(pending[0])
        if start < last:
            yield buffer[start:last]
    if not pending:
        return
    buffer = b"".join(pending)
    start = buffer.find(_BOUNDARY) if skipping else 0
    if start >= 0 and start < len(buffer):
        yield buffer[start:]


def _tag(game: bytes, name: bytes, header_end: int) -> bytes | None:
    """Return a tag's raw value from a game's tag section, or None when absent."""
    needle = b"\n[" + name + b' "'
    start = game.find(needle, 0, header_end)
    if start < 0:
        prefix = name + b' "'
        if not game.startswith(prefix):
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


def filter_game(game: bytes, rules: GameFilter, stats: ScanStats) -> KeptGame | None:
    """Return the game's filter data if it passes, else count its drop reason and return None."""
    stats.games_read += 1
    header_end = game.find(b"\n\n")
    if header_end < 0:
        header_end = len(game)
    if not game.endswith(b"]", 0, game.find(b"\n") if b"\n" in game else len(game)):
        stats.drop("malformed")
        return None
    white = _rating(_tag(game, b"WhiteElo", header_end))
    black = _rating(_tag(game, b"BlackElo", header_end))
    if white is None or black is None:
        stats.drop("rating_missing")
        return None
    if white < rules.min_rating or black < rules.min_rating:
        stats.drop("rating_low")
        return None
    time_control = _tag(game, b"TimeControl", header_end)
    speed = speed_of(time_control) if time_control is not None else None
    if speed is None:
        stats.drop("time_control")
        return None
    if speed not in rules.speeds:
        stats.drop("speed")
        return None
    if not rules.allow_bots and (
        _tag(game, b"WhiteTitle", header_end) == b"BOT"
        or _tag(game, b"BlackTitle", header_end) == b"BOT"
    ):
        stats.drop("bot")
        return None
    variant = _tag(game, b"Variant", header_end)
    fen = None
    if rules.variant == "standard":
        if variant not in (None, b"Standard") or _tag(game, b"FEN", header_end) is not None:
            stats.drop("variant")
            return None
    else:
        if variant is None or variant.lower() not in (b"chess960", b"fischerandom"):
            stats.drop("variant")
            return None
        raw_fen = _tag(game, b"FEN", header_end)  # absent for start position 518
        fen = raw_fen.decode("ascii", "replace") if raw_fen is not None else None
    result = RESULTS.get(_tag(game, b"Result", header_end) or b"")
    if result is None:
        stats.drop("result")
        return None
    movetext = game[header_end + 2 :] if header_end < len(game) else b""
    return KeptGame(white, black, speed, result, fen, movetext)


def kept_games(games: Iterable[bytes], rules: GameFilter, stats: ScanStats) -> Iterator[KeptGame]:
    """Yield the games that pass the filter, counting the others under their reasons."""
    for game in games:
        kept = filter_game(game, rules, stats)
        if kept is not None:
            yield kept


def below_pattern(limit: int) -> str:
    """Return a regex matching the decimal digit strings whose value is below limit (>= 1)."""
    digits = str(limit)
    alternatives = [rf"\d{{1,{len(digits) - 1}}}"] if len(digits) > 1 else []
    for index, digit in enumerate(digits):
        if digit != "0":
            rest = len(digits) - index - 1
            alternatives.append(
                digits[:index] + f"[0-{int(digit) - 1}]" + (rf"\d{{{rest}}}" if rest else "")
            )
    return "0*(?:" + "|".join(alternatives) + ")"


@lru_cache(maxsize=8)
def _low_rated_game(min_rating: int) -> re.Pattern[bytes] | None:
    """Return a regex for a whole game (boundary included) that filter_game drops as rating_low.

    From the boundary: tag lines that end in "]" and are not ratings, then WhiteElo and
    BlackElo in a row with one below min_rating, then the game's other lines up to the next
    boundary. The atomic group never backtracks into the tag lines.
    """
    if min_rating <= 0:
        return None
    low = below_pattern(min_rating)
    return re.compile(
        (
            r'\n\n\[(?>(?:(?!WhiteElo "|BlackElo ")[^\n]*+(?<=\])\n\[)*)'
            rf'WhiteElo "(?:{low}"\]\n\[BlackElo "\d+|\d+"\]\n\[BlackElo "{low})"\]'
            r"(?:\n(?!\n\[)[^\n]*+)*+"
        ).encode()
    )


def kept_games_in_blocks(
    blocks: Iterable[bytes],
    rules: GameFilter,
    stats: ScanStats,
    max_game_bytes: int = MAX_GAME_BYTES,
) -> Iterator[KeptGame]:
    """Yield the games of blocks (from game_blocks) that pass the filter, counting the others.

    Each game is decided as filter_game decides it. Most games of a dump fail on ratings: one
    regex pass over the block counts those and cuts them out (each becomes a NUL byte), and
    only the games left are looked at one by one.
    """
    low_rated = _low_rated_game(rules.min_rating)
    for block in blocks:
        if low_rated is None or len(block) > max_game_bytes + 3 or b"\x00" in block:
            yield from kept_games(_block_games(block, stats, max_game_bytes), rules, stats)
            continue
        rest, low = low_rated.subn(b"\x00", block)
        if low:
            stats.games_read += low
            stats.dropped["rating_low"] += low
        # The games left start at the boundaries left; each ends at the next one, or at the
        # NUL byte that stands for a game cut out.
        find = rest.find
        size = len(rest)
        start = find(_BOUNDARY)
        while start >= 0:
            game = start + 3
            following = find(_BOUNDARY, game)
            stop = following if following >= 0 else size
            cut = find(b"\x00", game, stop)
            piece = rest[game : cut if cut >= 0 else stop]
            if piece and not piece.isspace():
                kept = filter_game(piece, rules, stats)
                if kept is not None:
                    yield kept
            start = following


_COMMENT = re.compile(rb"\{[^}]*(?:\}|\Z)|;[^\n]*")
_VARIATION = re.compile(rb"\([^()]*\)")
_RESULT_TOKENS = frozenset({b"1-0", b"0-1", b"1/2-1/2", b"*"})
_DIGITS = b"0123456789"


def san_tokens(movetext: bytes, limit: int | None = None) -> list[bytes]:
    """Return the mainline SAN tokens of a movetext (comments, variations, NAGs removed)."""
    text = _COMMENT.sub(b" ", movetext) if b"{" in movetext or b";" in movetext else movetext
    while b"(" in text:
        stripped = _VARIATION.sub(b" ", text)
        if stripped == text:
            break
        text = stripped
    tokens: list[bytes] = []
    for token in text.split():
        if token[:1].isdigit():  # a move number ("12." or "12...") before a move, or a result
            move = token.lstrip(_DIGITS)
            if move[:1] == b".":
                token = move.lstrip(b".")
                if not token:
                    continue
        if token[:1] == b"$" or token in _RESULT_TOKENS:
            continue
        token = token.rstrip(b"!?")
        if not token:
            continue
        tokens.append(token)
        if limit is not None and len(tokens) >= limit:
            break
    return tokens
