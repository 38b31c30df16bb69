"""The chart's monitoring extras: a ServiceMonitor and a Grafana dashboard, both off by default.

Covers (metrics): neither is rendered by default; ``metrics.serviceMonitor.enabled``
renders a ServiceMonitor in the release namespace that selects exactly the metrics Service by its
labels and scrapes its ``metrics`` port at the configured interval, with extra labels; it is not
rendered when metrics are off; a bad interval fails naming the field;
``metrics.dashboard.enabled`` renders a ConfigMap with the sidecar label holding
files/dashboard.json, and every metric family the dashboard queries is one the operator exports
(so a renamed metric cannot silently blank a panel).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from subprocess import CompletedProcess

from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.sim.clock import FakeClock

from .chartkit import CHART, FULLNAME, RELEASE_NAMESPACE, Render, only


def test_no_service_monitor_and_no_dashboard_by_default(render: Render) -> None:
    kinds = [o["kind"] for o in render()]
    assert "ServiceMonitor" not in kinds and "ConfigMap" not in kinds


def test_the_service_monitor_scrapes_exactly_the_metrics_service(render: Render) -> None:
    objects = render({"metrics": {"serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"team": "ml"}}}})
    monitor, service = only(objects, "ServiceMonitor"), only(objects, "Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == RELEASE_NAMESPACE and monitor["metadata"]["labels"]["team"] == "ml"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [RELEASE_NAMESPACE]}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "15s"}]
    assert [p["name"] for p in service["spec"]["ports"]] == ["metrics"]
    off = render({"metrics": {"enabled": False, "serviceMonitor": {"enabled": True}}})
    assert "ServiceMonitor" not in [o["kind"] for o in off]


def test_a_bad_scrape_interval_is_refused_naming_the_field(template: Callable[..., CompletedProcess[str]]) -> None:
    result = template({"metrics": {"serviceMonitor": {"enabled": True, "interval": "often"}}})
    assert result.returncode != 0 and "interval" in result.stderr


def test_the_dashboard_ships_in_a_labelled_configmap(render: Render) -> None:
    config_map = only(render({"metrics": {"dashboard": {"enabled": True}}}), "ConfigMap")
    assert config_map["metadata"]["name"] == f"{FULLNAME}-dashboard"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads(config_map["data"]["inference-operator.json"])
    assert shipped == json.loads((CHART / "files" / "dashboard.json").read_text())


def test_every_metric_the_dashboard_queries_is_exported_by_the_operator() -> None:
    dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
    queried = {
        re.sub(r"_bucket$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\b([a-z_]+)\{", target["expr"]) + re.findall(r"\(([a-z_]+)\[", target["expr"])
    }
    runtime = OperatorRuntime(OperatorConfig(), client=object(), clock=FakeClock())  # type: ignore[arg-type]
    exported = set(re.findall(r"^# TYPE (\S+) ", runtime.telemetry.render().decode(), re.MULTILINE))
    exported |= {f"{name}_total" for name in exported}  # counters are typed without their suffix
    assert len(queried) >= 10
    assert queried <= exported, f"the dashboard queries metrics the operator does not export: {queried - exported}"
