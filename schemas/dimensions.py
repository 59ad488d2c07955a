"""The dimensions move statistics are kept by: speed categories and rating bands."""

#: Width of a rating band: the lower-rated player's rating floored to this step.
RATING_BAND_WIDTH = 100
