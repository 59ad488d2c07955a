"""Splitting PGN text into games and reading the few headers the filter needs, at byte level.

Games that fail the filter never reach python-chess: the scanner looks at raw bytes only.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator

from pipelines.games import _scan
from pipelines.games.game_filter import (
    GameFilter,
    KeptGame,
    ScanStats,
    add_compiled_counts,
    compiled_rules,
    filter_game,
)
from pipelines.progress import ProgressCallback

#: Games start after a blank line, with a tag. Splitting consumes the leading "[".
BOUNDARY = b"\n\n["

#: Longest game (headers and movetext) kept; longer ones are dropped as "oversized".
MAX_GAME_BYTES = 4 << 20

#: How a game's movetext ends: its result (PGN's game termination markers).
_TERMINATORS = (b"1-0", b"0-1", b"1/2-1/2", b"*")

#: Longest brace comment that may hold a blank line before "[" (longer: a stray "{").
COMMENT_REACH = 1 << 16

#: Outside comments: a comment's start, a rest-of-line comment, or a tag line (braces in it are
#: text).
_OUTSIDE_COMMENT = re.compile(rb"\{|;[^\n]*|\n\[[^\n]*")

#: A tag pair's start, after the "[" a split consumes.
_TAG_START = re.compile(rb"[A-Za-z0-9_]+ \"")


def split_games(
    chunks: Iterable[bytes],
    stats: ScanStats,
    max_game_bytes: int = MAX_GAME_BYTES,
    *,
    check_end: bool = False,
) -> Iterator[bytes]:
    """Yield each game's bytes without its leading "[", from chunks of PGN text.

    With `check_end`, a last game with no result is left out (see game_blocks).
    """
    for block in game_blocks(chunks, stats, max_game_bytes, check_end=check_end):
        yield from _block_games(block, stats, max_game_bytes)


def _block_games(block: bytes, stats: ScanStats, max_game_bytes: int) -> list[bytes]:
    """Return the games of a block (from game_blocks), counting oversized ones as dropped."""
    pieces = block.split(BOUNDARY)
    if pieces and max(map(len, pieces)) > max_game_bytes:
        oversized = [len(piece) for piece in pieces if len(piece) > max_game_bytes]
        stats.games_read += len(oversized)
        stats.dropped["oversized"] += len(oversized)
        stats.unreadable_bytes += sum(oversized)
    return [p for p in pieces if p and len(p) <= max_game_bytes and not p.isspace()]


def game_blocks(
    chunks: Iterable[bytes],
    stats: ScanStats,
    max_game_bytes: int = MAX_GAME_BYTES,
    *,
    check_end: bool = False,
) -> Iterator[bytes]:
    """Yield blocks of whole games from chunks of PGN text, each game after a blank line.

    Every block starts with a game boundary (a blank line, then "[") and holds only whole games.
    Games longer than `max_game_bytes` whose end is not in sight are skipped and counted as
    "oversized".

    With `check_end` (the chunks are the end of a source), text that does not end with a
    result (1-0, 0-1, 1/2-1/2 or *) ends inside a game: the source was cut. Its last game is
    then left out, counted as "truncated" (or "malformed" when it has no tags), and
    `stats.ends_inside_game` is set; the caller decides whether that fails the run.
    """
    cutter = _BlockCutter(stats, max_game_bytes)
    for chunk in chunks:
        block = cutter.feed(chunk)
        if block is not None:
            yield block
    block = cutter.finish(check_end=check_end)
    if block is not None:
        yield block


class _BlockCutter:
    """game_blocks's state between chunks: the text held back (the last game, which the next
    chunk may finish), whether an oversized game is being skipped, the line ends, and the
    text's last bytes."""

    def __init__(self, stats: ScanStats, max_game_bytes: int) -> None:
        self.stats = stats
        self.max_game_bytes = max_game_bytes
        #: Text not yet given out, from the last game boundary seen on.
        self.pending: list[bytes] = []
        self.pending_size = 0
        #: Inside an oversized game, waiting for the next boundary.
        self.skipping = False
        #: Whether the text's line ends are CRLF (None: no text yet).
        self.crlf: bool | None = None
        #: No text yet, but for white space.
        self.first = True
        #: The text's last bytes.
        self.ending = b""

    def feed(self, chunk: bytes) -> bytes | None:
        """Take the next chunk of text; return a block of whole games if one is complete."""
        chunk = self._normalized(chunk)
        if not chunk:
            return None
        before = self.ending[-2:]
        self.ending = (self.ending + chunk[-16:])[-16:]
        self.pending.append(chunk)
        self.pending_size += len(chunk)
        # No boundary in this chunk, nor across its start (the pending game's own boundary is
        # not a new one): nothing to cut.
        if (
            BOUNDARY not in chunk
            and self.pending_size < self.max_game_bytes + len(chunk)
            and BOUNDARY not in before + chunk[:2]
        ):
            if self.pending_size > self.max_game_bytes and not self.skipping:
                self._skip(self.pending_size - len(chunk))
            if self.skipping:
                self.stats.unreadable_bytes += len(chunk)
                self._hold(self.pending[-1][-2:])
            return None
        buffer = b"".join(self.pending)
        hold = len(buffer)
        if not self.skipping:  # (the state of a skipped game's comments is unknown)
            buffer, hold = _without_boundaries_in_comments(buffer, at_end=False)
        last = buffer.rfind(BOUNDARY, 0, hold)
        if last <= 0 and hold > self.max_game_bytes and not self.skipping:
            # One game, held back by a comment's brace, is already too long: skip the rest.
            self._skip(len(buffer))
            self._hold(buffer[-2:])
            return None
        if last < 0:
            self._hold(buffer)
            return None
        start = buffer.find(BOUNDARY) if self.skipping else 0  # skip the rest of an oversized game
        self.skipping = False
        self._hold(buffer[last:])
        return buffer[start:last] if start < last else None

    def finish(self, *, check_end: bool) -> bytes | None:
        """Return the last block of whole games, once the text has ended (see game_blocks)."""
        if not self.pending:
            return None
        stats = self.stats
        buffer = b"".join(self.pending)
        if not self.skipping:
            buffer, _ = _without_boundaries_in_comments(buffer, at_end=True)
        start = buffer.find(BOUNDARY) if self.skipping else 0
        ended = self.ending.rstrip().endswith(_TERMINATORS)
        if start < 0 or start >= len(buffer):
            if check_end and self.skipping and not ended:
                stats.ends_inside_game = True
            return None
        if check_end:
            # The last game (the text may hold a few, held back by a brace) needs a result.
            lastgame = max(start, buffer.rfind(BOUNDARY, start))
            final = buffer[lastgame + 3 :]
            if final.strip() and (not ended or _open_comment(buffer[lastgame:])):
                # Left out: whatever was before it is whole.
                stats.ends_inside_game = True
                stats.games_read += 1
                if _TAG_START.match(final):
                    stats.drop("truncated")
                else:
                    stats.drop("malformed")
                    stats.unreadable_bytes += len(final)
                return buffer[start:lastgame] if start < lastgame else None
        return buffer[start:]

    def _normalized(self, chunk: bytes) -> bytes:
        """Return a chunk counted, with LF line ends, the text's first chunk from its first
        game boundary (empty: nothing to take)."""
        if not chunk:
            return chunk
        self.stats.pgn_bytes += len(chunk)
        if self.crlf is None:
            self.crlf = self.stats.crlf = b"\r\n" in chunk[:65536]
        if self.crlf:
            chunk = chunk.replace(b"\r\n", b"\n")
        if self.first:
            chunk = chunk.lstrip(b"\n\r\t \xef\xbb\xbf")
            if not chunk:
                return chunk
            self.first = False
            # Text before the first tag is read as a game with no tags.
            chunk = (b"\n\n" if chunk[:1] == b"[" else BOUNDARY) + chunk
        return chunk

    def _skip(self, unreadable: int) -> None:
        """Start skipping an oversized game, `unreadable` of its bytes seen so far."""
        self.skipping = True
        self.stats.games_read += 1
        self.stats.drop("oversized")
        self.stats.unreadable_bytes += unreadable

    def _hold(self, text: bytes) -> None:
        """Hold back `text` alone, for the chunks to come."""
        self.pending = [text]
        self.pending_size = len(text)


def _without_boundaries_in_comments(buffer: bytes, at_end: bool) -> tuple[bytes, int]:
    """Return PGN text whose blank lines before "[" inside brace comments no longer split games.

    A comment may hold a blank line followed by "[Event ...": python-chess reads it as comment
    text, not as the next game. Such blank lines lose their second newline (it becomes a space:
    same length, same comment for anything that reads moves), so that splitting at blank lines
    before "[" agrees with python-chess. The text must start outside a comment.

    A "{" not closed within COMMENT_REACH bytes (or before the end, `at_end`) is taken as a
    stray brace, not a comment: one stray "{" does not swallow the rest of a month. Also
    returned: where an unclosed "{" nearer the end than that starts (the text from there
    cannot be cut yet), or len(buffer). Text with no comment across a line end (almost all) is
    returned as it is.
    """
    size = len(buffer)
    # A comment holding a blank line has a "{" followed by a line end with no brace between.
    if b"{" not in buffer or not _scan.comments_span_lines(buffer):
        return buffer, size
    out = bytearray(buffer)
    position = 0
    while (token := _OUTSIDE_COMMENT.search(buffer, position)) is not None:
        position = token.end()
        if token.group() != b"{":
            continue
        close = buffer.find(b"}", position, position + COMMENT_REACH)
        if close < 0:
            if not at_end and size - position < COMMENT_REACH:
                return bytes(out), token.start()
            continue  # a stray brace
        inside = buffer.find(BOUNDARY, position, close)
        while inside >= 0:
            out[inside + 1] = 0x20
            inside = buffer.find(BOUNDARY, inside + 3, close)
        position = close + 1
    return bytes(out), size


def _open_comment(text: bytes) -> bool:
    """Tell whether PGN text (from a boundary on) ends inside a brace comment."""
    position = 0
    while (token := _OUTSIDE_COMMENT.search(text, position)) is not None:
        position = token.end()
        if token.group() == b"{":
            close = text.find(b"}", position)
            if close < 0:
                return True
            position = close + 1
    return False


def kept_games(
    games: Iterable[bytes],
    rules: GameFilter,
    stats: ScanStats,
    *,
    keep: Callable[[bytes], object] | None = None,
) -> Iterator[KeptGame]:
    """Yield the games that pass the filter, counting the others under their reasons.

    `keep` is called with the text of each game that passes, before it is yielded.
    """
    for game in games:
        kept = filter_game(game, rules, stats)
        if kept is not None:
            if keep is not None:
                keep(game)
            yield kept


def kept_games_in_blocks(
    blocks: Iterable[bytes],
    rules: GameFilter,
    stats: ScanStats,
    max_game_bytes: int = MAX_GAME_BYTES,
    *,
    keep: Callable[[bytes], object] | None = None,
) -> Iterator[KeptGame]:
    """Yield the games of blocks (from game_blocks) that pass the filter, counting the others.

    Each game is decided as filter_game decides it: a block's games are split and decided by
    compiled code (`_scan.c`) in one call, which hands back, in their places, the games
    whose tag section it does not read (filter_game decides those). `keep` is called with the
    text of each game that passes (without its leading "["), before it is yielded.
    """
    compiled = compiled_rules(rules)
    with_text = keep is not None
    for block in blocks:
        games, counts = _scan.scan_block(block, max_game_bytes, compiled, with_text)
        add_compiled_counts(stats, counts)
        for game in games:
            if type(game) is bytes:  # handed back
                kept = filter_game(game, rules, stats)
                if kept is None:
                    continue
                if keep is not None:
                    keep(game)
                yield kept
            elif keep is not None:
                kept, text = game
                keep(text)
                yield kept
            else:
                yield game


#: How often a reader of games tells its progress callback (seconds).
REPORT_EVERY = 0.5


def reported_blocks(
    blocks: Iterator[bytes],
    stats: ScanStats,
    progress: ProgressCallback | None,
    started: float,
    bytes_read: Callable[[], int],
    total: int | None,
) -> Iterator[bytes]:
    """Pass blocks of games through, telling `progress` (when there is one) the bytes read of
    `total` and the games of `stats`, every REPORT_EVERY seconds, `started` the run's start
    (time.monotonic)."""
    if progress is None:
        yield from blocks
        return
    last = 0.0
    for block in blocks:
        yield block  # report once the block is counted, so games match the bytes read
        now = time.monotonic()
        if now - last >= REPORT_EVERY:
            last = now
            progress(stats.progress(bytes_read(), total, now - started))
