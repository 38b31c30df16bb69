"""The raw-JSON client's requests, through a stand-in for its transport.

Covers: an error answering a create names the object from its body (a create's path has no
name); ``get`` reads one object and answers None for a 404; the pods that explain a stuck
rollout are listed from the API server's watch cache, not by a quorum read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from inference_operator.core.errors import AlreadyExists, ApiError
from inference_operator.kube.backend import KubeBackend
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.client import KubeClient
from inference_operator.kube.kubeconfig import KubeconfigError
from inference_operator.kube.transport import Answer
from inference_operator.sim.clock import FakeClock


@dataclass
class Transport:
    """Answers every request with the next (status, payload) pair and records the paths."""

    answers: list[tuple[int, dict[str, Any]]]
    paths: list[str] = field(default_factory=list)

    def request(self, method: str, path: str, *, query: dict[str, str] | None = None, **_: Any) -> Answer:
        shown = "&".join(f"{k}={v}" for k, v in (query or {}).items() if k != "fieldManager")
        self.paths.append(f"{method} {path}" + (f"?{shown}" if shown else ""))
        status, payload = self.answers.pop(0)
        return Answer(status, json.dumps(payload).encode())


def client_of(transport: Transport) -> KubeClient:
    return KubeClient(transport)  # type: ignore[arg-type]  # what it calls of a transport: request


def test_an_error_answering_a_create_names_the_object_from_its_body() -> None:
    transport = Transport([(409, {"reason": "AlreadyExists", "message": 'services "p1" already exists'})])
    client = client_of(transport)
    with pytest.raises(AlreadyExists) as caught:
        client.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p1", "namespace": "team"}})
    assert str(caught.value).startswith("create Service team/p1: HTTP 409: ")
    assert caught.value.name == "p1"


def test_get_reads_one_object_and_answers_none_when_it_is_absent() -> None:
    transport = Transport([(200, {"metadata": {"name": "a"}}), (404, {"reason": "NotFound", "message": "nope"})])
    client = client_of(transport)
    assert client.get("Service", "ns", "a") == {"kind": "Service", "metadata": {"name": "a"}}
    assert client.get("Service", "ns", "b") is None
    assert transport.paths == ["GET /api/v1/namespaces/ns/services/a", "GET /api/v1/namespaces/ns/services/b"]


def test_pods_are_listed_from_the_api_servers_watch_cache() -> None:
    transport = Transport([(200, {"apiVersion": "v1", "items": [{"metadata": {"name": "p"}}], "metadata": {}})])
    backend = KubeBackend(client_of(transport), ObjectCache(), FakeClock())
    assert [p["metadata"]["name"] for p in backend.list_pods("ns", "app=a")] == ["p"]
    assert transport.paths == ["GET /api/v1/namespaces/ns/pods?labelSelector=app=a&resourceVersion=0"]


def test_an_answer_with_no_finalizer_left_on_a_deleted_object_is_its_deletion_in_the_cache() -> None:
    """Removing the last finalizer deletes the object in the same request. If the watch was
    listing again then (a restart), no DELETED event comes: the answer is all the operator
    hears, and a cache that kept it reconciled a gone object at every resync."""
    isvc = {
        "apiVersion": "serving.inference-operator.dev/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "finalizers": ["x"]},
    }
    marked = {**isvc, "metadata": {**isvc["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    last = {**marked, "metadata": {**marked["metadata"], "resourceVersion": "9", "finalizers": []}}
    written = {**marked, "metadata": {**marked["metadata"], "resourceVersion": "8", "finalizers": ["x", "y"]}}
    transport = Transport([(200, written), (200, last)])
    cache = ObjectCache()
    cache.apply_event("InferenceService", None, marked)
    backend = KubeBackend(client_of(transport), cache, FakeClock())
    backend.patch("InferenceService", "ns", "a", {"metadata": {"finalizers": ["x", "y"]}})
    assert cache.get("InferenceService", "ns", "a")["metadata"]["resourceVersion"] == "8"  # still there
    backend.patch("InferenceService", "ns", "a", {"metadata": {"finalizers": None}})
    assert cache.get("InferenceService", "ns", "a") is None
    cache.apply_event("InferenceService", None, marked)  # a LIST answered before the deletion
    assert cache.get("InferenceService", "ns", "a") is None


class NoCredentials:
    """A transport whose token file is gone: it refuses before sending."""

    def request(self, *_: Any, **__: Any) -> Answer:
        raise KubeconfigError("token file /var/run/secrets/token: not found")


def test_a_request_without_credentials_is_an_api_error_naming_why() -> None:
    client = KubeClient(NoCredentials())  # type: ignore[arg-type]
    with pytest.raises(ApiError) as caught:
        client.get("Service", "ns", "a")
    assert caught.value.code == 401 and caught.value.reason == "Unauthorized"
    assert (
        str(caught.value) == "get Service ns/a: not sent, no credentials: token file /var/run/secrets/token: not found"
    )
