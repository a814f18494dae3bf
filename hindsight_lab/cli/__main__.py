"""``python -m hindsight_lab.cli``: the same as the ``hindsight-lab`` console script."""

import sys

from . import main

sys.exit(main())
