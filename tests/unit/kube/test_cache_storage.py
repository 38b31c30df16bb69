"""How the real operator's cache stores what it holds: serialized, each read a copy of its own.

Covers: what a reader gets is its own (changing it changes nothing cached, for ``get``,
``objects`` and ``labelled``); a Deployment is kept compressed, in less memory than its JSON
text, where parsed dicts take several times that; ``version`` answers without decoding; an object of
types marshal cannot take (a Mapping that is no dict) is stored as plain JSON values; the label
index follows label changes, deletions and a same-named successor; a re-list of the version
held answers two distinct, equal objects (an update) and encodes nothing; an object without a
version is stored again each time; ``answer=False`` decodes nothing; a store that encodes while
another thread deletes the object, or stores a newer version, does not undo that.
"""

from __future__ import annotations

import gc
import json
import marshal
import tracemalloc
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

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


def test_a_deployment_is_kept_in_less_memory_than_its_json_text() -> None:
    # Serialized and compressed, these Deployments take two thirds of their JSON text's size
    # with what the cache keeps beside each (0.67, measured); serialized only, 0.97; parsed into
    # dicts, as the cache kept objects before that, 3.5 times it.
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
    assert kept < 0.8 * text_size, f"the cache kept {kept} bytes for {text_size} bytes of JSON"


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


def _counting_stores(cache: ObjectCache, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the objects ``cache`` encodes from now on, one entry per encoding."""
    encoded: list[str] = []
    original = cache._stored

    def counted(kind: str, obj: Obj, uid: str, version: int) -> Any:
        encoded.append(obj["metadata"]["name"])
        return original(kind, obj, uid, version)

    monkeypatch.setattr(cache, "_stored", counted)
    return encoded


def test_a_relist_of_the_version_held_encodes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ObjectCache()
    cache.apply_event("Pod", "ADDED", pod("p1", "svc", rv="7"))
    encoded = _counting_stores(cache, monkeypatch)
    cache.apply_event("Pod", None, pod("p1", "svc", rv="7"))
    assert encoded == []
    cache.apply_event("Pod", None, pod("p1", "svc", rv="8"))
    assert encoded == ["p1"]


def test_an_object_without_a_version_is_stored_again_each_time() -> None:
    # No resourceVersion is no version: the cache cannot tell it is the one it holds.
    cache = ObjectCache()
    first, second = pod("p1", "svc"), pod("p1", "svc")
    del first["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"]
    second["spec"]["nodeName"] = "node-2"
    cache.apply_event("Pod", "ADDED", first)
    before, after = cache.apply_event("Pod", "MODIFIED", second)
    assert before is not None and before["spec"]["nodeName"] == "node-1"
    assert after is not None and after["spec"]["nodeName"] == "node-2"
    assert (cache.get("Pod", "ns", "p1") or {})["spec"]["nodeName"] == "node-2"


def test_without_an_answer_nothing_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ObjectCache()
    cache.apply_event("Pod", "ADDED", pod("p1", "svc", rv="1"))
    monkeypatch.setattr(marshal, "loads", lambda _blob: pytest.fail("decoded"))
    assert cache.apply_event("Pod", "MODIFIED", pod("p1", "svc", rv="2"), answer=False) == (None, None)
    assert cache.apply_event("Pod", None, pod("p1", "svc", rv="2"), answer=False) == (None, None)
    assert cache.apply_event("Pod", "DELETED", pod("p1", "svc", rv="3"), answer=False) == (None, None)
    assert cache.version("Pod", "ns", "p1") is None


def test_a_deletion_while_a_store_encodes_is_not_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    # The store encodes outside the cache's lock; the watch deletes the object meanwhile. The
    # store, older than the deletion, must not bring it back, in the cache or in its index.
    cache = ObjectCache(indexes={"Pod": OWNER_LABEL})
    cache.apply_event("Pod", "ADDED", pod("p1", "svc", rv="5"))
    original = cache._stored

    def deleted_meanwhile(kind: str, obj: Obj, uid: str, version: int) -> Any:
        cache.apply_event("Pod", "DELETED", pod("p1", "svc", rv="7"))
        return original(kind, obj, uid, version)

    monkeypatch.setattr(cache, "_stored", deleted_meanwhile)
    before, after = cache.apply_event("Pod", None, pod("p1", "svc", rv="6"))
    assert before is None and after is None, "nothing held, nothing stored"
    assert cache.get("Pod", "ns", "p1") is None
    assert cache.labelled("Pod", "ns", "svc") == []


def test_a_newer_store_while_an_older_one_encodes_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ObjectCache(indexes={"Pod": OWNER_LABEL})
    cache.apply_event("Pod", "ADDED", pod("p1", "a", rv="5"))
    original = cache._stored
    racing = [pod("p1", "b", rv="9")]

    def newer_meanwhile(kind: str, obj: Obj, uid: str, version: int) -> Any:
        if racing:
            cache.apply_event("Pod", "MODIFIED", racing.pop())
        return original(kind, obj, uid, version)

    monkeypatch.setattr(cache, "_stored", newer_meanwhile)
    before, after = cache.apply_event("Pod", "MODIFIED", pod("p1", "c", rv="6"))
    assert before is after, "older than what is held by then: no change"
    assert cache.version("Pod", "ns", "p1") == ("uid-p1", 9)
    assert cache.labelled("Pod", "ns", "c") == [] and cache.labelled("Pod", "ns", "a") == []
    assert [p["metadata"]["resourceVersion"] for p in cache.labelled("Pod", "ns", "b") or []] == ["9"]


def test_a_same_named_successor_moves_in_the_index() -> None:
    cache = ObjectCache(indexes={"Pod": OWNER_LABEL})
    cache.apply_event("Pod", "ADDED", pod("p1", "a", rv="5", uid="first"))
    cache.apply_event("Pod", "ADDED", pod("p1", "b", rv="8", uid="second"))
    assert cache.labelled("Pod", "ns", "a") == []
    assert [p["metadata"]["uid"] for p in cache.labelled("Pod", "ns", "b") or []] == ["second"]
    before, after = cache.apply_event("Pod", "DELETED", pod("p1", "a", rv="9", uid="first"))
    assert before is after, "the predecessor's deletion leaves the successor"
    assert [p["metadata"]["uid"] for p in cache.labelled("Pod", "ns", "b") or []] == ["second"]
