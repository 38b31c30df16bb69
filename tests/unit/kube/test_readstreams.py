"""The Node and Pod streams: Kopf's list+watch into the cache, without Kopf's handlers.

Covers:
- Listed objects (type None) and watch events reach the sink in order; Kopf's end-of-list
  mark and the API's BOOKMARK events do not.
- A stream that fails (the API, the watch, the sink) is logged naming the kind and the error,
  and started again after a backoff that doubles up to a minute; an event resets it.
- The streams ask Kopf for every Node and every Pod, cluster-wide, and the Pod stream finds
  the field selector the operator's settings give it (Kopf reads selectors by resource).
- The Kopf internals used are there with the shape used (a Kopf upgrade fails here).
- ``ReadStreams`` starts each kind once, reports a stream that ended, and stops them all.
- The operator registers the streams after its runtime's start and stops them before its
  stop; no ``on.event`` handler watches Nodes or Pods too; the sink is asked for only once
  the runtime has started, and none is given in namespaced mode.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import kopf
import pytest
from kopf._cogs.clients import watching
from kopf._cogs.structs.references import Resource

from inference_operator import operator
from inference_operator.kube import readstreams
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.readstreams import MAX_BACKOFF, ReadStreams, kopf_resource, stream
from inference_operator.reconcile.watches import CAPACITY_READS, LIVE_PODS, read_of

POD = read_of("Pod")
NODE = read_of("Node")


class Stop(BaseException):
    """Ends a test's stream from its fake sleep (not an ``Exception``: the stream lets it out)."""


def obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "a", "uid": f"uid-{name}", "resourceVersion": "1"}}


def watch_of(*rounds: list[Any] | Exception) -> tuple[Callable[..., AsyncIterator[Any]], list[dict[str, Any]]]:
    """A fake ``infinite_watch``: each call plays the next round (its events, or its error)."""
    calls: list[dict[str, Any]] = []
    left = list(rounds)

    async def watch(**kwargs: Any) -> AsyncIterator[Any]:
        calls.append(kwargs)
        now = left.pop(0) if left else []
        if isinstance(now, Exception):
            raise now
        for event in now:
            await asyncio.sleep(0)
            yield event

    return watch, calls


def sleeps(limit: int) -> tuple[Callable[[float], Any], list[float]]:
    """A fake sleep recording each delay; the ``limit``-th call stops the stream."""
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) >= limit:
            raise Stop

    return sleep, delays


def run(read: Any, watch: Any, sleep: Any, sink: Any) -> None:
    with pytest.raises(Stop):
        asyncio.run(stream(read, settings="the settings", sink=sink, watch=watch, sleep=sleep))


def test_listed_and_watched_objects_reach_the_sink_in_order_and_bookmarks_do_not() -> None:
    got: list[tuple[str, str | None, str]] = []
    watch, calls = watch_of(
        [
            {"type": None, "object": obj("p1")},
            watching.Bookmark.LISTED,
            {"type": "ADDED", "object": obj("p2")},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
            {"type": "DELETED", "object": obj("p1")},
        ]
    )
    sleep, _ = sleeps(1)
    run(POD, watch, sleep, lambda kind, kind_of_event, o: got.append((kind, kind_of_event, o["metadata"]["name"])))
    assert got == [("Pod", None, "p1"), ("Pod", "ADDED", "p2"), ("Pod", "DELETED", "p1")]
    assert calls == [{"settings": "the settings", "resource": kopf_resource(POD), "namespace": None}]


def test_a_failed_stream_is_logged_naming_the_kind_and_started_again_after_a_doubling_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = RuntimeError("pods is forbidden: cannot list resource pods at the cluster scope")
    watch, calls = watch_of(*[refused] * 9)
    sleep, delays = sleeps(9)
    with caplog.at_level(logging.ERROR, logger=readstreams.__name__):
        run(POD, watch, sleep, lambda *_: None)
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60, 60] and MAX_BACKOFF == 60
    assert len(calls) == 9  # listed again after each wait
    first = caplog.records[0].getMessage()
    assert first.startswith("Watch of pods stopped; listing them again in 1s")
    assert "RuntimeError: pods is forbidden: cannot list resource pods at the cluster scope" in first


def test_a_sink_that_raises_restarts_the_stream_and_an_event_resets_the_backoff() -> None:
    seen: list[str] = []

    def sink(_kind: str, _type: str | None, o: dict[str, Any]) -> None:
        seen.append(o["metadata"]["name"])
        if o["metadata"]["name"] == "bad":
            raise ValueError("a bug in the cache")

    watch, _ = watch_of(RuntimeError("down"), RuntimeError("down"), [{"type": "ADDED", "object": obj("ok")}])
    sleep, delays = sleeps(4)
    watch2, _ = watch_of(RuntimeError("down"), RuntimeError("down"), [{"type": "ADDED", "object": obj("bad")}])
    run(POD, watch, sleep, sink)
    assert delays == [1, 2, 1, 2]  # the event in the third round reset it; that round then ended
    sleep2, delays2 = sleeps(3)
    run(POD, watch2, sleep2, sink)
    assert delays2 == [1, 2, 4]  # the sink's error ends the round like the API's; its event resets nothing
    assert seen == ["ok", "bad"]


def test_the_streams_ask_kopf_for_every_node_and_every_pod_with_the_operators_selector() -> None:
    assert {read.kind for read in CAPACITY_READS} == {"Node", "Pod"}
    assert kopf_resource(POD).get_url(namespace=None) == "/api/v1/pods"
    assert kopf_resource(NODE).get_url(namespace=None) == "/api/v1/nodes"
    assert kopf_resource(POD).namespaced and not kopf_resource(NODE).namespaced
    settings = kopf.OperatorSettings()
    operator.configure(settings, OperatorConfig.from_env({}))
    assert list(settings.watching.field_selectors.collect(kopf_resource(POD))) == [LIVE_PODS]
    assert list(settings.watching.field_selectors.collect(kopf_resource(NODE))) == []
    namespaced = kopf.OperatorSettings()
    operator.configure(namespaced, OperatorConfig.from_env({"INFERENCE_OPERATOR_NAMESPACES": "team-a"}))
    assert list(namespaced.watching.field_selectors.collect(kopf_resource(POD))) == []


def test_the_kopf_internals_used_have_the_shape_used() -> None:
    params = inspect.signature(watching.infinite_watch).parameters
    assert {"settings", "resource", "namespace"} <= set(params)
    assert all(p.default is not inspect.Parameter.empty for name, p in params.items() if name.startswith("_"))
    assert inspect.isasyncgenfunction(watching.infinite_watch)
    assert isinstance(watching.Bookmark.LISTED, watching.Bookmark)
    assert Resource("", "v1", "pods", kind="Pod", namespaced=True).get_url(namespace=None) == "/api/v1/pods"
    # The selectors it watches with are those of the settings, by resource (what configure sets).
    source = inspect.getsource(watching.watch_objs)
    assert "settings.watching.field_selectors.collect(resource)" in source


def test_read_streams_start_each_kind_once_report_one_that_ended_and_stop_them_all() -> None:
    async def scenario() -> None:
        started: list[str] = []

        async def forever(**kwargs: Any) -> AsyncIterator[Any]:
            started.append(kwargs["resource"].plural)
            await asyncio.Event().wait()
            yield  # pragma: no cover - an async generator that never yields

        streams = ReadStreams()
        streams.start(CAPACITY_READS, settings=None, sink=lambda *_: None, watch=forever)
        streams.start(CAPACITY_READS, settings=None, sink=lambda *_: None, watch=forever)  # a retried startup
        await asyncio.sleep(0)
        assert sorted(started) == ["nodes", "pods"] and sorted(streams.streaming) == ["nodes", "pods"]
        assert streams.problems() == []
        tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("watch of ")]
        tasks[0].cancel()  # as if it had ended
        await asyncio.sleep(0)
        assert streams.problems() == [f"the {tasks[0].get_name()} stopped"]
        await streams.stop()
        assert all(t.done() for t in tasks) and streams.streaming == () and streams.problems() == []

    asyncio.run(scenario())


def test_the_operator_streams_after_its_start_and_stops_them_before_its_stop() -> None:
    registry = kopf.get_default_registry()
    activities = [(h.activity.value, h.id) for h in registry._activities.get_all_handlers()]
    startup = [i for a, i in activities if a == "startup"]
    cleanup = [i for a, i in activities if a == "cleanup"]
    assert startup.index("start") < startup.index("capacity-reads-start")
    assert cleanup.index("capacity-reads-stop") < cleanup.index("stop")
    watched = {h.selector.plural for h in registry._watching.get_all_handlers() if h.selector is not None}
    assert not watched & {"pods", "nodes"}  # streamed only: Kopf must not watch them a second time


def test_the_sink_is_asked_for_once_the_runtime_started_and_none_in_namespaced_mode() -> None:
    class Runtime:
        def __init__(self, started: bool, namespaces: tuple[str, ...] = ()) -> None:
            self.started = started
            self.config = OperatorConfig(namespaces=namespaces)
            self.streams_health: Any = list

        def on_event(self, *_: Any) -> None:
            return None

    streams = ReadStreams()
    with pytest.raises(kopf.TemporaryError, match="has not started yet"):
        operator.runtime_sink(None, streams)
    with pytest.raises(kopf.TemporaryError):
        operator.runtime_sink(Runtime(started=False), streams)  # type: ignore[arg-type]
    started = Runtime(started=True)
    assert operator.runtime_sink(started, streams) == started.on_event  # type: ignore[arg-type]
    assert started.streams_health == streams.problems  # liveness hears of a stopped stream
    assert operator.runtime_sink(Runtime(started=True, namespaces=("team-a",)), streams) is None  # type: ignore[arg-type]
