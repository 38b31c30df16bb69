"""The one interface a scenario acts and looks through, whichever backend is underneath.

A scenario is written once, as a user would act (apply a manifest, scale a Deployment by hand,
delete something, put a quota in the way …) and as a user would look (wait until the object is
Ready, or says why it is not). :class:`World` is that vocabulary; :mod:`.simworld` implements it
on the simulator (a fake clock, run until quiescent) and :mod:`.clusterworld` on the real
control plane (kubectl, the session's operator and load balancer registry, polling with
deadlines). Both record the same :class:`~.observe.Observation`, step by step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from inference_operator.sim.cluster.nodes import NodeShape

from .observe import Observation, Snapshot

Obj = dict[str, Any]


@dataclass(frozen=True)
class Refusal:
    """The API server refused a user's write: HTTP code and the field paths it named."""

    code: int
    fields: tuple[str, ...]
    message: str


_FIELD_ERROR: Final = re.compile(
    r"([A-Za-z0-9_.\[\]<>-]+): (Invalid value|Required value|Unsupported value|Forbidden|Too long|Duplicate value)"
)


def refusal_of(code: int, message: str) -> Refusal:
    """A refusal from the API server's words: the field paths its field errors name, in order."""
    return Refusal(code, tuple(dict.fromkeys(m.group(1) for m in _FIELD_ERROR.finditer(message))), message)


class World(Protocol):
    """A cluster with the operator and a load balancer, seen by a user in one namespace."""

    backend: str
    """``simulator`` or ``cluster``."""
    observation: Observation

    def apply(self, manifest: Obj) -> Refusal | None:
        """``kubectl apply`` of a namespace-less manifest; the refusal when the server says no."""
        ...

    def create(self, manifest: Obj) -> None:
        """``kubectl create -f`` of a namespace-less manifest (objects the operator does not own)."""
        ...

    def delete(self, kind: str, name: str) -> None:
        """``kubectl delete --wait=false``."""
        ...

    def patch(self, kind: str, name: str, patch: Obj) -> None:
        """``kubectl patch --type=merge``: a hand edit of any object."""
        ...

    def scale_deployment(self, name: str, replicas: int) -> None:
        """``kubectl scale deployment``: a hand edit of a child."""
        ...

    def pause_rollout(self, name: str) -> None:
        """``kubectl rollout pause deployment/NAME`` of a Ready object, waited out until the
        Deployment controller has observed the pause and the object is Ready again. Not a step of
        its own, and its Ready transitions and Events are not compared: the pause bumps the
        Deployment's generation, and until the controller observes it the operator says
        ``DeploymentNotObserved`` (then Ready again, with its Event). The simulator's controllers
        always act before the operator at equal times; kube-controller-manager's first sync after
        a pause writes its Paused condition and then conflicts on its own status write, so it
        observes the generation one sync later and the operator usually sees the bounce. Anything
        else the pause changed shows in the next step, which is compared."""
        ...

    def resume_rollout(self, name: str) -> None:
        """``kubectl rollout resume deployment/NAME``."""
        ...

    def forbid_services(self, quota: str) -> None:
        """A ResourceQuota named ``quota`` that allows no Service (``--hard=services=0``)."""
        ...

    def allow_services(self, quota: str) -> None:
        """The quota deleted again."""
        ...

    def gpu_pool(self, shapes: Sequence[NodeShape]) -> Obj:
        """Nodes of these shapes join the cluster as the scenario's own pool (``scheduling.py``:
        labelled and tainted for it, named by the shapes within it), Ready; from now on each step
        also records the ReplicaSets and Pods. Returns the spec fields that put pods on the pool."""
        ...

    def remove_node(self, name: str) -> None:
        """``kubectl delete node``: the pool's node ``name`` goes (its kubelet with it), its pods
        left to the pod garbage collector."""
        ...

    def forget_lb_record(self, name: str) -> None:
        """The load balancer loses the object's record behind the operator's back."""
        ...

    def snapshot(self, name: str) -> Snapshot:
        """The object ``name``, its children and its load balancer record, now."""
        ...

    def fail_lb_calls(self, *, registers: int = 0, releases: int = 0) -> None:
        """The load balancer answers the next ``registers`` registrations and ``releases``
        releases with an error (each still counts as a call)."""
        ...

    def settle(self, step: str, name: str, until: Callable[[Snapshot], bool], *, what: str) -> Snapshot:
        """Let the operator work until ``until`` holds for the object ``name`` (fail saying
        ``what`` was expected if it never does); record the step and return the snapshot."""
        ...
