"""The two backends a check runs on, behind one small request interface.

:class:`RealTransport` speaks HTTP to a kube-apiserver (the official client's connection pool and
credentials, raw JSON); :class:`FakeTransport` calls the FakeApiServer's methods. The fake has no
HTTP layer of its own, so this module is it: each request becomes the call a kube client would
end in, each :class:`~inference_operator.core.errors.ApiError` becomes the HTTP status and reason the
real server sends, and a success gets the code the real server would pick (201 on create).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from inference_operator.core.errors import ApiError
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.server import FakeApiServer, Watch
from inference_operator.sim.apiserver.target import Target

from .normalise import CONTROLLER_OBJECTS

Obj = dict[str, Any]


@dataclass(frozen=True)
class KindInfo:
    prefix: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``v1`` for ``/api/v1``, ``apps/v1`` for ``/apis/apps/v1``."""
        return self.prefix.removeprefix("/api/").removeprefix("/apis/")


KINDS: dict[str, KindInfo] = {
    "InferenceService": KindInfo("/apis/serving.inference-operator.dev/v1", "inferenceservices"),
    "Deployment": KindInfo("/apis/apps/v1", "deployments"),
    "ReplicaSet": KindInfo("/apis/apps/v1", "replicasets"),
    "Service": KindInfo("/api/v1", "services"),
    "ConfigMap": KindInfo("/api/v1", "configmaps"),
    "Secret": KindInfo("/api/v1", "secrets"),
    "ServiceAccount": KindInfo("/api/v1", "serviceaccounts"),
    "Namespace": KindInfo("/api/v1", "namespaces", namespaced=False),
    "Pod": KindInfo("/api/v1", "pods"),
    "CustomResourceDefinition": KindInfo(
        "/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", namespaced=False
    ),
}


@dataclass
class Request:
    """One API call, in the terms of a kube client."""

    verb: str  # create, get, list, update, patch, apply, delete, bind (a Pod's binding)
    kind: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    body: Any = None
    """The JSON body: an object, or (for a malformed patch) any JSON value."""
    params: dict[str, str] = field(default_factory=dict)
    """Query parameters: fieldManager, force, propagationPolicy, labelSelector, …"""


@dataclass
class Response:
    code: int
    body: Obj


class Transport(Protocol):
    name: str

    def request(self, req: Request) -> Response: ...

    def watch_open(self, kind: str, namespace: str, *, selector: str = "") -> Any: ...

    def watch_next(self, handle: Any, *, count: int, timeout: float) -> list[tuple[str, Obj]]: ...

    def eventually(self, probe: Any, *, timeout: float) -> Any: ...


def _status(code: int, reason: str, message: str) -> Obj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


class FakeTransport:
    """Requests as FakeApiServer calls. The garbage collector runs inside each call, so what the
    real cluster does "eventually" has happened when the call returns."""

    name = "fake"

    def __init__(self, server: FakeApiServer) -> None:
        self.server = server

    def request(self, req: Request) -> Response:
        try:
            return self._call(req)
        except ApiError as err:
            return Response(err.code, _status(err.code, err.reason, err.api_message))

    def _call(self, req: Request) -> Response:
        server, p = self.server, dict(req.params)
        manager = p.pop("fieldManager", "conformance")
        kind, ns, name, body = req.kind, req.namespace, req.name, req.body
        if req.verb == "get":
            return Response(200, server.get(kind, ns, name))
        target = Target(KINDS[kind].api_version, kind, ns, name)
        if req.verb == "list":
            selector, fields = p.pop("labelSelector", ""), p.pop("fieldSelector", "")
            items = server.list(kind, ns or None, label_selector=selector, field_selector=fields)
            meta = {"resourceVersion": server.resource_version}
            if not traits_of(kind).built_in:
                meta["continue"] = ""  # what the real server's lists of custom resources carry
            return Response(
                200, {"kind": f"{kind}List", "apiVersion": target.api_version, "metadata": meta, "items": items}
            )
        if req.verb == "create":
            assert body is not None
            created = server.create(body, namespace=ns or None, field_manager=manager, target=target, **_options(p))
            return Response(201, created)
        if req.verb == "update":
            assert body is not None
            update = server.update_status if req.subresource == "status" else server.update
            return Response(200, update(body, field_manager=manager, target=target))
        if req.verb == "patch":
            patch = server.patch_status if req.subresource == "status" else server.patch
            return Response(200, patch(kind, ns, name, body, field_manager=manager))
        if req.verb == "apply":
            assert body is not None
            existed = _exists(server, kind, ns, name)
            applied = server.apply(body, field_manager=manager, force=p.pop("force", "") == "true", target=target)
            return Response(200 if existed else 201, applied)
        if req.verb == "bind":
            assert body is not None
            server.bind(ns, name, body["target"]["name"], uid=body["metadata"].get("uid", ""))
            success = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
            return Response(201, success)
        if req.verb == "delete":
            propagation = p.pop("propagationPolicy", "Background")
            # 200 either way: the real server answers 202 only to the deprecated orphanDependents=false
            return Response(200, server.delete(kind, ns, name, propagation=propagation))  # type: ignore[arg-type]
        raise ValueError(f"unknown verb {req.verb!r}")

    def watch_open(self, kind: str, namespace: str, *, selector: str = "") -> Any:
        return {"watch": self.server.watch(kind, namespace, label_selector=selector), "pending": []}

    def watch_next(self, handle: Any, *, count: int, timeout: float) -> list[tuple[str, Obj]]:
        watch: Watch = handle["watch"]
        handle["pending"].extend((e.type, e.object) for e in watch.drain())
        pending: list[tuple[str, Obj]] = handle["pending"]
        handle["pending"] = pending[count:]
        return pending[:count]

    def eventually(self, probe: Any, *, timeout: float) -> Any:
        return probe()


def _exists(server: FakeApiServer, kind: str, ns: str, name: str) -> bool:
    try:
        server.get(kind, ns, name)
    except ApiError:
        return False
    return True


def _options(params: dict[str, str]) -> dict[str, Any]:
    if params:
        raise ValueError(f"the fake takes no query parameters {sorted(params)} on this verb")
    return {}


class RealTransport:
    """Raw JSON over the operator's connection pool, to the cluster in ``kubeconfig`` (its client
    certificate is in the pool's TLS context)."""

    name = "real"

    def __init__(self, kubeconfig: Path) -> None:
        from inference_operator.kube.client import KubeClient

        transport = KubeClient.from_kubeconfig(str(kubeconfig)).transport
        self._host = transport.server
        self._pool = transport.pool

    def path(self, kind: str, namespace: str, name: str = "", subresource: str = "") -> str:
        info = KINDS[kind]
        path = info.prefix + (f"/namespaces/{quote(namespace)}" if info.namespaced and namespace else "")
        path += (
            f"/{info.plural}"
            + (f"/{quote(name, safe='')}" if name else "")
            + (f"/{subresource}" if subresource else "")
        )
        return path

    def request(self, req: Request) -> Response:
        params = dict(req.params)
        content_type = "application/json"
        method = {"create": "POST", "bind": "POST", "get": "GET", "list": "GET", "update": "PUT", "patch": "PATCH"}.get(
            req.verb, ""
        )
        if req.verb in ("create", "update", "patch", "apply"):
            params.setdefault("fieldManager", "conformance")
        if req.verb == "patch":
            content_type = "application/merge-patch+json"
        elif req.verb == "apply":
            method, content_type = "PATCH", "application/apply-patch+yaml"
        elif req.verb == "delete":
            method = "DELETE"
            policy = params.pop("propagationPolicy", "")
            body = {"kind": "DeleteOptions", "apiVersion": "v1", **({"propagationPolicy": policy} if policy else {})}
            if "dryRun" in params:  # a DELETE with a body takes its options from the body alone
                body["dryRun"] = [params.pop("dryRun")]
            req = Request(req.verb, req.kind, req.namespace, req.name, req.subresource, body, params)
        name = "" if req.verb in ("create", "list") else req.name
        url = self._host + self.path(req.kind, req.namespace, name, req.subresource)
        if params:
            url += "?" + urlencode(params)
        payload = json.dumps(req.body).encode() if req.body is not None else None
        response = self._pool.request(
            method, url, body=payload, headers={"Content-Type": content_type, "Accept": "application/json"}, timeout=30
        )
        data = json.loads(response.data or b"{}")
        return Response(response.status, data)

    def watch_open(self, kind: str, namespace: str, *, selector: str = "") -> Any:
        listed = self.request(Request("list", kind, namespace))
        rv = listed.body["metadata"]["resourceVersion"]
        return {"kind": kind, "namespace": namespace, "rv": rv, "selector": selector}

    def watch_next(self, handle: Any, *, count: int, timeout: float) -> list[tuple[str, Obj]]:
        events: list[tuple[str, Obj]] = []
        if count <= 0:
            return events
        url = self._host + self.path(handle["kind"], handle["namespace"])
        query = {"watch": "true", "resourceVersion": handle["rv"], "timeoutSeconds": str(max(1, int(timeout)))}
        if handle["selector"]:
            query["labelSelector"] = handle["selector"]
        url += "?" + urlencode(query)
        response = self._pool.request("GET", url, preload_content=False, timeout=timeout + 5)
        try:
            buffer = b""
            for chunk in response.stream(4096):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event["type"] in ("BOOKMARK", "ERROR"):
                        continue
                    handle["rv"] = event["object"]["metadata"]["resourceVersion"]
                    if (handle["kind"], event["object"]["metadata"].get("name")) in CONTROLLER_OBJECTS:
                        continue  # the controller-manager's own (kube-root-ca.crt): the fake has no such controller
                    events.append((event["type"], event["object"]))
                    if len(events) >= count:
                        return events
        finally:
            response.close()  # an unfinished stream cannot go back to the pool
            response.release_conn()
        return events

    def eventually(self, probe: Any, *, timeout: float) -> Any:
        """Poll ``probe`` (returns (done, value)) until done or the deadline; the last value."""
        deadline = time.monotonic() + timeout
        while True:
            done, value = probe()
            if done or time.monotonic() >= deadline:
                return done, value
            time.sleep(0.2)  # a bounded poll interval, not a wait for the outcome itself
