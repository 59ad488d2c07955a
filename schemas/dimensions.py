"""The dimensions move statistics are kept by: speed categories and rating bands."""

#: Speed categories in Lichess's order, slowest last.
SPEEDS = ("ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence")

#: Width of a rating band: the lower-rated player's rating floored to this step.
RATING_BAND_WIDTH = 100
