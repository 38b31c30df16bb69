"""``python -m inference_operator.lb.registry``: the registry's command line."""

import sys

from inference_operator.lb.registry.cli import main

sys.exit(main())
