"""The real-cluster pieces that need no cluster: error mapping, the watch cache, settings,
the Kopf glue's helpers, metrics, and how watch events turn into queued keys.

Covers: HTTP 404/409/422/403/5xx map to NotFound/AlreadyExists/Conflict/Invalid/Forbidden/
ApiError carrying the API server's message; the cache never moves backwards, forgets deleted
objects (only the same uid), drops objects a fresh LIST no longer has, and strips
managedFields; settings come from env vars and bad values name the variable; `kopf run -n`
namespaces are found on the command line; the metrics text format; a status-only update of an
InferenceService does not enqueue it, a spec change does, and a child's event enqueues its
owner.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.config import ConfigError, OperatorConfig
from inference_operator.errors import AlreadyExists, ApiError, Conflict, Forbidden, Invalid, NotFound
from inference_operator.kube.cache import ObjectCache, slim
from inference_operator.kube.client import error_for, path_of
from inference_operator.kube.metrics import render
from inference_operator.kube.runtime import OperatorRuntime
from inference_operator.operator import namespaces_from_argv


def obj(name: str = "a", rv: str = "1", uid: str = "u1", **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": uid, **extra}
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": meta,
        "spec": {"image": "i", "model": "m"},
    }


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (404, b'{"message": "not there", "reason": "NotFound"}', NotFound),
        (409, b'{"message": "exists", "reason": "AlreadyExists"}', AlreadyExists),
        (409, b'{"message": "the object has been modified", "reason": "Conflict"}', Conflict),
        (422, b'{"message": "spec.replicas: Invalid value", "reason": "Invalid"}', Invalid),
        (403, b'{"message": "forbidden", "reason": "Forbidden"}', Forbidden),
        (503, b"upstream unavailable", ApiError),
    ],
)
def test_http_errors_map_to_one_exception_each(status: int, body: bytes, cls: type[ApiError]) -> None:
    err = error_for(status, body, kind="Deployment", namespace="ns", name="a", verb="patch")
    assert type(err) is cls
    assert f"patch Deployment ns/a: HTTP {status}" in str(err)
    assert body.decode().split('"message": "')[-1].split('"')[0] in str(err)


def test_paths_cover_namespaced_cluster_wide_and_subresources() -> None:
    assert (
        path_of("InferenceService", "ns", "a", "status")
        == "/apis/serving.inference-operator.dev/v1/namespaces/ns/inferenceservices/a/status"
    )
    assert path_of("Deployment", "") == "/apis/apps/v1/deployments"
    assert path_of("Service", "ns", "a") == "/api/v1/namespaces/ns/services/a"


def test_the_cache_never_moves_backwards_and_forgets_only_the_same_object() -> None:
    cache = ObjectCache()
    cache.apply_event("InferenceService", "ADDED", obj(rv="5"))
    cache.apply_event("InferenceService", "MODIFIED", obj(rv="4"))
    assert cache.get("InferenceService", "ns", "a")["metadata"]["resourceVersion"] == "5"  # type: ignore[index]
    cache.apply_event("InferenceService", "DELETED", obj(rv="6", uid="someone-else"))
    assert cache.get("InferenceService", "ns", "a") is not None
    cache.apply_event("InferenceService", "DELETED", obj(rv="6"))
    assert cache.get("InferenceService", "ns", "a") is None


def test_a_fresh_list_drops_objects_it_no_longer_has() -> None:
    cache = ObjectCache()
    cache.apply_event("InferenceService", None, obj("gone", rv="3"))
    cache.apply_event("InferenceService", None, obj("new-after-list", rv="20", uid="u2"))
    cache.replace_kind("InferenceService", "", [obj("kept", rv="7", uid="u3")], list_version="10")
    assert cache.get("InferenceService", "ns", "gone") is None
    assert cache.get("InferenceService", "ns", "kept") is not None
    assert cache.get("InferenceService", "ns", "new-after-list") is not None, "newer than the list: kept"


def test_cached_objects_lose_managed_fields_and_last_applied() -> None:
    big = obj(
        managedFields=[{"manager": "kubectl"}],
        annotations={"kubectl.kubernetes.io/last-applied-configuration": "{...}", "team": "ml"},
    )
    small = slim(big)
    assert "managedFields" not in small["metadata"] and small["metadata"]["annotations"] == {"team": "ml"}
    assert "managedFields" in big["metadata"], "the input is left alone"


def test_settings_come_from_the_environment_with_defaults() -> None:
    cfg = OperatorConfig.from_env(
        {
            "INFERENCE_OPERATOR_WORKERS": "8",
            "INFERENCE_OPERATOR_LB_PROVIDER": "http",
            "INFERENCE_OPERATOR_LB_URL": "http://lb:9090",
            "INFERENCE_OPERATOR_NAMESPACES": "a, b",
        }
    )
    assert (cfg.workers, cfg.lb_provider, cfg.lb_url, cfg.namespaces) == (8, "http", "http://lb:9090", ("a", "b"))
    assert OperatorConfig.from_env({}) == OperatorConfig()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"INFERENCE_OPERATOR_WORKERS": "many"}, "INFERENCE_OPERATOR_WORKERS='many': must be a whole number"),
        ({"INFERENCE_OPERATOR_WORKERS": "0"}, "must be at least 1"),
        ({"INFERENCE_OPERATOR_LB_PROVIDER": "f5"}, "must be one of memory, http"),
        ({"INFERENCE_OPERATOR_LB_PROVIDER": "http"}, "needs INFERENCE_OPERATOR_LB_URL"),
        ({"INFERENCE_OPERATOR_LB_URL": "lb:9090"}, "must start with http://"),
        ({"INFERENCE_OPERATOR_LOG_FORMAT": "xml"}, "must be one of plain, full, json"),
        ({"INFERENCE_OPERATOR_METRICS_ADDRESS": "9090"}, "must be HOST:PORT"),
    ],
)
def test_bad_settings_name_the_variable_and_what_is_allowed(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        OperatorConfig.from_env(env)


def test_kopf_run_namespaces_are_read_from_the_command_line() -> None:
    argv = ["kopf", "run", "-m", "inference_operator.operator", "-n", "a", "--namespace=b", "--namespace", "c"]
    assert namespaces_from_argv(argv) == ("a", "b", "c")
    assert namespaces_from_argv(["kopf", "run", "--all-namespaces"]) == ()


def test_metrics_are_prometheus_text() -> None:
    text = render({"reconciles": 3, "writes": 7})
    assert "# TYPE inference_operator_reconcile_total counter\ninference_operator_reconcile_total 3" in text
    assert "inference_operator_api_writes_total 7" in text


def runtime() -> OperatorRuntime:
    return OperatorRuntime(OperatorConfig(), client=object())  # type: ignore[arg-type]  # never called here


def test_status_only_updates_do_not_enqueue_but_spec_changes_do() -> None:
    rt = runtime()
    rt.on_event("InferenceService", None, obj(rv="1", generation=1))
    assert rt.queue.try_get() == "ns/a"
    rt.queue.done("ns/a")
    status_only = obj(rv="2", generation=1)
    status_only["status"] = {"phase": "Ready"}
    rt.on_event("InferenceService", "MODIFIED", status_only)
    assert rt.queue.try_get() is None
    rt.on_event("InferenceService", "MODIFIED", obj(rv="3", generation=2))
    assert rt.queue.try_get() == "ns/a"


def test_a_child_event_enqueues_its_owner() -> None:
    rt = runtime()
    child = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "resourceVersion": "9",
            "uid": "c1",
            "ownerReferences": [
                {
                    "apiVersion": "serving.inference-operator.dev/v1",
                    "kind": "InferenceService",
                    "name": "a",
                    "uid": "u1",
                    "controller": True,
                }
            ],
        },
    }
    rt.on_event("Deployment", "MODIFIED", child)
    assert rt.queue.try_get() == "ns/a"
    assert rt.cache.get("Deployment", "ns", "a") is not None


class PagedApi:
    """Stands in for kubernetes.client.ApiClient: answers LISTs in pages of two."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.queries: list[dict[str, str]] = []

    def param_serialize(self, method: str, path: str, *, query_params: Any = None, **_: Any) -> tuple[Any, ...]:
        return method, path, {}, dict(query_params or []), None  # the query rides in the body slot

    def call_api(self, method: str, url: str, *, body: dict[str, str], **_: Any) -> Any:
        import json

        query = body
        self.queries.append(query)
        start = int(query.get("continue", "0"))
        limit = int(query.get("limit", "1000"))
        page = self.names[start : start + limit]
        more = start + limit < len(self.names)
        payload = {
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(100 + start), **({"continue": str(start + limit)} if more else {})},
            "items": [{"metadata": {"name": n}} for n in page],
        }

        class Response:
            status = 200

            def read(self) -> bytes:
                return json.dumps(payload).encode()

        return Response()


def test_lists_are_fetched_in_pages_and_reassembled() -> None:
    from inference_operator.kube.client import KubeClient

    api = PagedApi(["a", "b", "c", "d", "e"])
    pages = list(KubeClient(api).iter_pages("Service", "ns", page_size=2))
    items, version = [i for page, _ in pages for i in page], pages[-1][1]
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c", "d", "e"]
    assert all(i["kind"] == "Service" and i["apiVersion"] == "v1" for i in items)
    assert [q.get("continue") for q in api.queries] == [None, "2", "4"] and version == "104"
