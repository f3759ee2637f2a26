"""`python -m workers.cli`: the `nodeflow` command without its console script (the dev stack and the
tests start the worker so)."""

import sys

from workers.cli.main import main

sys.exit(main())
