"""chesspipe's work: sources, PGN scanning, move counting, books, endgame labels, exports."""

__version__ = "0.1.0"
