"""What a scenario observes, in a form both backends produce alike.

A scenario is compared across the simulator and the real control plane by what a user could
see: the Ready condition's transitions, the children's fields that matter, the load balancer
calls and the Events. Everything server-set (uids, namespaces, timestamps, resourceVersions,
cluster IPs) and everything the two legitimately do at their own speed is normalised here, in
one place, so that a difference left over is a real one:

- **Ready transitions** are ``"<status>/<reason>"`` strings, consecutive repeats collapsed.
  The reasons that only say "not there yet" (:data:`TRANSIENT`: the Deployment not observed yet,
  a rollout in progress, replicas not yet available, a child or the load balancer still pending)
  become one ``False/Progressing``: which of them a status write happens to catch depends on how
  fast pods get ready, not on the operator. A stall that needs a person (``ChildConflict`` …)
  and ``True/Ready`` are kept as they are. ``deleted`` marks the object's end. The first
  status an object ever gets may or may not be Progressing (:func:`step_transitions`): that
  one leading ``False/Progressing`` is dropped.
- **Children** are reduced to replicas, image, env, labels and owner references (Deployment),
  type, ports, selector, labels and owner references (Service); an owner reference's uid
  becomes ``<owner>`` when it is the InferenceService's, ``<other>`` otherwise.
- **Load balancer calls** are counted per step: registers and releases the operator made for
  the object (never the world's own, e.g. making the balancer forget a record), and whether the
  balancer holds a record at the end of the step.
- **Events** are the distinct ``type/reason`` pairs posted or repeated during the step (how
  often a repeat is counted depends on how many retries fit in the wait).
- **Scheduling** (scenarios with a GPU pool only): the ReplicaSets' replica counts in sequence
  and the bound and Pending pods, with the scheduler's message, at the end of the step
  (normalised as :mod:`.scheduling` says).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from inference_operator.api.constants import DEPLOYMENT, SERVICE, Reason

from .scheduling import pods_summary

Obj = dict[str, Any]

TRANSIENT: Final = frozenset(
    {
        Reason.WAITING_FOR_CHILDREN,
        Reason.DEPLOYMENT_NOT_OBSERVED,
        Reason.ROLLOUT_IN_PROGRESS,
        Reason.REPLICAS_UNAVAILABLE,
        Reason.SERVER_STARTING,
        Reason.SERVICE_MISSING,
        Reason.LOAD_BALANCER_PENDING,
    }
)
PROGRESSING: Final = "False/Progressing"
DELETED: Final = "deleted"


def ready_of(obj: Obj | None) -> tuple[str, str] | None:
    """The Ready condition's (status, reason), None when there is none yet."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status")), str(cond.get("reason"))
    return None


def transition_token(obj: Obj | None, *, deleted: bool = False) -> str | None:
    """One watch event of the InferenceService as a transition token (None: nothing to say)."""
    if deleted:
        return DELETED
    ready = ready_of(obj)
    if ready is None:
        return None
    status, reason = ready
    return PROGRESSING if status == "False" and reason in TRANSIENT else f"{status}/{reason}"


def collapse(tokens: Iterable[str | None], *, after: str | None = None) -> list[str]:
    """Tokens with consecutive repeats (and a repeat of ``after``, the last one already seen) dropped."""
    out: list[str] = []
    last = after
    for token in tokens:
        if token is None or token == last:
            continue
        out.append(token)
        last = token
    return out


def step_transitions(tokens: Iterable[str | None], *, after: str | None) -> tuple[list[str], str | None]:
    """The transitions a step shows, and the last token seen (``after`` for the next step).

    ``after`` None means the object had no status yet: then a leading ``False/Progressing`` is
    dropped. The operator holds its first status write until the Deployment controller has
    observed the new Deployment; whether the pods are already ready by then depends on how fast
    they start (on the simulator never: they take ``ready_after`` seconds of fake time; on the
    local control plane's kwok nodes often, not always). Every later Progressing follows a write
    of the operator's to the Deployment, which the status written in the same pass always shows
    as not yet observed, so it is kept.
    """
    shown = collapse(tokens, after=after)
    last = shown[-1] if shown else after
    if after is None and shown[:1] == [PROGRESSING]:
        shown = shown[1:]
    return shown, last


def _owner_refs(obj: Obj, owner_uid: str | None) -> list[Obj]:
    refs = []
    for ref in obj["metadata"].get("ownerReferences") or []:
        refs.append(
            {
                "kind": ref.get("kind"),
                "name": ref.get("name"),
                "uid": "<owner>" if owner_uid is not None and ref.get("uid") == owner_uid else "<other>",
                "controller": ref.get("controller", False),
                "blockOwnerDeletion": ref.get("blockOwnerDeletion", False),
            }
        )
    return refs


def deployment_summary(dep: Obj | None, owner_uid: str | None) -> Obj | None:
    if dep is None:
        return None
    spec = dep.get("spec") or {}
    container = (((spec.get("template") or {}).get("spec") or {}).get("containers") or [{}])[0]
    return {
        "replicas": spec.get("replicas"),
        "image": container.get("image"),
        "env": container.get("env") or [],
        "labels": dep["metadata"].get("labels") or {},
        "ownerReferences": _owner_refs(dep, owner_uid),
    }


def service_summary(svc: Obj | None, owner_uid: str | None) -> Obj | None:
    if svc is None:
        return None
    spec = svc.get("spec") or {}
    return {
        "type": spec.get("type"),
        "ports": spec.get("ports") or [],
        "selector": spec.get("selector") or {},
        "labels": svc["metadata"].get("labels") or {},
        "ownerReferences": _owner_refs(svc, owner_uid),
    }


@dataclass(frozen=True)
class Snapshot:
    """The state of one InferenceService's world at a moment: the raw objects, for predicates and
    a scenario's own assertions."""

    isvc: Obj | None
    deployment: Obj | None
    service: Obj | None
    registered: bool
    """The load balancer holds a record for the object."""
    replicasets: tuple[Obj, ...] = ()
    """The namespace's ReplicaSets and Pods, when the world observes scheduling (a GPU pool)."""
    pods: tuple[Obj, ...] = ()
    node_names: Mapping[str, str] = field(default_factory=dict)
    """A pool node's stored name → its name in the pool (what is compared)."""

    @property
    def ready(self) -> tuple[str, str] | None:
        return ready_of(self.isvc)

    @property
    def settled_ready(self) -> bool:
        """Ready=True for the current generation."""
        meta, status = (self.isvc or {}).get("metadata") or {}, (self.isvc or {}).get("status") or {}
        return self.ready == ("True", Reason.READY) and status.get("observedGeneration") == meta.get("generation")

    def stalled_with(self, reason: str) -> bool:
        return self.ready == ("False", reason)

    @property
    def gone(self) -> bool:
        return self.isvc is None and self.deployment is None and self.service is None

    def pods_summary(self) -> Obj:
        """Bound and Pending pods (``scheduling.py``)."""
        return pods_summary(self.pods, self.replicasets, node_names=self.node_names)

    def pending_messages(self) -> list[str | None]:
        return [p["message"] for p in self.pods_summary()["pending"]]

    def children(self) -> Obj:
        uid = ((self.isvc or {}).get("metadata") or {}).get("uid")
        return {
            DEPLOYMENT: deployment_summary(self.deployment, uid),
            SERVICE: service_summary(self.service, uid),
        }


@dataclass
class Step:
    """What one step of a scenario showed, normalised (see the module docstring)."""

    name: str
    transitions: list[str]
    phase: str | None
    ready_replicas: int | None
    children: Obj
    lb_calls: dict[str, int]
    lb_record: bool
    events: list[str]
    scheduling: Obj | None = None
    """ReplicaSet replica counts in sequence, and the pods at the end (GPU pool scenarios only)."""

    def as_dict(self) -> Obj:
        scheduling = {} if self.scheduling is None else {"scheduling": self.scheduling}
        return {
            "step": self.name,
            "transitions": self.transitions,
            "phase": self.phase,
            "readyReplicas": self.ready_replicas,
            "children": self.children,
            "loadBalancer": {"calls": self.lb_calls, "record": self.lb_record},
            "events": self.events,
            **scheduling,
        }


@dataclass
class Observation:
    """Every step of one scenario run on one backend; what the two backends must agree on."""

    steps: list[Step] = field(default_factory=list)

    def as_data(self) -> list[Obj]:
        return [step.as_dict() for step in self.steps]


def make_step(
    name: str,
    snapshot: Snapshot,
    *,
    transitions: list[str],
    lb_calls: dict[str, int],
    events: Iterable[str],
    replicasets: list[str] | None = None,
) -> Step:
    """``replicasets``: the step's ReplicaSet tokens, when the world observes scheduling."""
    status = (snapshot.isvc or {}).get("status") or {}
    return Step(
        name=name,
        transitions=transitions,
        phase=status.get("phase"),
        ready_replicas=status.get("readyReplicas"),
        children=snapshot.children(),
        lb_calls={call: n for call, n in sorted(lb_calls.items()) if n},
        lb_record=snapshot.registered,
        events=sorted(set(events)),
        scheduling=None if replicasets is None else {"replicaSets": replicasets, "pods": snapshot.pods_summary()},
    )


class StepRecorder:
    """What both worlds do when a step ends: the object's watch tokens become the step's
    transitions (each object's last token remembered for its next step), and the step is
    recorded with the world's own count of load balancer calls and Events."""

    def __init__(self) -> None:
        self.observation = Observation()
        self._last_token: dict[str, str] = {}

    def _lb_calls(self, name: str) -> dict[str, int]:
        raise NotImplementedError

    def _events(self, name: str) -> list[str]:
        raise NotImplementedError

    def _record(
        self, *, step: str, name: str, snapshot: Snapshot, tokens: Iterable[str | None], replicasets: list[str] | None
    ) -> None:
        transitions, last = step_transitions(tokens, after=self._last_token.get(name))
        if last is not None:
            self._last_token[name] = last
        self.observation.steps.append(
            make_step(
                step,
                snapshot,
                transitions=transitions,
                lb_calls=self._lb_calls(name),
                events=self._events(name),
                replicasets=replicasets,
            )
        )
