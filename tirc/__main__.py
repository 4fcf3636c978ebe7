"""`python -m tirc`, the same as the `tirc` command."""

import sys

from tirc.cli.main import main

sys.exit(main())
