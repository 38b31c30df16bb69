"""The API a check drives: each call does one request and appends its outcome to the trace.

The outcome of a call is its HTTP code, the reason of a failure with the fields a 422 names, and
the normalised object answered (or just the paths the check asked to ``keep``). Calls return the
raw answer, so a check can carry a ``resourceVersion`` or ``uid`` into its next call. Objects are
put in the check's own namespace unless they say otherwise.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from .normalise import CONTROLLER_OBJECTS, Normaliser, field_errors
from .transports import KINDS, Request, Response, Transport

Obj = dict[str, Any]
GC_TIMEOUT = 60.0
"""How long the real garbage collector and namespace controller get (they usually take 1-5 s)."""


class Api:
    """One check's session on one backend; ``trace`` is what gets compared."""

    def __init__(self, transport: Transport, namespace: str) -> None:
        self.transport = transport
        self.ns = namespace
        self.trace: list[Obj] = []
        self._normaliser = Normaliser()

    # --- recording ---------------------------------------------------------------------------

    def note(self, label: str, value: Any) -> None:
        """Record a value the check derived (normalised like everything else)."""
        self.trace.append({"note": label, "value": self._normaliser.object(copy.deepcopy(value))})

    def _record(self, what: str, response: Response, keep: Sequence[str] | None, kind: str) -> Obj:
        entry: Obj = {"op": self._normaliser.text(what), "code": response.code}
        body = response.body
        if response.code >= 400 or body.get("kind") == "Status":
            entry["reason"] = body.get("reason", "")
            if response.code == 422:
                entry["fields"] = field_errors(str(body.get("message", "")))
            if str(body.get("message", "")).startswith("Apply failed with"):
                entry["conflicts"] = body["message"]  # which fields, whose: the message is the API
        elif keep is not None and not keep:
            entry["object"] = {}  # nothing kept: nothing of it can hand out placeholders either
        elif keep is not None:
            normal = self._normaliser.object(copy.deepcopy(body), kind=kind)
            entry["object"] = {path: _pick(normal, path) for path in keep}
        else:
            entry["object"] = self._normaliser.object(copy.deepcopy(body), kind=kind)
        self.trace.append(entry)
        return body

    def _send(self, what: str, req: Request, keep: Sequence[str] | None) -> Obj:
        return self._record(what, self.transport.request(req), keep, req.kind)

    def _place(self, obj: Obj, *, kind: str | None = None) -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if KINDS[kind or obj["kind"]].namespaced:
            meta.setdefault("namespace", self.ns)
        return obj

    # --- requests ----------------------------------------------------------------------------

    def create(
        self,
        obj: Obj,
        *,
        keep: Sequence[str] | None = None,
        url_kind: str | None = None,
        url_namespace: str | None = None,
        namespace: str | None = None,
        **params: str,
    ) -> Obj:
        """POST ``obj``; ``url_kind``/``url_namespace`` send it (placed in the check's namespace) to
        another kind's or namespace's URL; ``namespace`` sends ``obj`` as it is to that namespace's
        path (by default the object goes to its own namespace, or the check's)."""
        kind = url_kind or obj["kind"]
        obj = self._place(obj, kind=kind) if namespace is None else copy.deepcopy(obj)
        meta = obj["metadata"]
        name = meta.get("name") or f"{meta.get('generateName', '')}*"
        if namespace is not None:
            path_namespace = namespace
        elif url_namespace is not None:
            path_namespace = url_namespace
        else:
            path_namespace = meta.get("namespace", "")
        if not KINDS[kind].namespaced:
            path_namespace = ""
        req = Request("create", kind, path_namespace, body=obj, params=params)
        what = f"create {obj['kind']} {name}" if url_kind is None else f"create {obj.get('kind')} {name} at {kind}"
        return self._send(what, req, keep)

    def get(self, kind: str, name: str, *, keep: Sequence[str] | None = None, namespace: str | None = None) -> Obj:
        req = Request("get", kind, self._ns(kind, namespace), name)
        return self._send(f"get {kind} {name}", req, keep)

    def list(
        self,
        kind: str,
        *,
        selector: str = "",
        fields: str = "",
        keep: Sequence[str] | None = None,
        namespace: str | None = None,
    ) -> Obj:
        params = {"labelSelector": selector} if selector else {}
        if fields:
            params["fieldSelector"] = fields
        req = Request("list", kind, self._ns(kind, namespace), params=params)
        return self._send(f"list {kind} {selector} {fields}".strip(), req, keep)

    def names(self, kind: str, *, selector: str = "", fields: str = "", namespace: str | None = None) -> list[str]:
        """List, recording only the outcome and the names of the items, in the order answered."""
        listed = self.list(kind, selector=selector, fields=fields, keep=(), namespace=namespace)
        names = [
            item["metadata"]["name"]
            for item in listed.get("items", ())
            if (kind, item["metadata"].get("name")) not in CONTROLLER_OBJECTS
        ]
        if "items" in listed:
            self.note(f"names listed by {selector or fields or 'all'}", names)
        return names

    def update(
        self,
        obj: Obj,
        *,
        subresource: str = "",
        keep: Sequence[str] | None = None,
        url_name: str | None = None,
        url_namespace: str | None = None,
        **params: str,
    ) -> Obj:
        """PUT ``obj``; ``url_name``/``url_namespace`` send it to another object's URL."""
        obj = self._place(obj)
        meta = obj["metadata"]
        name = meta.get("name", "") if url_name is None else url_name
        namespace = meta.get("namespace", "") if url_namespace is None else url_namespace
        req = Request("update", obj["kind"], namespace, name, subresource, obj, params)
        return self._send(f"update {obj['kind']} {name} {subresource}".strip(), req, keep)

    def patch(
        self,
        kind: str,
        name: str,
        patch: Any,
        *,
        subresource: str = "",
        keep: Sequence[str] | None = None,
        namespace: str | None = None,
        **params: str,
    ) -> Obj:
        req = Request("patch", kind, self._ns(kind, namespace), name, subresource, patch, params)
        return self._send(f"patch {kind} {name} {subresource}".strip(), req, keep)

    def apply(
        self,
        obj: Obj,
        *,
        manager: str,
        force: bool = False,
        keep: Sequence[str] | None = None,
        url_kind: str | None = None,
        url_name: str | None = None,
    ) -> Obj:
        """Server-side apply; ``url_kind``/``url_name`` send it to another object's URL."""
        kind = url_kind or obj["kind"]
        obj = self._place(obj, kind=kind)
        meta = obj["metadata"]
        name = meta.get("name", "") if url_name is None else url_name
        params = {"fieldManager": manager, **({"force": "true"} if force else {})}
        req = Request("apply", kind, meta.get("namespace", ""), name, body=obj, params=params)
        return self._send(f"apply {kind} {name} as {manager}", req, keep)

    def bind(self, name: str, node: str, *, uid: str = "") -> Obj:
        """POST a Binding of pod ``name`` to ``node`` (``pods/<name>/binding``, as kube-scheduler
        does; ``uid``: its precondition); only the answer's code and reason are recorded."""
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, **({"uid": uid} if uid else {})},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        req = Request("bind", "Pod", self.ns, name, "binding", binding)
        return self._send(f"bind Pod {name} to {node}", req, ())

    def delete(
        self,
        kind: str,
        name: str,
        *,
        propagation: str = "",
        keep: Sequence[str] | None = (),
        namespace: str | None = None,
        **params: str,
    ) -> Obj:
        """Delete; by default only the code is recorded (``keep=None`` records the answer too)."""
        params = {**params, "propagationPolicy": propagation} if propagation else params
        req = Request("delete", kind, self._ns(kind, namespace), name, params=params)
        return self._send(f"delete {kind} {name} {propagation}".strip(), req, keep)

    # --- watches and eventual outcomes ------------------------------------------------------

    def watch(self, kind: str, *, selector: str = "", namespace: str | None = None) -> Any:
        """Open a watch from now on (``selector``: a label selector)."""
        return self.transport.watch_open(kind, self._ns(kind, namespace), selector=selector)

    def events(self, handle: Any, count: int, *, keep: Sequence[str] | None = None, timeout: float = 5.0) -> None:
        """Record the next ``count`` watch events (fewer if they do not come before ``timeout``)."""
        got = self.transport.watch_next(handle, count=count, timeout=timeout)
        for type_, obj in got:
            normal = self._normaliser.object(copy.deepcopy(obj))
            shown = {path: _pick(normal, path) for path in keep} if keep is not None else normal
            self.trace.append({"event": type_, "object": shown})
        if len(got) < count:
            self.trace.append({"event": f"only {len(got)} of {count} events came"})

    def wait_gone(self, kind: str, name: str, *, namespace: str | None = None, timeout: float = GC_TIMEOUT) -> None:
        """Record whether the object is gone (on the real cluster: within ``timeout``)."""
        req = Request("get", kind, self._ns(kind, namespace), name)

        def probe() -> tuple[bool, Response]:
            response = self.transport.request(req)
            return response.code == 404, response

        done, _ = self.transport.eventually(probe, timeout=timeout)
        self.trace.append({"op": self._normaliser.text(f"wait until {kind} {name} is gone"), "gone": done})

    def wait_for(
        self,
        kind: str,
        name: str,
        holds: Callable[[Obj], bool],
        *,
        what: str,
        keep: Sequence[str] | None = None,
        timeout: float = GC_TIMEOUT,
    ) -> Obj:
        """Poll the object until ``holds`` (on the fake: look once); record it as it then is."""
        req = Request("get", kind, self._ns(kind, None), name)

        def probe() -> tuple[bool, Response]:
            response = self.transport.request(req)
            return response.code < 400 and holds(response.body), response

        done, response = self.transport.eventually(probe, timeout=timeout)
        self.trace.append({"op": self._normaliser.text(f"wait until {kind} {name} {what}"), "held": done})
        return self._record(f"then get {kind} {name}", response, keep, kind)

    def _ns(self, kind: str, namespace: str | None) -> str:
        if not KINDS[kind].namespaced:
            return ""
        return self.ns if namespace is None else namespace


def _pick(obj: Any, path: str) -> Any:
    """The value at a dotted path (``metadata.labels``), or ``<absent>``."""
    node = obj
    for part in path.split(".") if path else ():
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return "<absent>"
    return node
