"""Compute an InferenceService's status from what was observed: honest, and stable.

Pure functions: given the parsed object, its previous status, the live Deployment and Service
and the load balancer outcome, return the full new status. ``Ready=True`` only when the
Deployment has rolled out the current template, every desired replica is ready, the Service
exists and the load balancer is registered (or registration is disabled). Messages carry no
timestamps or durations, so the same observation always yields the same status and a
converged object needs no write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inference_operator.api.constants import ConditionType as CT
from inference_operator.api.constants import Phase, Reason
from inference_operator.api.models import InferenceService
from inference_operator.core.conditions import Cond, find, merge, update
from inference_operator.core.objects import Obj
from inference_operator.core.ports import Registration
from inference_operator.reconcile.builders import selector_string, service_url
from inference_operator.reconcile.podproblems import PodProblem


@dataclass(frozen=True)
class LoadBalancerState:
    """The outcome of the load balancer step of one pass."""

    state: Literal["registered", "disabled", "waiting", "withheld", "failed"]
    registration: Registration | None = None
    message: str = ""
    recheck: bool = False
    """The record could not be checked this time (the balancer did not answer): look again soon."""


@dataclass(frozen=True)
class DeploymentView:
    """The numbers of a live Deployment that status is computed from."""

    exists: bool
    observed: bool
    total: int
    updated: int
    ready: int
    deadline_exceeded: bool
    deadline_message: str
    last_progress: str = ""  # Progressing.lastUpdateTime: when the rollout last moved
    version: str = ""  # the Deployment's resourceVersion: any status change moves it
    pods_refused: str = ""  # ReplicaFailure (True): why the API server refuses the ReplicaSet's pods
    paused: bool = False  # spec.paused: someone ran kubectl rollout pause

    @classmethod
    def of(cls, dep: Obj | None) -> DeploymentView:
        if dep is None:
            return cls(False, False, 0, 0, 0, False, "")
        st = dep.get("status") or {}
        gen = (dep.get("metadata") or {}).get("generation") or 1
        progressing = find(st.get("conditions") or [], "Progressing") or {}
        exceeded = progressing.get("reason") == "ProgressDeadlineExceeded" and progressing.get("status") == "False"
        failure = find(st.get("conditions") or [], "ReplicaFailure") or {}
        refused = str(failure.get("message") or "pod creation failed") if failure.get("status") == "True" else ""
        return cls(
            exists=True,
            observed=int(st.get("observedGeneration") or 0) >= int(gen),
            total=int(st.get("replicas") or 0),
            updated=int(st.get("updatedReplicas") or 0),
            ready=int(st.get("readyReplicas") or 0),
            deadline_exceeded=exceeded,
            deadline_message=str(progressing.get("message") or ""),
            last_progress=str(progressing.get("lastUpdateTime") or ""),
            version=str((dep.get("metadata") or {}).get("resourceVersion") or ""),
            pods_refused=refused,
            paused=bool((dep.get("spec") or {}).get("paused")),
        )


def deployment_condition(isvc: InferenceService, dep: DeploymentView, problem: PodProblem | None = None) -> Cond:
    desired = isvc.spec.replicas
    t = CT.DEPLOYMENT_READY
    if not dep.exists:
        return Cond(t, "False", Reason.WAITING_FOR_CHILDREN, f"Deployment {isvc.name} does not exist yet")
    if not dep.observed:
        return Cond(
            t,
            "False",
            Reason.DEPLOYMENT_NOT_OBSERVED,
            f"waiting for the Deployment controller to pick up the new spec of {isvc.name}",
        )
    if dep.deadline_exceeded:
        detail = f": {problem.message}" if problem else (f": {dep.deadline_message}" if dep.deadline_message else "")
        return Cond(
            t,
            "False",
            Reason.PROGRESS_DEADLINE_EXCEEDED,
            f"rollout made no progress for {isvc.spec.progressDeadlineSeconds}s, "
            f"{dep.ready} of {desired} replicas ready{detail}",
        )
    if desired == 0 and dep.total == 0:
        return Cond(t, "True", Reason.SCALED_TO_ZERO, "scaled to zero replicas")
    if dep.pods_refused and dep.ready < desired:
        # No pod exists to ask: the API server refused them (Pod Security admission, a quota,
        # a LimitRange…), and the ReplicaSet keeps trying. It needs a person, not time.
        return Cond(
            t,
            "False",
            Reason.PODS_REFUSED,
            f"{dep.ready} of {desired} replicas ready; the API server refuses the pods: {dep.pods_refused}",
        )
    if problem is not None and dep.ready < desired:
        return Cond(t, "False", problem.reason, f"{dep.ready} of {desired} replicas ready; {problem.message}")
    if dep.paused and (dep.updated < desired or dep.total > dep.updated):
        return Cond(
            t,
            "False",
            Reason.ROLLOUT_PAUSED,
            f"{dep.updated} of {desired} replicas updated, {dep.ready} ready: the Deployment is paused, so its "
            f"rollout waits; kubectl rollout resume deployment/{isvc.name} -n {isvc.namespace} lets it go on",
        )
    if dep.updated < desired or dep.total > dep.updated:
        old = dep.total - dep.updated
        tail = f", {old} old replicas still running" if old > 0 else ""
        if problem is not None:  # e.g. the surge pod waits for GPUs the old pods hold
            tail += f"; {problem.message}"
        return Cond(
            t,
            "False",
            Reason.ROLLOUT_IN_PROGRESS,
            f"{dep.updated} of {desired} replicas updated, {dep.ready} ready{tail}",
        )
    if dep.ready < desired:
        return Cond(t, "False", Reason.REPLICAS_UNAVAILABLE, f"{dep.ready} of {desired} replicas ready")
    return Cond(t, "True", Reason.DEPLOYMENT_AVAILABLE, f"{dep.ready} of {desired} replicas ready")


def service_condition(isvc: InferenceService, svc: Obj | None) -> Cond:
    if svc is None:
        return Cond(CT.SERVICE_READY, "False", Reason.SERVICE_MISSING, f"Service {isvc.name} does not exist yet")
    return Cond(
        CT.SERVICE_READY,
        "True",
        Reason.SERVICE_CREATED,
        f"Service {isvc.name} routes port {isvc.spec.port} to the server pods",
    )


def load_balancer_condition(lb: LoadBalancerState) -> Cond:
    t = CT.LOAD_BALANCER_READY
    if lb.state == "disabled":
        return Cond(t, "True", Reason.LOAD_BALANCER_DISABLED, "registration disabled by spec.loadBalancer.enabled")
    if lb.state == "registered" and lb.registration is not None:
        return Cond(
            t,
            "True",
            Reason.LOAD_BALANCER_REGISTERED,
            f"registered as {lb.registration.id} at {lb.registration.address}",
        )
    if lb.state == "failed":
        return Cond(t, "False", Reason.LOAD_BALANCER_FAILED, lb.message)
    if lb.state == "withheld":
        return Cond(t, "False", Reason.LOAD_BALANCER_PENDING, lb.message)
    return Cond(
        t, "False", Reason.LOAD_BALANCER_PENDING, "waiting for the Deployment and the Service before registering"
    )


def _was(previous: Obj, type_: str, generation: int) -> bool:
    c = find(previous.get("conditions") or [], type_)
    return c is not None and c.get("status") == "True" and c.get("observedGeneration") == generation


def degraded_condition(isvc: InferenceService, previous: Obj, dep: DeploymentView) -> Cond:
    """Degraded: it was Ready at this generation, and fewer replicas are ready now.

    The rollout is over when no pod of an old template is left (``replicas == updatedReplicas``),
    not when ``updatedReplicas`` reaches the desired count: a pod lost with its node leaves the
    Deployment one updated replica short until the ReplicaSet replaces it, and that is no rollout."""
    desired = isvc.spec.replicas
    was_serving = _was(previous, CT.READY, isvc.generation) or _was(previous, CT.DEGRADED, isvc.generation)
    settled = dep.observed and dep.total <= dep.updated and not dep.deadline_exceeded
    if was_serving and settled and dep.ready < desired:
        return Cond(
            CT.DEGRADED,
            "True",
            Reason.FEWER_READY_REPLICAS,
            f"{dep.ready} of {desired} replicas ready after the rollout had completed",
        )
    return Cond(CT.DEGRADED, "False", Reason.AS_EXPECTED, "")


def progressing_condition(deployment: Cond, degraded: Cond) -> Cond:
    t = CT.PROGRESSING
    if deployment.reason in (Reason.PROGRESS_DEADLINE_EXCEEDED, Reason.ROLLOUT_BLOCKED, Reason.ROLLOUT_PAUSED):
        return Cond(t, "False", deployment.reason, deployment.message)
    if deployment.is_true:
        return Cond(t, "False", Reason.ROLLOUT_COMPLETE, "rollout complete")
    if degraded.is_true:
        return Cond(t, "False", Reason.ROLLOUT_COMPLETE, "rollout complete, but replicas became unready")
    return Cond(t, "True", deployment.reason, deployment.message)


def ready_condition(parts: list[Cond], ready_message: str, *, blocked: Cond | None = None) -> Cond:
    """The aggregate: a child write that failed explains it first, then the first part not true."""
    if blocked is not None:
        return Cond(CT.READY, "False", blocked.reason, blocked.message)
    for part in parts:
        if not part.is_true:
            return Cond(CT.READY, "False", part.reason, part.message)
    return Cond(CT.READY, "True", Reason.READY, ready_message)


def phase_of(conds: dict[str, Cond], *, ready_replicas: int) -> str:
    """The human summary, derived from the conditions and nothing else."""
    ready, progressing, degraded = conds[CT.READY], conds[CT.PROGRESSING], conds[CT.DEGRADED]
    if ready.reason in Reason.NEEDS_ACTION or progressing.reason == Reason.PROGRESS_DEADLINE_EXCEEDED:
        return Phase.FAILED
    if ready.is_true:
        return Phase.READY
    if degraded.is_true:
        return Phase.DEGRADED
    if ready_replicas > 0 or ready.reason == Reason.SERVER_STARTING:  # servers up, loading their model
        return Phase.PROGRESSING
    return Phase.PENDING


def compute_status(
    isvc: InferenceService,
    previous: Obj,
    dep: DeploymentView,
    service: Obj | None,
    lb: LoadBalancerState,
    *,
    now: str,
    problem: PodProblem | None = None,
    blocked: Cond | None = None,
    rollout: Obj | None = None,
) -> Obj:
    """The full status for this observation (``dep``: ``DeploymentView.of(deployment)``).

    ``blocked``: a child write that failed, as the False condition of that child
    (``DeploymentReady`` or ``ServiceReady``); it replaces the observed one and explains Ready.
    """
    dep_cond = deployment_condition(isvc, dep, problem)
    svc_cond = service_condition(isvc, service)
    if blocked is not None and blocked.type == CT.DEPLOYMENT_READY:
        dep_cond = blocked
    elif blocked is not None and blocked.type == CT.SERVICE_READY:
        svc_cond = blocked
    lb_cond = load_balancer_condition(lb)
    degraded = degraded_condition(isvc, previous, dep)
    progressing = progressing_condition(dep_cond, degraded)
    url = lb.registration.address if lb.registration else (service_url(isvc) if service else None)
    ready = ready_condition(
        [dep_cond, svc_cond, lb_cond],
        f"{dep.ready} of {isvc.spec.replicas} replicas ready, serving at {url}",
        blocked=blocked,
    )
    conds = {c.type: c for c in (ready, dep_cond, svc_cond, lb_cond, progressing, degraded)}
    status: Obj = {
        "observedGeneration": isvc.generation,
        "replicas": dep.total,
        "readyReplicas": dep.ready,
        "updatedReplicas": dep.updated,
        "selector": selector_string(isvc.name),
        "phase": phase_of(conds, ready_replicas=dep.ready),
    }
    if url:
        status["url"] = url
    if rollout is not None:
        status["rollout"] = rollout
    if lb.registration is not None:
        status["loadBalancer"] = {
            "id": lb.registration.id,
            "address": lb.registration.address,
            "target": lb.registration.target,
        }
    status["conditions"] = merge(
        previous.get("conditions") or [], [conds[t] for t in CT.ALL], generation=isvc.generation, now=now
    )
    return status


def invalid_spec_status(previous: Obj, *, generation: int, message: str, now: str) -> Obj:
    """Status for a spec that failed validation: Ready=False/InvalidSpec, everything else kept."""
    return override_status(
        previous,
        [Cond(CT.READY, "False", Reason.INVALID_SPEC, message)],
        generation=generation,
        phase=Phase.FAILED,
        now=now,
    )


def override_status(previous: Obj, conds: list[Cond], *, generation: int, phase: str, now: str) -> Obj:
    """Previous status with ``conds`` set, the phase replaced and the generation observed."""
    status = dict(previous)
    status["observedGeneration"] = generation
    status["phase"] = phase
    status["conditions"] = update(previous.get("conditions") or [], conds, generation=generation, now=now)
    return status
