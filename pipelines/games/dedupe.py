"""Duplicate games: a game whose main line repeats one already kept (ingest's dedupe), as
`pgn-extract -D` drops them.

Collections overlap (the same game in two files, in two weekly issues of a magazine): the main
line is what makes a game the same, whatever its tags, comments and sidelines. Memory: one
64-bit hash of the main line per game kept.
"""

from __future__ import annotations

import hashlib

from pipelines.games.game_filter import KeptGame
from schemas.movetext import san_tokens


class MainLines:
    """The main lines of the games kept so far, as 64-bit hashes."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()

    def __len__(self) -> int:
        return len(self._seen)

    def repeats(self, game: KeptGame) -> bool:
        """Tell whether the game's main line is one already seen; remember it if not."""
        digest = main_line_hash(game)
        if digest in self._seen:
            return True
        self._seen.add(digest)
        return False


def main_line_hash(game: KeptGame) -> bytes:
    """Return 8 bytes that stand for a game's start position and main line: its SAN moves as
    python-chess's reader finds them (comments, sidelines, NAGs, check signs left out), with
    castling written with zeros and promotions with or without "=" read alike."""
    tokens = san_tokens(game.movetext)
    line = b" ".join(_NORMAL.get(token) or token.replace(b"=", b"") for token in tokens)
    start = game.fen.encode() if game.fen is not None else b""
    return hashlib.blake2b(start + b"\n" + line, digest_size=8).digest()


#: SAN tokens written another way than python-chess writes them.
_NORMAL = {b"0-0": b"O-O", b"0-0-0": b"O-O-O"}
