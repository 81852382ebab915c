"""`python -m iterretgen_tui` runs the `iterretgen-chat` command."""

import sys

from .cli import main

sys.exit(main())
