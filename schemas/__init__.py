"""Formats that cross a boundary: Parquet schemas, the Polyglot book layout, training records.

Producers (``pipelines``) and the consumer (``engine``) both import from here; this package
imports neither.
"""
