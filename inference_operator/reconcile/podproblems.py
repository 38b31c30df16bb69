"""What the pods of a Deployment that is not ready say, in a person's words.

Pure: given the pods (from the Pod cache or one read), name the one cause that explains why
replicas are not becoming ready, most actionable first: the scheduler cannot place them (its own
words), the image cannot be pulled, the kubelet cannot build the container from the spec, a
container keeps crashing (which, how it ended, how often), or the servers are up and still
loading behind their startup probe. Status quotes it; the rollout step reads the scheduler's
words to find a stall.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inference_operator.api.constants import Reason
from inference_operator.core.objects import Obj
from inference_operator.reconcile.capacity import FINISHED_PHASES


@dataclass(frozen=True)
class PodProblem:
    """Why pods are not becoming ready, in words a person understands."""

    reason: str
    message: str


_IMAGE_PULL = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
# The kubelet cannot build the container from the pod spec: a missing Secret or ConfigMap key,
# or runAsNonRoot with an image whose user is root. Only a change of spec, image or namespace ends it.
_CONFIG_ERROR = "CreateContainerConfigError"


def _crash(cs: Obj) -> str:
    """One crash-looping container in a person's words: which, how it ended, how often."""
    last = (cs.get("lastState") or {}).get("terminated") or {}
    restarts = int(cs.get("restartCount") or 0)
    return (
        f"container {cs.get('name') or '?'} exited with code {last.get('exitCode', '?')} "
        f"({last.get('reason') or 'Error'}), restarted {restarts} time{'' if restarts == 1 else 's'}"
    )


def _crashed(cs: Obj) -> bool:
    """Crash looping, whatever the moment: waiting in back-off, or running again after failed
    exits without having become ready since. The kubelet shows the second between back-offs;
    a look at that moment must not read as "no problem", for that answer is kept until the
    next resync. After a single failed exit, a server loading again behind its startup probe
    is only starting (it may well come up this time): it is looked at again within
    ``STARTING_RECHECK`` (podcheck.py), and a second failure is a loop."""
    waiting = (cs.get("state") or {}).get("waiting") or {}
    if waiting.get("reason") == "CrashLoopBackOff":
        return True
    last = (cs.get("lastState") or {}).get("terminated") or {}
    restarts = int(cs.get("restartCount") or 0)
    failed_before = not cs.get("ready") and restarts > 0 and int(last.get("exitCode") or 0) != 0
    return failed_before and not (restarts == 1 and _starting(cs))


def _starting(cs: Obj) -> bool:
    """Running, but its startup probe has not passed yet: the server is loading its model."""
    return "running" in (cs.get("state") or {}) and cs.get("started") is False


def _start(cs: Obj) -> str:
    """One starting container in a person's words, with the failed exit it restarted after."""
    last = (cs.get("lastState") or {}).get("terminated") or {}
    again = ""
    if int(cs.get("restartCount") or 0) and int(last.get("exitCode") or 0):
        again = f" again after exiting with code {last['exitCode']} ({last.get('reason') or 'Error'})"
    return f"container {cs.get('name') or '?'} is running{again}"


def unschedulable_message(pod: Obj) -> str | None:
    """The scheduler's words for a pod it could not place (None: scheduled, or not tried yet)."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable":
            return str(c.get("message") or "no node fits")
    return None


def scheduling_words(pod: Obj | None) -> str | None:
    """The scheduler's words for a pod the diagnosis counts (not deleted, not finished), if it
    could not place it: what a diagnosis depends on that moves no Deployment's status. None
    for no pod at all."""
    if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    if (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
        return None
    return unschedulable_message(pod)


def all_scheduling_words(pods: Iterable[Obj]) -> tuple[tuple[str, str], ...]:
    """Each of ``pods`` the scheduler could not place, by name, with its words: equal for two
    readings of the same pods exactly when the scheduler said nothing new between them (and
    the diagnosis, which quotes the first of them by name, would say the same)."""
    found = ((str((pod.get("metadata") or {}).get("name") or ""), scheduling_words(pod)) for pod in pods)
    return tuple(sorted((name, words) for name, words in found if words is not None))


def scheduling_words_changed(old: Obj | None, new: Obj | None) -> bool:
    """Whether a change of a pod (None: created, or deleted) changed the scheduler's words a
    diagnosis counts."""
    return scheduling_words(old) != scheduling_words(new)


def pod_problem(pods: list[Obj]) -> PodProblem | None:
    """The most telling reason among the pods of a Deployment why replicas are not ready.

    Unschedulable pods (e.g. asking for more GPUs than any node has) come first, then image
    pull failures, then containers the kubelet cannot create, then crash loops, and last no
    problem at all: servers still loading behind their startup probe. Messages carry no
    timestamps; a crash loop's restart count is as of the last look at the pods (the
    reconciler looks again only when the Deployment moves, the scheduler's words for one of
    its pods change, or after ``POD_RECHECK``).
    """
    unschedulable, pulls, configs, crashes, starting = [], [], [], [], []
    for pod in pods:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        status = pod.get("status") or {}
        if (message := unschedulable_message(pod)) is not None:
            unschedulable.append(message)
        for cs in status.get("containerStatuses") or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in _IMAGE_PULL:
                pulls.append(f"{waiting['reason']}: {waiting.get('message') or cs.get('image', '')}")
            elif waiting.get("reason") == _CONFIG_ERROR:
                configs.append(f"container {cs.get('name') or '?'}: {waiting.get('message') or _CONFIG_ERROR}")
            elif _crashed(cs):
                crashes.append(_crash(cs))
            elif _starting(cs):
                starting.append(_start(cs))
    if unschedulable:
        return PodProblem(
            Reason.PODS_UNSCHEDULABLE, f"{len(unschedulable)} pod(s) cannot be scheduled: {unschedulable[0]}"
        )
    if pulls:
        return PodProblem(Reason.IMAGE_PULL_FAILED, f"{len(pulls)} pod(s) cannot pull the image: {pulls[0]}")
    if configs:
        return PodProblem(Reason.CONTAINER_CONFIG_ERROR, f"{len(configs)} pod(s) cannot start: {configs[0]}")
    if crashes:
        return PodProblem(Reason.CRASH_LOOPING, f"{len(crashes)} pod(s) keep crashing: {crashes[0]}")
    if starting:
        return PodProblem(
            Reason.SERVER_STARTING,
            f"{len(starting)} pod(s) still starting: {starting[0]}, "
            "its startup probe has not passed yet (the server is loading the model)",
        )
    return None
