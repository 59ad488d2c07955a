"""Movetext at byte level: the SAN tokens of a game, without comments or variations."""

from __future__ import annotations

import re

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


def has_moves(movetext: bytes) -> bool:
    """Whether a movetext holds a move: a game without one is dropped as `no_moves`, by every
    command that reads kept games, so that "kept" means the same games everywhere."""
    return bool(san_tokens(movetext, 1))
