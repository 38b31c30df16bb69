"""The cache's compact storage: equal objects, one copy of each string, shared ownership records.

Covers: a compacted object equals its input, leaves it unchanged and shares nothing mutable with
it; keys and short strings of two separately parsed objects are one object each, long ones are
kept as they are; two Deployments whose server-side apply entries differ only in the owner's uid
share every other subtree of their ``fieldsV1``, and each still equals its own; the table of
remembered subtrees stays within its bound and keeps the ones in use, and what it forgot is still
compacted correctly; the operator's cache stores its objects compacted, from watch events and from a LIST alike.
A new version of a cached object takes the parts still equal from the cached one (a changed list
item is copied, its equal neighbours reused; a part of another type is not taken, but within a
part reused whole equality decides), and a LIST of
the version the cache holds (same uid and resourceVersion) is answered with the cached object's parts.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.core.objects import Obj
from inference_operator.kube import compact as compact_module
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.compact import REMEMBERED, SHORT, compact


@pytest.fixture(autouse=True)
def fresh_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty table of remembered subtrees, whatever ran before."""
    monkeypatch.setattr(compact_module, "_trees", {})


def deployment(name: str, uid: str, owner_uid: str) -> Obj:
    """A Deployment as the API server serves it, parsed from JSON like a watch event."""
    fields = {
        "f:metadata": {
            "f:labels": {".": {}, "f:app.kubernetes.io/name": {}},
            "f:ownerReferences": {f'k:{{"uid":"{owner_uid}"}}': {}},
        },
        "f:spec": {
            "f:replicas": {},
            "f:template": {"f:spec": {"f:containers": {'k:{"name":"server"}': {".": {}, "f:image": {}, "f:name": {}}}}},
        },
    }
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "team",
            "uid": uid,
            "resourceVersion": "7",
            "labels": {"app.kubernetes.io/name": name},
            "annotations": {"note": "x" * (SHORT + 1)},
            "ownerReferences": [{"kind": "InferenceService", "name": name, "uid": owner_uid, "controller": True}],
            "managedFields": [
                {"manager": FIELD_MANAGER, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields},
            ],
        },
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "server", "image": "vllm:0.7.0"}]}}},
        "status": {"conditions": [{"type": "Available", "status": "True"}]},
    }
    parsed: Obj = json.loads(json.dumps(obj))
    return parsed


def fields_v1(obj: Obj) -> dict[str, Any]:
    entry: dict[str, Any] = obj["metadata"]["managedFields"][0]
    return entry["fieldsV1"]  # type: ignore[no-any-return]


def containers(obj: Obj) -> list[Any]:
    return obj["spec"]["template"]["spec"]["containers"]  # type: ignore[no-any-return]


def mutable_parts(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in mutable_parts(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in mutable_parts(v))]
    return []


def test_a_compacted_object_equals_its_input_leaves_it_alone_and_shares_nothing_mutable() -> None:
    original = deployment("web", "u1", "owner-1")
    kept = copy.deepcopy(original)
    compacted = compact(original)
    assert compacted == original == kept
    assert json.dumps(compacted) == json.dumps(kept)  # key order, and 1 is not True
    assert not set(mutable_parts(compacted)) & set(mutable_parts(original))


def test_keys_and_short_strings_of_separately_parsed_objects_are_one_object_each() -> None:
    a, b = compact(deployment("web", "u1", "owner-1")), compact(deployment("web", "u2", "owner-2"))
    key_a = next(k for k in a["metadata"] if k == "namespace")
    key_b = next(k for k in b["metadata"] if k == "namespace")
    assert key_a is key_b
    assert containers(a)[0]["image"] is containers(b)[0]["image"]
    assert a["status"]["conditions"][0]["status"] is b["status"]["conditions"][0]["status"]
    long_a, long_b = a["metadata"]["annotations"]["note"], b["metadata"]["annotations"]["note"]
    assert long_a == long_b and len(long_a) > SHORT  # kept as they came: rarely equal in real objects


def test_ownership_records_differing_in_the_owners_uid_share_every_other_subtree() -> None:
    a, b = compact(deployment("web", "u1", "owner-1")), compact(deployment("api", "u2", "owner-2"))
    assert fields_v1(a)["f:spec"] is fields_v1(b)["f:spec"]
    assert fields_v1(a)["f:metadata"]["f:labels"] is fields_v1(b)["f:metadata"]["f:labels"]
    assert fields_v1(a)["f:metadata"]["f:ownerReferences"] is not fields_v1(b)["f:metadata"]["f:ownerReferences"]
    assert fields_v1(a) == fields_v1(deployment("web", "u1", "owner-1"))
    assert fields_v1(b) == fields_v1(deployment("api", "u2", "owner-2"))
    assert containers(a) is not containers(b)  # only ownership records are shared, never the spec


def test_the_table_keeps_the_most_recently_used_subtrees_within_its_bound() -> None:
    first = deployment("web", "u1", "owner-first")
    spec = fields_v1(compact(first))["f:spec"]
    for i in range(REMEMBERED + 100):  # each adds its own owner reference; the rest is found again
        compact(deployment(f"d{i}", f"u{i}", f"owner-{i}"))
        assert len(compact_module._trees) <= REMEMBERED
    again = compact(first)
    assert again == first
    assert fields_v1(again)["f:spec"] is spec  # used all along: never forgotten


def test_the_operators_cache_stores_objects_compacted_from_events_and_from_a_list() -> None:
    cache = ObjectCache()
    _, watched = cache.apply_event("Deployment", "ADDED", deployment("web", "u1", "owner-1"))
    listed = [cache.slimmed("Deployment", deployment("api", "u2", "owner-2"))]
    cache.replace_kind("Deployment", "", listed, list_version="7")
    stored = cache.get("Deployment", "team", "api")
    assert watched is not None and stored is not None
    assert watched == deployment("web", "u1", "owner-1") and stored == deployment("api", "u2", "owner-2")
    assert fields_v1(watched)["f:spec"] is fields_v1(stored)["f:spec"]


# --- a new version of a cached object ----------------------------------------------------------


def newer(obj: Obj, version: str, **status: Any) -> Obj:
    """The next version of ``obj`` as a watch event brings it: parsed afresh, status changed."""
    changed: Obj = json.loads(json.dumps(obj))
    changed["metadata"]["resourceVersion"] = version
    changed["status"] = {**changed["status"], **status}
    return changed


def test_a_new_version_reuses_the_parts_equal_to_the_earlier_one_and_copies_the_rest() -> None:
    before = compact(deployment("web", "u1", "owner-1"))
    event = newer(deployment("web", "u1", "owner-1"), "8", readyReplicas=2)
    after = compact(event, before)
    assert after == event
    assert not set(mutable_parts(after)) & set(mutable_parts(event))  # nothing of the input kept
    assert after["spec"] is before["spec"]
    nested = compact({"metadata": {"resourceVersion": "3"}, "spec": {"x": {"on": True}}}, before)
    assert compact({"metadata": {"resourceVersion": "4"}, "spec": {"x": {"on": 1}}}, nested)["spec"] is nested["spec"]
    assert after["metadata"]["labels"] is before["metadata"]["labels"]
    assert after["metadata"]["managedFields"] is before["metadata"]["managedFields"]
    assert after["status"]["conditions"] is before["status"]["conditions"]
    assert after["status"] is not before["status"] and before["status"] == deployment("web", "u1", "o")["status"]
    assert after["metadata"] is not before["metadata"]


def test_a_changed_list_item_is_copied_and_the_equal_items_beside_it_reused() -> None:
    first = deployment("web", "u1", "owner-1")
    first["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "proxy:1"})
    before = compact(first)
    event = json.loads(json.dumps(first))
    event["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm:0.8.0"
    after = compact(event, before)
    assert after == event
    new_server, sidecar = containers(after)
    assert sidecar is containers(before)[1]
    assert new_server is not containers(before)[0] and new_server["image"] == "vllm:0.8.0"


def test_a_part_reused_is_of_the_same_type_and_within_it_equality_decides() -> None:
    # Python's == takes 1 for True: a part reused is checked on its own type; within a part
    # reused whole, == decides (a field of the kinds cached keeps its JSON type between versions).
    before = compact({"metadata": {"resourceVersion": "1", "generation": 1}, "spec": {"replicas": 1}, "status": 1})
    event = {"metadata": {"resourceVersion": "2", "generation": True}, "spec": {"replicas": 1}, "status": True}
    after = compact(event, before)
    assert after["status"] is True
    assert after["metadata"]["generation"] is True
    assert after["spec"] is before["spec"]


def test_the_cache_stores_a_new_version_with_the_parts_it_held_and_a_list_of_the_same_version_as_it_is() -> None:
    cache = ObjectCache()
    _, first = cache.apply_event("Deployment", "ADDED", deployment("web", "u1", "owner-1"))
    _, second = cache.apply_event("Deployment", "MODIFIED", newer(deployment("web", "u1", "owner-1"), "8", x=1))
    assert first is not None and second is not None
    assert second["spec"] is first["spec"] and second["status"] == {**first["status"], "x": 1}
    relisted = cache.slimmed("Deployment", newer(deployment("web", "u1", "owner-1"), "8", x=1))
    # The same uid and resourceVersion: all of the version the cache holds, in a dict of its own
    # (a re-listed object is an update for the watch rule, not the cache ignoring an old event).
    assert relisted == second and relisted is not second
    assert all(relisted[key] is second[key] for key in second)
    # The same name and version but another object (deleted and created again): nothing reused.
    other = cache.slimmed("Deployment", newer(deployment("web", "u9", "owner-1"), "8", x=1))
    assert other is not second and other["spec"] is not first["spec"] and other["metadata"]["uid"] == "u9"
