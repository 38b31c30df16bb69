"""The explorer on a simulated cluster whose GPU capacity changes: nodes, taints, full pools.

:class:`ClusterExplorer` is :class:`~.machine.Explorer` on a simulated cluster with the nodes
of :data:`~.capacity.LAYOUT` (20 GPUs), every spec a GPU server (``spec.gpu`` 0..8), and the
actions of a cluster admin: a node joins or leaves, is tainted ``NoSchedule`` or
``NoExecute`` and untainted, cordoned, uncordoned and drained, an image change arrives while
every GPU is held (the rolling update that cannot surge), a scale past what the nodes hold.
Another workload fills a node's free GPUs and releases them. Specs carry ``spec.rollout``
(:data:`ROLLOUTS`: Surge, Replace, Auto, with maxUnavailable counts and percentages), a rule
sets it on its own, and templates change while a rollout runs (:meth:`ClusterExplorer.rollover`).
The step-by-step watch of unavailable pods (:mod:`.rollouts`) is on. Its failures print as
``state = ClusterExplorer()`` lines, replayed like the base machine's.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from inference_operator.sim.explore.capacity import LAYOUT, NODE_NAMES, TAINT_EFFECTS, TAINT_KEYS
from inference_operator.sim.explore.invariants import ENFORCED_INVARIANTS
from inference_operator.sim.explore.machine import IMAGES, MODEL, NAME, OPTIONAL_FIELDS, Explorer, action

__all__ = ["GPU_SPECS", "ROLLOUTS", "CIClusterExplorer", "ClusterExplorer"]

UNAVAILABLE: Final = st.sampled_from([0, 1, 2, "25%", "50%", "100%"])
ROLLOUTS: Final = st.one_of(
    st.fixed_dictionaries({"strategy": st.just("Auto")}, optional={"maxUnavailable": UNAVAILABLE}),
    st.fixed_dictionaries({"strategy": st.just("Replace")}, optional={"maxUnavailable": UNAVAILABLE.filter(bool)}),
    st.fixed_dictionaries(
        {"strategy": st.just("Surge")},
        optional={"maxUnavailable": UNAVAILABLE, "maxSurge": st.sampled_from([1, "25%", "100%"])},
    ),
)
"""Valid ``spec.rollout`` values, Auto first (what the rollout invariants are about): the
percentages round, as the Deployment controller's do; Replace's 0 is refused by the CRD."""

GPU_SPECS: Final = st.fixed_dictionaries(
    {
        "image": st.sampled_from(IMAGES),
        "model": st.just(MODEL),
        "replicas": st.integers(0, 3),
        "gpu": st.integers(0, 8),
        "progressDeadlineSeconds": st.just(60),
    },
    optional={**{k: v for k, v in OPTIONAL_FIELDS.items() if k != "gpu"}, "rollout": ROLLOUTS},
)
"""Valid specs of GPU servers; the optional fields may be absent, as in the base machine's."""
NODE: Final = st.sampled_from(NODE_NAMES)


class ClusterExplorer(Explorer):
    """Explorer's actions, and the cluster admin's, on a simulated cluster of GPU nodes."""

    node_layout: ClassVar = LAYOUT
    watch_rollouts: ClassVar[bool] = True
    observed: ClassVar[dict[str, int]] = {}

    @initialize(name=NAME, spec=GPU_SPECS)
    @action
    def create(self, name: str, spec: dict[str, Any]) -> None:
        """Every sequence starts with one GPU InferenceService."""
        self.world.apply(name, spec)

    @rule(name=NAME, spec=GPU_SPECS)
    @action
    def apply(self, name: str, spec: dict[str, Any]) -> None:
        self.world.apply(name, spec)

    # -- the cluster admin -------------------------------------------------------------------

    @rule(node=NODE)
    @action
    def add_node(self, node: str) -> None:
        self.world.nodes.add(node)

    @rule(node=NODE)
    @action
    def remove_node(self, node: str) -> None:
        """The node goes; the pod garbage collector removes its pods 40 s later."""
        self.world.nodes.remove(node)

    @rule(node=NODE, key=st.sampled_from(TAINT_KEYS), effect=st.sampled_from(TAINT_EFFECTS))
    @action
    def taint_node(self, node: str, key: str, effect: str) -> None:
        self.world.nodes.taint(node, key, effect)

    @rule(node=NODE)
    @action
    def untaint_node(self, node: str) -> None:
        self.world.nodes.untaint(node)

    @rule(node=NODE)
    @action
    def cordon_node(self, node: str) -> None:
        self.world.nodes.cordon(node)

    @rule(node=NODE)
    @action
    def uncordon_node(self, node: str) -> None:
        self.world.nodes.uncordon(node)

    @rule(node=NODE)
    @action
    def drain_node(self, node: str) -> None:
        """``kubectl drain``: cordoned, its pods deleted; controllers place theirs elsewhere."""
        self.world.nodes.drain(node)

    # -- another workload --------------------------------------------------------------------

    @rule(node=NODE)
    @action
    def fill_node(self, node: str) -> None:
        """A training job takes every GPU the node has free now (a pod with no owner)."""
        self.world.nodes.fill(node)

    @rule(node=NODE)
    @action
    def release_node(self, node: str) -> None:
        """The training jobs pinned to the node end: their GPUs come free."""
        self.world.nodes.release(node)

    # -- rollouts ----------------------------------------------------------------------------

    @rule(name=NAME, rollout=st.none() | ROLLOUTS)
    @action
    def set_rollout(self, name: str, rollout: dict[str, Any] | None) -> None:
        """Set ``spec.rollout`` (None: remove it), template unchanged."""
        self.world.edit(name, "rollout", rollout)

    @rule(name=NAME, steps=st.sampled_from([1, 3, 10, 30]), rollout=st.none() | ROLLOUTS)
    @action
    def rollover(self, name: str, steps: int, rollout: dict[str, Any] | None) -> None:
        """An image change, a few steps of its rollout, then a second template change (the
        args) on top, with ``rollout`` set first unless None: the Deployment rolls over to a
        third template while pods of two run."""
        world = self.world
        current = world.isvc(name)
        if current is None:
            return
        if rollout is not None:
            world.edit(name, "rollout", rollout)
        image = current["spec"].get("image")
        world.edit(name, "image", IMAGES[1] if image == IMAGES[0] else IMAGES[0])
        world.run(steps)
        args = (world.isvc(name) or {}).get("spec", {}).get("args")
        world.edit(name, "args", None if args else ["--enforce-eager"])

    # -- users on a full pool ----------------------------------------------------------------

    @rule(name=NAME)
    @action
    def full_pool_rollout(self, name: str) -> None:
        """Fill every 8-GPU node with one replica of ``name``, let the cluster settle, then change
        the image: the new pods find no free GPU while the old ones hold them all. Settling (not
        a mid-flight run) also ends informer lag, as time would, and starts a new window for the
        invariants that count per settle: over a lost DELETED event, a long run only showed the
        cost of a ghost (the operator re-applies a gone object's children, the garbage
        collector removes them, each removal wakes it), and repeated fills added up the
        backoff retries of one conflict past the reconcile bound."""
        world = self.world
        current = world.isvc(name)
        spec = dict((current or {}).get("spec") or {"image": IMAGES[0], "model": MODEL})
        spec.update(gpu=8, replicas=max(1, world.nodes.full_gpu_nodes(8)), progressDeadlineSeconds=60)
        world.apply(name, spec)
        self.settle()  # the pool fills and comes to rest, the invariants checked there too
        world.edit(name, "image", IMAGES[1] if spec["image"] == IMAGES[0] else IMAGES[0])

    @rule(name=NAME, rollout=ROLLOUTS, gpu=st.sampled_from([4, 8]))
    @action
    def full_pool_rollout_with(self, name: str, rollout: dict[str, Any], gpu: int) -> None:
        """:meth:`full_pool_rollout` with ``spec.rollout`` set and ``gpu`` per replica: as
        many replicas as the nodes with that many GPUs hold, settled, then the image changes."""
        world = self.world
        current = world.isvc(name)
        spec = dict((current or {}).get("spec") or {"image": IMAGES[0], "model": MODEL})
        replicas = max(1, sum(n // gpu for n in world.nodes.gpus_by_node()))
        spec.update(gpu=gpu, replicas=replicas, progressDeadlineSeconds=60, rollout=rollout)
        world.apply(name, spec)
        self.settle()
        world.edit(name, "image", IMAGES[1] if spec["image"] == IMAGES[0] else IMAGES[0])

    @rule(name=NAME)
    @action
    def scale_beyond_capacity(self, name: str) -> None:
        """Ask for one replica more than every GPU of every node could hold."""
        current = self.world.isvc(name)
        if current is None:
            return
        gpu = int(current["spec"].get("gpu") or 1)
        replicas = self.world.nodes.total_gpus() // gpu + 1
        self.world.edit(name, "gpu", gpu)
        self.world.scale(name, replicas)


class CIClusterExplorer(ClusterExplorer):
    """The cluster explorer as ``make test`` runs it: only the invariants that hold today."""

    enforces: ClassVar[frozenset[str]] = ENFORCED_INVARIANTS
    observed: ClassVar[dict[str, int]] = {}
