"""``python -m skmcal``: the command line (see :mod:`skmcal.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
