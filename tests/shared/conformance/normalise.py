"""What each server picks freely, replaced by placeholders so two traces can be compared.

uids, resourceVersions, cluster IPs and node ports become ``uid-1``, ``rv-1``, ``ip-1``, ``port-1``
in order of first appearance across the whole trace, so equalities survive ("the update kept the
resourceVersion", "the ownerReference names the Deployment's uid") while the values do not.
Timestamps become ``<time>``; a name the server generated from ``generateName`` becomes the prefix
and ``<random-1>`` (wherever it appears later, in objects and in the calls' labels). What
controllers (not the API server) add to objects on the real cluster is dropped: the fake's
subject is the API server. Error messages are reduced to the fields and error types they name,
in a canonical order, because the wording of a message is the API server's and the fake only
has to agree on what is wrong and where.
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
GENERATED_PREFIX_MAX: Final = 58
GENERATED_SUFFIX: Final = 5
"""A generated name is ``generateName`` (cut to 58 characters) and 5 random characters."""
CONTROLLED_KINDS: Final = {"Deployment", "ReplicaSet"}
"""Kinds whose status and resourceVersion the real controller-manager moves at its own pace."""


def field_errors(message: str) -> list[str]:
    """``field: error type`` pairs named by a 422 message, sorted and unique."""
    return sorted({f"{field.strip('[')}: {kind}" for field, kind in _FIELD_ERROR.findall(message)})


class Normaliser:
    """Placeholders by first appearance, kept across one trace."""

    def __init__(self) -> None:
        self._maps: dict[str, dict[Any, str]] = {"uid": {}, "rv": {}, "ip": {}, "port": {}}
        self._generated: dict[str, str] = {}  # generated name → its placeholder

    def placeholder(self, family: str, value: Any) -> str:
        seen = self._maps[family]
        if value not in seen:
            seen[value] = f"{family}-{len(seen) + 1}"
        return seen[value]

    def text(self, text: str) -> str:
        """``text`` with the generated names seen so far replaced by their placeholders."""
        for name, placeholder in self._generated.items():
            text = text.replace(name, placeholder)
        return text

    def _learn_generated_name(self, obj: Obj) -> None:
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not meta.get("generateName") or not isinstance(meta.get("name"), str):
            return
        prefix, name = str(meta["generateName"])[:GENERATED_PREFIX_MAX], meta["name"]
        if name.startswith(prefix) and len(name) == len(prefix) + GENERATED_SUFFIX and name not in self._generated:
            self._generated[name] = f"{prefix}<random-{len(self._generated) + 1}>"

    def object(self, obj: Any, *, kind: str = "") -> Any:
        """A normalised copy of an object (or list, or Status)."""
        if not isinstance(obj, dict):
            return obj
        self._learn_generated_name(obj)
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
                # The real server orders entries by operation, then by time in whole seconds, then
                # by manager: with times normalised away (and the fake's clock standing still), the
                # order among one operation's entries is only which second each write fell in.
                kept = [e for e in entries if e.get("manager") not in CONTROLLER_MANAGERS]
                meta["managedFields"] = sorted(kept, key=_entry_order)
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
        if isinstance(node, str) and node in self._generated:
            return self._generated[node]
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


def _entry_order(entry: Any) -> tuple[str, ...]:
    if not isinstance(entry, dict):
        return ("",)
    return tuple(str(entry.get(k, "")) for k in ("operation", "manager", "apiVersion", "subresource"))
