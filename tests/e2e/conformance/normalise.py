"""What each server picks freely, replaced by placeholders so two traces can be compared.

uids, resourceVersions, cluster IPs and node ports become ``uid-1``, ``rv-1``, ``ip-1``, ``port-1``
in order of first appearance across the whole trace, so equalities survive ("the update kept the
resourceVersion", "the ownerReference names the Deployment's uid") while the values do not.
Timestamps become ``<time>``. What controllers (not the API server) add to objects on the real
cluster is dropped: the fake's subject is the API server. Error messages are reduced to the
fields and error types they name, in a canonical order, because the wording of a message is the
API server's and the fake only has to agree on what is wrong and where.
"""

from __future__ import annotations

import re
from typing import Any, Final

Obj = dict[str, Any]

_TIME: Final = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
_UID_IN_KEY: Final = re.compile(r'"uid":"([^"]+)"')
_IPV4: Final = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_FIELD_ERROR: Final = re.compile(
    r"(?:^|[\s\[,:])((?:metadata|spec|status|data|stringData|items|apiVersion|kind|[a-z][A-Za-z0-9]*)"
    r"(?:[.\[][\w.\[\]\-/'\"]*)?)"
    r": (Invalid value|Required value|Unsupported value|Forbidden|Duplicate value|Too long|Too many|Not found)"
)
CONTROLLER_ANNOTATIONS: Final = ("deployment.kubernetes.io/revision",)
CONTROLLER_MANAGERS: Final = ("kube-controller-manager",)
CONTROLLER_OBJECTS: Final = {("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")}
"""Objects the real controller-manager adds to every namespace (the fake has no such controllers)."""
CONTROLLED_KINDS: Final = {"Deployment", "ReplicaSet"}
"""Kinds whose status and resourceVersion the real controller-manager moves at its own pace."""


def field_errors(message: str) -> list[str]:
    """``field: error type`` pairs named by a 422 message, sorted and unique."""
    return sorted({f"{field.strip('[')}: {kind}" for field, kind in _FIELD_ERROR.findall(message)})


class Normaliser:
    """Placeholders by first appearance, kept across one trace."""

    def __init__(self) -> None:
        self._maps: dict[str, dict[Any, str]] = {"uid": {}, "rv": {}, "ip": {}, "port": {}}

    def placeholder(self, family: str, value: Any) -> str:
        seen = self._maps[family]
        if value not in seen:
            seen[value] = f"{family}-{len(seen) + 1}"
        return seen[value]

    def object(self, obj: Any, *, kind: str = "") -> Any:
        """A normalised copy of an object (or list, or Status)."""
        if not isinstance(obj, dict):
            return obj
        kind = str(obj.get("kind") or kind)
        if kind.endswith("List") and isinstance(obj.get("items"), list):
            item_kind = kind[: -len("List")]
            items = [
                self.object(item, kind=item_kind)
                for item in obj["items"]
                if (item_kind, (item.get("metadata") or {}).get("name")) not in CONTROLLER_OBJECTS
            ]
            meta = {k: "<rv>" if k == "resourceVersion" else v for k, v in (obj.get("metadata") or {}).items()}
            return {
                **{k: v for k, v in obj.items() if k not in ("items", "metadata")},
                "metadata": meta,
                "items": items,
            }
        out = self._walk(obj, path=())
        if kind in CONTROLLED_KINDS:
            out.pop("status", None)
            meta = out.get("metadata") or {}
            if "resourceVersion" in meta:
                meta["resourceVersion"] = "<rv>"
        meta = out.get("metadata")
        if isinstance(meta, dict):
            annotations = meta.get("annotations")
            if isinstance(annotations, dict):
                for key in CONTROLLER_ANNOTATIONS:
                    annotations.pop(key, None)
                if not annotations:
                    meta.pop("annotations")
            entries = meta.get("managedFields")
            if isinstance(entries, list):
                meta["managedFields"] = [e for e in entries if e.get("manager") not in CONTROLLER_MANAGERS]
                if not meta["managedFields"]:
                    meta.pop("managedFields")
        return out

    def _key(self, key: str) -> str:
        """A managedFields key naming a uid (``k:{"uid":"…"}``) names its placeholder instead."""
        return _UID_IN_KEY.sub(lambda m: f'"uid":"{self.placeholder("uid", m.group(1))}"', key)

    def _walk(self, node: Any, *, path: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            # Placeholders are handed out in key order, not in the order a server wrote the keys
            # (the fake's metadata order is not the real one's, and JSON key order means nothing).
            walked = {key: self._walk(node[key], path=(*path, key)) for key in sorted(node)}
            return {self._key(key): walked[key] for key in node}
        if isinstance(node, list):
            return [self._walk(item, path=path) for item in node]
        last = path[-1] if path else ""
        if last == "uid" and isinstance(node, str):
            return self.placeholder("uid", node)
        if last == "resourceVersion" and isinstance(node, str):
            return self.placeholder("rv", node)
        if isinstance(node, str) and _TIME.match(node):
            return "<time>"
        if last in ("clusterIP", "clusterIPs", "ip", "loadBalancerIP") and isinstance(node, str) and _IPV4.match(node):
            return self.placeholder("ip", node)
        if last in ("nodePort", "healthCheckNodePort") and isinstance(node, int):
            return self.placeholder("port", node)
        return node
