"""The explorer's world: a Simulation with every fault switch wired in, and the actions on it.

Kept apart from the hypothesis state machine (:mod:`.machine`) so that each action is a plain
method: a regression test, a notebook or the state machine can drive it alike. Users and other
actors write to the FakeApiServer directly; only the operator goes through the fault wrappers
(:mod:`..faults`); a cluster admin changes the Nodes (:mod:`.capacity`). :meth:`World.settle`
lets the cluster quiesce (bounded: a key that fails forever never lets it) and returns the
:class:`~.invariants.Observation` the invariants read.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Final

from inference_operator.api.constants import DEPLOYMENT, FINALIZER, KIND
from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import ApiError
from inference_operator.core.jsoncopy import deep_copy
from inference_operator.core.objects import Obj, key_of
from inference_operator.sim.apiserver.watch import WatchEvent
from inference_operator.sim.cluster.nodes import NodeShape
from inference_operator.sim.explore.capacity import NodePool
from inference_operator.sim.explore.describe import describe
from inference_operator.sim.explore.foreign import foreign_child_manifest
from inference_operator.sim.explore.observation import ForeignMark, Observation, warning_counts
from inference_operator.sim.explore.rollouts import AvailabilityWatch
from inference_operator.sim.faults import (
    LB_WRITES,
    ApiErrorKind,
    CrashSwitch,
    FaultyApi,
    FaultyLoadBalancer,
    OperatorCrash,
    WriteCall,
    WriteFault,
)
from inference_operator.sim.simulation import Simulation
from inference_operator.sim.wiring import Interposer, Outside

__all__ = ["FOREIGN_OWNER", "HORIZON", "NAMESPACE", "World"]


NAMESPACE: Final = "default"
HORIZON: Final = 1200.0
"""Fake seconds a settle may run: past progress deadlines (60 s here) and enough backoff
retries (about 20) to tell a key that keeps failing from one that recovers."""
SETTLE_STEP_BUDGET: Final = 20_000
PASS_STEP_BUDGET: Final = 1_000
EVENT_TTL: Final = 3600.0
"""The API server's default ``--event-ttl``: an Event repeated later than this is a new one."""
FOREIGN_OWNER: Final = "team-policy"
"""A ConfigMap other actors point extra ownerReferences at."""
SIDECAR: Final = "mesh-proxy"
FOREIGN_LABEL: Final = ("team", "ml-platform")
FOREIGN_ANNOTATION: Final = ("example.com/audited", "true")


class World:
    """A simulated cluster running the operator behind fault wrappers."""

    def __init__(
        self,
        *,
        ready_after: float = 5.0,
        node_layout: Sequence[NodeShape] | None = None,
        watch_rollouts: bool = False,
    ) -> None:
        """``node_layout``: the simulated cluster's nodes (None: the Simulation's default);
        ``watch_rollouts``: check the bound on unavailable pods after every step (:mod:`.rollouts`)."""
        self.crash = CrashSwitch()
        self.api: FaultyApi
        self.lb: FaultyLoadBalancer
        interpose = Interposer(api=self._faulty_api, load_balancer=self._faulty_lb)
        self.sim = Simulation(ready_after=ready_after, interpose=interpose, node_layout=node_layout)
        self.availability = AvailabilityWatch(self.sim)
        self._watch_rollouts = watch_rollouts
        self.nodes = NodePool(self.sim, disrupted=self.availability.disrupted)
        self.marks: list[ForeignMark] = []
        self.finalizer_violations: list[str] = []
        self.stale_informers: set[str] = set()
        self.crashes = 0
        owner = self.sim.api.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": FOREIGN_OWNER, "namespace": NAMESPACE}}
        )
        self._foreign_owner_uid = str(owner["metadata"]["uid"])
        self._window_start()

    def _faulty_api(self, sim: Outside) -> FaultyApi:
        """What the operator writes through: the API server behind every fault switch."""
        self.api = FaultyApi(
            sim.api, clock=sim.clock, crash=self.crash, observe=self._observe_write, snapshot_kinds=frozenset({KIND})
        )
        return self.api

    def _faulty_lb(self, sim: Outside) -> FaultyLoadBalancer:
        self.lb = FaultyLoadBalancer(sim.lb, clock=sim.clock, crash=self.crash)
        return self.lb

    # -- users -------------------------------------------------------------------------------

    def isvc(self, name: str) -> Obj | None:
        return self.sim.get(KIND, NAMESPACE, name)

    def apply(self, name: str, spec: Obj) -> None:
        """``kubectl apply`` of a whole manifest: create, or replace the spec (removed fields go)."""
        manifest = make_inference_service(name, image=spec["image"], model=spec["model"], namespace=NAMESPACE)
        manifest["spec"] = deep_copy(spec)
        self._user(lambda: self.sim.apply(manifest))

    def edit(self, name: str, field: str, value: Any) -> None:
        """``kubectl edit`` of one spec field; ``None`` removes it."""
        obj = self.isvc(name)
        if obj is None:
            return
        spec = obj["spec"]
        if value is None:
            spec.pop(field, None)
        else:
            spec[field] = deep_copy(value)
        self._user(lambda: self.sim.api.update(obj))

    def scale(self, name: str, replicas: int) -> None:
        """``kubectl scale`` through the scale subresource: spec.replicas only."""
        self._user(lambda: self.sim.api.patch(KIND, NAMESPACE, name, {"spec": {"replicas": replicas}}))

    def delete(self, name: str) -> None:
        self._user(lambda: self.sim.api.delete(KIND, NAMESPACE, name))

    def _user(self, write: Callable[[], object]) -> None:
        # Refused (admission, NotFound …): the user sees the error, nothing changed.
        with contextlib.suppress(ApiError):
            write()

    # -- other actors ------------------------------------------------------------------------

    def foreign_edit(self, kind: str, name: str, edit: str) -> None:
        """Another actor touches a child: ``label``, ``owned_label``, ``annotation``, ``replicas``,
        ``container``, ``owner_reference`` or ``delete``."""
        obj = self.sim.get(kind, NAMESPACE, name)
        if obj is None:
            return
        uid = str(obj["metadata"]["uid"])
        meta = obj["metadata"]
        if edit == "delete":
            if kind == DEPLOYMENT:
                self.availability.disrupted(f"Deployment {name} deleted by another actor")
            self._user(lambda: self.sim.api.delete(kind, NAMESPACE, name))
            return
        mark: ForeignMark | None = None
        if edit == "label":
            meta.setdefault("labels", {})[FOREIGN_LABEL[0]] = FOREIGN_LABEL[1]
            mark = ForeignMark(kind, name, uid, "label", *FOREIGN_LABEL)
        elif edit == "owned_label":
            meta.setdefault("labels", {})["app.kubernetes.io/name"] = "someone-else"
        elif edit == "annotation":
            meta.setdefault("annotations", {})[FOREIGN_ANNOTATION[0]] = FOREIGN_ANNOTATION[1]
            mark = ForeignMark(kind, name, uid, "annotation", *FOREIGN_ANNOTATION)
        elif edit == "owner_reference":
            ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": FOREIGN_OWNER, "uid": self._foreign_owner_uid}
            meta.setdefault("ownerReferences", []).append(ref)
            mark = ForeignMark(kind, name, uid, "owner_reference", self._foreign_owner_uid)
        elif edit == "replicas" and kind == DEPLOYMENT:
            obj["spec"]["replicas"] = int(obj["spec"].get("replicas", 1)) + 1
        elif edit == "container" and kind == DEPLOYMENT:
            containers = obj["spec"]["template"]["spec"]["containers"]
            if any(c.get("name") == SIDECAR for c in containers):
                return
            containers.append({"name": SIDECAR, "image": "mesh/proxy:1.24"})
            mark = ForeignMark(kind, name, uid, "container", SIDECAR)
        else:
            return
        meta.pop("resourceVersion", None)
        try:
            updated = self.sim.api.update(obj)
        except ApiError:
            return
        # A foreign object's spec is what its owner last made it, this edit included.
        self.marks = [
            ForeignMark(m.kind, m.name, m.uid, "spec", "spec", updated["spec"])
            if m.uid == uid and m.what == "spec"
            else m
            for m in self.marks
        ]
        if mark is not None:
            self.marks.append(mark)

    def foreign_child(self, kind: str, name: str) -> None:
        """Someone else's Deployment or Service with this name, made before the InferenceService."""
        if self.isvc(name) is not None or self.sim.get(kind, NAMESPACE, name) is not None:
            return
        manifest = foreign_child_manifest(kind, name, NAMESPACE)
        try:
            created = self.sim.api.create(manifest)
        except ApiError:
            return
        uid = str(created["metadata"]["uid"])
        self.marks.append(ForeignMark(kind, name, uid, "spec", "spec", created["spec"]))

    # -- the load balancer -------------------------------------------------------------------

    def lb_lose(self, name: str) -> None:
        self.lb.lose(key_of(NAMESPACE, name))

    def lb_restart_empty(self) -> None:
        self.lb.restart_empty()

    def lb_fail(self, n: int) -> None:
        self.lb.fail_next(n)

    def lb_hang(self, n: int, applied: bool) -> None:
        self.lb.hang_next(n, applied=applied)

    # -- the API server, as the operator sees it ---------------------------------------------

    def api_fault(
        self, verb: str | None, kind: str | None, error: ApiErrorKind, times: int | None, applied: bool = False
    ) -> None:
        self.api.arm(WriteFault(error, verb=verb, kind=kind, times=times, applied=applied))

    def heal_api(self, kind: str | None = None) -> None:
        self.api.clear(kind)

    # -- the operator process ----------------------------------------------------------------

    def crash_after(self, writes: int) -> None:
        """Kill the operator right after its ``writes``-th next write (API or balancer)."""
        self.crash.arm(writes)

    def restart(self) -> None:
        self.crashes += 1
        self.stale_informers.clear()  # the new process lists everything afresh
        self.sim.restart_operator()

    def pause_informer(self, kind: str) -> None:
        self.sim.informers[kind].pause()

    def resume_informer(self, kind: str) -> None:
        self.sim.informers[kind].resume()

    def drop_events(self, kind: str, which: str) -> None:
        """Lose buffered watch events (``first``, ``last``, ``every_other``, ``all``); the cache
        stays wrong until a re-list."""

        def drop(events: Sequence[WatchEvent]) -> Sequence[WatchEvent]:
            if which == "first":
                return events[1:]
            if which == "last":
                return events[:-1]
            if which == "every_other":
                return events[1::2]
            return []

        if self.sim.informers[kind].perturb(drop):
            self.stale_informers.add(kind)

    def reorder_events(self, kind: str) -> None:
        if self.sim.informers[kind].perturb(lambda events: list(reversed(events))) > 1:
            self.stale_informers.add(kind)

    def relist(self, kind: str) -> None:
        self.sim.informers[kind].relist()
        self.stale_informers.discard(kind)

    def jump_clock(self, seconds: float) -> None:
        self.sim.clock.advance(seconds)

    def run(self, steps: int, *, within: float = 60.0) -> int:
        """Let the cluster and the operator take up to ``steps`` steps (time moves over waits,
        at most ``within`` fake seconds); returns the steps taken."""
        return self._run(max_steps=steps, until=self.sim.now + within)

    def _catch_up(self) -> None:
        for kind, informer in self.sim.informers.items():
            informer.resume()
            if kind in self.stale_informers:
                self.relist(kind)

    def _run(self, *, max_steps: int, until: float) -> int:
        steps = 0
        while steps < max_steps:
            try:
                if self.sim.step():
                    steps += 1
                    if self._watch_rollouts:
                        self.availability.after_step()
                    continue
            except OperatorCrash:
                self.restart()
                continue
            due = self.sim.next_due()
            if due is None or due > until:
                break
            self.sim.clock.set(max(due, self.sim.now))
        return steps

    # -- settling ----------------------------------------------------------------------------

    def _window_start(self) -> None:
        self._reconciles_at = Counter(self.sim.reconciles_by_key)
        self._events_at = len(self.sim.events)
        self._finalizer_violations_at = len(self.finalizer_violations)
        self._restarts_at = self.sim.restarts
        self._unavailable_at = len(self.availability.violations)

    def settle(self) -> Observation:
        """Let the cluster come to rest, as it would given time, then look once more.

        Lag ends and stale caches re-list; everything runs until quiet (at most ``HORIZON`` fake
        seconds: a key that keeps failing never gets quiet); then a periodic resync happens (it
        is how external state is checked) and runs until quiet too. Then, unless injected faults
        are still armed (an outage that outlasted the backoff: the world is still changing, and
        a pass would only use them up), two more resync passes over every InferenceService, at
        this instant with no crash armed, count the operator's writes: a converged system makes
        none (a key still retrying may catch up in the first).
        """
        self._catch_up()
        steps = self._run(max_steps=SETTLE_STEP_BUDGET, until=self.sim.now + HORIZON)
        self.sim.resync()
        steps += self._run(max_steps=SETTLE_STEP_BUDGET, until=self.sim.now + HORIZON)
        ran_out = steps >= SETTLE_STEP_BUDGET
        failing_before_pass = self._failing()
        faults_pending = self.lb.pending_faults > 0 or any(f.times is not None for f in self.api.pending_faults)
        status_blocked = any(f.kind in (None, KIND) for f in self.api.pending_faults)
        self.crash.disarm()
        calls_at, lb_at = len(self.api.calls), len(self.lb.calls)
        second_at = calls_at
        if not faults_pending:
            self.sim.resync()
            self._run(max_steps=PASS_STEP_BUDGET, until=self.sim.now)
            second_at = len(self.api.calls)
            self.sim.resync()
            self._run(max_steps=PASS_STEP_BUDGET, until=self.sim.now)
        reconciles = Counter(self.sim.reconciles_by_key)
        reconciles.subtract(self._reconciles_at)
        observation = Observation(
            sim=self.sim,
            reconciles=+reconciles,
            warnings=warning_counts(self.sim.events[self._events_at :], ttl=EVENT_TTL),
            pass_calls=self.api.calls[calls_at:second_at],
            pass_lb=self.lb.calls[lb_at:],
            failing=self._failing(),
            second_pass_calls=self.api.calls[second_at:],
            failing_before_pass=failing_before_pass,
            faults_pending=faults_pending,
            status_blocked=status_blocked,
            finalizer_violations=self.finalizer_violations[self._finalizer_violations_at :],
            marks=list(self.marks),
            ran_out=ran_out,
            restarts=self.sim.restarts - self._restarts_at,
            unavailable_violations=self.availability.violations[self._unavailable_at :],
        )
        self.availability.settled()
        self._window_start()
        return observation

    def _failing(self) -> dict[str, str]:
        """Keys whose latest pass raised, with the error."""
        return {
            key: f"{type(outcome).__name__}: {outcome}"
            for key, outcome in self.sim.last_outcome.items()
            if isinstance(outcome, Exception)
        }

    # -- monitors ----------------------------------------------------------------------------

    def _observe_write(self, call: WriteCall) -> None:
        """At the moment the operator removes its finalizer from a deleted object, the balancer
        must hold nothing for it, and no registration may have been confirmed since the last
        confirmed release."""
        if call.kind != KIND or call.error or call.before is None:
            return
        before_meta = call.before["metadata"]
        if FINALIZER not in (before_meta.get("finalizers") or []) or not before_meta.get("deletionTimestamp"):
            return
        if call.after is not None and FINALIZER in (call.after["metadata"].get("finalizers") or []):
            return
        key = key_of(call.namespace, call.name)
        record = self.sim.lb.registrations.get(key)
        if record is not None:
            self.finalizer_violations.append(
                f"the finalizer left {key} while the balancer still held {record.id} -> {record.target}"
            )
            return
        confirmed = [c.call for c in self.lb.calls if c.key == key and c.outcome == "ok" and c.call in LB_WRITES]
        if confirmed and confirmed[-1] == "register":
            self.finalizer_violations.append(f"the finalizer left {key} without a confirmed release")

    def describe(self) -> str:
        """The cluster in a few lines, for a failure report."""
        return describe(self.sim)
