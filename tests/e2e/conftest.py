"""Session fixtures of the e2e suite: a real control plane, the CRD and the finalizer admission
policy, a load balancer registry, and the operator running as a user would run it.

Which cluster:
- by default, the project's local control plane (hack/cluster.py: etcd, kube-apiserver,
  kube-controller-manager, kube-scheduler and kwok, built from Go modules and cached);
- with ``E2E_KUBECONFIG=/path/to/kubeconfig``, any cluster (kind, …) — then the checks that
  read the API server's audit log use the operator's own write counter instead.

If the control plane cannot start, every e2e test errors loudly: a missing cluster is a
failure, never a skip.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_operator.lb.registry import RegistryServer

from .harness import (
    ROOT,
    AuditLog,
    Kubectl,
    OperatorProcess,
    install_admission_policy,
    install_confinement_policy,
    install_crds,
    operator_env,
    wait_until,
)
from .images import ImageSet, build_images, load_image_set

sys.path.insert(0, str(ROOT / "hack"))

CRD_DIR = ROOT / "deploy" / "crds"
RBAC_DIR = ROOT / "deploy" / "rbac"
RESYNC_SECONDS = 4.0
Obj = dict[str, Any]


@dataclass
class Cluster:
    kubeconfig: Path
    bin_dir: Path | None
    audit: AuditLog | None
    kubectl: Kubectl
    nodes: int
    gpus_per_node: int
    plane: Any = None
    """The local control plane (hack/cluster.py ``LocalControlPlane``), None on another cluster:
    tests that restart a component need it."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)

    # The conformance suite compares bare API servers: it runs before the session's operator
    # (cluster-wide, started by the first test that needs it) could touch its objects. The
    # image tests run the operator image as a second cluster-wide operator: before the
    # session's, too. The RBAC usage check reads what the whole session did: it runs last.
    def order(item: pytest.Item) -> int:
        if item.nodeid.startswith("tests/e2e/test_conformance.py"):
            return 0
        if item.nodeid.startswith("tests/e2e/test_image.py"):
            return 1
        return 3 if item.nodeid.startswith("tests/e2e/test_rbac_usage.py") else 2

    items.sort(key=order)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    external = os.environ.get("E2E_KUBECONFIG")
    if external:
        kubeconfig = Path(external)
        kubectl = Kubectl(kubeconfig, operator_env(None))
        yield Cluster(kubeconfig, None, None, kubectl, nodes=0, gpus_per_node=8)
        return
    import cluster as local  # hack/cluster.py

    workdir = tmp_path_factory.mktemp("control-plane")
    try:
        plane = local.start_control_plane(workdir)
    except Exception as err:  # noqa: BLE001 - any start failure fails the suite loudly
        pytest.fail(f"the local control plane did not start, so no e2e test can run: {err}", pytrace=False)
    try:
        kubectl = Kubectl(plane.kubeconfig, operator_env(plane.bin_dir))
        print(f"\nlocal control plane ready in {plane.startup_seconds:.1f}s at {plane.server} (workdir {workdir})")
        yield Cluster(
            plane.kubeconfig,
            plane.bin_dir,
            AuditLog(plane.audit_log),
            kubectl,
            nodes=plane.nodes,
            gpus_per_node=plane.gpus_per_node,
            plane=plane,
        )
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def crd(cluster: Cluster) -> None:
    """What every install path puts in the cluster before the operator: the CRD and the
    admission policies (deploy/admission): the finalizer's, and the confinement of the
    operator's ServiceAccount, here the suite operator's own."""
    install_crds(cluster.kubectl)
    install_admission_policy(cluster.kubectl, "default")
    install_confinement_policy(
        cluster.kubectl, namespace=OPERATOR_NAMESPACE, service_account=OPERATOR_SA, suffix="-e2e"
    )


@pytest.fixture(scope="session")
def image_set() -> ImageSet:
    """The project's images (hack/build-images.sh), built once per session."""
    directory, _ = build_images()
    return load_image_set(directory)


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    server = RegistryServer(host="127.0.0.1", port=0, state_file=tmp_path_factory.mktemp("lb") / "state.json")
    server.start()
    try:
        yield server
    finally:
        server.stop()


OPERATOR_NAMESPACE = "io-e2e-system"
OPERATOR_SA = "inference-operator"


def _rbac_for_e2e() -> list[dict[str, Any]]:
    """deploy/rbac as shipped, in a namespace and under names of the suite's own (the install
    tests create and delete the shipped ones)."""
    docs = [
        yaml.safe_load((RBAC_DIR / f).read_text())
        for f in ("service_account.yaml", "cluster_role.yaml", "cluster_role_binding.yaml")
    ]
    sa, role, binding = docs
    sa["metadata"]["namespace"] = OPERATOR_NAMESPACE
    role["metadata"]["name"] = binding["metadata"]["name"] = binding["roleRef"]["name"] = "inference-operator-e2e"
    binding["subjects"][0]["namespace"] = OPERATOR_NAMESPACE
    # Any Lease name here: beside the suite's operator (Lease "inference-operator"), the crash
    # points run one operator per namespace under this identity, each with its own Lease.
    return docs + leader_election_rbac(OPERATOR_NAMESPACE, OPERATOR_SA, OPERATOR_NAMESPACE, any_lease=True)


def leader_election_rbac(
    namespace: str,
    service_account: str,
    sa_namespace: str,
    *,
    lease_name: str | None = None,
    any_lease: bool = False,
) -> list[dict[str, Any]]:
    """deploy/rbac/leader_election.yaml as shipped, for Leases in ``namespace``: get and update
    of the one Lease it names (the shipped operator's), or ``lease_name`` (an operator run with
    ``--namespace`` names its Lease after its namespaces), or of any Lease (``any_lease``)."""
    role, binding = yaml.safe_load_all((RBAC_DIR / "leader_election.yaml").read_text())
    role["metadata"]["namespace"] = binding["metadata"]["namespace"] = namespace
    for rule in role["rules"]:
        if "resourceNames" in rule and any_lease:
            del rule["resourceNames"]
        elif "resourceNames" in rule and lease_name:
            rule["resourceNames"] = [lease_name]
    binding["subjects"][0].update(name=service_account, namespace=sa_namespace)
    return [role, binding]


@pytest.fixture(scope="session")
def operator_kubeconfig(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig holding a token of the operator's ServiceAccount, bound to the shipped
    least-privilege ClusterRole: the e2e operator never runs as admin."""
    cluster.kubectl.run("create", "namespace", OPERATOR_NAMESPACE)
    for doc in _rbac_for_e2e():
        cluster.kubectl.apply(doc)
    return token_kubeconfig(
        cluster, OPERATOR_SA, OPERATOR_NAMESPACE, tmp_path_factory.mktemp("operator-identity") / "kubeconfig"
    )


def token_kubeconfig(
    cluster: Cluster, service_account: str, namespace: str, path: Path, *, bound_pod: Obj | None = None
) -> Path:
    """Write a kubeconfig that authenticates with a fresh token of the ServiceAccount; with
    ``bound_pod``, a token bound to that Pod (valid while it exists; the API server puts its
    name in the user's extra ``authentication.kubernetes.io/pod-name``, as for a pod's own)."""
    bound: list[str] = []
    if bound_pod is not None:
        meta = bound_pod["metadata"]
        bound = ["--bound-object-kind", "Pod", "--bound-object-name", meta["name"], "--bound-object-uid", meta["uid"]]
    token = cluster.kubectl.run(
        "create", "token", service_account, "-n", namespace, "--duration=4h", *bound
    ).stdout.strip()
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "operator",
        "clusters": [{"name": "e2e", "cluster": admin["clusters"][0]["cluster"]}],
        "users": [{"name": "operator", "user": {"token": token}}],
        "contexts": [{"name": "operator", "context": {"cluster": "e2e", "user": "operator"}}],
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@pytest.fixture(scope="session")
def operator(
    cluster: Cluster,
    crd: None,
    registry: RegistryServer,
    operator_kubeconfig: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    proc = suite_operator(cluster, operator_kubeconfig, registry, log, identity="e2e-operator")
    proc.start()
    try:
        yield proc
    finally:
        if proc.process is not None:
            proc.stop()
        print(f"\noperator log: {log}")


def suite_operator(
    cluster: Cluster,
    kubeconfig: Path,
    registry: RegistryServer,
    log: Path,
    *,
    identity: str,
    standby: bool = False,
    quick_lease: bool = False,
) -> OperatorProcess:
    """The operator as the suite runs it: the HTTP balancer, short resync and requeue periods,
    four workers, its leader Lease in the operator namespace (with ``quick_lease``, the
    harness's shorter election timings)."""
    return OperatorProcess(
        kubeconfig,
        operator_env(cluster.bin_dir, quick_lease=quick_lease),
        log,
        "--lb-provider",
        "http",
        "--lb-url",
        registry.url,
        "--resync-period",
        str(RESYNC_SECONDS),
        "--requeue-period",
        "2",
        "--workers",
        "4",
        identity=identity,
        lease_namespace=OPERATOR_NAMESPACE,
        standby=standby,
    )


@pytest.fixture()
def namespace(cluster: Cluster, operator: OperatorProcess) -> Iterator[str]:
    """A fresh namespace per test; InferenceServices in it are deleted (and released) after."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    cluster.kubectl.run("create", "namespace", name)
    yield name
    if operator.process is None:
        operator.start()
    cluster.kubectl.run("delete", "inferenceservices", "--all", "-n", name, "--wait=false", check=False)
    wait_until(
        lambda: not cluster.kubectl.json("get", "inferenceservices", "-n", name)["items"],
        timeout=60,
        what=f"InferenceServices in {name} to be deleted",
    )
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture()
def cluster_world(
    cluster: Cluster, namespace: str, registry: RegistryServer, operator: OperatorProcess
) -> Iterator[Any]:
    """The scenario world (``clusterworld.py``) in the test's namespace, closed after it (its GPU
    pool taken away). Imported here, not at the top: ``clusterworld`` imports this module."""
    from .clusterworld import ClusterWorld

    world = ClusterWorld(cluster, namespace, registry=registry, operator=operator)
    try:
        yield world
    finally:
        world.close()
