"""The Deployment controller: rolls a Deployment's ReplicaSets as kube-controller-manager does.

One pass per Deployment, in ``syncDeployment``'s order: pausing or resuming first sets the
``Progressing`` condition to Unknown (``DeploymentPaused``, ``DeploymentResumed``: a paused
rollout has no deadline, and a resumed one counts its deadline from the resumption); a paused
Deployment only resizes its ReplicaSets and updates its status numbers, and never creates the new
ReplicaSet of a changed template (``kubectl rollout pause``); a scaling event (``spec.replicas``
differs from the ``desired-replicas`` annotation of an active ReplicaSet) only resizes; else
Recreate (old ReplicaSets to 0, wait until their pods are gone, then the new one to full size) or
RollingUpdate (grow the new ReplicaSet, else shrink the old ones), then the status with its
``Progressing`` condition (``NewReplicaSetCreated``, ``FoundNewReplicaSet``, ``ReplicaSetUpdated``,
``NewReplicaSetAvailable``, ``ProgressDeadlineExceeded``), ``Available`` and ``ReplicaFailure``.
First (after the paused condition), a ReplicaSet no controller owns whose labels the selector
matches is adopted (:mod:`.claims`).
The numbers come from :mod:`.deployments`; this module reads the caches and writes. The
revision annotation rides on the status write (the real controller writes it through
``UpdateStatus`` too). Old ReplicaSets beyond ``revisionHistoryLimit`` are not cleaned up.
"""

from __future__ import annotations

from collections.abc import Callable

from inference_operator.core.clock import format_timestamp, parse_timestamp
from inference_operator.core.errors import AlreadyExists
from inference_operator.core.objects import Obj, key_of
from inference_operator.core.ports import Result
from inference_operator.sim.apiserver.managedfields import GC_FIELD_MANAGER as CONTROLLER_MANAGER
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster import deployments as arithmetic
from inference_operator.sim.cluster.claims import ReplicaSetClaims
from inference_operator.sim.cluster.deployments import RSView
from inference_operator.sim.cluster.replicasets import (
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    REVISION,
    build_replicaset,
    pod_template_hash,
    revision_of,
    template_without_hash,
)
from inference_operator.sim.cluster.tracing import trace_status
from inference_operator.sim.informer import SharedInformer
from inference_operator.trace.recorder import NULL_TRACER, Tracer

__all__ = ["DeploymentController"]

_NO_DEADLINE = 2**31 - 1  # ``HasProgressDeadline``: MaxInt32 means none


def _view(rs: Obj) -> RSView:
    status = rs.get("status") or {}
    annotation = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
    return RSView(
        name=rs["metadata"]["name"],
        replicas=int(rs["spec"].get("replicas", 1)),
        available=int(status.get("availableReplicas") or 0),
        ready=int(status.get("readyReplicas") or 0),
        actual=int(status.get("replicas") or 0),
        created=str(rs["metadata"].get("creationTimestamp") or ""),
        desired_annotation=int(annotation) if annotation is not None and str(annotation).isdigit() else None,
    )


class DeploymentController:
    """Reconciles one Deployment per key (``namespace/name``)."""

    def __init__(
        self,
        *,
        api: FakeApiServer,
        clock: FakeClock,
        deployments: SharedInformer,
        replicasets: SharedInformer,
        pods_of: Callable[[Obj], list[Obj]],
        withdraw: Callable[[str], object] = lambda _key: None,
        tracer: Tracer = NULL_TRACER,
    ) -> None:
        self.api = api
        self.clock = clock
        self.deployments = deployments
        self.replicasets = replicasets
        self.pods_of = pods_of
        """ReplicaSet → its pods (all of them, terminating ones too): Recreate waits for them."""
        self.withdraw = withdraw
        """Takes a Deployment's pending progress-deadline check out of the queue (key given)."""
        self.tracer = tracer
        """Told each status this controller writes (pods becoming ready, a rollout's progress)."""
        self.claims = ReplicaSetClaims(api=api, deployments=deployments, replicasets=replicasets)
        """Which ReplicaSets are each Deployment's (fed by the ReplicaSet watch), and adoption."""

    # --- one pass -----------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Result:
        dep = self.deployments.get(namespace, name)
        if dep is None or "deletionTimestamp" in dep["metadata"]:
            self.withdraw(key_of(namespace, name))
            return Result()
        dep = self._paused_condition(dep)
        self.claims.adopt_orphans(dep)
        spec = dep["spec"]
        replicas = int(spec.get("replicas", 1))
        surge, unavailable = arithmetic.fenceposts(spec)
        all_rs = self.claims.owned_by(dep)
        template = spec["template"]
        new_obj = next((rs for rs in all_rs if template_without_hash(rs["spec"]["template"]) == template), None)
        olds = [rs for rs in all_rs if rs is not new_obj]
        status_extra: Obj = {}
        active = [rs for rs in all_rs if int(rs["spec"].get("replicas", 1)) > 0]
        if spec.get("paused") or any((_view(rs).desired_annotation or replicas) != replicas for rs in active):
            # ``sync`` (``scale``, then the status): a scaling event, or a paused Deployment, which
            # never starts a rollout but is still scaled (a saturated new ReplicaSet empties the old).
            plan = arithmetic.scaling_plan(
                replicas=replicas, surge=surge, new=_view(new_obj) if new_obj else None, olds=[_view(rs) for rs in olds]
            )
            for rs in active:
                self._scale(rs, plan.get(rs["metadata"]["name"], _view(rs).replicas), dep, surge)
            return self._sync_status(dep, new_obj, olds, estimate=False)
        recreate = (spec.get("strategy") or {}).get("type") == "Recreate"
        if recreate:
            if any(_view(rs).replicas for rs in olds):
                for rs in olds:
                    self._scale(rs, 0, dep, surge)
                return self._sync_status(dep, new_obj, olds, estimate=True)
            if any(self.pods_of(rs) for rs in olds):
                return self._sync_status(dep, new_obj, olds, estimate=True)
        if new_obj is None:
            new_obj, status_extra = self._create_new(dep, olds, surge=surge, recreate=recreate)
            if new_obj is None:
                return Result(requeue=True)
        elif not any(c.get("type") == "Progressing" for c in (dep.get("status") or {}).get("conditions") or ()):
            status_extra = {
                "progressing": (arithmetic.FOUND_NEW_RS, f'Found new replica set "{new_obj["metadata"]["name"]}"')
            }
        new = _view(new_obj)
        if new.replicas != replicas:
            target = (
                replicas
                if new.replicas > replicas
                else arithmetic.new_rs_replicas(
                    replicas=replicas,
                    surge=surge,
                    all_replicas=sum(_view(rs).replicas for rs in all_rs if rs is not new_obj) + new.replicas,
                    new_replicas=new.replicas,
                    recreate=recreate,
                )
            )
            if target != new.replicas:
                new_obj = self._scale(new_obj, target, dep, surge)
                return self._sync_status(dep, new_obj, olds, estimate=True, extra=status_extra)
        if not recreate:
            plan = arithmetic.old_replicasets_scale_down(
                replicas=replicas, max_unavailable=unavailable, new=_view(new_obj), olds=[_view(rs) for rs in olds]
            )
            for rs in olds:
                if rs["metadata"]["name"] in plan:
                    self._scale(rs, plan[rs["metadata"]["name"]], dep, surge)
        return self._sync_status(dep, new_obj, olds, estimate=True, extra=status_extra)

    # --- writes -------------------------------------------------------------------------------

    def _paused_condition(self, dep: Obj) -> Obj:
        """``checkPausedConditions``: with a progress deadline, pausing sets ``Progressing`` to
        Unknown ``DeploymentPaused`` and resuming to Unknown ``DeploymentResumed`` (a deadline
        already exceeded stays so). Returns the Deployment as stored after the write, if any, and
        the pass goes on with it. The real controller goes on with the version it read, so its
        own status write later in that pass conflicts and waits for the next sync: there
        ``observedGeneration`` catches up with a pause one sync later, and after a resume the
        ``NewReplicaSetCreated`` reason is never shown (``ReplicaSetUpdated`` follows
        ``DeploymentResumed``). Deployment conditions are not what the operator reads."""
        if dep["spec"].get("progressDeadlineSeconds") in (None, _NO_DEADLINE):
            return dep
        status = dep.get("status") or {}
        current = next((c for c in status.get("conditions") or () if c.get("type") == "Progressing"), None)
        if current is not None and current.get("reason") == arithmetic.TIMED_OUT:
            return dep
        shown = current is not None and current.get("reason") == arithmetic.PAUSED
        paused = bool(dep["spec"].get("paused"))
        if paused == shown:
            return dep
        reason, message = (
            (arithmetic.PAUSED, "Deployment is paused") if paused else (arithmetic.RESUMED, "Deployment is resumed")
        )
        now = format_timestamp(self.clock.wall())
        condition = arithmetic.progressing_condition("Unknown", reason, message, now)
        conditions = arithmetic.set_condition(status.get("conditions") or (), condition)
        written = {**dep, "status": {**status, "conditions": conditions}}
        return self.api.update_status(written, field_manager=CONTROLLER_MANAGER, answer=True)

    def _create_new(self, dep: Obj, olds: list[Obj], *, surge: int, recreate: bool) -> tuple[Obj | None, Obj]:
        status = dep.get("status") or {}
        collisions = status.get("collisionCount")
        template_hash = pod_template_hash(dep["spec"]["template"], collision_count=collisions)
        revisions = [revision_of(rs) for rs in olds]
        replicas = int(dep["spec"].get("replicas", 1))
        size = arithmetic.new_rs_replicas(
            replicas=replicas,
            surge=surge,
            all_replicas=sum(_view(rs).replicas for rs in olds),
            new_replicas=0,
            recreate=recreate,
        )
        manifest = build_replicaset(
            dep, template_hash=template_hash, replicas=size, revision=max(revisions, default=0) + 1, max_surge=surge
        )
        try:
            created = self.api.create(manifest, field_manager=CONTROLLER_MANAGER)
        except AlreadyExists:  # a hash collision: count it and try again with another hash
            written = {**dep, "status": {**status, "collisionCount": int(collisions or 0) + 1}}
            self.api.update_status(written, field_manager=CONTROLLER_MANAGER, answer=False)
            return None, {}
        message = f'Created new replica set "{created["metadata"]["name"]}"'
        return created, {"progressing": (arithmetic.NEW_RS_CREATED, message)}

    def _scale(self, rs: Obj, replicas: int, dep: Obj, surge: int) -> Obj:
        desired = str(dep["spec"].get("replicas", 1))
        annotations = rs["metadata"].get("annotations") or {}
        wanted = {DESIRED_REPLICAS: desired, MAX_REPLICAS: str(int(desired) + surge)}
        if int(rs["spec"].get("replicas", 1)) == replicas and all(annotations.get(k) == v for k, v in wanted.items()):
            return rs
        patch = {"spec": {"replicas": replicas}, "metadata": {"annotations": wanted}}
        meta = rs["metadata"]
        return self.api.patch("ReplicaSet", meta["namespace"], meta["name"], patch, field_manager=CONTROLLER_MANAGER)

    def _sync_status(
        self, dep: Obj, new_obj: Obj | None, olds: list[Obj], *, estimate: bool, extra: Obj | None = None
    ) -> Result:
        spec, meta = dep["spec"], dep["metadata"]
        replicas = int(spec.get("replicas", 1))
        generation = int(meta.get("generation") or 1)
        _, unavailable = arithmetic.fenceposts(spec)
        now = format_timestamp(self.clock.wall())
        old_status = dep.get("status") or {}
        new = _view(new_obj) if new_obj is not None else None
        status = arithmetic.calculate_status(
            generation=generation,
            replicas=replicas,
            max_unavailable=unavailable,
            new=new,
            olds=[_view(rs) for rs in olds],
            old_status=old_status,
            now=now,
        )
        rs_name = new_obj["metadata"]["name"] if new_obj is not None else ""
        every = [*([new_obj] if new_obj is not None else []), *olds]
        status["terminatingReplicas"] = sum(
            int((rs.get("status") or {}).get("terminatingReplicas") or 0) for rs in every
        )
        if extra and "progressing" in extra:
            reason, message = extra["progressing"]
            status["conditions"] = arithmetic.set_condition(
                status["conditions"], arithmetic.progressing_condition("True", reason, message, now)
            )
        if estimate:
            status["conditions"] = self._progress(dep, status, rs_name, now)
        failures = [
            c
            for rs in every
            for c in (rs.get("status") or {}).get("conditions") or ()
            if c.get("type") == "ReplicaFailure"
        ]
        conditions = [c for c in status["conditions"] if c.get("type") != "ReplicaFailure"]
        if failures:
            conditions = arithmetic.set_condition(
                conditions, {**failures[0], "lastUpdateTime": failures[0].get("lastTransitionTime")}
            )
        status["conditions"] = conditions
        revision = (new_obj["metadata"].get("annotations") or {}).get(REVISION) if new_obj is not None else None
        annotations = dict(meta.get("annotations") or {})
        if revision is not None and annotations.get(REVISION) != revision:
            annotations[REVISION] = revision
        after = self._stuck_for(dep, status)
        if after is None:
            # The check ``requeueStuckDeployment`` asked for earlier would find nothing to do:
            # on a cluster that pass is harmless; on the fake clock it would make time jump.
            self.withdraw(key_of(meta["namespace"], meta["name"]))
        if status != old_status or annotations != (meta.get("annotations") or {}):
            written = {**dep, "metadata": {**meta, "annotations": annotations}, "status": status}
            traced = self.tracer.enabled
            stored = self.api.update_status(written, field_manager=CONTROLLER_MANAGER, answer=traced)
            if traced:
                trace_status(self.tracer, old=old_status, written=stored)
            return Result()
        return Result(requeue_after=after) if after is not None and estimate else Result()

    def _stuck_for(self, dep: Obj, status: Obj) -> float | None:
        """``requeueStuckDeployment``: a pass that changed nothing looks again one second after
        the progress deadline of ``status`` would pass (None: no deadline, complete, or already
        timed out). Where the real one requeues at once (less than a second left), this one
        waits a second."""
        deadline = dep["spec"].get("progressDeadlineSeconds")
        current = next((c for c in status.get("conditions") or () if c.get("type") == "Progressing"), None)
        replicas, generation = int(dep["spec"].get("replicas", 1)), int(dep["metadata"].get("generation") or 1)
        if deadline is None or current is None or current.get("reason") == arithmetic.TIMED_OUT:
            return None
        if dep["spec"].get("paused"):
            return None  # no deadline while paused: a check queued before the pause is withdrawn
        if arithmetic.deployment_complete(status, replicas=replicas, generation=generation):
            return None
        since = parse_timestamp(str(current.get("lastUpdateTime"))).timestamp()
        after = since + float(deadline) - self.clock.wall().timestamp()
        return max(after, 0.0) + 1.0

    def _progress(self, dep: Obj, status: Obj, rs_name: str, now: str) -> list[Obj]:
        """``syncRolloutStatus``'s Progressing estimate: the conditions to write."""
        spec, old = dep["spec"], dep.get("status") or {}
        replicas, generation = int(spec.get("replicas", 1)), int(dep["metadata"].get("generation") or 1)
        conditions: list[Obj] = list(status["conditions"])
        current = next((c for c in old.get("conditions") or () if c.get("type") == "Progressing"), None)
        if (
            status.get("replicas", 0) == status.get("updatedReplicas", 0)
            and current
            and current.get("reason") == arithmetic.NEW_RS_AVAILABLE
        ):
            return conditions
        deadline = spec.get("progressDeadlineSeconds")
        if arithmetic.deployment_complete(status, replicas=replicas, generation=generation):
            message = f'ReplicaSet "{rs_name}" has successfully progressed.'
            cond = arithmetic.progressing_condition("True", arithmetic.NEW_RS_AVAILABLE, message, now)
            return arithmetic.set_condition(conditions, cond)
        if arithmetic.deployment_progressing(old, status):
            cond = arithmetic.progressing_condition(
                "True", arithmetic.RS_UPDATED, f'ReplicaSet "{rs_name}" is progressing.', now
            )
            if current is not None and current.get("status") == "True":
                cond["lastTransitionTime"] = current.get("lastTransitionTime")
            kept = [c for c in conditions if c.get("type") != "Progressing"]
            return [*kept, cond]
        progressing = next((c for c in conditions if c.get("type") == "Progressing"), None)
        if deadline is None or progressing is None or progressing.get("reason") == arithmetic.NEW_RS_AVAILABLE:
            return conditions
        if progressing.get("reason") == arithmetic.TIMED_OUT:
            return conditions
        since = parse_timestamp(str(progressing.get("lastUpdateTime"))).timestamp()
        if since + float(deadline) < self.clock.wall().timestamp():  # DeploymentTimedOut: strictly past
            message = f'ReplicaSet "{rs_name}" has timed out progressing.'
            cond = arithmetic.progressing_condition("False", arithmetic.TIMED_OUT, message, now)
            return arithmetic.set_condition(conditions, cond)
        return conditions
