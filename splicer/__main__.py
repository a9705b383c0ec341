"""`python -m splicer` is the same as the `splicer` command."""
from splicer.cli import main

raise SystemExit(main())
