"""`python -m minitvm VERB ...` and the `minitvm` console script: see minitvm/cli."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
