"""The shape of the kinds the operator writes, as server-side apply sees it.

Server-side apply (structured-merge-diff, "SMD") treats a list either as one value (``atomic``),
as a set of scalars (``listType=set``) or as a map keyed by some of its items' fields
(``listType=map`` + ``listMapKey``), and a map or struct either field by field or as one value
(``mapType=atomic`` / ``structType=atomic``). Which is which decides what an applier owns, what
merging keeps and what removal drops, so it must match kube-apiserver exactly. The source of
truth is the Go types and their markers (``k8s.io/api`` ``core/v1/types.go``, ``apps/v1/types.go``,
``k8s.io/apimachinery`` ``meta/v1/types.go``, v0.36.5; the same table is generated into
client-go's ``applyconfigurations/internal/internal.go``).

Only what differs from the default is spelt out. Every other field of a Go-typed kind is a
struct field (``UNTYPED_STRUCT``): lists atomic, objects granular structs. A custom resource's
schema comes from its CRD (:func:`schema_from_openapi`); what a schema does not describe is
``DEDUCED``: lists atomic, maps granular (what SMD deduces for untyped values).

Pure data and lookups: no I/O, importable by the operator core and the simulator alike.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from inference_operator.api.constants import KIND

__all__ = [
    "DEDUCED",
    "SCALAR",
    "UNTYPED_STRUCT",
    "ListOf",
    "MapOf",
    "Node",
    "Scalar",
    "Struct",
    "Untyped",
    "reset_paths",
    "schema_for",
    "schema_from_openapi",
]


@dataclass(frozen=True)
class Scalar:
    """A leaf: string, number, boolean (also quantities and int-or-string)."""


@dataclass(frozen=True)
class Struct:
    """An object with named fields; ``open`` structs (Go types) declare every field they hold."""

    fields: Mapping[str, Node] = field(default_factory=dict)
    atomic: bool = False
    open: bool = True
    """Fields not listed are declared fields of type ``UNTYPED_STRUCT`` (else ``DEDUCED`` extras)."""

    def child(self, name: str) -> Node:
        found = self.fields.get(name)
        if found is not None:
            return found
        return UNTYPED_STRUCT if self.open else DEDUCED

    def declares(self, name: str) -> bool:
        return self.open or name in self.fields


@dataclass(frozen=True)
class MapOf:
    """A map from arbitrary keys to ``element`` values (``map[string]T``)."""

    element: Node
    atomic: bool = False

    def child(self, name: str) -> Node:
        return self.element

    def declares(self, name: str) -> bool:
        return False


ListType = Literal["atomic", "set", "map"]


@dataclass(frozen=True)
class ListOf:
    """A list; ``kind="map"`` items are identified by ``keys`` (missing keys take ``key_defaults``)."""

    element: Node
    kind: ListType = "atomic"
    keys: tuple[str, ...] = ()
    key_defaults: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Untyped:
    """No schema: the value decides. Lists are atomic, objects granular.

    ``struct_like`` objects hold declared fields (a Go struct we did not spell out); the others
    are maps whose every key is a member of the field set (SMD's ``__untyped_deduced_``).
    """

    struct_like: bool


Node = Scalar | Struct | MapOf | ListOf | Untyped

SCALAR: Final = Scalar()
UNTYPED_STRUCT: Final = Untyped(struct_like=True)
DEDUCED: Final = Untyped(struct_like=False)
_ATOMIC: Final = Struct(atomic=True)
_STRINGS: Final = MapOf(SCALAR)


def _list_map(element: Node, *keys: str, **key_defaults: Any) -> ListOf:
    defaults = {key: key_defaults.get(key, "") for key in keys}
    return ListOf(element, "map", keys, defaults)


# --- meta/v1 -------------------------------------------------------------------------------------

OBJECT_META: Final = Struct(
    {
        "labels": _STRINGS,
        "annotations": _STRINGS,
        "finalizers": ListOf(SCALAR, "set"),
        "ownerReferences": _list_map(_ATOMIC, "uid"),  # OwnerReference: +structType=atomic
    }
)
LABEL_SELECTOR: Final = _ATOMIC  # metav1.LabelSelector: +structType=atomic

# --- core/v1 -------------------------------------------------------------------------------------

_QUANTITIES: Final = MapOf(SCALAR)
_RESOURCES: Final = Struct(
    {"limits": _QUANTITIES, "requests": _QUANTITIES, "claims": _list_map(UNTYPED_STRUCT, "name")}
)
_ENV_VAR: Final = Struct(
    {
        "valueFrom": Struct(
            {  # the key selectors are all +structType=atomic
                "configMapKeyRef": _ATOMIC,
                "secretKeyRef": _ATOMIC,
                "fieldRef": _ATOMIC,
                "resourceFieldRef": _ATOMIC,
                "fileKeyRef": _ATOMIC,
            }
        )
    }
)
CONTAINER: Final = Struct(
    {
        "env": _list_map(_ENV_VAR, "name"),
        "ports": _list_map(UNTYPED_STRUCT, "containerPort", "protocol", containerPort=0, protocol="TCP"),
        "resources": _RESOURCES,
        "volumeMounts": _list_map(UNTYPED_STRUCT, "mountPath"),
        "volumeDevices": _list_map(UNTYPED_STRUCT, "devicePath"),
    }
)
_SECRET_REF: Final = Struct({"secretRef": _ATOMIC})  # LocalObjectReference: +structType=atomic
_VOLUME: Final = Struct(
    {
        "cephfs": _SECRET_REF,
        "cinder": _SECRET_REF,
        "flexVolume": Struct({"secretRef": _ATOMIC, "options": _STRINGS}),
        "iscsi": _SECRET_REF,
        "rbd": _SECRET_REF,
        "scaleIO": _SECRET_REF,
        "storageos": _SECRET_REF,
        "csi": Struct({"nodePublishSecretRef": _ATOMIC, "volumeAttributes": _STRINGS}),
        "ephemeral": Struct(
            {
                "volumeClaimTemplate": Struct(
                    {
                        "metadata": OBJECT_META,
                        "spec": Struct(
                            {
                                "dataSource": _ATOMIC,
                                "selector": LABEL_SELECTOR,
                                "resources": Struct({"limits": _QUANTITIES, "requests": _QUANTITIES}),
                            }
                        ),
                    }
                )
            }
        ),
    }
)
POD_SPEC: Final = Struct(
    {
        "containers": _list_map(CONTAINER, "name"),
        "initContainers": _list_map(CONTAINER, "name"),
        "ephemeralContainers": _list_map(CONTAINER, "name"),
        "volumes": _list_map(_VOLUME, "name"),
        "imagePullSecrets": _list_map(_ATOMIC, "name"),
        "hostAliases": _list_map(UNTYPED_STRUCT, "ip"),
        "topologySpreadConstraints": _list_map(
            Struct({"labelSelector": LABEL_SELECTOR}), "topologyKey", "whenUnsatisfiable"
        ),
        "resourceClaims": _list_map(UNTYPED_STRUCT, "name"),
        "schedulingGates": _list_map(UNTYPED_STRUCT, "name"),
        "nodeSelector": MapOf(SCALAR, atomic=True),  # +mapType=atomic
        "overhead": _QUANTITIES,
        "resources": _RESOURCES,
        # NodeSelector (required node affinity) is +structType=atomic
        "affinity": Struct({"nodeAffinity": Struct({"requiredDuringSchedulingIgnoredDuringExecution": _ATOMIC})}),
    }
)
POD_TEMPLATE: Final = Struct({"metadata": OBJECT_META, "spec": POD_SPEC})
_CONDITIONS: Final = _list_map(UNTYPED_STRUCT, "type")

BUILT_IN: Final[dict[str, Struct]] = {
    "Deployment": Struct(
        {
            "metadata": OBJECT_META,
            "spec": Struct({"selector": LABEL_SELECTOR, "template": POD_TEMPLATE}),
            "status": Struct({"conditions": _CONDITIONS}),
        }
    ),
    "ReplicaSet": Struct(
        {
            "metadata": OBJECT_META,
            "spec": Struct({"selector": LABEL_SELECTOR, "template": POD_TEMPLATE}),
            "status": Struct({"conditions": _CONDITIONS}),
        }
    ),
    "Pod": Struct(
        {
            "metadata": OBJECT_META,
            "spec": POD_SPEC,
            "status": Struct(
                {
                    "conditions": _CONDITIONS,
                    "podIPs": _list_map(UNTYPED_STRUCT, "ip"),
                    "resourceClaimStatuses": _list_map(UNTYPED_STRUCT, "name"),
                    "allocatedResources": _QUANTITIES,
                    "resources": _RESOURCES,
                }
            ),
        }
    ),
    "Service": Struct(
        {
            "metadata": OBJECT_META,
            "spec": Struct(
                {
                    "ports": _list_map(UNTYPED_STRUCT, "port", "protocol", port=0, protocol="TCP"),
                    "selector": MapOf(SCALAR, atomic=True),  # +mapType=atomic
                }
            ),
            "status": Struct({"conditions": _CONDITIONS}),
        }
    ),
    "ConfigMap": Struct({"metadata": OBJECT_META, "data": _STRINGS, "binaryData": _STRINGS}),
    "Secret": Struct({"metadata": OBJECT_META, "data": _STRINGS, "stringData": _STRINGS}),
}
"""The Go-typed kinds, spelt out down to every field that is not an untyped struct field."""

_OTHER_BUILT_IN: Final = Struct({"metadata": OBJECT_META})
_UNKNOWN_CUSTOM: Final = Struct({"metadata": OBJECT_META}, open=False)


def schema_for(kind: str) -> Struct:
    """The schema of ``kind``: a built-in kind, the InferenceService CRD, or a deduced custom kind."""
    found = BUILT_IN.get(kind)
    if found is not None:
        return found
    if kind == KIND:
        return _inference_service_schema()
    return _OTHER_BUILT_IN if kind in _BUILT_IN_NAMES else _UNKNOWN_CUSTOM


@functools.cache
def _inference_service_schema() -> Struct:
    from inference_operator.api.crd import (
        version_entry,
    )  # the CRD is generated from the API models: build it only when asked

    node = schema_from_openapi(version_entry()["schema"]["openAPIV3Schema"])
    if not isinstance(node, Struct):  # pragma: no cover - the CRD's root is an object
        raise TypeError("the InferenceService schema's root is not an object")
    return node


_BUILT_IN_NAMES: Final = frozenset(
    {
        "StatefulSet",
        "DaemonSet",
        "Job",
        "Endpoints",
        "Event",
        "Lease",
        "Namespace",
        "Node",
        "ServiceAccount",
        "CustomResourceDefinition",
    }
)


_STATUS_RESETS: Final[dict[str, tuple[tuple[str, ...], ...]]] = {
    "Deployment": (("spec",), ("metadata", "labels")),
    "ReplicaSet": (("spec",), ("metadata", "labels")),
    "Service": (("spec",),),
    "Pod": (("spec",), ("metadata", "deletionTimestamp"), ("metadata", "ownerReferences")),
}


def reset_paths(kind: str, subresource: str = "") -> tuple[tuple[str, ...], ...]:
    """The field paths a write to ``subresource`` of ``kind`` cannot set: what the registry
    strategies' ``GetResetFields`` list (``pkg/registry/…/strategy.go``)."""
    if subresource != "status":
        return (("status",),)
    if kind in _STATUS_RESETS:
        return _STATUS_RESETS[kind]
    return (("spec",),) if schema_for(kind).open else (("metadata",), ("spec",))


# --- CRDs -------------------------------------------------------------------------------------------


def schema_from_openapi(schema: Mapping[str, Any], *, root: bool = True) -> Node:
    """The node a structural OpenAPI v3 schema (a CRD version's ``openAPIV3Schema``) describes.

    Lists are atomic unless ``x-kubernetes-list-type`` says ``set`` or ``map``; objects with
    ``properties`` are structs and with ``additionalProperties`` maps, both granular unless
    ``x-kubernetes-map-type: atomic``; ``x-kubernetes-preserve-unknown-fields`` and missing
    schemas are deduced. At the root, ``metadata`` is ObjectMeta, as the API server makes it.
    """
    return _from_openapi(schema, root=root)


def _from_openapi(schema: Mapping[str, Any], *, root: bool = False) -> Node:
    atomic = schema.get("x-kubernetes-map-type") == "atomic"
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        element = _from_openapi(items) if isinstance(items, Mapping) else DEDUCED
        list_type = schema.get("x-kubernetes-list-type", "atomic")
        if list_type == "map":
            keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
            properties = (items or {}).get("properties") or {}
            key_defaults = {k: properties[k]["default"] for k in keys if "default" in properties.get(k, {})}
            return ListOf(element, "map", keys, key_defaults)
        return ListOf(element, "set" if list_type == "set" else "atomic")
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and (properties or kind == "object"):
        fields = {name: _from_openapi(sub) for name, sub in properties.items()}
        if root:
            fields["metadata"] = OBJECT_META
        return Struct(fields, atomic=atomic, open=False)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return MapOf(_from_openapi(extra), atomic=atomic)
    if kind == "object" or schema.get("x-kubernetes-preserve-unknown-fields"):
        return MapOf(DEDUCED, atomic=atomic)
    if kind in ("string", "integer", "number", "boolean") or schema.get("x-kubernetes-int-or-string"):
        return SCALAR
    return DEDUCED
