"""Opening suites for engine testing: popular exits from the statistics, judged by the
evaluation store, written as EPD or PGN for fastchess and cutechess-cli, checked, and pruned by
the matches played with them."""
