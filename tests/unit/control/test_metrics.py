"""The operator's Prometheus metrics: controller-runtime's and client-go's families, and ours.

Covers (metrics):
- ``controller_runtime_reconcile_total`` counts passes by result (success, error, requeue,
  requeue_after; every series present at 0 from the start), errors also in
  ``controller_runtime_reconcile_errors_total``, each pass in the reconcile time histogram, and
  ``controller_runtime_active_workers`` is 1 during a pass and 0 after.
- The workqueue set: adds (an add of a queued key is not an add), depth, retries, time in the
  queue and time at work (fake clock, exact), unfinished work and the longest running processor
  while a key is being processed.
- Event-to-reconcile latency runs from the first event that queued a key to its pass; later
  events for the queued key do not restart it; the loop's own requeues are not events.
- Load balancer calls and failures by operation; API writes by verb and kind.
- The text has no ``_created`` series, and the runtime serves all of it plus its live counters.
"""

from __future__ import annotations

import pytest

from inference_operator.control.controller import Controller
from inference_operator.control.metrics import MeasuredLoadBalancer, Metrics
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.ports import LoadBalancerError, Result
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.sim.clock import FakeClock

C = {"controller": "inferenceservice"}
Q = {"name": "inferenceservice", "controller": "inferenceservice"}


def loop(results: dict[str, Result | Exception], clock: FakeClock | None = None) -> tuple[Controller, Metrics]:
    clock = clock or FakeClock()
    metrics = Metrics(clock)

    def reconcile(namespace: str, name: str) -> Result:
        outcome = results[name]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    queue = RateLimitingQueue(clock, name="inferenceservice")
    return Controller("inferenceservice", reconcile, queue, metrics=metrics), metrics


def test_reconciles_are_counted_by_result_as_controller_runtime_does() -> None:
    controller, metrics = loop(
        {"ok": Result(), "bad": RuntimeError("boom"), "again": Result(requeue=True), "later": Result(requeue_after=5)}
    )
    assert metrics.sample("controller_runtime_reconcile_total", result="requeue", **C) == 0.0
    assert 'result="requeue_after"' in metrics.render().decode()  # present before any pass
    for name in ("ok", "bad", "later"):
        controller.enqueue(f"ns/{name}")
    controller.queue.add("ns/again")
    for _ in range(4):
        assert controller.step()
    counts = {r: metrics.sample("controller_runtime_reconcile_total", result=r, **C) for r in ("success", "error")}
    assert counts == {"success": 1.0, "error": 1.0}
    assert metrics.sample("controller_runtime_reconcile_total", result="requeue", **C) == 1.0
    assert metrics.sample("controller_runtime_reconcile_total", result="requeue_after", **C) == 1.0
    assert metrics.sample("controller_runtime_reconcile_errors_total", **C) == 1.0
    assert metrics.sample("controller_runtime_reconcile_time_seconds_count", **C) == 4.0
    assert metrics.sample("controller_runtime_active_workers", **C) == 0.0


def test_a_pass_in_progress_shows_as_an_active_worker_and_unfinished_work() -> None:
    clock = FakeClock()
    seen: dict[str, float] = {}

    def reconcile(namespace: str, name: str) -> Result:
        clock.advance(3.0)
        seen["active"] = metrics.sample("controller_runtime_active_workers", **C)
        seen["unfinished"] = metrics.sample("workqueue_unfinished_work_seconds", **Q)
        seen["longest"] = metrics.sample("workqueue_longest_running_processor_seconds", **Q)
        return Result()

    metrics = Metrics(clock)
    controller = Controller(
        "inferenceservice", reconcile, RateLimitingQueue(clock, name="inferenceservice"), metrics=metrics
    )
    controller.enqueue("ns/a")
    controller.step()
    assert seen == {"active": 1.0, "unfinished": 3.0, "longest": 3.0}
    assert metrics.sample("workqueue_unfinished_work_seconds", **Q) == 0.0
    assert metrics.sample("workqueue_work_duration_seconds_sum", **Q) == 3.0


def test_the_workqueue_set_counts_adds_depth_retries_and_time_in_the_queue() -> None:
    clock = FakeClock()
    controller, metrics = loop({"a": RuntimeError("boom"), "b": Result()}, clock)
    controller.queue.add("ns/a")
    controller.queue.add("ns/a")  # already queued: not an add
    clock.advance(2.0)
    controller.queue.add("ns/b")
    assert metrics.sample("workqueue_adds_total", **Q) == 2.0
    assert metrics.sample("workqueue_depth", **Q) == 2.0
    clock.advance(1.0)
    controller.step()  # a: 3 s in the queue, fails, is retried with backoff
    controller.step()  # b: 1 s in the queue
    assert metrics.sample("workqueue_queue_duration_seconds_sum", **Q) == pytest.approx(4.0)
    assert metrics.sample("workqueue_queue_duration_seconds_count", **Q) == 2.0
    assert metrics.sample("workqueue_retries_total", **Q) == 1.0
    assert metrics.sample("workqueue_depth", **Q) == 0.0


def test_event_to_reconcile_latency_starts_at_the_first_event_and_ignores_requeues() -> None:
    clock = FakeClock()
    controller, metrics = loop({"a": Result(requeue_after=10)}, clock)
    controller.enqueue("ns/a")
    clock.advance(0.5)
    controller.enqueue("ns/a")  # a second event for the queued key
    clock.advance(0.5)
    controller.step()
    assert metrics.sample("inference_operator_event_to_reconcile_seconds_sum", **C) == 1.0
    clock.advance(10)
    controller.step()  # the requeue_after pass: not an event
    assert metrics.sample("inference_operator_event_to_reconcile_seconds_count", **C) == 1.0


def test_load_balancer_calls_and_failures_are_counted_by_operation() -> None:
    metrics = Metrics(FakeClock())
    memory = InMemoryLoadBalancer()
    lb = MeasuredLoadBalancer(memory, metrics)
    lb.register("ns/a", target="a.ns.svc:80")
    assert lb.lookup("ns/a") is not None
    memory.fail_next_releases(1)
    with pytest.raises(LoadBalancerError):
        lb.release("ns/a")
    lb.release("ns/a")
    calls = {
        op: metrics.sample("inference_operator_loadbalancer_calls_total", operation=op)
        for op in ("register", "lookup", "release")
    }
    assert calls == {"register": 1.0, "lookup": 1.0, "release": 2.0}
    assert metrics.sample("inference_operator_loadbalancer_failures_total", operation="release") == 1.0
    assert metrics.sample("inference_operator_loadbalancer_failures_total", operation="register") == 0.0


def test_the_runtime_serves_every_family_with_its_live_counters_and_no_created_series() -> None:
    runtime = OperatorRuntime(OperatorConfig(workers=3), client=object(), clock=FakeClock())  # type: ignore[arg-type]
    runtime.backend.on_write("apply", "Deployment")  # type: ignore[misc]  # what a write reports
    runtime.on_event(
        "InferenceService",
        "ADDED",
        {"kind": "InferenceService", "metadata": {"namespace": "ns", "name": "a", "uid": "u", "resourceVersion": "1"}},
    )
    text = runtime.telemetry.render().decode()
    for family in (
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "workqueue_depth",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_longest_running_processor_seconds",
        "inference_operator_cached_objects",
        "inference_operator_reconcile_total",
    ):
        assert f"\n{family}{{" in text or f"\n{family} " in text, family
    assert 'inference_operator_api_writes_total{kind="Deployment",verb="apply"} 1.0' in text
    assert 'controller_runtime_max_concurrent_reconciles{controller="inferenceservice"} 3.0' in text
    assert 'workqueue_depth{controller="inferenceservice",name="inferenceservice"} 1.0' in text
    assert "_created" not in text
