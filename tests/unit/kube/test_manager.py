"""The real-cluster runtime without a cluster: a fake KubeClient, a fake clock, no sockets.

Covers:
- The Event poster outlives any failure to post: urllib3's MaxRetryError and SSLError,
  an API error, a bug (RuntimeError); each is counted,
  backed off (doubling, capped, reset by a success) and later Events still get posted. A
  deduplicated Event is a PATCH, and a create when the Event to patch is gone (404); when
  RBAC forbids patching Events (403), repeats are created under new names instead.
  Recording the same Warning twice posts one Event and patches it. An Event the server
  refuses (403 in a terminating namespace, 404, 422) is dropped without backing off, so one
  namespace being deleted holds up nobody else's Events; a 429 still backs off. Events queued
  and not yet posted are counted (``pending``, the ``events_pending`` gauge).
- Liveness is honest: when the Event poster thread or a reconcile worker dies, ``health``
  names it, Kopf's probe (``operator.liveness``) fails naming it, ``/healthz`` answers 503
  naming it; a stopped runtime is not reported unhealthy.
- Startup is retry-safe: a first LIST that fails binds no port and starts no thread, so the
  retry (same runtime, or a new one on the same port) starts; starting twice is a no-op; a
  failure after the threads started stops everything and closes the runtime.
- Resync replays the cache (every InferenceService enqueued) and sends no LIST.
- A DELETED event applied while the startup LIST is in flight is not undone by that LIST.
- Objects deleted while the watch was down are dropped, with resync 0: after Kopf re-lists
  (events of type None) a metadata-only consistency LIST runs once the burst settled, drops
  what it does not have (and is older than it) and enqueues the owner; it adds nothing. With
  no re-list event at all (an empty re-list) the periodic check still drops them. A failed
  check is retried 30 s later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import kopf
import pytest
from urllib3.exceptions import MaxRetryError, SSLError

from inference_operator.api.constants import FINALIZER, OWNER_LABEL
from inference_operator.control.events import Correlated
from inference_operator.core.errors import ApiError, Forbidden, Invalid, NotFound
from inference_operator.kube.backend import EVENT_POSTER, EventPoster
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.health import ThreadGroup
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.kube.metricsserver import healthz
from inference_operator.operator import liveness
from inference_operator.sim.clock import FakeClock

from .fakes import KIND, FakeClient, Obj, isvc


class Fatal(BaseException):
    """Not an Exception: what kills a thread that catches only Exception."""


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def child(kind: str, name: str = "a", rv: str = "1", uid: str = "c1", owner_uid: str = "u1") -> Obj:
    return {
        "apiVersion": "apps/v1" if kind == "Deployment" else "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": rv,
            "uid": uid,
            "labels": {OWNER_LABEL: name},
            "ownerReferences": [
                {
                    "apiVersion": "serving.inference-operator.dev/v1",
                    "kind": KIND,
                    "name": name,
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
    }


class FakeServer:
    """Stands in for MetricsServer: binding a port that is bound fails, as EADDRINUSE does."""

    bound: set[int] = set()

    def __init__(self, port: int) -> None:
        self.port = port
        self.starts = 0
        self.serving = False

    def start(self) -> None:
        if self.serving:
            return
        if self.port in FakeServer.bound:
            raise OSError(98, "Address already in use")
        FakeServer.bound.add(self.port)
        self.serving = True
        self.starts += 1

    def stop(self) -> None:
        if self.serving:
            FakeServer.bound.discard(self.port)
            self.serving = False


@pytest.fixture
def client() -> FakeClient:
    return FakeClient()


@pytest.fixture
def runtimes() -> Iterator[list[OperatorRuntime]]:
    """Runtimes a test starts; stopped afterwards."""
    started: list[OperatorRuntime] = []
    yield started
    for rt in started:
        rt.stop(timeout=5.0)


def make_runtime(
    client: FakeClient,
    clock: FakeClock | None = None,
    *,
    metrics: FakeServer | None = None,
    threads: ThreadGroup | None = None,
    **config: Any,
) -> OperatorRuntime:
    config.setdefault("workers", 1)
    config.setdefault("leader_election", False)  # test_election_runtime.py covers it
    return OperatorRuntime(
        OperatorConfig(**config),
        client,  # type: ignore[arg-type]
        clock=clock or FakeClock(),
        metrics=metrics,
        threads=threads,
        watch_check_period=0,  # test_watchhealth.py covers it
    )


def correlated(reason: str = "LoadBalancerFailed", patch: Obj | None = None, name: str = "a.1") -> Correlated:
    event = {
        "kind": "Event",
        "metadata": {"name": name, "namespace": "ns"},
        "involvedObject": {"name": "a", "namespace": "ns"},
        "reason": reason,
        "message": "m",
    }
    return Correlated(event, patch)


# -- the Event poster ---------------------------------------------------------------------------


def test_the_event_poster_survives_any_failure_and_backs_off_bounded(client: FakeClient) -> None:
    waits: list[float] = []
    client.failures = [
        MaxRetryError(None, "/api/v1/namespaces/ns/events", "Connection refused"),  # type: ignore[arg-type]
        SSLError("certificate verify failed"),
        ApiError("create Event ns/a: HTTP 503: unavailable"),
        RuntimeError("a bug"),
        ConnectionResetError(104, "Connection reset by peer"),
        *[OSError("down")] * 5,
    ]
    poster = EventPoster(client, backoff=0.5, max_backoff=4.0, wait=waits.append)  # type: ignore[arg-type]
    for i in range(12):
        poster.post(correlated(name=f"a.{i}"))
    wait_for(lambda: poster.posted == 2, "the poster to post again after ten failures")
    assert poster.alive() and poster.failures == 10
    assert waits == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0], "doubling, capped"
    client.failures = [OSError("down again")]
    poster.post(correlated(name="a.12"))
    poster.post(correlated(name="a.13"))
    wait_for(lambda: poster.posted == 3, "the Event after the failure")
    assert waits[-1] == 0.5, "a success resets the backoff"
    poster.stop()
    assert [e["metadata"]["name"] for e in client.created] == ["a.10", "a.11", "a.13"]


def test_an_event_the_server_refuses_is_dropped_without_holding_up_the_next(client: FakeClient) -> None:
    # One namespace being deleted (403) must not delay every other object's Events: before,
    # each refusal backed the one posting thread off, 0.5 s doubling to 30 s.
    waits: list[float] = []
    client.failures = [
        Forbidden(
            'create Event ns/a.0: HTTP 403: events "a.0" is forbidden: unable to create new content in '
            "namespace ns because it is being terminated"
        ),
        NotFound('create Event gone/a.1: HTTP 404: namespaces "gone" not found'),
        Invalid("create Event ns/a.2: HTTP 422: invalid"),
    ]
    poster = EventPoster(client, backoff=0.5, wait=waits.append)  # type: ignore[arg-type]
    for i in range(4):
        poster.post(correlated(name=f"a.{i}"))
    poster.stop()
    assert waits == [] and poster.failures == 3 and poster.posted == 1
    assert [e["metadata"]["name"] for e in client.created] == ["a.3"]


def test_a_throttled_event_still_backs_the_poster_off(client: FakeClient) -> None:
    waits: list[float] = []
    throttled = ApiError("create Event ns/a.0: HTTP 429: too many requests")
    throttled.code = 429
    client.failures = [throttled]
    poster = EventPoster(client, backoff=0.5, wait=waits.append)  # type: ignore[arg-type]
    poster.post(correlated(name="a.0"))
    poster.post(correlated(name="a.1"))
    poster.stop()
    assert waits == [0.5] and poster.posted == 1


def test_events_waiting_to_be_posted_are_counted_until_sent() -> None:
    blocked = threading.Event()

    class SlowClient:
        def create(self, event: Obj) -> Obj:
            blocked.wait(5)
            return event

    poster = EventPoster(SlowClient())  # type: ignore[arg-type]
    for i in range(3):
        poster.post(correlated(name=f"a.{i}"))
    wait_for(lambda: poster.pending() == 2, "the first Event to be in flight, two queued")
    blocked.set()
    poster.stop()
    assert poster.pending() == 0 and poster.posted == 3


def test_a_deduplicated_event_is_a_patch_and_a_create_when_it_is_gone(client: FakeClient) -> None:
    poster = EventPoster(client)  # type: ignore[arg-type]
    poster.post(correlated(name="a.1", patch={"count": 2}))
    client.missing_events.add("a.2")
    poster.post(correlated(name="a.2", patch={"count": 5}))
    poster.stop()
    assert client.patched == [("Event", "a.1", {"count": 2})]
    assert [e["metadata"]["name"] for e in client.created] == ["a.2"]
    assert poster.posted == 2 and poster.failures == 0


def test_without_the_right_to_patch_events_repeats_are_created_as_new_events(client: FakeClient) -> None:
    client.failures = [Forbidden('patch Event ns/a.1: HTTP 403: events "a.1" is forbidden')]
    poster = EventPoster(client)  # type: ignore[arg-type]
    poster.post(correlated(name="a.1", patch={"count": 2}))
    poster.post(correlated(name="a.1", patch={"count": 3}))
    poster.stop()
    names = [e["metadata"]["name"] for e in client.created]
    assert poster.patch_forbidden and poster.posted == 2 and poster.failures == 0
    assert len(names) == 2 and len(set(names)) == 2 and "a.1" not in names and client.patched == []


def test_recording_the_same_warning_twice_creates_one_event_and_patches_it(client: FakeClient) -> None:
    rt = make_runtime(client)
    for _ in range(2):
        rt.backend.record_event(isvc(), type="Warning", reason="LoadBalancerFailed", message="registry down")
    rt.backend.events.stop()
    assert len(client.created) == 1 and client.created[0]["count"] == 1
    [(kind, name, patch)] = client.patched
    assert (kind, name, patch["count"]) == ("Event", client.created[0]["metadata"]["name"], 2)


# -- liveness -----------------------------------------------------------------------------------


def test_a_dead_event_poster_fails_both_liveness_answers(client: FakeClient, runtimes: list[OperatorRuntime]) -> None:
    rt = make_runtime(client)
    rt.start()
    runtimes.append(rt)
    assert rt.health() == [] and liveness(rt)["dead_threads"] == 0 and healthz(rt.health()) == (200, b"ok\n")
    client.write_error = Fatal("interpreter shutting down")
    rt.backend.record_event(isvc(), type="Warning", reason="Failed", message="x")
    wait_for(lambda: not rt.backend.events.alive(), "the poster thread to die")
    assert rt.health() == [f"thread {EVENT_POSTER} died"]
    with pytest.raises(kopf.PermanentError, match=f"Unhealthy: thread {EVENT_POSTER} died"):
        liveness(rt)
    status, body = healthz(rt.health())
    assert status == 503 and EVENT_POSTER.encode() in body
    assert rt.probe()["dead_threads"] == 1


def test_a_dead_worker_fails_liveness_naming_it(client: FakeClient, runtimes: list[OperatorRuntime]) -> None:
    class DeadlyBalancer:
        def register(self, key: str, *, target: str) -> Any:
            raise Fatal("out of memory")

        def release(self, key: str) -> None:
            raise Fatal("out of memory")

    deleting = isvc(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[FINALIZER])
    client.objects[KIND] = [deleting]
    rt = OperatorRuntime(
        OperatorConfig(workers=2, leader_election=False),
        client,  # type: ignore[arg-type]
        DeadlyBalancer(),
        clock=FakeClock(),
    )
    rt.start()
    runtimes.append(rt)
    wait_for(rt.health, "a worker to die")
    [problem] = rt.health()
    assert problem.startswith("thread inferenceservice-worker-") and problem.endswith(" died")
    with pytest.raises(kopf.PermanentError, match="inferenceservice-worker-"):
        liveness(rt)


def test_a_stopped_runtime_is_not_unhealthy(client: FakeClient) -> None:
    rt = make_runtime(client)
    rt.start()
    assert rt.stop(timeout=5.0)
    assert rt.health() == []


# -- startup ------------------------------------------------------------------------------------


def test_a_failed_first_list_binds_nothing_and_the_retry_starts(
    client: FakeClient, runtimes: list[OperatorRuntime]
) -> None:
    server = FakeServer(19090)
    client.list_error = ApiError("list InferenceService: HTTP 503: the server is starting")
    rt = make_runtime(client, metrics=server)
    with pytest.raises(ApiError):
        rt.start()
    assert not server.serving and len(rt.threads) == 0 and not rt.closed
    client.list_error = None
    rt.start()
    runtimes.append(rt)
    rt.start()  # Kopf calling again once it succeeded: nothing new
    assert server.serving and server.starts == 1 and len(rt.threads) == 2  # one worker + housekeeping


def test_a_new_runtime_can_take_the_port_after_a_failed_start(
    client: FakeClient, runtimes: list[OperatorRuntime]
) -> None:
    client.list_error = ApiError("list InferenceService: HTTP 503")
    first = make_runtime(client, metrics=FakeServer(19091))
    with pytest.raises(ApiError):
        first.start()
    client.list_error = None
    second = make_runtime(client, metrics=FakeServer(19091))
    second.start()
    runtimes.append(second)
    assert second.metrics is not None and second.health() == []


def test_a_failure_after_the_port_is_bound_releases_it_and_closes_the_runtime(client: FakeClient) -> None:
    class NoThreads(ThreadGroup):
        def start(self, name: str, target: Callable[[], None]) -> threading.Thread:
            raise RuntimeError("can't start new thread")

    server = FakeServer(19092)
    rt = make_runtime(client, metrics=server, threads=NoThreads())
    with pytest.raises(RuntimeError, match="can't start new thread"):
        rt.start()
    assert rt.closed and not server.serving
    with pytest.raises(RuntimeError, match="stopped"):
        rt.start()


# -- resync and the cache -----------------------------------------------------------------------


def test_resync_replays_the_cache_without_listing(client: FakeClient) -> None:
    clock = FakeClock()
    client.objects[KIND] = [isvc("a"), isvc("b", uid="u2")]
    rt = make_runtime(client, clock, resync_seconds=60)
    rt.prime_cache()
    lists = len(client.lists)
    clock.advance(59)
    rt.housekeeping()
    assert rt.queue.try_get() is None
    clock.advance(1)
    next_due = rt.housekeeping()
    assert sorted([rt.queue.try_get(), rt.queue.try_get()]) == ["ns/a", "ns/b"]  # type: ignore[type-var]
    assert len(client.lists) == lists, "resync lists nothing"
    assert next_due == 120


def test_the_startup_list_is_stored_page_by_page_and_drops_what_it_no_longer_has(client: FakeClient) -> None:
    # A page is in the cache before the next is asked for: the whole LIST is never held
    # parsed at once. Once the last page is in, what the LIST did not have (and is older) goes.
    rt = make_runtime(client)
    rt.cache.apply_event(KIND, "ADDED", isvc("gone", uid="u0", rv="1"))
    seen_between_pages: list[bool] = []

    def pages(kind: str, namespace: str, **kwargs: Any) -> Iterator[tuple[list[Obj], str]]:
        if kind != KIND:
            yield [], "9"
            return
        yield [isvc("a", uid="u1", rv="5")], "9"
        seen_between_pages.append(rt.cache.get(KIND, "ns", "a") is not None)
        seen_between_pages.append(rt.cache.get(KIND, "ns", "gone") is not None)
        yield [isvc("b", uid="u2", rv="6")], "9"

    client.iter_pages = pages  # type: ignore[method-assign]
    assert rt.prime_cache() == 2
    assert seen_between_pages == [True, True], "the first page stored before the second was read"
    assert sorted(rt.cache.keys(KIND)) == [("ns", "a"), ("ns", "b")]


def test_a_deletion_during_the_startup_list_is_not_undone(client: FakeClient) -> None:
    rt = make_runtime(client)
    client.objects[KIND] = [isvc(rv="5")]
    client.version = "6"

    def deleted_meanwhile(kind: str) -> None:
        if kind == KIND:
            rt.on_event(KIND, "DELETED", isvc(rv="7"))

    client.before_list = deleted_meanwhile
    rt.prime_cache()
    assert rt.cache.get(KIND, "ns", "a") is None


def test_objects_deleted_while_the_watch_was_down_are_dropped_after_kopf_relists(client: FakeClient) -> None:
    clock = FakeClock()
    rt = make_runtime(client, clock, resync_seconds=0)
    client.objects = {KIND: [isvc()], "Deployment": [child("Deployment")], "Service": [child("Service", uid="s1")]}
    client.version = "10"
    rt.prime_cache()
    # The watch goes down; meanwhile the Deployment is deleted. Kopf re-lists: the Service
    # and the InferenceService come as events of type None; nothing says the Deployment went.
    client.objects["Deployment"] = []
    client.version = "20"
    rt.on_event("Service", None, child("Service", uid="s1"))
    rt.on_event(KIND, None, isvc())
    while rt.queue.try_get() is not None:
        rt.queue.done("ns/a")
    assert rt.cache.get("Deployment", "ns", "a") is not None
    client.lists.clear()
    assert rt.housekeeping() == 5.0, "the check waits for the re-list burst to settle"
    assert client.lists == []
    clock.advance(5)
    rt.housekeeping()
    assert sorted(client.lists) == [(KIND, True), ("Service", True)], "metadata-only, the re-listed kinds"
    # The Deployment's own kind was not re-listed (an empty re-list sends no event): the
    # periodic check finds it.
    clock.advance(600)
    rt.housekeeping()
    assert ("Deployment", True) in client.lists
    assert rt.cache.get("Deployment", "ns", "a") is None
    assert rt.cache.get("Service", "ns", "a") is not None and rt.cache.get(KIND, "ns", "a") is not None
    assert rt.queue.try_get() == "ns/a", "the owner is reconciled, and recreates its Deployment"
    assert rt.probe()["cache_consistency_drops"] == 1


def test_the_check_drops_only_what_is_older_than_its_list_and_adds_nothing(client: FakeClient) -> None:
    clock = FakeClock()
    rt = make_runtime(client, clock)
    rt.on_event(KIND, "ADDED", isvc("old", rv="5", uid="u-old"))
    rt.on_event(KIND, "ADDED", isvc("new", rv="15", uid="u-new"))
    client.objects[KIND] = [isvc("unseen", rv="3", uid="u-unseen")]
    client.version = "10"
    rt.on_event(KIND, None, isvc("new", rv="15", uid="u-new"))
    clock.advance(5)
    rt.housekeeping()
    assert rt.cache.get(KIND, "ns", "old") is None
    assert rt.cache.get(KIND, "ns", "new") is not None, "created after the list was answered"
    assert rt.cache.get(KIND, "ns", "unseen") is None, "the check never adds: the watch does"


def test_a_failed_check_is_retried_thirty_seconds_later(client: FakeClient) -> None:
    clock = FakeClock()
    rt = make_runtime(client, clock, resync_seconds=0)
    rt.on_event(KIND, None, isvc())
    client.list_error = ApiError("list InferenceService: HTTP 503")
    clock.advance(5)
    assert rt.housekeeping() == 35.0
    client.list_error = None
    clock.advance(30)
    rt.housekeeping()
    assert client.lists[-1] == (KIND, True)
    assert rt.housekeeping() == 600.0, "then the periodic checks of all kinds"


def test_a_relisted_child_of_the_version_cached_still_wakes_its_owner(client: FakeClient) -> None:
    # client-go's Replace (and the simulator's relist) calls a re-listed object an update even
    # when it did not change, and an owned child's update wakes its owner: the cache answering a
    # re-list of the version it holds must not turn it into "no event".
    rt = make_runtime(client, FakeClock())
    rt.on_event("Service", "ADDED", child("Service", uid="s1", rv="7"))
    assert rt.queue.try_get() == "ns/a"
    rt.queue.done("ns/a")
    cached = rt.cache.get("Service", "ns", "a")
    rt.on_event("Service", None, child("Service", uid="s1", rv="7"))
    assert rt.queue.try_get() == "ns/a"
    relisted = rt.cache.get("Service", "ns", "a")
    assert relisted == cached and relisted is not None
