"""How the real operator's cache stores what it holds: serialized, each read a copy of its own.

Covers: what a reader gets is its own (changing it changes nothing cached, for ``get``,
``objects`` and ``labelled``); a Deployment is kept in about the memory of its JSON text, where
parsed dicts take several times that; ``version`` answers without decoding; an object of
types marshal cannot take (a Mapping that is no dict) is stored as plain JSON values; the label
index follows label changes and deletions with stored entries; a re-list of the version held
answers two distinct, equal objects (an update) and stores nothing new.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator, Mapping
from typing import Any

from inference_operator.api.constants import DEPLOYMENT, OWNER_LABEL
from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.core.objects import Obj
from inference_operator.kube.cache import ObjectCache
from inference_operator.reconcile.builders import desired_deployment


def pod(name: str, owner: str, rv: str = "1", uid: str = "") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid or f"uid-{name}",
            "resourceVersion": rv,
            "labels": {OWNER_LABEL: owner},
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "server", "image": "vllm"}]},
    }


def test_what_a_reader_gets_is_its_own() -> None:
    cache = ObjectCache(indexes={"Pod": OWNER_LABEL})
    cache.apply_event("Pod", "ADDED", pod("p1", "svc"))
    for read in (
        lambda: cache.get("Pod", "ns", "p1"),
        lambda: cache.objects("Pod")[0],
        lambda: (cache.labelled("Pod", "ns", "svc") or [None])[0],
    ):
        got = read()
        assert got is not None
        got["spec"]["nodeName"] = "elsewhere"
        got["metadata"]["labels"].clear()
        assert cache.get("Pod", "ns", "p1") == pod("p1", "svc")
        assert read() is not got


def test_a_deployment_is_kept_in_about_the_memory_of_its_json_text() -> None:
    # Serialized, these Deployments take about their JSON text's size (0.97 of it, measured);
    # parsed into dicts, as the cache kept objects before, 3.5 times it.
    deployments = []
    for i in range(200):
        isvc = make_inference_service(f"svc-{i:03d}", image="vllm:0.7.0", model="Llama-3", replicas=2, namespace="ns")
        isvc["metadata"]["uid"] = f"uid-{i:03d}"
        desired = desired_deployment(InferenceService.from_object(isvc))
        desired["metadata"].update(resourceVersion=str(i + 1), uid=f"dep-{i:03d}")
        desired["status"] = {"replicas": 2, "readyReplicas": 2, "conditions": [{"type": "Available"}]}
        deployments.append(json.dumps(desired))
    cache = ObjectCache()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for text in deployments:
            cache.apply_event(DEPLOYMENT, "ADDED", json.loads(text))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    text_size = sum(map(len, deployments))
    assert cache.count(DEPLOYMENT) == 200
    assert kept < 1.5 * text_size, f"the cache kept {kept} bytes for {text_size} bytes of JSON"


def test_the_version_is_known_without_decoding() -> None:
    cache = ObjectCache()
    cache.apply_event("Pod", "ADDED", pod("p1", "svc", rv="41"))
    assert cache.version("Pod", "ns", "p1") == ("uid-p1", 41)
    assert cache.version("Pod", "ns", "nope") is None


class _View(Mapping[str, Any]):
    """A read-only mapping that is no dict, as a client library's object view can be."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_an_object_marshal_cannot_take_is_stored_as_plain_json_values() -> None:
    cache = ObjectCache()
    odd = pod("p1", "svc")
    odd["spec"] = _View(odd["spec"])  # type: ignore[assignment]
    cache.apply_event("Pod", "ADDED", odd)
    got = cache.get("Pod", "ns", "p1")
    assert got == pod("p1", "svc")
    assert got is not None and type(got["spec"]) is dict


def test_the_index_follows_label_changes_and_deletions() -> None:
    cache = ObjectCache(indexes={"Pod": OWNER_LABEL})
    cache.apply_event("Pod", "ADDED", pod("p1", "a"))
    cache.apply_event("Pod", "ADDED", pod("p2", "a"))
    assert [p["metadata"]["name"] for p in cache.labelled("Pod", "ns", "a") or []] == ["p1", "p2"]
    cache.apply_event("Pod", "MODIFIED", pod("p1", "b", rv="2"))
    assert [p["metadata"]["name"] for p in cache.labelled("Pod", "ns", "a") or []] == ["p2"]
    assert [p["metadata"]["resourceVersion"] for p in cache.labelled("Pod", "ns", "b") or []] == ["2"]
    cache.apply_event("Pod", "DELETED", pod("p2", "a", rv="3"))
    assert cache.labelled("Pod", "ns", "a") == []
    assert cache.labelled("Service", "ns", "a") is None, "no index for the kind"


def test_a_relist_of_the_version_held_is_an_update_and_stores_nothing_new() -> None:
    cache = ObjectCache()
    cache.apply_event("Pod", "ADDED", pod("p1", "svc", rv="7"))
    before, after = cache.apply_event("Pod", None, pod("p1", "svc", rv="7"))
    assert before is not None and after is not None
    assert before is not after and before == after == pod("p1", "svc", rv="7")
    older_before, older_after = cache.apply_event("Pod", "MODIFIED", pod("p1", "svc", rv="6"))
    assert older_before is older_after, "an older version changes nothing: the same object twice"
    assert cache.version("Pod", "ns", "p1") == ("uid-p1", 7)
