"""How long the reconciler trusts what it last learned from a Deployment's pods.

Asking the pods is a LIST: 1,000 objects that stay unready must not do it on every pass. Yet
a change in the pods can leave the Deployment's status where it was (a crash loop never moves
it). The scheduler's words are followed: where the operator caches pods, a change of them wakes
the service (``watches.SCHEDULING_WORDS``) and ends the diagnosis. Any other answer is kept for
as long as it can stay true:
a problem that needs a person for ``POD_RECHECK``, "nothing wrong found" until the next
resync, and "still starting" only ``STARTING_RECHECK``: a loading server may crash instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inference_operator.api.constants import Reason
from inference_operator.api.models import InferenceService
from inference_operator.core.ports import Backend
from inference_operator.reconcile.builders import selector_string
from inference_operator.reconcile.podproblems import PodProblem, all_scheduling_words, pod_problem
from inference_operator.reconcile.rolloutpods import Stall, detect_stall
from inference_operator.reconcile.status import DeploymentView

POD_RECHECK = 1800.0  # seconds a pod diagnosis is trusted while the Deployment's status stays put
STARTING_RECHECK = 30.0  # seconds "still starting" is trusted: the reconciler looks again this often
WORDS_RECHECK = 5.0  # seconds until a diagnosis whose LIST and Pod cache disagreed is looked at again


@dataclass(frozen=True)
class PodsRead:
    """The last diagnosis of a Deployment's pods: for which Deployment version, when, what."""

    version: str
    at: float
    problem: PodProblem | None
    epoch: int
    stall: Stall | None = None
    """New pods left Pending for GPUs old pods hold, among the pods read."""
    words: tuple[tuple[str, str], ...] = ()
    """The scheduler's words for the pods read, by pod (``all_scheduling_words``)."""
    recheck: bool = False
    """Look again within ``WORDS_RECHECK``: the pods read and the Pod cache disagreed on the
    scheduler's words. The cache may lag (its event then wakes a pass anyway) or the LIST may
    (another API server's watch cache, behind this one's): then no event would come. Asked
    once in a row: a disagreement that outlasts the look waits for the next event or resync,
    so nothing polls for ever."""

    @property
    def starting(self) -> bool:
        return self.problem is not None and self.problem.reason == Reason.SERVER_STARTING

    def still_holds(self, *, version: str, now: float, epoch: int, words: tuple[tuple[str, str], ...] | None) -> bool:
        """Whether this diagnosis may answer for the Deployment at ``version`` (resync ``epoch``),
        its pods in the Pod cache having the scheduler's ``words`` (None: there is no Pod cache)."""
        if version != self.version:
            return False  # the Deployment moved: its pods did
        if words is not None and words != self.words:
            return False  # the scheduler said something new (a node came, went or changed)
        if self.starting:
            return now - self.at < STARTING_RECHECK
        fresh = self.problem is not None and now - self.at < POD_RECHECK
        return fresh or epoch == self.epoch


class PodChecks:
    """Each InferenceService's last diagnosis of its pods, by uid: asked again only when it may
    have stopped being true. No lock: the workqueue never hands one key to two workers, so an
    entry is only touched by one thread at a time, and single dict operations are atomic."""

    def __init__(self) -> None:
        self._read: dict[str, PodsRead] = {}

    def problem(
        self, backend: Backend, isvc: InferenceService, view: DeploymentView, *, now: float, epoch: int
    ) -> PodProblem | None:
        """Why ``isvc``'s replicas are not ready, as its pods say: the diagnosis kept while it
        still holds (``PodsRead.still_holds``: the Deployment at the same version, the same
        scheduler's words in the Pod cache), else one LIST of the pods, diagnosed and kept."""
        seen = self._read.get(isvc.uid)
        cached = backend.cached_owned("Pod", isvc.namespace, isvc.name)
        words = all_scheduling_words(cached) if cached is not None else None
        if seen is not None and seen.still_holds(version=view.version, now=now, epoch=epoch, words=words):
            if seen.recheck:  # looked again, and the Pod cache has the words read now
                self._read[isvc.uid] = replace(seen, recheck=False)
            return seen.problem
        pods = backend.list_pods(isvc.namespace, selector_string(isvc.name))
        problem = pod_problem(pods)
        stall = detect_stall(gpu=isvc.spec.gpu, old_pods=view.total - view.updated, pods=pods, image=isvc.spec.image)
        read = all_scheduling_words(pods)
        recheck = words is not None and words != read and not (seen is not None and seen.recheck)
        self._read[isvc.uid] = PodsRead(view.version, now, problem, epoch, stall, read, recheck)
        return problem

    def recheck(self, uid: str) -> bool:
        """Whether the last diagnosis asks to be looked at again within ``WORDS_RECHECK``."""
        seen = self._read.get(uid)
        return seen is not None and seen.recheck

    def stall(self, uid: str) -> Stall | None:
        """The stall the last diagnosis found (None: none, or no diagnosis)."""
        seen = self._read.get(uid)
        return seen.stall if seen is not None else None

    def forget(self, uid: str) -> None:
        self._read.pop(uid, None)
