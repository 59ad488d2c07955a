"""chesspipe's UCI engine: plays Polyglot books, probes Syzygy tablebases, plays Chess960."""
