"""The operator's metrics server (``/metrics``, ``/healthz``) on 127.0.0.1, a free port.

Covers: ``/healthz`` answers 200 ``ok`` while healthy and 503 naming the dead thread as soon
as the health check reports one (read live, not cached); ``/metrics`` serves the registry in
Prometheus text, the operator's live counters read at each scrape; ``start`` twice reuses the
bound server (no EADDRINUSE on a retried startup);
after ``stop`` the same port can be bound again; unknown paths are 404.

``start()`` returns once the socket is bound, so no test sleeps.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from inference_operator.control.metrics import Metrics
from inference_operator.kube.metricsserver import MetricsServer, live
from inference_operator.sim.clock import FakeClock


def get(server: MetricsServer, path: str) -> tuple[int, str]:
    assert server.address is not None
    host, port = server.address
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture
def problems() -> list[str]:
    return []


@pytest.fixture
def server(problems: list[str]) -> Iterator[MetricsServer]:
    metrics = Metrics(FakeClock())
    metrics.read_live(lambda: live({"reconciles": 3, "dead_threads": len(problems)}))
    srv = MetricsServer("127.0.0.1:0", metrics.render, lambda: problems)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_healthz_turns_503_and_names_the_dead_thread(server: MetricsServer, problems: list[str]) -> None:
    assert get(server, "/healthz") == (200, "ok\n")
    problems.append("thread event-poster died")
    assert get(server, "/healthz") == (503, "unhealthy: thread event-poster died\n")


def test_metrics_are_served_live(server: MetricsServer, problems: list[str]) -> None:
    status, text = get(server, "/metrics")
    assert status == 200 and "inference_operator_reconcile_total 3" in text
    problems.append("thread inferenceservice-worker-0 died")
    assert "inference_operator_dead_threads 1" in get(server, "/metrics")[1]
    assert get(server, "/nope")[0] == 404


def test_starting_twice_reuses_the_bound_server_and_stop_frees_the_port(server: MetricsServer) -> None:
    address = server.address
    server.start()
    assert server.address == address
    assert address is not None
    server.stop()
    again = MetricsServer(f"127.0.0.1:{address[1]}", dict)
    again.start()
    try:
        assert again.address == address
    finally:
        again.stop()
