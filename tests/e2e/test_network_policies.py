"""The optional NetworkPolicies, judged by a real API server: a server-side dry run of what ships.

Covers: `helm template` with `networkPolicy` (the operator's) and `inferenceNetworkPolicy` (the
inference pods') enabled, with every option used (peers by namespace and pod, an address block
with an exception, API server addresses of both IP families, DNS, an extra egress rule to the
load balancer registry, the metrics port), renders two NetworkPolicies that kube-apiserver
accepts with `kubectl apply --dry-run=server` (its validation of ports, peers, CIDRs and
selectors; nothing is stored); so do the policies the defaults render (the API server anywhere,
no ingress peers, DNS on and off), and deploy/optional/inference-networkpolicy.yaml in a
namespace of the test's own. tests/static/test_chart_security.py checks their shape; this checks
that a cluster takes them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import Cluster
from .harness import ROOT
from .helm import CHART, Helm, helm_for

Obj = dict[str, Any]
RELEASE = "np"
OPERATOR_POLICY = f"{RELEASE}-inference-operator"
INFERENCE_POLICY = f"{RELEASE}-inference-operator-inference"
SHIPPED = ROOT / "deploy" / "optional" / "inference-networkpolicy.yaml"
TEMPLATES = ("templates/networkpolicy.yaml", "templates/inference-networkpolicy.yaml")


@pytest.fixture()
def scratch(cluster: Cluster) -> Iterator[str]:
    name = f"np-{uuid.uuid4().hex[:8]}"
    cluster.kubectl.run("create", "namespace", name)
    yield name
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture()
def helm(cluster: Cluster, tmp_path: Path) -> Helm:
    return helm_for(cluster, tmp_path)


def render_policies(helm: Helm, namespace: str, values: Obj, path: Path) -> list[Obj]:
    """The chart's two NetworkPolicy templates, rendered for a release in ``namespace``."""
    path.write_text(yaml.safe_dump(values))
    show = [arg for template in TEMPLATES for arg in ("--show-only", template)]
    rendered = helm.run("template", RELEASE, str(CHART), "-n", namespace, "-f", str(path), *show).stdout
    return [d for d in yaml.safe_load_all(rendered) if d]


def server_dry_run(cluster: Cluster, objects: list[Obj], namespace: str) -> str:
    """``kubectl apply --dry-run=server`` of ``objects``: the API server validates and admits
    them, stores nothing; returns what kubectl printed, failing with the server's words."""
    result = cluster.kubectl.run(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(objects), check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def every_option(namespace: str) -> Obj:
    shipped_peers = yaml.safe_load(SHIPPED.read_text())["spec"]["ingress"][0]["from"]
    return {
        "metrics": {"enabled": True},
        "networkPolicy": {
            "enabled": True,
            "ingressFrom": [
                {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
                },
                {"ipBlock": {"cidr": "10.8.0.0/16", "except": ["10.8.1.0/24"]}},
            ],
            "apiServer": {"cidrs": ["10.0.0.1/32", "fd00::1/128"], "ports": [443, 6443]},
            "dns": True,
            "egressTo": [{"to": [{"ipBlock": {"cidr": "10.9.0.10/32"}}], "ports": [{"port": 8443, "protocol": "TCP"}]}],
        },
        "inferenceNetworkPolicy": {
            "enabled": True,
            "namespaces": [namespace],
            "from": [*shipped_peers, {"ipBlock": {"cidr": "192.168.0.0/16", "except": ["192.168.7.0/24"]}}],
        },
    }


def test_both_chart_network_policies_with_every_option_pass_the_api_servers_validation(
    cluster: Cluster, helm: Helm, scratch: str, tmp_path: Path
) -> None:
    policies = render_policies(helm, scratch, every_option(scratch), tmp_path / "values.yaml")
    assert sorted((p["kind"], p["metadata"]["name"]) for p in policies) == [
        ("NetworkPolicy", OPERATOR_POLICY),
        ("NetworkPolicy", INFERENCE_POLICY),
    ]
    printed = server_dry_run(cluster, policies, scratch)
    for name in (OPERATOR_POLICY, INFERENCE_POLICY):
        assert f"networkpolicy.networking.k8s.io/{name} created (server dry run)" in printed, printed


@pytest.mark.parametrize("dns", [True, False], ids=["dns", "no-dns"])
def test_the_chart_network_policies_with_their_defaults_pass_the_api_servers_validation(
    cluster: Cluster, helm: Helm, scratch: str, tmp_path: Path, dns: bool
) -> None:
    peers = yaml.safe_load(SHIPPED.read_text())["spec"]["ingress"][0]["from"]
    values = {
        "networkPolicy": {"enabled": True, "dns": dns},
        "inferenceNetworkPolicy": {"enabled": True, "namespaces": [scratch], "from": peers},
    }
    policies = render_policies(helm, scratch, values, tmp_path / "values.yaml")
    assert len(policies) == 2
    printed = server_dry_run(cluster, policies, scratch)
    assert printed.count("created (server dry run)") == 2, printed


def test_the_shipped_inference_network_policy_passes_the_api_servers_validation(cluster: Cluster, scratch: str) -> None:
    policy = yaml.safe_load(SHIPPED.read_text())
    policy["metadata"]["namespace"] = scratch  # the file names "models": edit the namespace, as it says
    printed = server_dry_run(cluster, [policy], scratch)
    assert f"networkpolicy.networking.k8s.io/{policy['metadata']['name']} created (server dry run)" in printed
