"""``python -m regions.cli``: the operator's command line (``ops/lb``)."""

import sys

from regions.cli import main

sys.exit(main())
