"""The operator's /metrics on a real control plane, as a Prometheus scrape sees it.

Covers (metrics): after an InferenceService becomes Ready, the operator's endpoint
serves controller-runtime's reconcile families (successful passes counted, a reconcile time
histogram), client-go's workqueue families for the ``inferenceservice`` queue (adds, queue
duration), the event-to-reconcile latency histogram, API writes labelled by verb and kind (the
Deployment and the Service were applied) and load balancer calls by operation (one register).
"""

from __future__ import annotations

import re
import urllib.request

from .conftest import Cluster
from .harness import OperatorProcess, is_ready
from .workloads import llama

C = 'controller="inferenceservice"'


def scrape(operator: OperatorProcess) -> dict[str, float]:
    with urllib.request.urlopen(operator.metrics_url, timeout=5) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            samples[series] = float(value)
    return samples


def test_metrics_carry_controller_runtime_and_workqueue_families(
    cluster: Cluster, namespace: str, operator: OperatorProcess
) -> None:
    before = scrape(operator)
    cluster.kubectl.apply(llama("metrics"), namespace)
    cluster.kubectl.wait_for("inferenceservice", "metrics", namespace, is_ready, what="metrics Ready")
    after = scrape(operator)

    def grew(series: str) -> float:
        return after.get(series, 0.0) - before.get(series, 0.0)

    assert grew(f'controller_runtime_reconcile_total{{{C},result="success"}}') >= 1
    assert grew(f"controller_runtime_reconcile_time_seconds_count{{{C}}}") >= 1
    assert grew(f'workqueue_adds_total{{{C},name="inferenceservice"}}') >= 1
    assert grew(f'workqueue_queue_duration_seconds_count{{{C},name="inferenceservice"}}') >= 1
    assert grew(f"inference_operator_event_to_reconcile_seconds_count{{{C}}}") >= 1
    assert grew('inference_operator_api_writes_total{kind="Deployment",verb="apply"}') >= 1
    assert grew('inference_operator_api_writes_total{kind="Service",verb="apply"}') >= 1
    assert grew('inference_operator_loadbalancer_calls_total{operation="register"}') >= 1
    assert not [s for s in after if re.match(r"\w+_created\b", s)], "no *_created series"
