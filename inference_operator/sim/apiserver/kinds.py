"""How the real kube-apiserver treats each kind: status subresource, generation, scope.

Every part of the fake API server asks these questions (where does ``status`` get written, does
``metadata.generation`` move, is the kind namespaced, is it Go-typed so ``omitempty`` applies),
so the answers live in one table that the store, the write strategy and the defaulting all read,
instead of inside any one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["CUSTOM_RESOURCE", "KIND_TRAITS", "KindTraits", "traits_of"]


@dataclass(frozen=True)
class KindTraits:
    """How the API server treats one kind. Unknown kinds are custom resources (the default)."""

    status_subresource: bool = True
    """``status`` is written only through ``/status``; the main endpoint ignores it."""
    tracks_generation: bool = True
    """``metadata.generation`` exists and counts spec changes."""
    annotations_bump_generation: bool = False
    """Deployments also bump generation on annotation changes (they are copied to ReplicaSets)."""
    namespaced: bool = True
    built_in: bool = False
    """A Go-typed kind: empty optional fields are dropped (``omitempty``)."""
    returns_deleted_object: bool = False
    """A DELETE that removes the object answers with it (else with a success ``Status``)."""
    status_on_create: bool = False
    """A create keeps the status it carries (a kubelet registers its Node with capacity and conditions)."""


_WORKLOAD = KindTraits(built_in=True)
_PLAIN = KindTraits(status_subresource=False, tracks_generation=False, built_in=True)

KIND_TRAITS: Final[dict[str, KindTraits]] = {
    "Deployment": KindTraits(built_in=True, annotations_bump_generation=True),
    "StatefulSet": _WORKLOAD,
    "ReplicaSet": _WORKLOAD,
    "DaemonSet": _WORKLOAD,
    "Job": _WORKLOAD,
    "Service": KindTraits(tracks_generation=False, built_in=True, returns_deleted_object=True),
    "Pod": KindTraits(tracks_generation=False, built_in=True),
    "ConfigMap": _PLAIN,
    "Secret": _PLAIN,
    "ServiceAccount": _PLAIN,
    "Endpoints": _PLAIN,
    "Event": _PLAIN,
    "Lease": _PLAIN,
    "Namespace": KindTraits(tracks_generation=False, namespaced=False, built_in=True),
    "Node": KindTraits(tracks_generation=False, namespaced=False, built_in=True, status_on_create=True),
    # Go-typed, but what matters in it is JSON that keeps its empties (``default: {}``,
    # ``subresources: {status: {}}``): stored as sent, like a custom resource.
    "CustomResourceDefinition": KindTraits(namespaced=False),
}
CUSTOM_RESOURCE: Final = KindTraits()


def traits_of(kind: str) -> KindTraits:
    return KIND_TRAITS.get(kind, CUSTOM_RESOURCE)
