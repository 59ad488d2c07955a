"""Position search over the games the warehouse keeps (`chesspipe search`)."""
