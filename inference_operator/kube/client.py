"""A thin raw-JSON client: the operator's requests to the API server, plain dicts in and out.

The operator needs a handful of calls on a handful of kinds, as plain dicts; a generated client
would deserialize every response into model objects (slow, and it loses fields it does not
know), and the official ``kubernetes`` package alone costs the process 10 MiB. So requests go
through ``transport.py`` (a urllib3 pool with the credentials of ``kubeconfig.py``, the same
Kopf's streams log in with) and JSON is sent and read here. HTTP failures are mapped once onto
the exceptions of ``inference_operator.core.errors``, the same ones the FakeApiServer raises.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

from inference_operator import __version__
from inference_operator.api.constants import DEPLOYMENT, FIELD_MANAGER, GROUP, KIND, PLURAL, SERVICE, VERSION
from inference_operator.core.errors import AlreadyExists, ApiError, Conflict, Forbidden, Invalid, NotFound
from inference_operator.core.objects import Obj
from inference_operator.kube.kubeconfig import Credentials, KubeconfigError, load_credentials
from inference_operator.kube.preflight import one_attempt
from inference_operator.kube.transport import POOL_SIZE, Transport

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
USER_AGENT = f"inference-operator/{__version__}"
TOOL_USER_AGENT = f"inference-operator-tools/{__version__}"
JSON = "application/json"
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"


@dataclass(frozen=True)
class KindInfo:
    prefix: str  # /api/v1 or /apis/group/version
    plural: str


KINDS = {
    KIND: KindInfo(f"/apis/{GROUP}/{VERSION}", PLURAL),
    DEPLOYMENT: KindInfo("/apis/apps/v1", "deployments"),
    SERVICE: KindInfo("/api/v1", "services"),
    "Event": KindInfo("/api/v1", "events"),
    "Pod": KindInfo("/api/v1", "pods"),
    "Node": KindInfo("/api/v1", "nodes"),
    "Lease": KindInfo("/apis/coordination.k8s.io/v1", "leases"),
}


def path_of(kind: str, namespace: str, name: str | None = None, subresource: str | None = None) -> str:
    """The REST path; an empty namespace means all namespaces (list only)."""
    info = KINDS[kind]
    scope = f"/namespaces/{quote(namespace)}" if namespace else ""
    path = f"{info.prefix}{scope}/{info.plural}"
    if name is not None:
        path += f"/{quote(name)}"
    if subresource is not None:
        path += f"/{subresource}"
    return path


def error_for(status: int, body: bytes, *, kind: str, namespace: str, name: str, verb: str) -> ApiError:
    """The exception for an HTTP error status, carrying the API server's own message."""
    try:
        payload = json.loads(body or b"{}")
        message = str(payload.get("message") or "")
        reason = str(payload.get("reason") or "")
    except ValueError:
        message, reason = body.decode(errors="replace")[:500], ""
    where = f"{verb} {kind} {namespace}/{name}".strip()
    text = f"{where}: HTTP {status}: {message or reason or 'no message'}"
    cls: type[ApiError]
    if status == 404:
        cls = NotFound
    elif status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif status == 422:
        cls = Invalid
    elif status in (401, 403):
        cls = Forbidden
    else:
        cls = ApiError
    err = cls(text, kind=kind, namespace=namespace, name=name, api_message=message or reason or f"HTTP {status}")
    if cls is ApiError:
        err.code = status
        err.reason = reason or f"HTTP{status}"  # e.g. TooManyRequests, Timeout, InternalError
    return err


class KubeClient:
    """Raw JSON requests over one transport: its credentials and its pool of connections."""

    def __init__(self, transport: Transport, *, timeout: float = 30.0) -> None:
        self.transport = transport
        self.timeout = timeout
        self.write_gate: Callable[[str, str], None] | None = None
        """Called with the verb and kind of each mutating request but a Lease's, the instant
        before it is sent (leader election's last check: it raises to stop the request)."""

    def gate_writes(self, gate: Callable[[str, str], None]) -> None:
        """Ask ``gate`` (it raises to refuse) before each mutating request but a Lease's: here,
        and again at the socket for each chunk of its bytes (``sendgate.py``)."""
        from inference_operator.kube.sendgate import install_send_gate

        self.write_gate = gate
        install_send_gate(self.transport.pool, lambda: gate("send", "request"))

    @classmethod
    def from_environment(cls, *, timeout: float = 30.0, identity: str = "", connections: int = POOL_SIZE) -> KubeClient:
        """The pod's service account when running in a pod, else the current KUBECONFIG context
        (:class:`~inference_operator.kube.kubeconfig.KubeconfigError` when there is neither);
        ``connections`` kept open at most."""
        return cls.from_credentials(load_credentials(), timeout=timeout, identity=identity, connections=connections)

    @classmethod
    def from_credentials(
        cls,
        credentials: Credentials,
        *,
        timeout: float = 30.0,
        identity: str = "",
        agent: str = USER_AGENT,
        connections: int = POOL_SIZE,
    ) -> KubeClient:
        """A client for ``credentials``. ``identity`` (the replica's, e.g. its pod name) goes
        into the user agent, so the API server's audit log says which replica sent each request."""
        agent = f"{agent} ({identity})" if identity else agent
        transport = Transport(credentials, user_agent=agent, retries=one_attempt(), pool_size=connections)
        return cls(transport, timeout=timeout)

    @classmethod
    def from_kubeconfig(cls, path: str, *, timeout: float = 30.0, agent: str = TOOL_USER_AGENT) -> KubeClient:
        """A client for the current context of one kubeconfig file, for tools and tests: its
        user agent is not the operator's, so the audit log never counts their requests as the
        operator's."""
        from inference_operator.kube.kubeconfig import from_kubeconfig, read_kubeconfigs

        credentials = from_kubeconfig(read_kubeconfigs([path]), f"kubeconfig {path}")
        return cls.from_credentials(credentials, timeout=timeout, agent=agent)

    def request(
        self,
        verb: str,
        kind: str,
        namespace: str,
        name: str | None = None,
        *,
        subresource: str | None = None,
        body: Obj | None = None,
        content_type: str = JSON,
        query: dict[str, str] | None = None,
        accept: str = JSON,
    ) -> Obj:
        method = {"create": "POST", "get": "GET", "list": "GET", "update": "PUT", "patch": "PATCH", "delete": "DELETE"}[
            verb
        ]
        params = dict(query or {})
        headers = {"Accept": accept}
        payload = None
        if method in ("POST", "PUT", "PATCH"):
            params.setdefault("fieldManager", FIELD_MANAGER)
        if body is not None:
            headers["Content-Type"] = content_type
            payload = json.dumps(body, separators=(",", ":")).encode()
        if self.write_gate is not None and method != "GET" and kind != "Lease":
            self.write_gate(verb, kind)
        try:
            response = self.transport.request(
                method,
                path_of(kind, namespace, name, subresource),
                query=params or None,
                body=payload,
                headers=headers,
                timeout=self.timeout,
            )
        except KubeconfigError as err:  # the token file or the exec plugin failed: nothing was sent
            subject = name or str(((body or {}).get("metadata") or {}).get("name") or "")
            where = f"{verb} {kind} {namespace}/{subject}".strip()
            failed = ApiError(f"{where}: not sent, no credentials: {err}", kind=kind, namespace=namespace, name=subject)
            failed.code, failed.reason = 401, "Unauthorized"
            raise failed from None
        data = response.data
        if response.status >= 300:  # redirects are not followed (``preflight.one_attempt``)
            # A create names its object in the body, not the path: errors must still name it.
            subject = name or str(((body or {}).get("metadata") or {}).get("name") or "")
            raise error_for(response.status, data, kind=kind, namespace=namespace, name=subject, verb=verb)
        result: Obj = json.loads(data) if data else {}
        return result

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        """One object read from the API server itself (not a cache), or None if it is absent."""
        try:
            found = self.request("get", kind, namespace, name)
        except NotFound:
            return None
        found.setdefault("kind", kind)
        return found

    def create(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        return self.request("create", obj["kind"], meta.get("namespace", "default"), body=obj)

    def apply(self, obj: Obj) -> Obj:
        """Server-side apply (JSON is YAML), forced: the operator's fields are the operator's."""
        meta = obj["metadata"]
        return self.request(
            "patch",
            obj["kind"],
            meta["namespace"],
            meta["name"],
            body=obj,
            content_type=APPLY_PATCH,
            query={"force": "true"},
        )

    def patch(self, kind: str, namespace: str, name: str, patch: Obj, *, subresource: str | None = None) -> Obj:
        return self.request(
            "patch", kind, namespace, name, subresource=subresource, body=patch, content_type=MERGE_PATCH
        )

    def get_lease(self, namespace: str, name: str) -> Obj | None:
        return self.get("Lease", namespace, name)

    def create_lease(self, lease: Obj) -> Obj:
        return self.create(lease)

    def replace_lease(self, lease: Obj) -> Obj:
        """PUT, with the Lease's resourceVersion as the precondition (Conflict when it moved)."""
        meta = lease["metadata"]
        return self.request("update", "Lease", meta["namespace"], meta["name"], body=lease)

    def update_status(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        return self.request("update", obj["kind"], meta["namespace"], meta["name"], subresource="status", body=obj)

    def list_objects(
        self, kind: str, namespace: str, *, label_selector: str | None = None, from_cache: bool = False
    ) -> list[Obj]:
        """Objects of a kind in a namespace ("" for all), with apiVersion and kind filled in.
        ``from_cache`` lets the API server answer from its watch cache (cheaper, may lag)."""
        pages = self.iter_pages(kind, namespace, label_selector=label_selector, from_cache=from_cache)
        return [item for page, _ in pages for item in page]

    def iter_pages(
        self,
        kind: str,
        namespace: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        from_cache: bool = False,
        page_size: int | None = None,
        metadata_only: bool = False,
    ) -> Iterator[tuple[list[Obj], str]]:
        """Pages of a LIST, each with the collection's resourceVersion. ``metadata_only`` asks
        for metadata alone (PartialObjectMetadata items): a fraction of the bytes."""
        query: dict[str, str] = {"labelSelector": label_selector} if label_selector else {}
        if field_selector:
            query["fieldSelector"] = field_selector
        if from_cache:
            query["resourceVersion"] = "0"
        if page_size:
            query["limit"] = str(page_size)
        while True:
            answer = self.request(
                "list", kind, namespace, query=query or None, accept=METADATA_ONLY if metadata_only else JSON
            )
            api_version = str(answer.get("apiVersion") or "")
            items: list[Obj] = answer.get("items") or []
            for item in items:
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
            meta = answer.get("metadata") or {}
            yield items, str(meta.get("resourceVersion") or "0")
            if not meta.get("continue"):
                return
            query["continue"] = str(meta["continue"])
