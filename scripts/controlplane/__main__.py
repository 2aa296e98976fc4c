"""`python -m controlplane ...` (what scripts/control-plane runs)."""
import sys

from controlplane.cli import main

sys.exit(main(sys.argv[1:]))
