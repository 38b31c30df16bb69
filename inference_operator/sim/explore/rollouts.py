"""What must hold of rollouts on a simulated cluster: they finish with room, keep the bound, say why.

Issue 20 promises three things of ``spec.rollout``, and these invariants check each against the
pods and nodes themselves, counted here (never by asking the operator's own count, which is
what is under test):

- ``auto_completes_with_capacity``: once the cluster has settled, an ``Auto`` object whose pods
  have room for ``spec.replicas`` on the nodes they may run on (:func:`room_for`: ready,
  uncordoned, selector matched, taints tolerated, allocatable minus what other workloads'
  pods hold there; its own old pods do not count, the rollout replaces them) is Ready on its
  current generation;
- ``never_more_unavailable_than_allowed``: at every step of the simulation, not only at rest, a
  ``Replace`` or ``Auto`` object keeps at least ``spec.replicas - maxUnavailable`` pods available
  (ready, not terminating, any template; :func:`allowed_unavailable` rounds as the Deployment
  controller does). :class:`AvailabilityWatch` checks it after each step. A window per object
  and generation opens once the operator has observed that generation (status says so: it has
  written the Deployment for it) with the bound met, and closes when the generation changes.
  Causes outside the rollout — a node removed, tainted ``NoExecute`` or drained, a
  Deployment deleted by someone else — close every window and keep new ones shut until the
  cluster has settled again (:meth:`AvailabilityWatch.settled`): their pods are lost whatever
  the strategy;
- ``stall_explained_with_numbers``: a ``RolloutBlocked`` condition's message carries the numbers
  a person needs, as digits: ``spec.replicas``, the GPUs one replica needs and the GPUs free on
  the nodes its pods may run on (:func:`~.scheduling.gpus_free_for`, counted here now; for a
  replica bigger than each of those nodes, the most one has, or 0 when there is none); an
  ``Auto`` object whose rollout has not finished at rest says why (Ready=False, a reason, a
  message with ``spec.replicas`` in it); and a ``Replace`` or ``Auto`` rollout the bound holds
  at rest (:func:`_bound_holds`: no old pod may stop, a new one waits for GPUs and none fits,
  but one would with the old pods gone) is RolloutBlocked naming maxUnavailable and the
  replicas it keeps serving, so that its numbers are checked as above.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Final

from inference_operator.api.constants import DEPLOYMENT, GPU_RESOURCE, OWNER_LABEL, Reason
from inference_operator.api.models import InferenceService
from inference_operator.core.nodefit import allocatable, matches_node_selector, scheduling_taints, tolerates
from inference_operator.core.objects import Obj, controller_owner_uid
from inference_operator.core.resources import pod_requests
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.replicasets import template_without_hash
from inference_operator.sim.explore.isvcs import IsvcView, isvcs, ours, ready_of
from inference_operator.sim.explore.observation import Observation
from inference_operator.sim.explore.scheduling import gpus_free_for, short_of_gpus
from inference_operator.sim.simulation import Simulation

__all__ = [
    "ROLLOUT_CHECKS",
    "ROLLOUT_INVARIANTS",
    "AvailabilityWatch",
    "allowed_unavailable",
    "expected_strategy",
    "room_for",
]

CHECKED_STRATEGIES: Final = ("Replace", "Auto")
"""The strategies that promise a bound on unavailable replicas (Surge's is the Deployment's own)."""

ROLLOUT_INVARIANTS: Final[dict[str, str]] = {
    "auto_completes_with_capacity": "with room for spec.replicas on the nodes its pods may run on (counted by the "
    "explorer, other workloads' pods holding theirs), an Auto object ends Ready on its current generation",
    "never_more_unavailable_than_allowed": "at every step of a Replace or Auto rollout, at least spec.replicas - "
    "maxUnavailable pods of the object are available (ready, not terminating, any template), unless a node was "
    "removed, tainted NoExecute or drained, or its Deployment deleted, since the last settle",
    "stall_explained_with_numbers": "a RolloutBlocked message says spec.replicas, the GPUs per replica and the GPUs "
    "free on the nodes the pods may use, as counted by the explorer; an Auto rollout that has not finished at rest "
    "says why (Ready=False, a reason, a message naming spec.replicas); a Replace or Auto rollout the maxUnavailable "
    "bound holds at rest is RolloutBlocked naming maxUnavailable and the replicas it keeps serving",
}


# -- counting, independently of the operator ------------------------------------------------------


def allowed_unavailable(isvc: InferenceService) -> int:
    """``spec.rollout.maxUnavailable`` as the Deployment controller resolves it against
    ``spec.replicas`` (a percentage rounded down; default 1). ``Replace`` never surges, and a
    Deployment whose maxSurge and maxUnavailable both come to 0 takes 1: so does Replace."""
    rollout, replicas = isvc.spec.rollout, isvc.spec.replicas
    value = 1 if rollout is None or rollout.maxUnavailable is None else rollout.maxUnavailable
    if isinstance(value, str):
        value = math.floor(int(value.rstrip("%")) * replicas / 100)
    if rollout is not None and rollout.strategy == "Replace":
        value = max(value, 1)
    return value


def expected_strategy(isvc: InferenceService, live: Obj | None) -> Obj | None:
    """The Deployment's ``spec.strategy`` that ``spec.rollout`` asks for, as the API documents
    it (None: unset, the Deployment's default). ``Auto``'s depends on the capacity counted when
    the rollout was planned, so the live one stands (the invariants of this module judge it)."""
    rollout = isvc.spec.rollout
    if rollout is None:
        return None
    if rollout.strategy == "Auto":
        return dict(((live or {}).get("spec") or {}).get("strategy") or {}) or None
    if rollout.strategy == "Replace":
        unavailable = 1 if rollout.maxUnavailable is None else rollout.maxUnavailable
        rolling: Obj = {"maxSurge": 0, "maxUnavailable": unavailable}
    else:
        given = {"maxSurge": rollout.maxSurge, "maxUnavailable": rollout.maxUnavailable}
        rolling = {k: v for k, v in given.items() if v is not None}
    return {"type": "RollingUpdate", **({"rollingUpdate": rolling} if rolling else {})}


def _eligible(pod_spec: Obj, node: Obj) -> bool:
    """The node is one the pod may run on: its selector matched, every NoSchedule/NoExecute
    taint tolerated (cordoned and not-ready nodes carry one)."""
    if not matches_node_selector(pod_spec, (node.get("metadata") or {}).get("labels") or {}):
        return False
    tolerations = pod_spec.get("tolerations") or []
    return all(
        tolerates(tolerations, t) for t in scheduling_taints(node) if t.get("effect") in ("NoSchedule", "NoExecute")
    )


def room_for(
    sim: Simulation, isvc: IsvcView, pod_spec: Obj, *, own_held: bool = False, released: Collection[str] = ()
) -> int:
    """How many replicas of ``pod_spec`` the eligible nodes hold, counting what every pod
    bound there holds except ``isvc``'s own (the rollout replaces those), or (``own_held``) how
    many more fit now, its own pods holding theirs too, but for the pods (uids) ``released``."""
    own = (isvc.obj["metadata"]["namespace"], isvc.name) if not own_held else None
    held: dict[str, dict[str, int]] = {}
    for pod in sim.api.list("Pod"):
        meta = pod["metadata"]
        on = podstate.node_of(pod)
        if (
            not on
            or podstate.is_terminal(pod)
            or (meta["namespace"], (meta.get("labels") or {}).get(OWNER_LABEL)) == own
            or meta.get("uid") in released
        ):
            continue
        into = held.setdefault(on, {"pods": 0})
        into["pods"] += 1
        for resource, amount in pod_requests(pod.get("spec") or {}).items():
            into[resource] = into.get(resource, 0) + amount
    wants = {**{r: a for r, a in pod_requests(pod_spec).items() if a > 0}, "pods": 1}
    room = 0
    for node in sim.api.list("Node"):
        if not _eligible(pod_spec, node):
            continue
        have, used = allocatable(node), held.get(str(node["metadata"]["name"]), {})
        room += max(0, min((have.get(r, 0) - used.get(r, 0)) // a for r, a in wants.items()))
    return room


def _replica_pods(sim: Simulation, deployment: Obj) -> tuple[list[Obj], list[Obj]]:
    """The active pods of ``deployment``'s ReplicaSets: of its current template, and all."""
    namespace, uid = deployment["metadata"]["namespace"], deployment["metadata"]["uid"]
    template = deployment["spec"]["template"]
    sets = [rs for rs in sim.api.list("ReplicaSet", namespace) if controller_owner_uid(rs) == uid]
    current = {rs["metadata"]["uid"] for rs in sets if template_without_hash(rs["spec"]["template"]) == template}
    every = {rs["metadata"]["uid"] for rs in sets}
    pods = [p for p in sim.api.list("Pod", namespace) if podstate.is_active(p) and controller_owner_uid(p) in every]
    return [p for p in pods if controller_owner_uid(p) in current], pods


def _deployment(sim: Simulation, isvc: IsvcView) -> Obj | None:
    found = sim.get(DEPLOYMENT, isvc.obj["metadata"]["namespace"], isvc.name)
    return found if ours(found, isvc) else None


def _strategy(isvc: IsvcView) -> str | None:
    rollout = isvc.parsed.spec.rollout if isvc.parsed is not None else None
    return rollout.strategy if rollout is not None else None


# -- never more unavailable than allowed, step by step --------------------------------------------


@dataclass(frozen=True)
class _Window:
    uid: str
    generation: int


class AvailabilityWatch:
    """Checks the bound on unavailable pods after every step (see the module docstring)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.violations: list[str] = []
        self.disturbed = ""
        """Why no window may open until the next settle ('' when none)."""
        self._windows: dict[str, _Window] = {}

    def disrupted(self, what: str) -> None:
        """Something outside the rollout takes running pods away: every window closes."""
        self.disturbed = what
        self._windows.clear()

    def settled(self) -> None:
        """The cluster came to rest: what a disruption took is gone for good; windows may open."""
        self.disturbed = ""

    def after_step(self) -> None:
        if self.disturbed:
            return
        seen = set()
        for isvc in isvcs(self.sim):
            strategy = _strategy(isvc)
            if not isvc.live or strategy not in CHECKED_STRATEGIES or isvc.parsed is None:
                continue
            generation = int(isvc.obj["metadata"].get("generation") or 0)
            if (isvc.obj.get("status") or {}).get("observedGeneration") != generation:
                continue  # the operator has not acted on this spec yet
            deployment = _deployment(self.sim, isvc)
            if deployment is None:
                continue
            seen.add(isvc.key)
            replicas = isvc.parsed.spec.replicas
            allowed = allowed_unavailable(isvc.parsed)
            available = sum(1 for p in _replica_pods(self.sim, deployment)[1] if podstate.is_ready(p))
            window = _Window(isvc.uid, generation)
            if self._windows.get(isvc.key) != window:
                if available >= replicas - allowed:
                    self._windows[isvc.key] = window
                else:
                    self._windows.pop(isvc.key, None)
                continue
            if available < replicas - allowed:
                strategy_written = deployment["spec"].get("strategy")
                self.violations.append(
                    f"{isvc.key} (generation {generation}, {strategy}) had {available} pod(s) available at "
                    f"t={self.sim.now:.1f}s, below spec.replicas {replicas} - maxUnavailable {allowed}; "
                    f"the Deployment's strategy: {strategy_written}"
                )
                del self._windows[isvc.key]  # once per window
        for key in set(self._windows) - seen:
            del self._windows[key]


def never_more_unavailable_than_allowed(o: Observation) -> list[str]:
    return list(o.unavailable_violations)


# -- at rest ---------------------------------------------------------------------------------------


def _finished(sim: Simulation, isvc: IsvcView, deployment: Obj) -> bool:
    """Every desired replica runs the current template, ready, and no old pod is left."""
    assert isvc.parsed is not None
    current, every = _replica_pods(sim, deployment)
    ready = sum(1 for p in current if podstate.is_ready(p))
    return ready >= isvc.parsed.spec.replicas and len(every) == len(current)


def _settled(o: Observation, strategies: tuple[str, ...] = ("Auto",)) -> list[tuple[IsvcView, Obj]]:
    """The live objects of ``strategies`` the operator is not failing on, with their Deployments."""
    if o.status_blocked or o.ran_out:
        return []
    out = []
    for isvc in isvcs(o.sim):
        if not isvc.live or _strategy(isvc) not in strategies or isvc.key in o.failing:
            continue
        deployment = _deployment(o.sim, isvc)
        if deployment is not None:
            out.append((isvc, deployment))
    return out


def _held_by_the_bound(sim: Simulation, isvc: IsvcView, deployment: Obj, pod_spec: Obj) -> bool:
    """The rollout cannot take its next step within maxUnavailable: no new pod fits in what is
    free now, and stopping an old one would leave fewer available than the bound (a scale-up
    that came with the template change may have started below it). Then finishing would break
    the bound, and ``stall_explained_with_numbers`` asks status to say why instead."""
    assert isvc.parsed is not None
    if _finished(sim, isvc, deployment):
        return False  # nothing left to move: a status that is not Ready has no excuse here
    current, every = _replica_pods(sim, deployment)
    available = sum(1 for p in every if podstate.is_ready(p))
    floor = isvc.parsed.spec.replicas - allowed_unavailable(isvc.parsed)
    can_stop_one = len(every) > len(current) and available - 1 >= floor
    return not can_stop_one and room_for(sim, isvc, pod_spec, own_held=True) < 1


def _bound_holds(sim: Simulation, isvc: IsvcView, deployment: Obj) -> bool:
    """The bound is what holds the rollout: held (:func:`_held_by_the_bound`), every pod not
    ready waits for the scheduler (none starting), one of the current template for GPUs, and
    with the old pods bound to nodes gone a new one would fit. Raising maxUnavailable, or
    freeing GPUs, is what moves it: status must say so."""
    pod_spec = deployment["spec"]["template"]["spec"]
    if not _held_by_the_bound(sim, isvc, deployment, pod_spec):
        return False
    current, every = _replica_pods(sim, deployment)
    starting = any(podstate.node_of(p) and not podstate.is_ready(p) for p in every)
    if starting or not any(short_of_gpus(p) for p in current):
        return False
    new = {p["metadata"]["uid"] for p in current}
    old = {p["metadata"]["uid"] for p in every if p["metadata"]["uid"] not in new and podstate.node_of(p)}
    return bool(old) and room_for(sim, isvc, pod_spec, own_held=True, released=old) >= 1


def auto_completes_with_capacity(o: Observation) -> list[str]:
    out = []
    for isvc, deployment in _settled(o):
        assert isvc.parsed is not None
        replicas = isvc.parsed.spec.replicas
        pod_spec = deployment["spec"]["template"]["spec"]
        room = room_for(o.sim, isvc, pod_spec)
        if room < replicas or _held_by_the_bound(o.sim, isvc, deployment, pod_spec):
            continue
        ready = ready_of(isvc.obj) or {}
        generation = isvc.obj["metadata"].get("generation")
        observed = (isvc.obj.get("status") or {}).get("observedGeneration")
        if ready.get("status") == "True" and observed == generation and ready.get("observedGeneration") == generation:
            continue
        current, every = _replica_pods(o.sim, deployment)
        out.append(
            f"{isvc.key} has room for {room} replica(s) (spec.replicas {replicas}), but is not Ready on generation "
            f"{generation} (observed {observed}; Ready={ready.get('status')}/{ready.get('reason')}: "
            f"{ready.get('message')!r}); {len(current)} pod(s) of the current template of {len(every)}"
        )
    return out


_NUMBER: Final = re.compile(r"(?<![\w.])\d+(?![\w.])")
"""A whole number standing alone (not part of a name such as ``gpu-a100-1`` or ``v0.6.3``)."""


def _numbers(message: str) -> set[int]:
    return {int(m) for m in _NUMBER.findall(message)}


def _capacity_numbers(sim: Simulation, pod_spec: Obj, gpu: int) -> dict[str, int]:
    """The capacity a blocked rollout must name: the GPUs free on the nodes the pod may use;
    or, when no such node is big enough for one replica, how many such nodes there are (none)
    or the most GPUs one of them has."""
    sizes = [allocatable(n).get(GPU_RESOURCE, 0) for n in sim.api.list("Node") if _eligible(pod_spec, n)]
    if not sizes:
        return {"nodes it may run on": 0}
    if max(sizes) < gpu:
        return {"GPUs of its largest node": max(sizes)}
    return {"free GPUs": gpus_free_for(sim, pod_spec)}


def stall_explained_with_numbers(o: Observation) -> list[str]:
    if o.status_blocked:
        return []
    out = []
    for isvc in isvcs(o.sim):
        if not isvc.live or isvc.parsed is None:
            continue
        spec = isvc.parsed.spec
        deployment = _deployment(o.sim, isvc)
        for condition in (isvc.obj.get("status") or {}).get("conditions") or []:
            if condition.get("reason") != Reason.ROLLOUT_BLOCKED or deployment is None:
                continue
            message = str(condition.get("message") or "")
            wanted = {"spec.replicas": spec.replicas, f"{GPU_RESOURCE} per replica": spec.gpu}
            wanted.update(_capacity_numbers(o.sim, deployment["spec"]["template"]["spec"], spec.gpu))
            missing = [f"{what} ({n})" for what, n in wanted.items() if n not in _numbers(message)]
            if missing:
                out.append(
                    f"{isvc.key}'s {condition.get('type')} is RolloutBlocked without {', '.join(missing)}: {message!r}"
                )
    for isvc, deployment in _settled(o):
        assert isvc.parsed is not None
        if _finished(o.sim, isvc, deployment):
            continue
        ready = ready_of(isvc.obj) or {}
        replicas = isvc.parsed.spec.replicas
        message = str(ready.get("message") or "")
        if ready.get("status") != "False" or not ready.get("reason") or replicas not in _numbers(message):
            out.append(
                f"{isvc.key}'s Auto rollout has not finished, but Ready={ready.get('status')}/{ready.get('reason')} "
                f"does not say why with spec.replicas ({replicas}): {message!r}"
            )
    for isvc, deployment in _settled(o, CHECKED_STRATEGIES):
        assert isvc.parsed is not None
        if not _bound_holds(o.sim, isvc, deployment):
            continue
        ready = ready_of(isvc.obj) or {}
        message = str(ready.get("message") or "")
        keeps = isvc.parsed.spec.replicas - allowed_unavailable(isvc.parsed)
        said = ready.get("reason") == Reason.ROLLOUT_BLOCKED and "maxUnavailable" in message
        if not said or keeps not in _numbers(message):
            out.append(
                f"{isvc.key}'s rollout is held by maxUnavailable (no old pod may stop below {keeps} available, no new "
                f"pod fits, one would with the old pods gone), but Ready={ready.get('status')}/{ready.get('reason')} "
                f"does not say so with maxUnavailable and {keeps}: {message!r}"
            )
    return out


ROLLOUT_CHECKS: Final[dict[str, Callable[[Observation], list[str]]]] = {
    "auto_completes_with_capacity": auto_completes_with_capacity,
    "never_more_unavailable_than_allowed": never_more_unavailable_than_allowed,
    "stall_explained_with_numbers": stall_explained_with_numbers,
}
