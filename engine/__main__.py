"""`python -m engine`: the UCI engine on stdin/stdout."""

from engine.uci import main

raise SystemExit(main())
