"""``python -m inference_operator.sim.explore``: the ``make explore`` entry point."""

import sys

from inference_operator.sim.explore.runner import main

sys.exit(main())
