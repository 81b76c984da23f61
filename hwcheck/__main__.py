"""`python -m hwcheck` runs the command line."""

import sys

from hwcheck.cli import main

sys.exit(main())
