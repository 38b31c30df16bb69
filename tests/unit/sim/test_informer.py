"""Tests for SharedInformer: a list+watch cache of one kind, driven by explicit pumps.

Covers:
- Start: the initial list fills the cache and fires on_add; has_synced; start is idempotent;
  nothing is seen before start, and pump before start is a no-op.
- Pump: ADDED/MODIFIED/DELETED update the cache and call on_add / on_update(old, new) /
  on_delete(last state); returns the number of events; other kinds are ignored; changes made
  between start and the first pump are not lost.
- Cache reads: get returns the cached object or None when missing; deleted objects leave the
  cache; list by namespace; a caller's copies (a write's answer, a read) are never the cache's
  objects (which share the API server's stored versions, read-only: test_shared_snapshots.py).
- Handlers: several handlers; one added after start is replayed the cache; resync calls
  on_update(obj, obj); a handler that raises leaves later events for the next pump.
- Slimming: the cache keeps only the operator's own apply entry of managedFields, from the
  list and from every event, and leaves the API server's object whole; ``transform=None``
  keeps everything; informers of one kind share one copy of each object, a plain watch gets
  its own.
- Scope: a namespaced informer sees only its namespace; stop ends the watch; a label-selected
  informer sees an object only while it carries the label (losing it is a delete, gaining it an
  add), as a watch with a label selector does.
- Index: an informer with ``index_label`` finds the objects carrying a value of that label in a
  namespace, by name, through the initial list, every event (a label changed moves the object,
  a delete drops it) and a re-list; one without it answers None.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.informer import SharedInformer, slim

Obj = dict[str, Any]
KIND = "InferenceService"


def isvc(name: str, *, namespace: str = "default", replicas: int = 1) -> Obj:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "vllm:0.6.3", "model": "Llama-3", "replicas": replicas},
    }


class Recorder:
    """Handlers that write down what they were called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.updates: list[tuple[Obj, Obj]] = []

    def on_add(self, obj: Obj) -> None:
        self.calls.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: Obj, new: Obj) -> None:
        self.calls.append(("update", new["metadata"]["name"]))
        self.updates.append((old, new))

    def on_delete(self, obj: Obj) -> None:
        self.calls.append(("delete", obj["metadata"]["name"]))

    def register(self, informer: SharedInformer) -> None:
        informer.add_event_handler(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)


@pytest.fixture
def api() -> FakeApiServer:
    return FakeApiServer(FakeClock())


@pytest.fixture
def informer(api: FakeApiServer) -> SharedInformer:
    return SharedInformer(api, KIND)


@pytest.fixture
def recorder(informer: SharedInformer) -> Recorder:
    recorder = Recorder()
    recorder.register(informer)
    return recorder


class TestStart:
    def test_start_lists_existing_objects_into_the_cache_and_fires_on_add(
        self, api: FakeApiServer, informer: SharedInformer, recorder: Recorder
    ) -> None:
        api.create(isvc("a"))
        api.create(isvc("b"))
        assert not informer.has_synced
        assert informer.get("default", "a") is None
        informer.start()
        assert informer.has_synced
        assert recorder.calls == [("add", "a"), ("add", "b")]
        assert informer.get("default", "a") == slim(api.get(KIND, "default", "a"))
        assert len(informer) == 2

    def test_start_twice_lists_once(self, api: FakeApiServer, informer: SharedInformer, recorder: Recorder) -> None:
        api.create(isvc("a"))
        informer.start()
        informer.start()
        assert recorder.calls == [("add", "a")]

    def test_pump_before_start_does_nothing(self, api: FakeApiServer, informer: SharedInformer) -> None:
        api.create(isvc("a"))
        assert informer.pump() == 0
        assert informer.get("default", "a") is None


class TestPump:
    def test_watch_events_update_the_cache_and_call_the_handlers(
        self, api: FakeApiServer, informer: SharedInformer, recorder: Recorder
    ) -> None:
        informer.start()
        api.create(isvc("a"))
        api.patch(KIND, "default", "a", {"spec": {"replicas": 3}})
        assert informer.get("default", "a") is None  # nothing is applied until pumped
        assert informer.pump() == 2
        assert recorder.calls == [("add", "a"), ("update", "a")]
        old, new = recorder.updates[0]
        assert old["spec"]["replicas"] == 1
        assert new["spec"]["replicas"] == 3
        assert informer.get("default", "a") is new
        assert informer.pump() == 0

    def test_deleted_objects_leave_the_cache_and_on_delete_gets_the_last_state(
        self, api: FakeApiServer, informer: SharedInformer
    ) -> None:
        deleted: list[Obj] = []
        informer.add_event_handler(on_delete=deleted.append)
        api.create(isvc("a", replicas=4))
        informer.start()
        api.delete(KIND, "default", "a")
        informer.pump()
        assert informer.get("default", "a") is None
        assert informer.list() == []
        assert [obj["spec"]["replicas"] for obj in deleted] == [4]

    def test_get_returns_none_for_a_missing_object(self, informer: SharedInformer) -> None:
        informer.start()
        assert informer.get("default", "nope") is None
        assert informer.get("other", "nope") is None

    def test_changes_between_start_and_the_first_pump_are_not_lost(
        self, api: FakeApiServer, informer: SharedInformer, recorder: Recorder
    ) -> None:
        api.create(isvc("a"))
        informer.start()
        api.create(isvc("b"))
        api.delete(KIND, "default", "a")
        informer.pump()
        assert recorder.calls == [("add", "a"), ("add", "b"), ("delete", "a")]
        assert [o["metadata"]["name"] for o in informer.list()] == ["b"]

    def test_other_kinds_are_ignored(self, api: FakeApiServer, informer: SharedInformer, recorder: Recorder) -> None:
        informer.start()
        api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
        assert informer.pump() == 0
        assert recorder.calls == []

    def test_callers_copies_are_never_the_caches_objects(self, api: FakeApiServer, informer: SharedInformer) -> None:
        informer.start()
        created = api.create(isvc("a"))
        informer.pump()
        cached = informer.get("default", "a")
        assert cached is not None
        assert cached == slim(created)
        created["spec"]["replicas"] = 50  # the caller's copy …
        assert cached["spec"]["replicas"] == 1  # … is not the cache's
        assert api.get(KIND, "default", "a") is not cached

    def test_no_op_writes_produce_no_events(self, api: FakeApiServer, informer: SharedInformer) -> None:
        created = api.create(isvc("a"))
        informer.start()
        api.update(created)
        assert informer.pump() == 0


class TestHandlers:
    def test_every_registered_handler_is_called(self, api: FakeApiServer, informer: SharedInformer) -> None:
        first, second = Recorder(), Recorder()
        first.register(informer)
        second.register(informer)
        informer.start()
        api.create(isvc("a"))
        informer.pump()
        assert first.calls == second.calls == [("add", "a")]

    def test_a_handler_added_after_start_is_replayed_the_cache(
        self, api: FakeApiServer, informer: SharedInformer
    ) -> None:
        api.create(isvc("a"))
        informer.start()
        late = Recorder()
        late.register(informer)
        assert late.calls == [("add", "a")]

    def test_resync_calls_on_update_with_the_same_object(
        self, api: FakeApiServer, informer: SharedInformer, recorder: Recorder
    ) -> None:
        api.create(isvc("a"))
        informer.start()
        assert informer.resync() == 1
        old, new = recorder.updates[0]
        assert old is new

    def test_a_failing_handler_leaves_later_events_for_the_next_pump(
        self, api: FakeApiServer, informer: SharedInformer
    ) -> None:
        seen: list[str] = []

        def on_add(obj: Obj) -> None:
            seen.append(obj["metadata"]["name"])
            if obj["metadata"]["name"] == "a":
                raise RuntimeError("handler bug")

        informer.add_event_handler(on_add=on_add)
        informer.start()
        api.create(isvc("a"))
        api.create(isvc("b"))
        with pytest.raises(RuntimeError):
            informer.pump()
        assert informer.get("default", "a") is not None
        assert informer.pump() == 1
        assert seen == ["a", "b"]


class TestScope:
    @pytest.fixture(autouse=True)
    def _teams(self, api: FakeApiServer) -> None:
        for team in ("team-a", "team-b"):
            api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}})

    def test_a_namespaced_informer_sees_only_its_namespace(self, api: FakeApiServer) -> None:
        informer = SharedInformer(api, KIND, namespace="team-a")
        api.create(isvc("x", namespace="team-a"))
        api.create(isvc("y", namespace="team-b"))
        informer.start()
        api.create(isvc("z", namespace="team-b"))
        api.create(isvc("w", namespace="team-a"))
        informer.pump()
        assert sorted(o["metadata"]["name"] for o in informer.list()) == ["w", "x"]

    def test_list_filters_by_namespace(self, api: FakeApiServer, informer: SharedInformer) -> None:
        api.create(isvc("x", namespace="team-a"))
        api.create(isvc("y", namespace="team-b"))
        informer.start()
        assert [o["metadata"]["name"] for o in informer.list("team-b")] == ["y"]

    def test_stop_ends_the_watch_and_keeps_the_cache(self, api: FakeApiServer, informer: SharedInformer) -> None:
        api.create(isvc("a"))
        informer.start()
        informer.stop()
        api.create(isvc("b"))
        assert informer.pump() == 0
        assert [o["metadata"]["name"] for o in informer.list()] == ["a"]


def test_a_label_selected_informer_sees_an_object_only_while_it_carries_the_label(api: FakeApiServer) -> None:
    labelled = {**isvc("mine"), "metadata": {"name": "mine", "namespace": "default", "labels": {"owner": "x"}}}
    api.create(labelled)
    api.create(isvc("foreign"))
    informer = SharedInformer(api, KIND, label="owner")
    recorder = Recorder()
    recorder.register(informer)
    informer.start()
    assert recorder.calls == [("add", "mine")] and informer.get("default", "foreign") is None
    api.patch(KIND, "default", "foreign", {"spec": {"replicas": 2}})
    api.patch(KIND, "default", "mine", {"metadata": {"labels": {"owner": None}}})  # loses the label
    informer.pump()
    assert recorder.calls[1:] == [("delete", "mine")] and informer.get("default", "mine") is None
    api.patch(KIND, "default", "foreign", {"metadata": {"labels": {"owner": "y"}}})  # gains it
    api.delete(KIND, "default", "mine")  # deleted while not selected: nothing to say
    informer.pump()
    assert recorder.calls[2:] == [("add", "foreign")] and informer.get("default", "foreign") is not None
    assert informer.relist() == 1, "a re-list is filtered too"


def test_an_indexed_informer_finds_objects_by_label_value_through_every_change(api: FakeApiServer) -> None:
    def named(name: str, owner: str | None, namespace: str = "default") -> Obj:
        labels = {"owner": owner} if owner else {}
        return {**isvc(name, namespace=namespace), "metadata": {"name": name, "namespace": namespace, "labels": labels}}

    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    for obj in (named("b", "x"), named("a", "x"), named("c", "y"), named("a", "x", "other"), named("d", None)):
        api.create(obj)
    informer = SharedInformer(api, KIND, index_label="owner")
    informer.start()

    def found(value: str, namespace: str = "default") -> list[str]:
        return [o["metadata"]["name"] for o in informer.labelled(namespace, value) or []]

    assert (found("x"), found("y"), found("x", "other"), found("z")) == (["a", "b"], ["c"], ["a"], [])
    api.patch(KIND, "default", "b", {"metadata": {"labels": {"owner": "y"}}})
    api.patch(KIND, "default", "d", {"metadata": {"labels": {"owner": "x"}}})
    api.delete(KIND, "default", "a")
    informer.pump()
    assert (found("x"), found("y")) == (["d"], ["b", "c"])
    assert (informer.labelled("default", "y") or [])[0] is informer.get("default", "b"), "the cache's own object"
    api.delete(KIND, "default", "c")
    informer.relist()
    assert (found("x"), found("y"), found("x", "other")) == (["d"], ["b"], ["a"])
    assert SharedInformer(api, KIND).labelled("default", "x") is None, "no index, no answer"


class TestSlimming:
    def apply_by_two_managers(self, api: FakeApiServer) -> None:
        api.create(isvc("a"))  # an Update entry of the creating client
        api.apply(isvc("a", replicas=2), field_manager=FIELD_MANAGER, force=True)

    def managers(self, obj: Obj | None) -> list[tuple[str, str]]:
        assert obj is not None
        return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or []]

    def test_the_cache_keeps_only_the_operators_apply_entry(self, api: FakeApiServer) -> None:
        self.apply_by_two_managers(api)
        listed = SharedInformer(api, KIND)
        listed.start()
        watched = SharedInformer(api, KIND)
        watched.start()
        api.apply(isvc("a", replicas=3), field_manager=FIELD_MANAGER, force=True)
        watched.pump()
        assert len(self.managers(api.get(KIND, "default", "a"))) == 2
        assert self.managers(listed.get("default", "a")) == [(FIELD_MANAGER, "Apply")]
        assert self.managers(watched.get("default", "a")) == [(FIELD_MANAGER, "Apply")]

    def test_without_a_transform_the_cache_keeps_every_entry(self, api: FakeApiServer) -> None:
        self.apply_by_two_managers(api)
        informer = SharedInformer(api, KIND, transform=None)
        informer.start()
        assert informer.get("default", "a") == api.get(KIND, "default", "a")

    def test_informers_of_one_kind_share_one_copy_and_a_plain_watch_gets_its_own(self, api: FakeApiServer) -> None:
        first, second = SharedInformer(api, KIND), SharedInformer(api, KIND)
        first.start()
        second.start()
        plain = api.watch(KIND)
        api.create(isvc("a"))
        first.pump()
        second.pump()
        [event] = plain.drain()
        shared = first.get("default", "a")
        assert shared is not None and shared is second.get("default", "a")
        assert event.object is not shared and event.object == api.get(KIND, "default", "a")
        event.object["spec"]["replicas"] = 9  # a plain watch's copy is its receiver's own
        assert shared["spec"]["replicas"] == 1
