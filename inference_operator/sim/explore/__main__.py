"""``python -m inference_operator.sim.explore``: the ``make explore`` entry point."""

import sys

from .runner import main

sys.exit(main())
