"""The Helm chart (charts/inference-operator), statically: `helm lint` and `helm template`, no cluster.

Covers: `helm lint --strict` passes in both RBAC modes; Chart.yaml metadata; the chart's crds/ is an
exact copy of deploy/crds; the finalizer MutatingAdmissionPolicy equals deploy/admission's, its
binding covers the watched namespaces only in namespaced mode, and neither is rendered when disabled
or before Kubernetes 1.36; cluster mode (no watchNamespaces) renders a ClusterRole whose rules equal
deploy/rbac/cluster_role.yaml's (without the Node and Pod watch when capacityReads is off), bound
to the operator's ServiceAccount; namespaced mode renders one
Role + RoleBinding per watched namespace with the rules of deploy/rbac/namespaced/role.yaml and no
cluster-scoped RBAC at all; the leader-election Role reads and renews only the Lease the Deployment
names (leaderElection.leaseName, else the full name); the Deployment runs `kopf run -m inference_operator.operator` (the
Dockerfile's ENTRYPOINT) with --all-namespaces or one --namespace per watched namespace, --liveness
on liveness.port and --log-format; its env follows the values and is accepted by OperatorConfig (the
defaults match the operator's own); two replicas electing a leader (RollingUpdate, a
PodDisruptionBudget, soft anti-affinity; Recreate when election is off, which more than one replica
refuses); the pod is Pod Security Standard "restricted"; the liveness probe hits Kopf's /healthz;
image tag defaults to appVersion; the metrics port and Service exist only when metrics are enabled;
scheduling and resource values pass through; every object carries the standard app.kubernetes.io/*
and helm.sh/chart labels; bad values (workers 0, an unknown load balancer provider, provider http
without a url, logFormat xml, nine replicas, a bad namespace name, an unknown key, clashing ports, a bad Lease
name)
fail with a message naming the field.

helm comes from the project's cached bin dir (hack/build-controlplane.sh); without it these tests
fail, they never skip.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from inference_operator.kube.config import OperatorConfig

from .chartkit import CHART, DEPLOY, FULLNAME, KUBE_VERSION, RELEASE, RELEASE_NAMESPACE, Obj, Render, only

OPERATOR_COMMAND = ["kopf", "run", "-m", "inference_operator.operator"]
STANDARD_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/part-of",
    "helm.sh/chart",
)
CLUSTER_SCOPED_RBAC = {"ClusterRole", "ClusterRoleBinding"}


def operator_container(objects: list[Obj]) -> Obj:
    containers = only(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["operator"]
    return dict(containers[0])


def env_of(objects: list[Obj]) -> dict[str, str]:
    """The literal env values (POD_NAME and the like come from the downward API, not values)."""
    env = operator_container(objects)["env"]
    assert all(isinstance(e["value"], str) for e in env if "valueFrom" not in e), "env values must be strings"
    return {e["name"]: e["value"] for e in env if "valueFrom" not in e}


def rules_of(path: Path) -> list[Obj]:
    rules: list[Obj] = yaml.safe_load(path.read_text())["rules"]
    return rules


# lint and metadata --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [[], ["--set", "watchNamespaces={team-a,team-b}"]], ids=["cluster", "namespaced"])
def test_helm_lint_passes_strictly(helm: Callable[..., subprocess.CompletedProcess[str]], mode: list[str]) -> None:
    result = helm("lint", "--strict", str(CHART), *mode)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout


def test_helm_template_without_a_cluster_assumes_kubernetes_1_36(
    helm: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    """hack/build-controlplane.sh builds helm with its release ldflags; without them helm
    assumes Kubernetes v1.20, and the chart's kubeVersion (>=1.30) refuses to render."""
    result = helm("template", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE)
    assert result.returncode == 0, result.stderr
    kinds = [doc["kind"] for doc in yaml.safe_load_all(result.stdout) if doc]
    assert "MutatingAdmissionPolicy" in kinds, "rendered for Kubernetes >= 1.36"


def test_chart_yaml_names_the_chart_versions_and_kubernetes_range() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "inference-operator"
    assert chart["version"] == "0.1.0" and chart["appVersion"] == "0.1.0"
    assert chart["kubeVersion"] == ">=1.30.0-0"
    assert chart["type"] == "application" and chart["description"]


def test_chart_crds_are_an_exact_copy_of_deploy_crds() -> None:
    deploy_crds = sorted(p.name for p in (DEPLOY / "crds").glob("*.yaml"))
    chart_crds = sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    assert chart_crds == deploy_crds
    for name in deploy_crds:
        assert (CHART / "crds" / name).read_bytes() == (DEPLOY / "crds" / name).read_bytes(), (
            f"charts/inference-operator/crds/{name} is stale: copy deploy/crds/{name} over it"
        )


# admission policy ---------------------------------------------------------------------------


def test_cluster_mode_renders_the_admission_policy_of_deploy_admission(render: Render) -> None:
    shipped = {
        doc["kind"]: doc for doc in yaml.safe_load_all((DEPLOY / "admission" / "finalizer-policy.yaml").read_text())
    }
    objects = render()
    policy = only(objects, "MutatingAdmissionPolicy")
    binding = only(objects, "MutatingAdmissionPolicyBinding")
    assert policy["metadata"]["name"] == binding["metadata"]["name"] == f"{FULLNAME}-finalizer"
    assert policy["spec"] == shipped["MutatingAdmissionPolicy"]["spec"]
    assert binding["spec"] == {"policyName": f"{FULLNAME}-finalizer"}


def test_namespaced_mode_binds_the_admission_policy_to_the_watched_namespaces_only(render: Render) -> None:
    binding = only(render({"watchNamespaces": ["team-a", "team-b"]}), "MutatingAdmissionPolicyBinding")
    assert binding["spec"]["matchResources"] == {
        "namespaceSelector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}
            ]
        }
    }


@pytest.mark.parametrize(
    ("values", "kube_version"),
    [({"admissionPolicy": {"enabled": False}}, KUBE_VERSION), ({}, "1.35.3")],
    ids=["disabled", "kubernetes-1.35"],
)
def test_no_admission_policy_when_disabled_or_before_kubernetes_1_36(
    render: Render, values: Obj, kube_version: str
) -> None:
    kinds = {o["kind"] for o in render(values, kube_version)}
    assert not kinds & {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
    assert "Deployment" in kinds


# RBAC ---------------------------------------------------------------------------------------


def test_cluster_mode_renders_a_cluster_role_with_the_rules_of_deploy_rbac(render: Render) -> None:
    objects = render()
    (role,) = [o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == FULLNAME]
    assert role["rules"] == rules_of(DEPLOY / "rbac" / "cluster_role.yaml")
    namespaced = [(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] in ("Role", "RoleBinding")]
    assert namespaced == [("Role", f"{FULLNAME}-leader-election"), ("RoleBinding", f"{FULLNAME}-leader-election")]


@pytest.mark.parametrize("lease", [None, "ops-lease"])
def test_the_lease_role_reads_and_renews_only_the_releases_own_lease(render: Render, lease: str | None) -> None:
    objects = render({"leaderElection": {"leaseName": lease}} if lease else None)
    role = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == f"{FULLNAME}-leader-election")
    lease_name = env_of(objects)["INFERENCE_OPERATOR_LEASE_NAME"]
    assert lease_name == (lease or FULLNAME)
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [lease_name],
            "verbs": ["get", "update"],
        },
    ]


def test_without_capacity_reads_the_cluster_role_lists_no_node_and_watches_no_pod(render: Render) -> None:
    objects = render({"capacityReads": {"enabled": False}})
    (role,) = [o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == FULLNAME]
    expected = [r for r in rules_of(DEPLOY / "rbac" / "cluster_role.yaml") if "nodes" not in r["resources"]]
    assert role["rules"] == expected
    assert env_of(objects)["INFERENCE_OPERATOR_READ_CAPACITY"] == "false"
    assert OperatorConfig.from_env(env_of(objects)).reads_capacity is False


def test_cluster_mode_binds_the_cluster_role_to_the_operator_service_account(render: Render) -> None:
    objects = render()
    binding = only(objects, "ClusterRoleBinding")
    account = only(objects, "ServiceAccount")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": FULLNAME}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULLNAME, "namespace": RELEASE_NAMESPACE}]
    assert account["metadata"] == {**account["metadata"], "name": FULLNAME, "namespace": RELEASE_NAMESPACE}
    deployment = only(objects, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == FULLNAME


def test_namespaced_mode_renders_one_role_per_namespace_with_the_rules_of_deploy_rbac_namespaced(
    render: Render,
) -> None:
    objects = [
        o for o in render({"watchNamespaces": ["team-a", "team-b"]}) if "leader-election" not in o["metadata"]["name"]
    ]
    roles = [o for o in objects if o["kind"] == "Role"]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    for role in roles:
        assert role["metadata"]["name"] == FULLNAME
        assert role["rules"] == rules_of(DEPLOY / "rbac" / "namespaced" / "role.yaml")
    bindings = [o for o in objects if o["kind"] == "RoleBinding"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    for binding in bindings:
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": FULLNAME}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULLNAME, "namespace": RELEASE_NAMESPACE}]


def test_namespaced_mode_renders_no_cluster_scoped_rbac(render: Render) -> None:
    objects = render({"watchNamespaces": ["team-a", "team-b"]})
    assert not [o for o in objects if o["kind"] in CLUSTER_SCOPED_RBAC]


def test_rbac_create_false_renders_no_rbac(render: Render) -> None:
    for values in ({"rbac": {"create": False}}, {"rbac": {"create": False}, "watchNamespaces": ["team-a"]}):
        kinds = {o["kind"] for o in render(values)}
        assert not kinds & {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


# the Deployment -----------------------------------------------------------------------------


def test_deployment_runs_kopf_with_the_operator_module_in_all_namespaces_by_default(render: Render) -> None:
    container = operator_container(render())
    assert container["command"] == OPERATOR_COMMAND
    assert container["args"] == [
        "--all-namespaces",
        "--liveness=http://0.0.0.0:8080/healthz",
        "--log-format=plain",
    ]
    assert container["image"] == "inference-operator:0.1.0"
    assert container["imagePullPolicy"] == "IfNotPresent"


def test_watch_namespaces_become_namespace_flags_and_the_namespaces_env(render: Render) -> None:
    objects = render({"watchNamespaces": ["team-a", "team-b"]})
    args = operator_container(objects)["args"]
    assert [a for a in args if a.startswith("--namespace")] == ["--namespace=team-a", "--namespace=team-b"]
    assert "--all-namespaces" not in args
    assert env_of(objects)["INFERENCE_OPERATOR_NAMESPACES"] == "team-a,team-b"


def test_default_env_gives_the_operator_its_own_defaults_with_metrics_on(render: Render) -> None:
    env = env_of(render())
    assert env == {
        "INFERENCE_OPERATOR_WORKERS": "8",
        "INFERENCE_OPERATOR_RESYNC_SECONDS": "300",
        "INFERENCE_OPERATOR_REQUEUE_SECONDS": "5",
        "INFERENCE_OPERATOR_LB_PROVIDER": "memory",
        "INFERENCE_OPERATOR_LB_URL": "",
        "INFERENCE_OPERATOR_LB_TIMEOUT": "5",
        "INFERENCE_OPERATOR_LOG_FORMAT": "plain",
        "INFERENCE_OPERATOR_METRICS_ADDRESS": "0.0.0.0:9090",
        "INFERENCE_OPERATOR_NAMESPACES": "",
        "INFERENCE_OPERATOR_LEADER_ELECTION": "true",
        "INFERENCE_OPERATOR_LEASE_NAME": FULLNAME,
        "INFERENCE_OPERATOR_LEASE_DURATION": "15",
        "INFERENCE_OPERATOR_RENEW_DEADLINE": "10",
        "INFERENCE_OPERATOR_RETRY_PERIOD": "2",
        "INFERENCE_OPERATOR_READ_CAPACITY": "true",
    }
    defaults = OperatorConfig()
    assert dataclasses.replace(OperatorConfig.from_env(env), identity="") == OperatorConfig(
        workers=defaults.workers,
        resync_seconds=defaults.resync_seconds,
        requeue_seconds=defaults.requeue_seconds,
        lb_provider=defaults.lb_provider,
        lb_url=defaults.lb_url,
        lb_timeout=defaults.lb_timeout,
        namespaces=defaults.namespaces,
        log_format=defaults.log_format,
        metrics_address="0.0.0.0:9090",
        lease_name=FULLNAME,
    )


def test_deployment_args_and_env_follow_the_values(render: Render) -> None:
    objects = render(
        {
            "workers": 7,
            "resyncSeconds": 60,
            "requeueSeconds": 2.5,
            "loadBalancer": {"provider": "http", "url": "http://lb-registry.lb:9090", "timeoutSeconds": 3},
            "logFormat": "json",
            "metrics": {"port": 9100},
            "liveness": {"port": 8181},
            "watchNamespaces": ["team-a"],
        }
    )
    container = operator_container(objects)
    assert container["args"] == [
        "--namespace=team-a",
        "--liveness=http://0.0.0.0:8181/healthz",
        "--log-format=json",
    ]
    env = env_of(objects)
    assert dataclasses.replace(OperatorConfig.from_env(env), identity="") == OperatorConfig(
        lease_name=FULLNAME,
        workers=7,
        resync_seconds=60.0,
        requeue_seconds=2.5,
        lb_provider="http",
        lb_url="http://lb-registry.lb:9090",
        lb_timeout=3.0,
        namespaces=("team-a",),
        log_format="json",
        metrics_address="0.0.0.0:9100",
    )
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"health": 8181, "metrics": 9100}


def test_two_replicas_elect_a_leader_roll_without_a_gap_and_keep_one_through_drains(
    render: Render, template: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    objects = render()
    spec = only(objects, "Deployment")["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    pod = spec["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert (
        term["podAffinityTerm"]["labelSelector"]["matchLabels"].items()
        <= spec["template"]["metadata"]["labels"].items()
    )
    downward = {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in pod["containers"][0]["env"] if "valueFrom" in e
    }
    assert downward == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    budget = only(objects, "PodDisruptionBudget")
    assert budget["spec"]["minAvailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    one = render({"replicas": 1})
    assert only(one, "Deployment")["spec"]["replicas"] == 1 and not [
        o for o in one if o["kind"] == "PodDisruptionBudget"
    ]
    alone = only(render({"replicas": 1, "leaderElection": {"enabled": False}}), "Deployment")["spec"]
    assert alone["strategy"] == {"type": "Recreate"}
    assert (
        env_of([{"kind": "Deployment", "metadata": {"name": "x"}, "spec": alone}])["INFERENCE_OPERATOR_LEADER_ELECTION"]
        == "false"
    )
    unsafe = template({"replicas": 2, "leaderElection": {"enabled": False}})
    assert unsafe.returncode != 0 and "needs leader election" in unsafe.stderr
    assert only(render({"replicas": 0}), "Deployment")["spec"]["replicas"] == 0


def test_the_selector_matches_the_pod_labels(render: Render) -> None:
    spec = only(render({"podLabels": {"team": "ml"}}), "Deployment")["spec"]
    pod_labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pod_labels["team"] == "ml"


def test_pod_is_pod_security_restricted(render: Render) -> None:
    pod = only(render(), "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["runAsGroup"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not {"hostNetwork", "hostPID", "hostIPC"} & pod.keys()
    assert all(set(v) <= {"name", "emptyDir", "configMap", "secret", "projected"} for v in pod.get("volumes", []))
    container = operator_container(render())
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in security
    assert security.get("runAsUser", 10001) != 0


def test_liveness_and_readiness_probes_ask_kopf_healthz_on_the_health_port(render: Render) -> None:
    container = operator_container(render({"liveness": {"port": 8181}}))
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert {"name": "health", "containerPort": 8181, "protocol": "TCP"} in container["ports"]


def test_image_tag_defaults_to_app_version_and_follows_values(render: Render) -> None:
    image = {"repository": "registry.example.com/ml/inference-operator", "tag": "0.2.0", "pullPolicy": "Always"}
    container = operator_container(render({"image": image}))
    assert container["image"] == "registry.example.com/ml/inference-operator:0.2.0"
    assert container["imagePullPolicy"] == "Always"


def test_metrics_port_and_service_exist_only_when_metrics_are_enabled(render: Render) -> None:
    objects = render()
    service = only(objects, "Service")
    assert service["metadata"]["name"] == f"{FULLNAME}-metrics"
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}]
    pod_labels = only(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()

    disabled = render({"metrics": {"enabled": False}})
    assert not [o for o in disabled if o["kind"] == "Service"]
    assert [p["name"] for p in operator_container(disabled)["ports"]] == ["health"]
    assert env_of(disabled)["INFERENCE_OPERATOR_METRICS_ADDRESS"] == ""


def test_the_metrics_endpoint_binds_an_explicit_address_the_kubelet_and_prometheus_reach(
    render: Render, template: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    # Without a host the operator binds 127.0.0.1 only, which the pod IP does not reach.
    assert env_of(render())["INFERENCE_OPERATOR_METRICS_ADDRESS"] == "0.0.0.0:9090"
    pinned = render({"metrics": {"bindAddress": "10.1.2.3", "port": 9100}})
    assert env_of(pinned)["INFERENCE_OPERATOR_METRICS_ADDRESS"] == "10.1.2.3:9100"
    refused = template({"metrics": {"bindAddress": "0.0.0.0:9090"}})
    assert refused.returncode != 0 and "bindAddress" in refused.stderr


def test_resources_scheduling_and_pod_annotations_follow_the_values(render: Render) -> None:
    values = {
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
        "podAnnotations": {"prometheus.io/scrape": "true"},
    }
    objects = render(values)
    template = only(objects, "Deployment")["spec"]["template"]
    assert operator_container(objects)["resources"] == values["resources"]
    assert template["spec"]["nodeSelector"] == values["nodeSelector"]
    assert template["spec"]["tolerations"] == values["tolerations"]
    assert template["spec"]["affinity"] == values["affinity"]
    assert template["metadata"]["annotations"] == values["podAnnotations"]


# labels -------------------------------------------------------------------------------------


@pytest.mark.parametrize("values", [{}, {"watchNamespaces": ["team-a", "team-b"]}], ids=["cluster", "namespaced"])
def test_every_object_carries_the_standard_labels(render: Render, values: Obj) -> None:
    objects = render(values)
    labelled = [o["metadata"] for o in objects]
    labelled.append(only(objects, "Deployment")["spec"]["template"]["metadata"])
    for metadata in labelled:
        labels = metadata.get("labels") or {}
        missing = [key for key in STANDARD_LABELS if key not in labels]
        assert not missing, f"{metadata.get('name')} lacks {missing}"
        assert labels["app.kubernetes.io/name"] == "inference-operator"
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/version"] == "0.1.0"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/part-of"] == "inference-operator"
        assert labels["helm.sh/chart"] == "inference-operator-0.1.0"


# bad values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "field", "why"),
    [
        ({"workers": 0}, "/workers", "minimum"),
        ({"loadBalancer": {"provider": "nope"}}, "/loadBalancer/provider", "'memory', 'http'"),
        ({"loadBalancer": {"provider": "http"}}, "/loadBalancer/url", "https?://"),
        ({"loadBalancer": {"provider": "http", "url": "lb:9090"}}, "/loadBalancer/url", "https?://"),
        ({"logFormat": "xml"}, "/logFormat", "'plain', 'full', 'json'"),
        ({"replicas": 9}, "/replicas", "maximum"),
        ({"watchNamespaces": ["Team_A"]}, "/watchNamespaces/0", "pattern"),
        ({"resyncSeconds": "often"}, "/resyncSeconds", "number"),
        ({"metrics": {"port": 70000}}, "/metrics/port", "maximum"),
        ({"worker": 2}, "'worker'", "not allowed"),
        ({"metrics": {"port": 8080}, "liveness": {"port": 8080}}, "metrics.port and liveness.port", "8080"),
        ({"leaderElection": {"leaseName": "Ops_Lease"}}, "/leaderElection/leaseName", "pattern"),
    ],
    ids=[
        "workers-0",
        "provider-nope",
        "http-without-url",
        "http-url-without-scheme",
        "log-format-xml",
        "two-replicas",
        "bad-namespace-name",
        "resync-not-a-number",
        "metrics-port-too-big",
        "unknown-key",
        "clashing-ports",
        "bad-lease-name",
    ],
)
def test_bad_values_fail_with_a_message_naming_the_field(
    template: Callable[..., subprocess.CompletedProcess[str]], values: Obj, field: str, why: str
) -> None:
    result = template(values)
    assert result.returncode != 0, f"helm template accepted {values}"
    assert field in result.stderr and why in result.stderr, result.stderr


def test_provider_http_with_a_url_is_accepted(render: Render) -> None:
    env = env_of(render({"loadBalancer": {"provider": "http", "url": "https://lb.example.com"}}))
    assert env["INFERENCE_OPERATOR_LB_PROVIDER"] == "http"
    assert env["INFERENCE_OPERATOR_LB_URL"] == "https://lb.example.com"
