"""The fault-injecting explorer: find the operator's next bugs before users do.

Research tools that perturb what a controller sees (Sieve, Acto) find most operator bugs on the
unhappy path. The simulator is deterministic and in-process, so this package does the same,
cheaply and reproducibly: hypothesis generates sequences of actions (users, other actors, a
failing load balancer, API errors, crashes, informer lag), the simulated cluster settles, and
the invariants (:mod:`.invariants`) are checked; a failure is shrunk and printed as ready-to-paste code.

- :mod:`.world`: the simulation with the fault wrappers wired in, and every action on it;
- :mod:`.observation`: what settling saw, the invariants' input;
- :mod:`.owned`: the fields the operator owns on a child, compared exactly;
- :mod:`.invariants`: what must hold at rest, and which invariants still wait for a fix;
- :mod:`.machine`: the hypothesis state machine (``Explorer``, ``CIExplorer``);
- :mod:`.capacity`, :mod:`.capacitymachine`: the same on a simulated cluster of GPU nodes, with
  the cluster admin's actions (nodes added, removed, tainted) and full pools (``ClusterExplorer``);
- :mod:`.scheduling`: the invariants about pods and GPUs; :mod:`.rollouts`: those about
  ``spec.rollout`` (an Auto rollout with room finishes, the bound on unavailable pods checked
  after every step, a blocked rollout explained with numbers); :mod:`.isvcs`, :mod:`.describe`: what
  the invariants and the failure reports read of the settled objects;
- :mod:`.runner`: seeded runs and the ``make explore`` command line.

Needs hypothesis (a development dependency); nothing in the operator imports this package.
"""

from inference_operator.sim.explore.capacitymachine import CIClusterExplorer, ClusterExplorer
from inference_operator.sim.explore.invariants import ENFORCED_INVARIANTS, INVARIANTS, PENDING_INVARIANTS
from inference_operator.sim.explore.machine import CIExplorer, Explorer, InvariantViolation
from inference_operator.sim.explore.world import World

__all__ = [
    "ENFORCED_INVARIANTS",
    "INVARIANTS",
    "PENDING_INVARIANTS",
    "CIClusterExplorer",
    "CIExplorer",
    "ClusterExplorer",
    "Explorer",
    "InvariantViolation",
    "World",
]
