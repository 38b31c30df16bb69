"""What the two controllers that act on all the pods of one node share: keys, caches, the pods.

The pod garbage collector (a node deleted) and the taint eviction controller (a node tainted
NoExecute) both take a node name as their key and look through the pod cache for the pods
bound to it; this base holds that, so each keeps only its own decision.
"""

from __future__ import annotations

from inference_operator.core.objects import Obj, key_of
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster import podstate
from inference_operator.sim.informer import SharedInformer

__all__ = ["NodeSweep", "node_key"]


def node_key(name: str) -> str:
    """The workqueue key of a (cluster-scoped) Node."""
    return key_of("", name)


class NodeSweep:
    """A controller keyed by node name, acting on the pods bound to that node."""

    def __init__(self, *, api: FakeApiServer, clock: FakeClock, nodes: SharedInformer, pods: SharedInformer) -> None:
        self.api = api
        self.clock = clock
        self.nodes = nodes
        self.pods = pods

    def pods_on(self, node: str) -> list[Obj]:
        """The cached pods bound to ``node``, finished ones included."""
        return [pod for pod in self.pods.list() if podstate.node_of(pod) == node]
