"""The `chesspipe` subcommands, one module each: `register(subparsers)` adds a parser whose
`handler` runs the command. Modules import heavy libraries inside their handlers only."""
