"""Endgame training data: positions, Syzygy labels (WDL, DTZ, best move) and their export."""
