"""Never deaf: a watch that stopped delivering fails liveness, naming the kind.

Covers, on a fake clock with a LIST stand-in: a watch that delivers is healthy however many checks
run; an object the API server holds that the cache never sees makes the kind deaf once the grace
has passed (not before), and both liveness answers (``health`` and Kopf's probe) name the kind and
the object; a watch that is slow but delivers within the grace (a storm of creates) is never
called deaf; a sampled object that was delivered and deleted since is no problem; a kind the API
server does not serve (404: its CRD is deleted) is not called deaf, and once the CRD is back
objects the watch does not deliver are; a deaf watch that delivers again is healthy again; the
operator's housekeeping runs the check every few seconds (one LIST of one object per kind).
"""

from __future__ import annotations

from typing import Any

import kopf
import pytest

from inference_operator.core.errors import NotFound
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.kube.watchhealth import WatchHealth
from inference_operator.operator import liveness
from inference_operator.sim.clock import FakeClock

from .fakes import KIND, FakeClient, isvc

Obj = dict[str, Any]


def health(clock: FakeClock) -> WatchHealth:
    return WatchHealth([KIND], namespaces=[""], selector=lambda kind: None, now=clock.now(), period=5, grace=10)


def every_period(wh: WatchHealth, client: FakeClient, cache: ObjectCache, clock: FakeClock, seconds: float) -> None:
    end = clock.now() + seconds
    while clock.now() < end:
        clock.advance(5)
        wh.check(client=client, cache=cache, now=clock.now())  # type: ignore[arg-type]


@pytest.fixture
def world() -> tuple[FakeClient, ObjectCache, FakeClock]:
    clock = FakeClock()
    return FakeClient(), ObjectCache(clock), clock


def test_a_watch_that_delivers_is_healthy(world: Any) -> None:
    client, cache, clock = world
    client.objects[KIND] = [isvc("a", rv="7")]
    cache.apply_event(KIND, "ADDED", isvc("a", rv="7"))
    wh = health(clock)
    every_period(wh, client, cache, clock, 120)
    assert wh.problems() == [] and wh.checks == 24


def test_an_object_the_watch_never_delivers_makes_the_kind_deaf_after_the_grace(world: Any) -> None:
    client, cache, clock = world
    client.objects[KIND] = [isvc("new", rv="42", uid="u-new")]
    wh = health(clock)
    every_period(wh, client, cache, clock, 10)  # first seen at 5 s, looked again at 10 s
    assert wh.problems() == []
    every_period(wh, client, cache, clock, 10)
    [problem] = wh.problems()
    assert problem.startswith("watch of InferenceService stopped delivering: ns/new (uid u-new)")
    assert "CRD deleted and re-created" in problem


def test_a_slow_watch_that_delivers_within_the_grace_is_never_deaf(world: Any) -> None:
    client, cache, clock = world
    wh = health(clock)
    for i in range(30):  # a new object ahead of the list every check, delivered 8 s later
        client.objects[KIND] = [isvc(f"a{i:02d}", rv=str(100 + i), uid=f"u{i}")]
        clock.advance(5)
        wh.check(client=client, cache=cache, now=clock.now())  # type: ignore[arg-type]
        clock.advance(3)
        cache.apply_event(KIND, "ADDED", isvc(f"a{i:02d}", rv=str(100 + i), uid=f"u{i}"))
        assert wh.problems() == []


def test_a_sampled_object_delivered_and_deleted_since_is_no_problem(world: Any) -> None:
    client, cache, clock = world
    client.objects[KIND] = [isvc("brief", rv="5", uid="u-brief")]
    wh = health(clock)
    every_period(wh, client, cache, clock, 5)
    cache.apply_event(KIND, "ADDED", isvc("brief", rv="5", uid="u-brief"))
    cache.apply_event(KIND, "DELETED", isvc("brief", rv="6", uid="u-brief"))
    client.objects[KIND] = []
    every_period(wh, client, cache, clock, 60)
    assert wh.problems() == []


def test_a_kind_not_served_is_not_deaf_but_one_re_created_and_not_delivered_is(world: Any) -> None:
    client, cache, clock = world
    wh = health(clock)
    client.list_error = NotFound("the server could not find the requested resource")
    every_period(wh, client, cache, clock, 60)  # the CRD is deleted: nothing to watch
    assert wh.problems() == []
    client.list_error = None
    client.objects[KIND] = [isvc("after", rv="900", uid="u-after")]  # the CRD is back, Kopf is not
    every_period(wh, client, cache, clock, 20)
    assert [p.split(":")[0] for p in wh.problems()] == ["watch of InferenceService stopped delivering"]


def test_a_deaf_watch_that_delivers_again_is_healthy_again(world: Any) -> None:
    client, cache, clock = world
    client.objects[KIND] = [isvc("x", rv="3", uid="u-x")]
    wh = health(clock)
    every_period(wh, client, cache, clock, 20)
    assert wh.problems()
    cache.apply_event(KIND, "ADDED", isvc("x", rv="3", uid="u-x"))
    every_period(wh, client, cache, clock, 5)
    assert wh.problems() == []


def test_the_operator_checks_every_few_seconds_and_its_liveness_names_the_deaf_kind() -> None:
    clock = FakeClock()
    client = FakeClient()
    rt = OperatorRuntime(
        OperatorConfig(workers=1, leader_election=False, resync_seconds=0),
        client,  # type: ignore[arg-type]
        clock=clock,
        consistency_period=3600,
        watch_check_period=5,
    )
    client.objects[KIND] = [isvc("unseen", rv="8", uid="u-unseen")]
    for _ in range(3):  # housekeeping wakes when the check is due: at 5, 10 and 15 s
        clock.set(rt.housekeeping())
        rt.housekeeping()
    assert clock.now() == 15
    listed = [kind for kind, metadata_only in client.lists if metadata_only]
    assert listed.count(KIND) == 3 and set(listed) == {KIND, "Deployment", "Service"}
    [problem] = rt.health()
    assert "watch of InferenceService stopped delivering" in problem
    with pytest.raises(kopf.PermanentError, match="Unhealthy: watch of InferenceService stopped delivering"):
        liveness(rt)
