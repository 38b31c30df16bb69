"""What wakes the InferenceService reconciler: the kinds it watches and how each maps to a key.

kubebuilder says it in one place, beside the reconciler: ``For(&InferenceService{})``,
``Owns(&Deployment{})``, ``Owns(&Service{})``. This is that declaration. Both backends iterate
it — the Kopf handlers and the real cluster's cache on one side, the simulator's informers on
the other — so "which watch event enqueues which key" is one rule, not two that can drift.

Children are watched through a server-side label selector (the owner label), so the operator
never caches the cluster's other Deployments and Services; the selector is part of the rule too.
"""

from __future__ import annotations

from dataclasses import dataclass

from inference_operator.api.constants import (
    DEPLOYMENT,
    DEPLOYMENT_API_VERSION,
    GROUP,
    KIND,
    OWNER_LABEL,
    PLURAL,
    SERVICE,
    SERVICE_API_VERSION,
    VERSION,
)
from inference_operator.core.handler import EnqueueForLabel, EnqueueForObject, EnqueueForOwner, EventHandler
from inference_operator.core.objects import changed_beyond_status
from inference_operator.reconcile.capacity import FINISHED_PHASES
from inference_operator.reconcile.podproblems import scheduling_words_changed


class _Served:
    """Where a kind is served: its API group and version, from ``api_version``."""

    api_version: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


@dataclass(frozen=True)
class Watch(_Served):
    """One watched kind: where it is served, which objects of it, and the keys its events wake."""

    kind: str
    api_version: str
    plural: str
    handler: EventHandler
    label_selector: str | None = None
    """A label key: only objects carrying it (any value) are listed and watched; None: all.
    A bare key is also the API's selector syntax for "has this label"."""
    field_selector: str | None = None
    """The API's field selector for what is listed and watched (children need none)."""


_OWNED = EnqueueForOwner(owner_group=GROUP, owner_kind=KIND)

WATCHES: tuple[Watch, ...] = (
    Watch(KIND, f"{GROUP}/{VERSION}", PLURAL, EnqueueForObject(changed=changed_beyond_status)),
    Watch(DEPLOYMENT, DEPLOYMENT_API_VERSION, "deployments", _OWNED, label_selector=OWNER_LABEL),
    Watch(SERVICE, SERVICE_API_VERSION, "services", _OWNED, label_selector=OWNER_LABEL),
)
"""The primary kind first, then the children it owns."""

WATCHED_KINDS: tuple[str, ...] = tuple(w.kind for w in WATCHES)


@dataclass(frozen=True)
class Read(_Served):
    """A kind the reconciler reads from a cluster-wide cache, woken only by the few changes
    ``handler`` names (None: by none)."""

    kind: str
    api_version: str
    plural: str
    field_selector: str | None = None
    """The API's field selector for what is listed and watched; None: every object."""
    label_selector: None = None
    """Reads are never label-selected: a rollout counts what every workload holds."""
    handler: EventHandler | None = None
    """The keys an event of this kind wakes; None: it wakes nothing."""
    index_label: str | None = None
    """A label the cache also finds objects by (``Backend.cached_owned``); None: none."""


LIVE_PODS = ",".join(f"status.phase!={phase}" for phase in FINISHED_PHASES)
"""Pods that may hold resources on a node: a finished pod holds nothing, as the scheduler counts."""

SCHEDULING_WORDS = EnqueueForLabel(label=OWNER_LABEL, changed=scheduling_words_changed)
"""A pod whose scheduler's words changed wakes the InferenceService its owner label names.

A pass trusts a diagnosis of its pods while the Deployment's status stays put (``podcheck.py``);
the scheduler can change its words without moving it (a node added, removed, cordoned or tainted
under Pending pods): the pass this wakes sees the words differ from the ones diagnosed, and
reads the pods again. Nothing else a pod does wakes anything: status follows the Deployment."""

CAPACITY_READS: tuple[Read, ...] = (
    Read("Node", "v1", "nodes"),
    Read("Pod", "v1", "pods", field_selector=LIVE_PODS, handler=SCHEDULING_WORDS, index_label=OWNER_LABEL),
)
"""What a rollout counts free GPUs from (``Backend.cached``): every Node, and every Pod that has
not finished, for the GPUs other workloads hold too; a service's own pods are found by their
owner label (``Backend.cached_owned``). A stall is found when a pass looks, not by an event: a
pod the scheduler cannot place wakes its service only when its words change (a diagnosis may
be stale), so it looks again at the rollout's stuck time (see the reconciler's ``_next``)."""

CAPACITY_KINDS: tuple[str, ...] = tuple(r.kind for r in CAPACITY_READS)


def read_of(kind: str) -> Read:
    """The declaration of the cluster-wide read of ``kind`` (any other kind: a programming error)."""
    for read in CAPACITY_READS:
        if read.kind == kind:
            return read
    raise KeyError(f"the InferenceService reconciler does not read {kind} cluster-wide")


def watch_of(kind: str) -> Watch:
    """The declaration for ``kind`` (a kind the reconciler does not watch is a programming error)."""
    for watch in WATCHES:
        if watch.kind == kind:
            return watch
    raise KeyError(f"the InferenceService reconciler does not watch {kind}")
