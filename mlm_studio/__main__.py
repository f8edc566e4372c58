"""`python -m mlm_studio` runs the command line (the GUI by default)."""

import sys

from mlm_studio.cli import main

if __name__ == "__main__":
    sys.exit(main())
