"""What a service's pods say of its rollout: a stall, a new pod left unplaced, a rollout at all.

The rollout plan (``rollout.py``) acts on what the pods say, so does the explanation of a
rollout the maxUnavailable bound holds (``rollouthold.py``), and the reconciler's pod diagnosis
looks for a stall in the pods it LISTs where there is no Pod cache: the reading lives here,
apart from what is decided from it. Which pods are the new ones is the first question:
the newest template's, the group of pods created last. Pure functions of the pods and the live
Deployment, as read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inference_operator.api.constants import GPU_RESOURCE
from inference_operator.core.conditions import find
from inference_operator.core.objects import Obj, is_being_deleted
from inference_operator.reconcile.capacity import FINISHED_PHASES
from inference_operator.reconcile.podproblems import unschedulable_message

TEMPLATE_HASH = "pod-template-hash"  # the label a Deployment's ReplicaSet puts on its pods
REVISION = "deployment.kubernetes.io/revision"  # the Deployment controller's count of templates
_COMPLETE = "NewReplicaSetAvailable"  # the Progressing reason of a rollout that completed
_INSUFFICIENT_GPU = f"Insufficient {GPU_RESOURCE}"


@dataclass(frozen=True)
class Stall:
    """New pods that cannot be scheduled for want of GPUs while old pods still run."""

    pending: int
    message: str
    """The scheduler's words for one of them."""

    def words(self, gpu: int) -> str:
        return (
            f"{self.pending} new pod(s) cannot be scheduled, each needs {gpu} {GPU_RESOURCE} and old pods "
            f"hold them: {self.message}"
        )


def _images(pod: Obj) -> tuple[str, ...]:
    return tuple(str(c.get("image") or "") for c in (pod.get("spec") or {}).get("containers") or ())


def newest_template(pods: list[Obj], image: str = "") -> str | None:
    """The ``pod-template-hash`` of the newest ReplicaSet's pods: the group whose first pod was
    created last (a rollout creates the new ReplicaSet's pods after the old ones'; a rollback
    re-creates the old template's pods, which then are the newest). Creation times have a
    resolution of a second, and pods that start at once can share it with the old ones: then
    the group running the desired ``image`` is the newer. None: no hash at all."""
    first: dict[str, tuple[str, bool]] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        template = (meta.get("labels") or {}).get(TEMPLATE_HASH)
        if template is None:
            continue
        created = (str(meta.get("creationTimestamp") or ""), bool(image) and image in _images(pod))
        first[template] = min(first.get(template, created), created)
    return max(first, key=lambda t: (first[t], t)) if first else None


def live_pods(pods: Iterable[Obj]) -> list[Obj]:
    """The pods that hold or wait for something: a finished one holds nothing (and the real
    cluster's Pod cache leaves it out)."""
    return [p for p in pods if (p.get("status") or {}).get("phase") not in FINISHED_PHASES]


def is_newest(pod: Obj, newest: str | None) -> bool:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(TEMPLATE_HASH) == newest


def is_bound(pod: Obj) -> bool:
    """The scheduler placed the pod on a node: it holds what it requests there."""
    return bool((pod.get("spec") or {}).get("nodeName"))


def freeing_by_itself(listed: list[Obj], *, bound_old: int, old_replicas: int) -> bool:
    """GPUs are coming free without anyone acting, so nothing holds or stalls a rollout: a pod
    of the service is terminating (its GPUs come free when it is gone: a Replace step, a
    surge's scale-down), or ``bound_old`` old pods are bound in the Pod cache while the
    Deployment counts fewer old replicas (Pods and Deployments come in on streams of their own:
    the cache has not seen an old pod's end yet). The next pod event brings the pass back."""
    return bound_old > old_replicas or any(is_being_deleted(pod) for pod in listed)


def short_of_gpus(pod: Obj) -> bool:
    """The scheduler left the pod Pending, and one of its reasons is too few GPUs free."""
    message = unschedulable_message(pod)
    return message is not None and _INSUFFICIENT_GPU in message


def rolling_out(live: Obj | None) -> bool:
    """Whether the Deployment is rolling out a template it was not created with: past its first
    revision, and its Progressing condition does not say the rollout completed. The first pods
    of a new Deployment, or a pod lost after a rollout completed, are no rollout to block."""
    revision = str((((live or {}).get("metadata") or {}).get("annotations") or {}).get(REVISION) or "")
    if not revision.isdigit() or int(revision) <= 1:
        return False
    progressing = find(((live or {}).get("status") or {}).get("conditions") or [], "Progressing") or {}
    return progressing.get("reason") != _COMPLETE


def new_pod_unplaced(pods: Iterable[Obj], *, image: str = "") -> bool:
    """Whether the scheduler left a pod of the newest template Pending, for any reason: the
    moment to ask whether any node it may use could hold a replica at all. A pod being deleted
    waits for nothing."""
    listed = live_pods(pods)
    newest = newest_template(listed, image)
    return any(
        is_newest(pod, newest)
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
        and unschedulable_message(pod) is not None
        for pod in listed
    )


def detect_stall(*, gpu: int, old_pods: int, pods: Iterable[Obj], image: str = "") -> Stall | None:
    """A stall: while ``old_pods`` still run, pods of the new template that the scheduler leaves
    Pending because no node has the GPUs free, while pods of an old template are bound to nodes
    and hold GPUs. Old pods that are Pending themselves hold nothing (a replica too big for
    every node, replaced by a smaller one, is no stall), and nothing is a stall while GPUs are
    coming free by themselves (:func:`freeing_by_itself`): the pod waiting for them will be
    placed then. ``image``: the desired template's image, which tells the new pods from the old
    when both were created in one second."""
    if gpu <= 0 or old_pods <= 0:
        return None
    listed = live_pods(pods)
    newest = newest_template(listed, image)
    messages = []
    holding = 0
    for pod in listed:
        if not is_newest(pod, newest):
            holding += is_bound(pod)
            continue
        if short_of_gpus(pod):
            messages.append(str(unschedulable_message(pod)))
    if freeing_by_itself(listed, bound_old=holding, old_replicas=old_pods):
        return None
    return Stall(len(messages), messages[0]) if messages and holding else None
