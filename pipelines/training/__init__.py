"""Training files: .plain and chained .binpack records, converted, described, shuffled, mixed."""
