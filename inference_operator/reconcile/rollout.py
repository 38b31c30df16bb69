"""The rollout plan: which Deployment strategy a template change gets, and why, in numbers.

Pure: given the InferenceService, the template it is about to run, the live Deployment, a way
to count capacity (``capacity.py``) and what its pods say (``rolloutpods.py``), return the
strategy to write and the words status shows. Level-triggered like everything else: the plan is
kept on the Deployment itself, in the ``serving.inference-operator.dev/rollout`` annotation,
beside a digest of the template it was made for. A pass whose template matches that digest
keeps the plan (so a rollout under way is not re-planned on every pass, and a restarted
operator picks it up); a new template (or, for ``Auto``, a new ``maxUnavailable``) gets a new
plan, counted afresh. The one change to a running plan is the switch of ``Auto`` from surging
to replacing, when a new pod cannot be scheduled for want of GPUs that old pods hold: that is a
stall, and waiting would never end it. A new pod waiting is also when nodes are counted again to
ask whether any could hold a replica at all: replacing stops an old pod first, so without that
question a replica too big for every node would leave the rollout one replica short for ever,
saying only the scheduler's words.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from inference_operator.api.constants import GPU_RESOURCE, GROUP
from inference_operator.api.models import InferenceService
from inference_operator.api.rollout import AUTO, DEFAULT_MAX_UNAVAILABLE, REPLACE, SURGE
from inference_operator.core.objects import Obj
from inference_operator.reconcile.capacity import Capacity
from inference_operator.reconcile.rolloutpods import Stall

ANNOTATION = f"{GROUP}/rollout"
DEFAULT_PERCENT = "25%"  # a Deployment's maxSurge and maxUnavailable when unset

BLOCKED = "Blocked"


@dataclass(frozen=True)
class RolloutPlan:
    """The strategy written to the Deployment, and what status says of it."""

    strategy: str
    max_surge: int | str | None
    max_unavailable: int | str | None
    plan: str
    message: str
    template: str
    blocked: str = ""
    """Non-empty: nothing can move the rollout on; why, with numbers."""
    held: str = ""
    """Non-empty: the maxUnavailable bound holds the rollout and no new pod fits (``rollouthold.py``).
    Said in status only, never kept on the Deployment: it passes by itself once GPUs come free."""
    switched: bool = False
    """This pass switched an ``Auto`` rollout from surging to replacing."""
    written: bool = True
    """False: ``spec.rollout`` is unset and the Deployment keeps its default strategy."""
    asked: int | str | None = None
    """``Auto``: the ``spec.rollout.maxUnavailable`` the plan was made for (None: made by an
    operator that did not record it); another one asks for a new plan."""

    def deployment_strategy(self) -> Obj | None:
        """``spec.strategy`` of the Deployment (None: leave it to the Deployment's defaults)."""
        if not self.written:
            return None
        rolling: Obj = {}
        if self.max_surge is not None:
            rolling["maxSurge"] = self.max_surge
        if self.max_unavailable is not None:
            rolling["maxUnavailable"] = self.max_unavailable
        return {"type": "RollingUpdate", **({"rollingUpdate": rolling} if rolling else {})}

    def annotation(self) -> str:
        record = {
            "template": self.template,
            "plan": self.plan,
            "maxSurge": self.max_surge,
            "maxUnavailable": self.max_unavailable,
            "message": self.message,
            "blocked": self.blocked,
            "askedMaxUnavailable": self.asked,
        }
        return json.dumps({k: v for k, v in record.items() if v not in (None, "")}, sort_keys=True)

    def status(self, replicas: int) -> Obj:
        surge, unavailable = resolve(self.max_surge, self.max_unavailable, replicas)
        return {
            "strategy": self.strategy,
            "plan": BLOCKED if self.blocked or self.held else self.plan,
            "maxSurge": surge,
            "maxUnavailable": unavailable,
            "message": self.blocked or self.held or self.message,
        }


def template_digest(template: Obj) -> str:
    """A short digest of a pod template, stable across processes (sorted JSON)."""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def resolve(surge: int | str | None, unavailable: int | str | None, replicas: int) -> tuple[int, int]:
    """maxSurge and maxUnavailable as the Deployment controller resolves them: a percentage of
    surge rounds up, of unavailable down, and if both come to 0, one may be unavailable."""

    def scaled(value: int | str | None, *, round_up: bool) -> int:
        value = DEFAULT_PERCENT if value is None else value
        if isinstance(value, int):
            return value
        share = int(value.rstrip("%")) * replicas / 100
        return math.ceil(share) if round_up else math.floor(share)

    s, u = scaled(surge, round_up=True), scaled(unavailable, round_up=False)
    return (s, 1) if s == 0 and u == 0 else (s, u)


def _previous(live: Obj | None) -> Obj | None:
    text = (((live or {}).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None  # hand-edited: plan afresh
    return record if isinstance(record, dict) else None


def _count(value: Any) -> int | str | None:
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _too_big(isvc: InferenceService, capacity: Capacity) -> str:
    gpu = isvc.spec.gpu
    if not capacity.known or gpu <= 0 or capacity.largest >= gpu:
        return ""
    if capacity.nodes == 0:
        return f"no node can run a replica: none {capacity.nodes_counted}, each replica needs {gpu} {GPU_RESOURCE}"
    return (
        f"a replica can never be scheduled: it needs {gpu} {GPU_RESOURCE} on one node and the largest node "
        f"{capacity.nodes_counted} has {capacity.largest}"
    )


def _free_words(capacity: Capacity, gpu: int) -> str:
    """``; 4 nvidia.com/gpu free on the 3 nodes it may run on, 8 needed on one node``: what a stalled
    pod could have, counted now ('' where Nodes cannot be read)."""
    if not capacity.known:
        return ""
    return f"; {capacity.free_gpus} {GPU_RESOURCE} free {capacity.where}, {gpu} needed on one node"


def _unless_too_big(plan: RolloutPlan, isvc: InferenceService, capacity: Callable[[], Capacity]) -> RolloutPlan:
    """``plan``, blocked if no node it may use could hold a replica (unknown where Nodes cannot
    be read: then the scheduler's words are all status has)."""
    too_big = _too_big(isvc, capacity())
    return replace(plan, blocked=too_big) if too_big else plan


def plan_rollout(
    isvc: InferenceService,
    *,
    template: Obj,
    live: Obj | None,
    capacity: Callable[[], Capacity],
    stall: Stall | None,
    unplaced: bool = False,
) -> RolloutPlan:
    """The plan for this pass (see the module docstring); ``capacity`` is only called when a
    new plan is made, or a stall or a new pod left ``unplaced`` (``rolloutpods.py``) is to be
    explained (with the GPUs free now), for counting reads every pod the cache holds."""
    spec = isvc.spec.rollout
    # An unset rollout writes no annotation: no digest to compute on every pass of every object.
    digest = template_digest(template) if spec is not None else ""
    gpu, replicas = isvc.spec.gpu, isvc.spec.replicas
    if spec is None or spec.strategy == SURGE:
        surge, unavailable = (spec.maxSurge, spec.maxUnavailable) if spec is not None else (None, None)
        s, u = resolve(surge, unavailable, replicas)
        plan = RolloutPlan(
            SURGE,
            surge,
            unavailable,
            SURGE,
            f"new pods start before old ones stop: up to {s} extra, at most {u} unavailable",
            digest,
            written=spec is not None,
        )
        if stall is not None:
            counted = capacity()
            if too_big := _too_big(isvc, counted):
                return replace(plan, blocked=too_big)  # stopping old pods first would not help
            advice = "set spec.rollout.strategy to Replace or Auto to stop old pods first"
            return replace(plan, blocked=f"rollout stalled: {stall.words(gpu)}{_free_words(counted, gpu)}; {advice}")
        return plan
    unavailable = DEFAULT_MAX_UNAVAILABLE if spec.maxUnavailable is None else spec.maxUnavailable
    u = resolve(1, unavailable, replicas)[1]  # rounded down: 0 means "never below spec.replicas"
    if spec.strategy == REPLACE:
        plan = RolloutPlan(
            REPLACE,
            0,
            unavailable,
            REPLACE,
            f"replacing {max(u, 1)} replica(s) at a time: an old pod stops before a new one starts",
            digest,
        )
        # A new pod waits for the GPUs the old pod it replaced held, or for a node big enough.
        return _unless_too_big(plan, isvc, capacity) if stall is not None or unplaced else plan
    previous = _previous(live)
    asked = _count(previous.get("askedMaxUnavailable")) if previous is not None else None
    # Kept for its template and the maxUnavailable it was made for: a person who raises it
    # mid-rollout (the way out of a rollout the bound holds) gets a plan that uses it.
    if previous is not None and previous.get("template") == digest and asked in (None, unavailable):
        kept = RolloutPlan(
            AUTO,
            _count(previous.get("maxSurge")),
            _count(previous.get("maxUnavailable")),
            str(previous.get("plan") or AUTO),
            str(previous.get("message") or ""),
            digest,
            blocked=str(previous.get("blocked") or ""),
            asked=asked,
        )
        if stall is None and not unplaced:
            return kept
        counted = capacity()
        if too_big := _too_big(isvc, counted):
            # No node it may use could ever hold a replica (nodes cordoned or tainted since the
            # plan was made): replacing would only stop pods that serve, waiting would never end.
            return replace(kept, blocked=too_big)
        if stall is None or kept.max_surge == 0:
            return kept
        if u == 0:
            return replace(
                kept,
                blocked=f"{stall.words(gpu)}{_free_words(counted, gpu)}; maxUnavailable 0 forbids stopping an "
                f"old pod first: waiting for {GPU_RESOURCE} to free",
            )
        return RolloutPlan(
            AUTO,
            0,
            unavailable,
            REPLACE,
            f"switched to replacing {u} replica(s) at a time: {stall.words(gpu)}",
            digest,
            switched=True,
            asked=unavailable,
        )
    made = _auto(isvc, digest=digest, unavailable=unavailable, u=u, capacity=capacity(), fresh=live is None)
    return replace(made, asked=unavailable)


def _auto(
    isvc: InferenceService, *, digest: str, unavailable: int | str, u: int, capacity: Capacity, fresh: bool
) -> RolloutPlan:
    """A new ``Auto`` plan for the template ``digest``, from what the nodes have free now."""
    gpu, replicas = isvc.spec.gpu, isvc.spec.replicas
    if fresh:
        # Nothing runs yet, so nothing is replaced; the first template change plans afresh.
        return RolloutPlan(AUTO, 0 if u else 1, unavailable, AUTO, "first pods: nothing to replace", digest)
    if not capacity.known:
        return RolloutPlan(
            AUTO,
            1,
            unavailable,
            "Surge 1",
            "Nodes cannot be read (namespaced mode, or capacity reads turned off), so free GPUs are not counted: "
            "surging 1 replica at a time "
            "and switching to replacing if a new pod cannot get a GPU",
            digest,
        )
    if gpu <= 0:
        return RolloutPlan(AUTO, None, unavailable, SURGE, "no GPUs asked for: surging as a Deployment does", digest)
    free = f"{capacity.free_gpus} {GPU_RESOURCE} free {capacity.where}, {gpu} per replica"
    if too_big := _too_big(isvc, capacity):
        return RolloutPlan(AUTO, 0 if u else 1, unavailable, REPLACE, free, digest, blocked=too_big)
    fits = min(capacity.fits, replicas)
    if fits >= replicas:
        return RolloutPlan(AUTO, fits, 0, SURGE, f"surging all {replicas} replica(s): {free}", digest)
    if fits > 0:
        rest = (
            f"replacing the other {replicas - fits}, {u} at a time"
            if u
            else f"the other {replicas - fits} follow as old pods stop (maxUnavailable 0)"
        )
        return RolloutPlan(
            AUTO,
            fits,
            unavailable,
            f"Surge {fits} + Replace",
            f"surging {fits} of {replicas} replicas: {free}; {rest}",
            digest,
        )
    if u:
        return RolloutPlan(
            AUTO, 0, unavailable, REPLACE, f"replacing {u} replica(s) at a time: no room for another ({free})", digest
        )
    return RolloutPlan(
        AUTO,
        1,
        0,
        "Surge 1",
        free,
        digest,
        blocked=f"no room for another replica ({free}) and maxUnavailable 0 forbids stopping an old pod first: "
        f"waiting for {GPU_RESOURCE} to free",
    )
