"""The real-cluster pieces that need no cluster: error mapping, the watch cache, settings,
the Kopf glue's helpers, metrics, and how watch events turn into queued keys.

Covers: HTTP 404/409/422/403/5xx map to NotFound/AlreadyExists/Conflict/Invalid/Forbidden/
ApiError carrying the API server's message; the cache never moves backwards, forgets deleted
objects (only the same uid), drops objects a fresh LIST no longer has; deletions are final
(a LIST answered before a DELETED, or a write's answer that lost the race with it, does not
bring the object back; tombstones are bounded in number and age); a consistency drop removes
only what is missing and older than its list, adding nothing; slim keeps only the operator's
own server-side apply managedFields entry and kubectl's annotation goes, the input untouched
and the kept parts shared; settings come from env vars and bad values name the variable (the
Lease name is a DNS subdomain); `kopf run -n`
namespaces are found on the command line; the metrics text format; a status-only update of an
InferenceService does not enqueue it, a spec change does, and a child's event enqueues its
owner.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.core.errors import AlreadyExists, ApiError, Conflict, Forbidden, Invalid, NotFound
from inference_operator.kube.cache import ObjectCache, slim
from inference_operator.kube.client import error_for, path_of
from inference_operator.kube.config import ConfigError, OperatorConfig
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.kube.metricsserver import live
from inference_operator.operator import namespaces_from_argv
from inference_operator.sim.clock import FakeClock


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
    cache.replace_kind(
        "InferenceService", "", [cache.slimmed("InferenceService", obj("kept", rv="7", uid="u3"))], list_version="10"
    )
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


def test_slim_keeps_exactly_our_own_apply_entry_of_managed_fields() -> None:
    ours = {"manager": FIELD_MANAGER, "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    fields = [
        {"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:status": {}}},
        ours,
        {"manager": FIELD_MANAGER, "operation": "Update", "fieldsV1": {"f:metadata": {}}},
        {"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}},
    ]
    big = obj(managedFields=fields)
    small = slim(big)
    assert small["metadata"]["managedFields"] == [ours]
    assert small["metadata"]["managedFields"][0] is ours, "shared, not copied"
    assert small["spec"] is big["spec"]
    assert big["metadata"]["managedFields"] == fields and len(fields) == 4, "the input is left alone"
    assert slim(small) is small, "an object holding only our entry is kept as it is"
    others_only = slim(obj(managedFields=fields[:1]))
    assert "managedFields" not in others_only["metadata"]


def test_a_list_answered_before_a_deletion_does_not_bring_the_object_back() -> None:
    cache = ObjectCache(FakeClock())
    cache.apply_event("InferenceService", "ADDED", obj(rv="5"))
    # A LIST is in flight (answered at resourceVersion 6) when the watch says DELETED at 7.
    cache.apply_event("InferenceService", "DELETED", obj(rv="7"))
    cache.replace_kind("InferenceService", "", [cache.slimmed("InferenceService", obj(rv="5"))], list_version="6")
    assert cache.get("InferenceService", "ns", "a") is None
    cache.apply_event("InferenceService", None, obj(rv="5"))  # e.g. a write's answer, late
    assert cache.get("InferenceService", "ns", "a") is None
    cache.apply_event("InferenceService", "ADDED", obj(rv="9", uid="u2"))
    assert cache.get("InferenceService", "ns", "a") is not None, "a new object of that name is welcome"


def test_an_older_same_named_object_does_not_replace_a_newer_one() -> None:
    cache = ObjectCache(FakeClock())
    cache.apply_event("InferenceService", "ADDED", obj(rv="20", uid="u2"))
    cache.replace_kind(
        "InferenceService", "", [cache.slimmed("InferenceService", obj(rv="5", uid="u1"))], list_version="10"
    )
    assert cache.get("InferenceService", "ns", "a")["metadata"]["uid"] == "u2"  # type: ignore[index]


def test_tombstones_are_bounded_in_number_and_age() -> None:
    clock = FakeClock()
    cache = ObjectCache(clock, tombstone_limit=3, tombstone_seconds=600)
    for i in range(5):
        cache.apply_event("InferenceService", "DELETED", obj(f"o{i}", rv="7", uid=f"u{i}"))
    assert cache.tombstones() == 3
    cache.apply_event("InferenceService", None, obj("o0", rv="5", uid="u0"))
    assert cache.get("InferenceService", "ns", "o0") is not None, "the oldest tombstone was forgotten"
    cache.apply_event("InferenceService", None, obj("o4", rv="5", uid="u4"))
    assert cache.get("InferenceService", "ns", "o4") is None
    clock.advance(601)
    assert cache.tombstones() == 0
    cache.apply_event("InferenceService", None, obj("o4", rv="5", uid="u4"))
    assert cache.get("InferenceService", "ns", "o4") is not None


def test_a_consistency_drop_removes_only_missing_older_objects_and_adds_nothing() -> None:
    cache = ObjectCache(FakeClock())
    cache.apply_event("InferenceService", None, obj("gone", rv="3", uid="u1"))
    cache.apply_event("InferenceService", None, obj("kept", rv="4", uid="u2"))
    cache.apply_event("InferenceService", None, obj("newer", rv="30", uid="u3"))
    cache.apply_event("InferenceService", None, obj("other-ns", rv="3", uid="u4", namespace="elsewhere"))
    dropped = cache.drop_missing("InferenceService", "ns", {"u2", "u-not-cached"}, "10")
    assert [o["metadata"]["name"] for o in dropped] == ["gone"]
    assert sorted(name for _, name in cache.keys("InferenceService")) == ["kept", "newer", "other-ns"]
    cache.apply_event("InferenceService", None, obj("gone", rv="3", uid="u1"))
    assert cache.get("InferenceService", "ns", "gone") is None, "dropped objects are tombstoned too"


def test_settings_come_from_the_environment_with_defaults() -> None:
    cfg = OperatorConfig.from_env(
        {
            "INFERENCE_OPERATOR_WORKERS": "6",
            "INFERENCE_OPERATOR_LB_PROVIDER": "http",
            "INFERENCE_OPERATOR_LB_URL": "http://lb:9090",
            "INFERENCE_OPERATOR_NAMESPACES": "a, b",
        }
    )
    assert (cfg.workers, cfg.lb_provider, cfg.lb_url, cfg.namespaces) == (6, "http", "http://lb:9090", ("a", "b"))
    assert dataclasses.replace(OperatorConfig.from_env({}), identity="") == OperatorConfig()


def test_the_lease_name_is_the_one_the_deployment_passes_else_one_per_scope() -> None:
    assert OperatorConfig.from_env({"INFERENCE_OPERATOR_LEASE_NAME": "ops.lease-1"}).lease_name == "ops.lease-1"
    assert OperatorConfig.from_env({}).lease_name == "inference-operator"
    scoped = OperatorConfig.from_env({"INFERENCE_OPERATOR_NAMESPACES": "a"}).lease_name
    assert scoped.startswith("inference-operator-") and scoped != "inference-operator"


def test_the_load_balancer_token_is_read_but_never_shown() -> None:
    env = {
        "INFERENCE_OPERATOR_LB_PROVIDER": "http",
        "INFERENCE_OPERATOR_LB_URL": "https://lb:8443",
        "INFERENCE_OPERATOR_LB_TOKEN": "t0ken",
        "INFERENCE_OPERATOR_LB_CA_FILE": "/etc/hosts",
    }
    cfg = OperatorConfig.from_env(env)
    assert (cfg.lb_token, cfg.lb_ca_file) == ("t0ken", "/etc/hosts")
    assert "t0ken" not in repr(cfg)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"INFERENCE_OPERATOR_WORKERS": "many"}, "INFERENCE_OPERATOR_WORKERS='many': must be a whole number"),
        ({"INFERENCE_OPERATOR_WORKERS": "0"}, "must be a whole number from 1 to 256"),
        ({"INFERENCE_OPERATOR_LB_PROVIDER": "f5"}, "must be one of memory, http"),
        ({"INFERENCE_OPERATOR_LB_PROVIDER": "http"}, "needs INFERENCE_OPERATOR_LB_URL"),
        ({"INFERENCE_OPERATOR_LB_URL": "lb:9090"}, "must start with http://"),
        ({"INFERENCE_OPERATOR_LOG_FORMAT": "xml"}, "must be one of plain, full, json"),
        ({"INFERENCE_OPERATOR_METRICS_ADDRESS": "9090"}, "must be HOST:PORT"),
        ({"INFERENCE_OPERATOR_LB_TOKEN": "two\nlines"}, "INFERENCE_OPERATOR_LB_TOKEN must be one line"),
        ({"INFERENCE_OPERATOR_LB_TOKEN": "carriage\rreturn"}, "INFERENCE_OPERATOR_LB_TOKEN must be one line"),
        (
            {"INFERENCE_OPERATOR_LB_URL": "http://lb-registry:9090", "INFERENCE_OPERATOR_LB_TOKEN": "t0k"},
            "INFERENCE_OPERATOR_LB_TOKEN is set, but INFERENCE_OPERATOR_LB_URL='http://lb-registry:9090' is plain http://",
        ),
        (
            {"INFERENCE_OPERATOR_LEASE_DURATION": "10.5"},
            "INFERENCE_OPERATOR_LEASE_DURATION='10.5': must be a whole number",
        ),
        (
            {"INFERENCE_OPERATOR_RENEW_DEADLINE": "20"},
            "INFERENCE_OPERATOR_RENEW_DEADLINE=20 < INFERENCE_OPERATOR_LEASE_DURATION=15 must hold",
        ),
        (
            {"INFERENCE_OPERATOR_LB_URL": "http://lb:9090", "INFERENCE_OPERATOR_LB_CA_FILE": "/etc/hosts"},
            "INFERENCE_OPERATOR_LB_CA_FILE is set, but INFERENCE_OPERATOR_LB_URL is not https://",
        ),
        (
            {"INFERENCE_OPERATOR_LB_URL": "https://lb:8443", "INFERENCE_OPERATOR_LB_CA_FILE": "/nonexistent/ca.crt"},
            "INFERENCE_OPERATOR_LB_CA_FILE='/nonexistent/ca.crt': no readable file there",
        ),
        (
            {"INFERENCE_OPERATOR_LB_URL": "https://lb:8443", "INFERENCE_OPERATOR_LB_CA_FILE": "/dev/null"},
            "INFERENCE_OPERATOR_LB_CA_FILE='/dev/null': not a regular file",
        ),
        (
            {"INFERENCE_OPERATOR_LB_TIMEOUT": "nan"},
            "INFERENCE_OPERATOR_LB_TIMEOUT='nan': must be a number from 0.1 to 600",
        ),
        ({"INFERENCE_OPERATOR_LB_TIMEOUT": "inf"}, "INFERENCE_OPERATOR_LB_TIMEOUT='inf': must be a number"),
        ({"INFERENCE_OPERATOR_RESYNC_SECONDS": "NaN"}, "INFERENCE_OPERATOR_RESYNC_SECONDS='NaN': must be a number"),
        ({"INFERENCE_OPERATOR_RESYNC_SECONDS": "-inf"}, "INFERENCE_OPERATOR_RESYNC_SECONDS='-inf'"),
        ({"INFERENCE_OPERATOR_REQUEUE_SECONDS": "1e300"}, "from 0.1 to 86400"),
        ({"INFERENCE_OPERATOR_WORKERS": "100000000"}, "INFERENCE_OPERATOR_WORKERS='100000000': must be a whole number"),
        ({"INFERENCE_OPERATOR_WORKERS": "\u0663"}, "INFERENCE_OPERATOR_WORKERS='\u0663': must be a whole number"),
        ({"INFERENCE_OPERATOR_RETRY_PERIOD": "nan"}, "INFERENCE_OPERATOR_RETRY_PERIOD='nan'"),
        ({"INFERENCE_OPERATOR_CONNECT_TIMEOUT": "inf"}, "INFERENCE_OPERATOR_CONNECT_TIMEOUT='inf'"),
        ({"INFERENCE_OPERATOR_TRACE_MAX_BYTES": "99999999999Gi"}, "must be at most 1Gi"),
        ({"INFERENCE_OPERATOR_METRICS_ADDRESS": ":\u00b2"}, "must be HOST:PORT"),
        (
            {"INFERENCE_OPERATOR_LB_URL": "http://lb:99999"},
            "INFERENCE_OPERATOR_LB_URL='http://lb:99999': Port out of range",
        ),
        ({"INFERENCE_OPERATOR_LB_URL": "http://"}, "must name a host"),
        ({"INFERENCE_OPERATOR_NAMESPACES": "team-a,Team_B"}, "INFERENCE_OPERATOR_NAMESPACES='Team_B'"),
        ({"INFERENCE_OPERATOR_LEASE_NAMESPACE": "a b"}, "is not a namespace name"),
        (
            {"INFERENCE_OPERATOR_LEASE_NAME": "Ops_Lease"},
            "INFERENCE_OPERATOR_LEASE_NAME='Ops_Lease': must be a Lease name",
        ),
        ({"INFERENCE_OPERATOR_LEASE_NAME": "a" * 254}, "must be a Lease name"),
        ({"INFERENCE_OPERATOR_IDENTITY": "pod\r\nX-Evil: 1"}, "INFERENCE_OPERATOR_IDENTITY="),
    ],
)
def test_bad_settings_name_the_variable_and_what_is_allowed(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        OperatorConfig.from_env(env)


def test_kopf_run_namespaces_are_read_from_the_command_line() -> None:
    argv = ["kopf", "run", "-m", "inference_operator.operator", "-n", "a", "--namespace=b", "--namespace", "c"]
    assert namespaces_from_argv(argv) == ("a", "b", "c")
    assert namespaces_from_argv(["kopf", "run", "--all-namespaces"]) == ()


def test_live_counters_are_named_and_typed_for_prometheus() -> None:
    values = live({"reconciles": 3, "dead_threads": 1})
    assert values["inference_operator_reconcile_total"] == ("counter", "Reconcile passes run.", 3.0)
    assert values["inference_operator_dead_threads"][0] == "gauge"


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
    """Stands in for the client's transport: answers LISTs in pages of two."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.queries: list[dict[str, str]] = []

    def request(self, method: str, path: str, *, query: dict[str, str] | None = None, **_: Any) -> Any:
        import json

        from inference_operator.kube.transport import Answer

        query = dict(query or {})
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
        return Answer(200, json.dumps(payload).encode())


def test_lists_are_fetched_in_pages_and_reassembled() -> None:
    from inference_operator.kube.client import KubeClient

    api = PagedApi(["a", "b", "c", "d", "e"])
    pages = list(KubeClient(api).iter_pages("Service", "ns", page_size=2))  # type: ignore[arg-type]
    items, version = [i for page, _ in pages for i in page], pages[-1][1]
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c", "d", "e"]
    assert all(i["kind"] == "Service" and i["apiVersion"] == "v1" for i in items)
    assert [q.get("continue") for q in api.queries] == [None, "2", "4"] and version == "104"
