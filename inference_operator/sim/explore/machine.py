"""The explorer as a hypothesis state machine: actions generated, run, shrunk, printed as code.

Each rule is one thing a user, another actor, the load balancer, the API server or the
operator's own process can do (see :mod:`.world`); ``settle`` lets the cluster quiesce and
checks the invariants (:mod:`.invariants`), and so does ``teardown`` at the end of every
sequence. When an enforced invariant breaks, hypothesis shrinks the sequence and prints it as
``state = Explorer()`` / ``state.apply(name='llama', spec={...})`` / ``state.teardown()`` lines:
paste them into a test function (``from inference_operator.sim.explore import Explorer``) and
the bug is a regression test. ``Explorer()`` enforces every invariant; ``CIExplorer`` only those
not waiting for a fix (:data:`~.invariants.PENDING_INVARIANTS`).

Rule arguments are plain literals (strings, numbers, dicts, None) so the printed steps are
valid Python as they stand.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Final, TypeVar, cast

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE
from inference_operator.sim.cluster.nodes import NodeShape
from inference_operator.sim.explore.invariants import ENFORCED_INVARIANTS, INVARIANTS, check
from inference_operator.sim.explore.observation import Observation
from inference_operator.sim.explore.world import World
from inference_operator.sim.faults import API_ERRORS, ApiErrorKind

__all__ = [
    "CHANGES",
    "IMAGES",
    "MODEL",
    "NAME",
    "NAMES",
    "OPTIONAL_FIELDS",
    "CIExplorer",
    "Explorer",
    "InvariantViolation",
    "action",
    "violation_type",
]

NAMES: Final = ("llama", "mistral", "llama-3.1-8b", "7b")
"""A small pool, so actions collide; the last two cannot name a Service (dots; a leading digit)."""
NAME: Final = st.one_of(st.just(NAMES[0]), st.sampled_from(NAMES))
"""A name from the pool, the first one about half the time: actions meet on one object more often."""
IMAGES: Final = ("vllm/vllm-openai:v0.6.3", "vllm/vllm-openai:v0.7.0")
MODEL: Final = "meta-llama/Llama-3.1-8B-Instruct"
CHILD_KINDS: Final = (DEPLOYMENT, SERVICE)
INFORMER_KINDS: Final = (KIND, DEPLOYMENT, SERVICE)

OPTIONAL_FIELDS: Final[dict[str, st.SearchStrategy[Any]]] = {
    "gpu": st.sampled_from([0, 1, 2, 12]),  # 12 fits no simulated node (8 GPUs each)
    "args": st.sampled_from([["--enforce-eager"], ["--max-model-len", "4096"]]),
    "env": st.sampled_from(
        [
            [{"name": "HF_HOME", "value": "/cache"}],
            [{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}, {"name": "HF_HOME", "value": "/cache"}],
        ]
    ),
    "nodeSelector": st.sampled_from([{"gpu": "a100"}, {"gpu": "h100", "zone": "a"}]),
    "tolerations": st.sampled_from([[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]]),
    "resources": st.sampled_from([{"requests": {"cpu": "4", "memory": "16Gi"}}]),
    "loadBalancer": st.sampled_from([{"enabled": False}, {"enabled": True}]),
}

SPECS: Final = st.fixed_dictionaries(
    {
        "image": st.sampled_from(IMAGES),
        "model": st.just(MODEL),
        "replicas": st.integers(0, 3),
        "progressDeadlineSeconds": st.just(60),
    },
    optional=OPTIONAL_FIELDS,
)
"""Valid specs; every optional field may be absent, so a new manifest removes fields."""

CHANGES: Final = st.one_of(
    st.tuples(st.just("image"), st.sampled_from(IMAGES)),
    st.tuples(st.just("replicas"), st.integers(-1, 3)),  # -1: an invalid spec written past admission
    *(st.tuples(st.just(k), st.none() | v) for k, v in OPTIONAL_FIELDS.items()),
)
"""One field changed, or removed (None)."""

INFORMER_PERTURBATIONS: Final = (
    "pause",
    "resume",
    "drop_first",
    "drop_last",
    "drop_every_other",
    "drop_all",
    "reorder",
    "relist",
)
FOREIGN_EDITS: Final = ("label", "owned_label", "annotation", "replicas", "container", "owner_reference", "delete")

F = TypeVar("F", bound=Callable[..., None])


class InvariantViolation(AssertionError):
    """Invariants broke after settling; the message lists each one with its violations."""

    def __init__(self, broken: dict[str, list[str]], cluster: str) -> None:
        self.broken = broken
        lines = ["invariants broken after settling:"]
        for name, violations in broken.items():
            lines.append(f"  {name}: {INVARIANTS[name]}")
            lines.extend(f"    - {v}" for v in violations[:8])
        lines.append("cluster:")
        lines.append(cluster)
        super().__init__("\n".join(lines))


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


_VIOLATION_TYPES: Final[dict[str, type[InvariantViolation]]] = {
    name: type(f"{_camel(name)}Violation", (InvariantViolation,), {"__module__": __name__}) for name in INVARIANTS
}


def violation_type(invariant: str) -> type[InvariantViolation]:
    """One exception class per invariant, so hypothesis tells the bugs apart and shrinks each."""
    return _VIOLATION_TYPES[invariant]


def action(fn: F) -> F:
    """Mark the machine broken when a step raises, so teardown does not mask the failure."""

    @functools.wraps(fn)
    def run(self: Explorer, *args: Any, **kwargs: Any) -> None:
        try:
            fn(self, *args, **kwargs)
        except BaseException:
            self.failed = True
            raise

    return cast(F, run)


class Explorer(RuleBasedStateMachine):
    """Actions on a simulated cluster running the operator, with invariants checked at rest."""

    enforces: ClassVar[frozenset[str]] = frozenset(INVARIANTS)
    """The invariants this machine enforces (a failure); the others are only recorded."""
    observed: ClassVar[dict[str, int]] = {}
    """How often each invariant broke, enforced or not, across every machine of this class."""
    node_layout: ClassVar[Sequence[NodeShape] | None] = None
    """The simulated cluster's nodes (None: the Simulation's default layout)."""
    watch_rollouts: ClassVar[bool] = False
    """Check the bound on unavailable pods of Replace and Auto rollouts after every step."""

    def __init__(self, invariants: Iterable[str] | None = None) -> None:
        super().__init__()
        self.enforced = frozenset(invariants) if invariants is not None else type(self).enforces
        unknown = self.enforced - frozenset(INVARIANTS)
        if unknown:
            raise ValueError(f"unknown invariants: {sorted(unknown)}")
        self.world = World(node_layout=type(self).node_layout, watch_rollouts=type(self).watch_rollouts)
        self.failed = False

    # -- users -------------------------------------------------------------------------------

    @initialize(name=NAME, spec=SPECS)
    @action
    def create(self, name: str, spec: dict[str, Any]) -> None:
        """Every sequence starts with one InferenceService."""
        self.world.apply(name, spec)

    @rule(name=NAME, spec=SPECS)
    @action
    def apply(self, name: str, spec: dict[str, Any]) -> None:
        """``kubectl apply`` of a whole manifest: create, or replace the spec (absent fields go)."""
        self.world.apply(name, spec)

    @rule(name=NAME, change=CHANGES)
    @action
    def edit(self, name: str, change: tuple[str, Any]) -> None:
        """Change one spec field, or remove it (None)."""
        self.world.edit(name, *change)

    @rule(name=NAME, enabled=st.booleans())
    @action
    def load_balancer(self, name: str, enabled: bool) -> None:
        """Turn registration on or off (spec.loadBalancer.enabled): the switch that decides
        whether a balancer record must exist, so it gets a rule of its own."""
        self.world.edit(name, "loadBalancer", {"enabled": enabled})

    @rule(name=NAME, replicas=st.integers(0, 3))
    @action
    def scale(self, name: str, replicas: int) -> None:
        self.world.scale(name, replicas)

    @rule(name=NAME)
    @action
    def delete(self, name: str) -> None:
        self.world.delete(name)

    # -- other actors ------------------------------------------------------------------------

    @rule(kind=st.sampled_from(CHILD_KINDS), name=NAME, edit=st.sampled_from(FOREIGN_EDITS))
    @action
    def foreign_edit(self, kind: str, name: str, edit: str) -> None:
        """Another actor edits (or deletes) a child."""
        self.world.foreign_edit(kind, name, edit)

    @rule(kind=st.sampled_from(CHILD_KINDS), name=NAME)
    @action
    def foreign_child(self, kind: str, name: str) -> None:
        """Someone else's same-named Deployment or Service, made before the InferenceService."""
        self.world.foreign_child(kind, name)

    # -- the load balancer -------------------------------------------------------------------

    @rule(name=st.none() | NAME)
    @action
    def lb_forget(self, name: str | None) -> None:
        """The balancer loses one record, or (None) restarts empty."""
        if name is None:
            self.world.lb_restart_empty()
        else:
            self.world.lb_lose(name)

    @rule(n=st.integers(1, 4), mode=st.sampled_from(["fail", "hang", "hang_applied"]))
    @action
    def lb_outage(self, n: int, mode: str) -> None:
        """The next ``n`` balancer calls fail at once, or hang and time out (done, or not)."""
        if mode == "fail":
            self.world.lb_fail(n)
        else:
            self.world.lb_hang(n, applied=mode == "hang_applied")

    # -- the API server ----------------------------------------------------------------------

    @rule(
        verb=st.sampled_from([None, "create", "patch", "update_status", "apply", "delete"]),
        kind=st.sampled_from([None, KIND, DEPLOYMENT, SERVICE]),
        error=st.sampled_from(API_ERRORS),
        times=st.none() | st.integers(1, 4),
        applied=st.booleans(),
    )
    @action
    def api_fault(
        self, verb: str | None, kind: str | None, error: ApiErrorKind, times: int | None, applied: bool
    ) -> None:
        """The operator's next ``times`` matching writes fail (None: until healed, for the
        children only: a missing RBAC rule, an admission policy); a timeout may be applied."""
        if times is None and kind not in CHILD_KINDS:
            times = 4
        self.world.api_fault(verb, kind, error, times, applied)

    @rule(kind=st.sampled_from([None, KIND, DEPLOYMENT, SERVICE]))
    @action
    def api_heal(self, kind: str | None) -> None:
        """The faults on writes of ``kind`` (None: all) are gone: RBAC fixed, policy relaxed."""
        self.world.heal_api(kind)

    # -- the operator process ----------------------------------------------------------------

    @rule(steps=st.sampled_from([1, 2, 3, 5, 10, 30]))
    @action
    def run(self, steps: int) -> None:
        """Let the cluster and the operator take a few steps (mid-flight, not to quiescence)."""
        self.world.run(steps)

    @rule(after_writes=st.none() | st.integers(1, 6))
    @action
    def crash(self, after_writes: int | None) -> None:
        """The operator dies now (None) or right after its N-th next write, and restarts."""
        if after_writes is None:
            self.world.restart()
        else:
            self.world.crash_after(after_writes)

    @rule(kind=st.sampled_from(INFORMER_KINDS), what=st.sampled_from(INFORMER_PERTURBATIONS))
    @action
    def informer(self, kind: str, what: str) -> None:
        """Lag (pause, resume), lose or reorder buffered events, or re-list one informer."""
        world = self.world
        if what == "pause":
            world.pause_informer(kind)
        elif what == "resume":
            world.resume_informer(kind)
        elif what == "reorder":
            world.reorder_events(kind)
        elif what == "relist":
            world.relist(kind)
        else:
            world.drop_events(kind, what.removeprefix("drop_"))

    @rule(seconds=st.sampled_from([1, 5, 30, 300, 3600]))
    @action
    def jump_clock(self, seconds: int) -> None:
        self.world.jump_clock(seconds)

    # -- checking ----------------------------------------------------------------------------

    @rule()
    @action
    def settle(self) -> None:
        """Let everything quiesce, then check the invariants."""
        self._check(self.world.settle())

    def teardown(self) -> None:
        if not self.failed:
            self._check(self.world.settle())

    def _check(self, observation: Observation) -> None:
        broken = check(observation)
        for name in broken:
            type(self).observed[name] = type(self).observed.get(name, 0) + 1
        enforced = {name: v for name, v in broken.items() if name in self.enforced}
        if enforced:
            self.failed = True
            raise violation_type(next(iter(enforced)))(enforced, self.world.describe())


class CIExplorer(Explorer):
    """The explorer as ``make test`` runs it: only the invariants that hold today are enforced."""

    enforces: ClassVar[frozenset[str]] = ENFORCED_INVARIANTS
    observed: ClassVar[dict[str, int]] = {}
