"""The streams: Kopf's list+watch of every watched kind into the runtime, without Kopf's handlers.

Covers:
- Listed objects (type None) and watch events reach the sink in order; Kopf's end-of-list
  mark and the API's BOOKMARK events do not.
- A stream that fails (the API, the watch, the sink) is logged naming the kind and the error,
  and started again after a backoff that doubles up to a minute; an event resets it.
- What is streamed: each watched kind cluster-wide, or in each namespace of namespaced mode,
  and in cluster mode every Node and Pod; Kopf is asked for the right URLs, and each stream
  finds the selector the operator's settings give it (Kopf reads selectors by resource).
- The Kopf internals used are there with the shape used (a Kopf upgrade fails here), and the
  package allows no Kopf of another minor version, which nothing has checked.
- ``Streams`` starts each source once, reports a stream that ended, and stops them all.
- The operator starts the streams after its runtime's start and stops them before its stop;
  Kopf has no resource handler of the operator's (nothing watched twice); the sink is asked
  for only once the runtime has started, and liveness then hears of a stopped stream.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import inspect
import logging
import tomllib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import kopf
import pytest
from kopf._cogs.clients import watching
from kopf._cogs.structs.references import Resource

from inference_operator import operator
from inference_operator.api.constants import OWNER_LABEL
from inference_operator.kube import streams as streams_module
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.streams import MAX_BACKOFF, Streams, kopf_resource, sources_of, stream
from inference_operator.reconcile.watches import LIVE_PODS, WATCHES, read_of, watch_of

POD = (read_of("Pod"), None)
NODE = (read_of("Node"), None)


class Stop(BaseException):
    """Ends a test's stream from its fake sleep (not an ``Exception``: the stream lets it out)."""


def obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "a", "uid": f"uid-{name}", "resourceVersion": "1"}}


def fake_watch(*rounds: list[Any] | Exception) -> tuple[Callable[..., AsyncIterator[Any]], list[dict[str, Any]]]:
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
    watch, calls = fake_watch(
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
    assert calls == [{"settings": "the settings", "resource": kopf_resource(read_of("Pod")), "namespace": None}]


def test_a_failed_stream_is_logged_naming_the_kind_and_started_again_after_a_doubling_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = RuntimeError("pods is forbidden: cannot list resource pods at the cluster scope")
    watch, calls = fake_watch(*[refused] * 9)
    sleep, delays = sleeps(9)
    with caplog.at_level(logging.ERROR, logger=streams_module.__name__):
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

    watch, _ = fake_watch(RuntimeError("down"), RuntimeError("down"), [{"type": "ADDED", "object": obj("ok")}])
    sleep, delays = sleeps(4)
    watch2, _ = fake_watch(RuntimeError("down"), RuntimeError("down"), [{"type": "ADDED", "object": obj("bad")}])
    run(POD, watch, sleep, sink)
    assert delays == [1, 2, 1, 2]  # the event in the third round reset it; that round then ended
    sleep2, delays2 = sleeps(3)
    run(POD, watch2, sleep2, sink)
    assert delays2 == [1, 2, 4]  # the sink's error ends the round like the API's; its event resets nothing
    assert seen == ["ok", "bad"]


def test_each_kind_is_streamed_cluster_wide_or_per_namespace_and_nodes_and_pods_in_cluster_mode() -> None:
    plurals = [w.plural for w in WATCHES]
    cluster = sources_of(namespaces=(), reads_capacity=True)
    assert [(k.plural, ns) for k, ns in cluster] == [(p, None) for p in plurals] + [("nodes", None), ("pods", None)]
    namespaced = sources_of(namespaces=("a", "b"), reads_capacity=False)
    assert [(k.plural, ns) for k, ns in namespaced] == [(p, ns) for p in plurals for ns in ("a", "b")]
    assert streams_module.name_of(namespaced[0]) == f"{plurals[0]} in a" and streams_module.name_of(NODE) == "nodes"


def test_kopf_is_asked_for_the_right_urls_with_the_operators_selectors() -> None:
    pods, nodes, deployments = (
        kopf_resource(read_of("Pod")),
        kopf_resource(read_of("Node")),
        kopf_resource(watch_of("Deployment")),
    )
    isvcs = kopf_resource(watch_of("InferenceService"))
    assert pods.get_url(namespace=None) == "/api/v1/pods" and nodes.get_url(namespace=None) == "/api/v1/nodes"
    assert deployments.get_url(namespace="a") == "/apis/apps/v1/namespaces/a/deployments"
    assert isvcs.get_url(namespace=None) == "/apis/serving.inference-operator.dev/v1/inferenceservices"
    assert pods.namespaced and deployments.namespaced and not nodes.namespaced
    settings = kopf.OperatorSettings()
    operator.configure(settings, OperatorConfig.from_env({}))
    assert list(settings.watching.field_selectors.collect(pods)) == [LIVE_PODS]
    assert list(settings.watching.field_selectors.collect(nodes)) == []
    assert list(settings.watching.label_selectors.collect(deployments)) == [OWNER_LABEL]
    assert list(settings.watching.label_selectors.collect(isvcs)) == []
    namespaced = kopf.OperatorSettings()
    operator.configure(namespaced, OperatorConfig.from_env({"INFERENCE_OPERATOR_NAMESPACES": "team-a"}))
    assert list(namespaced.watching.field_selectors.collect(pods)) == []


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


def test_the_package_allows_only_the_kopf_minor_version_these_tests_checked() -> None:
    project = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]
    (kopf_requirement,) = [r for r in project["dependencies"] if r.split(">")[0].split("=")[0].strip() == "kopf"]
    installed = ".".join(importlib.metadata.version("kopf").split(".")[:2])
    assert kopf_requirement.replace(" ", "") == f"kopf>={installed},<1.{int(installed.split('.')[1]) + 1}"


def test_streams_start_each_source_once_report_one_that_ended_and_stop_them_all() -> None:
    async def scenario() -> None:
        started: list[tuple[str, str | None]] = []

        async def forever(**kwargs: Any) -> AsyncIterator[Any]:
            started.append((kwargs["resource"].plural, kwargs["namespace"]))
            await asyncio.Event().wait()
            yield  # pragma: no cover - an async generator that never yields

        sources = [*sources_of(namespaces=("a",), reads_capacity=False), NODE]
        streams = Streams()
        streams.start(sources, settings=None, sink=lambda *_: None, watch=forever)
        streams.start(sources, settings=None, sink=lambda *_: None, watch=forever)  # a retried startup
        await asyncio.sleep(0)
        assert sorted(started) == sorted([(w.plural, "a") for w in WATCHES] + [("nodes", None)])
        assert len(streams.streaming) == len(sources) and streams.problems() == []
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
    assert startup.index("start") < startup.index("streams-start")
    assert cleanup.index("streams-stop") < cleanup.index("stop")
    assert list(registry._watching.get_all_handlers()) == []  # streamed only: Kopf watches nothing a second time


def test_the_sink_is_given_once_the_runtime_started_and_liveness_then_hears_of_the_streams() -> None:
    class Runtime:
        def __init__(self, started: bool) -> None:
            self.started = started
            self.streams_health: Any = list

        def sources(self) -> list[Any]:
            return [POD]

        def on_event(self, *_: Any) -> None:
            return None

    streams = Streams()
    with pytest.raises(kopf.TemporaryError, match="has not started yet"):
        operator.runtime_ready(None, streams)
    with pytest.raises(kopf.TemporaryError):
        operator.runtime_ready(Runtime(started=False), streams)  # type: ignore[arg-type]
    started = Runtime(started=True)
    assert operator.runtime_ready(started, streams) == ([POD], started.on_event)  # type: ignore[arg-type]
    assert started.streams_health == streams.problems
