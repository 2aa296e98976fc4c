"""`python -m vpolicy` runs the command line."""
import sys

from vpolicy.cli import main

sys.exit(main())
