"""The bundled offline simulator: FakeApiServer, informers, a Deployment controller, a fake clock.

Deterministic and fast; the unit tests, the ``demo`` command and learners use it to watch the
same reconcile logic that runs on a real cluster.
"""

from inference_operator.sim.simulation import Simulation

__all__ = ["Simulation"]
