"""The local cluster's one real node (hack/cluster_node.py): containerd + kubelet + kube-proxy.

Covers: the node registers Ready with its label next to the tainted kwok GPU nodes; a CPU Pod
runs on it from a locally built image and gets an address of the node's subnet, and the API
server reaches its kubelet (logs); a GPU Pod still lands on a kwok node; from inside a Pod the
API server answers through the ``kubernetes`` Service (TLS verified against the cluster CA),
and a Service fronting another Pod answers too; nothing can leave the machine (blackhole
route, no masquerading of the Pod or Service ranges, no forwarding out of the bridge, no route
out of a Pod — read from its routes, and probed only at an address blackholed by design inside
198.18.0.0/15, never at an outside one —, a missing image is never pulled from a registry); a second cluster with a real
node is refused; ``stop()`` leaves no bridge, route, rule, mount, sysctl or process behind.

This module starts its own cluster (``real_node=True``), not the session's. If the node cannot
start, every test here fails with the component's log tail: never a skip. The last test
stops the cluster; the tests run in file order.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .harness import ROOT, Kubectl, operator_env, wait_until

sys.path.insert(0, str(ROOT / "hack"))

import cluster as local
from cluster_config import (
    GPU_TAINT,
    KUBERNETES_SERVICE_IP,
    NODE_BRIDGE_ADDRESS,
    NODE_POD_CIDR,
    REAL_NODE_NAME,
    SERVICE_CIDR,
)
from cluster_node import BLACKHOLE_ROUTES, KERNEL_TUNABLES, OUR_CHAIN_PREFIXES
from cluster_node_config import BRIDGE, NODE_KIND_LABEL
from cluster_procs import log_tail

PAUSE_IMAGE = "localhost/inference-operator/pause:3.10"
NAMESPACE = "default"
NODE_SUBNET_PREFIX = "198.18.200."
# Inside 198.18.0.0/15, which the node blackholes on the host (BLACKHOLE_ROUTES) and which is no
# Pod's or Service's: a probe sent there goes nowhere, even if isolation regressed. A test must
# never be the off-machine traffic it guards against, so nothing here connects elsewhere.
BLACKHOLED_ADDRESS = "198.18.5.5"


def sh(*argv: str, check: bool = True, timeout: float = 30) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def sysctls() -> dict[str, str]:
    return {name: sh("sysctl", "-n", name).strip() for name in KERNEL_TUNABLES}


@pytest.fixture(scope="module")
def host_before() -> dict[str, Any]:
    """What the host looked like before the real node started."""
    return {"sysctls": sysctls(), "routes": sh("ip", "route", "show").strip()}


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory, host_before: dict[str, Any]) -> Iterator[Any]:
    workdir = tmp_path_factory.mktemp("real-node")
    try:
        started = local.start_control_plane(workdir, real_node=True)
    except local.ControlPlaneError as error:
        pytest.fail(f"the cluster with a real node did not start: {error}", pytrace=False)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def kubectl(plane: Any) -> Kubectl:
    return Kubectl(plane.kubeconfig, operator_env(plane.bin_dir))


def pod(name: str, *, labels: dict[str, str] | None = None, gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": PAUSE_IMAGE, "imagePullPolicy": "Never"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 0},
    }


def running_pod(kubectl: Kubectl, manifest: dict[str, Any], plane: Any) -> dict[str, Any]:
    kubectl.apply(manifest, NAMESPACE)
    name = manifest["metadata"]["name"]
    try:
        running = lambda p: p["status"].get("phase") == "Running"  # noqa: E731
        return kubectl.wait_for("pod", name, NAMESPACE, running, what=f"Pod {name} Running", timeout=60)
    except AssertionError as error:
        described = kubectl.run("describe", "pod", name, "-n", NAMESPACE, check=False).stdout[-2000:]
        log = log_tail(plane.files.logs / "kubelet.log")
        raise AssertionError(f"{error}\n{described}\nkubelet.log:\n{log}") from error


def netns_of(plane: Any, ip: str) -> Path:
    """The network namespace (a bind mount under containerd's state dir) holding `ip`."""
    for netns in plane.node_files.containerd_state.rglob("netns/cni-*"):
        if f" {ip}/" in sh("nsenter", f"--net={netns}", "ip", "-4", "-o", "addr", "show"):
            return Path(netns)
    raise AssertionError(f"no Pod network namespace holds {ip}")


def in_netns(netns: Path, code: str, timeout: float = 20) -> str:
    """Run Python `code` inside a Pod's network namespace (as a host process); its stdout."""
    return sh("nsenter", f"--net={netns}", sys.executable, "-c", code, timeout=timeout)


def test_real_node_is_ready_with_its_label_next_to_tainted_gpu_nodes(kubectl: Kubectl) -> None:
    node = kubectl.json("get", "node", REAL_NODE_NAME)
    assert node["metadata"]["labels"][NODE_KIND_LABEL[0]] == NODE_KIND_LABEL[1]
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True"
    assert {"type": "InternalIP", "address": NODE_BRIDGE_ADDRESS} in node["status"]["addresses"]
    assert "nvidia.com/gpu" not in node["status"]["capacity"]
    assert not node["spec"].get("taints")
    for kwok in kubectl.json("get", "nodes", "-l", "type=kwok")["items"]:
        assert kwok["spec"]["taints"] == [GPU_TAINT]


def test_cpu_pod_runs_on_the_real_node_with_an_address_of_its_subnet(kubectl: Kubectl, plane: Any) -> None:
    assert plane.import_image(plane.bin_dir / "images" / "pause.oci.tar") == PAUSE_IMAGE  # again: idempotent
    started = running_pod(kubectl, pod("cpu-pod"), plane)
    assert started["spec"]["nodeName"] == REAL_NODE_NAME
    assert started["status"]["podIP"].startswith(NODE_SUBNET_PREFIX)


def test_api_server_reaches_the_kubelet_for_logs(kubectl: Kubectl) -> None:
    assert kubectl.run("get", "--raw", f"/api/v1/nodes/{REAL_NODE_NAME}/proxy/healthz").stdout == "ok"
    assert kubectl.run("logs", "cpu-pod", "-n", NAMESPACE).returncode == 0  # the pause image logs nothing


def test_gpu_pod_lands_on_a_kwok_node(kubectl: Kubectl, plane: Any) -> None:
    started = running_pod(kubectl, pod("gpu-pod", gpus=1), plane)
    assert started["spec"]["nodeName"].startswith("kwok-node-")


def test_pod_reaches_the_api_server_through_the_kubernetes_service(kubectl: Kubectl, plane: Any) -> None:
    slices = kubectl.json("get", "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes")
    assert [e["addresses"] for e in slices["items"][0]["endpoints"]] == [[NODE_BRIDGE_ADDRESS]]
    ip = running_pod(kubectl, pod("api-client"), plane)["status"]["podIP"]
    code = f"""
import json, ssl, urllib.request
context = ssl.create_default_context(cafile={str(plane.files.pki / "ca.crt")!r})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}), urllib.request.HTTPSHandler(context=context))
print(json.load(opener.open("https://{KUBERNETES_SERVICE_IP}:443/version", timeout=5))["gitVersion"])
"""
    version = wait_until(
        lambda: in_netns(netns_of(plane, ip), code).strip(), timeout=30, what="/version via the kubernetes Service"
    )
    assert version == "v1.36.5"


def test_service_fronting_a_pod_answers_another_pod(kubectl: Kubectl, plane: Any) -> None:
    server_ip = running_pod(kubectl, pod("web", labels={"app": "web"}), plane)["status"]["podIP"]
    client_ip = running_pod(kubectl, pod("web-client"), plane)["status"]["podIP"]
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
        NAMESPACE,
    )
    cluster_ip = kubectl.json("get", "service", "web", "-n", NAMESPACE)["spec"]["clusterIP"]
    # The pause image serves nothing: a host process in the server Pod's network namespace does.
    server = subprocess.Popen(
        ["nsenter", f"--net={netns_of(plane, server_ip)}", sys.executable, "-m", "http.server", "8080"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=plane.workdir,
    )
    try:
        get = f"import urllib.request as u; print(u.urlopen('http://{cluster_ip}/', timeout=3).status)"
        client = netns_of(plane, client_ip)
        assert wait_until(lambda: in_netns(client, get).strip(), timeout=30, what="the web Service from a Pod") == "200"
    finally:
        server.kill()
        server.wait(timeout=10)


def test_nothing_can_leave_the_machine(kubectl: Kubectl, plane: Any) -> None:
    blackholes = sh("ip", "route", "show", "type", "blackhole")
    for route in BLACKHOLE_ROUTES:
        assert route in blackholes
    lookup = subprocess.run(["ip", "route", "get", "198.18.5.5"], capture_output=True, text=True, check=False)
    assert "Invalid argument" in lookup.stderr  # a blackhole: a kwok Pod's address goes nowhere
    assert sh("sysctl", "-n", "net.ipv4.ip_forward").strip() == "0"
    nat = sh("iptables-save", "-t", "nat").splitlines()
    masquerading = [rule for rule in nat if "MASQUERADE" in rule or "-j SNAT" in rule]
    # kube-proxy's own rule masquerades only packets it marked (hairpin, host-to-Service), whose
    # destination is an endpoint on this machine; no rule masquerades the ranges or leaves via eth0.
    assert all(rule.startswith("-A KUBE-POSTROUTING ") for rule in masquerading), masquerading
    postrouting = [rule for rule in nat if rule.startswith("-A KUBE-POSTROUTING ")]
    assert postrouting[0] == "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN", postrouting
    assert not [rule for rule in nat if "-o eth0" in rule or "CNI-" in rule], nat
    mangle = sh("iptables-save", "-t", "mangle")
    assert f"-A IOP-NODE-FORWARD -i {BRIDGE} ! -o {BRIDGE} -j DROP" in mangle
    ip = running_pod(kubectl, pod("no-exit"), plane)["status"]["podIP"]
    netns = netns_of(plane, ip)
    # A Pod has routes to its own subnet and the Service range, nothing else: no default route,
    # and the route lookup (netlink, no packet sent) of the host's own gateway finds none.
    pod_routes = sh("nsenter", f"--net={netns}", "ip", "-4", "route", "show")
    assert {line.split()[0] for line in pod_routes.splitlines()} == {NODE_POD_CIDR, SERVICE_CIDR}, pod_routes
    for gateway in host_gateways():
        lookup = subprocess.run(
            ["nsenter", f"--net={netns}", "ip", "route", "get", gateway], capture_output=True, text=True, check=False
        )
        assert lookup.returncode != 0 and "unreachable" in lookup.stderr, (gateway, lookup.stdout, lookup.stderr)
    # The one connection tried goes to a blackholed address: it has no route from the Pod.
    code = f"""
import errno, socket
try:
    socket.create_connection(({BLACKHOLED_ADDRESS!r}, 80), timeout=3)
    print("connected")
except OSError as error:
    print(errno.errorcode.get(error.errno, error))
"""
    assert in_netns(netns, code).strip() == "ENETUNREACH"


def host_gateways() -> list[str]:
    """The gateways of the host's default routes (read, never contacted)."""
    return [line.split()[2] for line in sh("ip", "-4", "route", "show", "default").splitlines() if " via " in line]


def test_a_missing_image_is_never_pulled_from_a_registry(kubectl: Kubectl) -> None:
    manifest = pod("missing-image")
    manifest["spec"]["containers"][0] |= {"image": "docker.io/library/busybox:1.36", "imagePullPolicy": "IfNotPresent"}
    kubectl.apply(manifest, NAMESPACE)

    def waiting_message() -> str | None:
        statuses = kubectl.json("get", "pod", "missing-image", "-n", NAMESPACE)["status"].get("containerStatuses", [])
        waiting = statuses[0]["state"].get("waiting", {}) if statuses else {}
        return waiting.get("message") if waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff") else None

    message = wait_until(waiting_message, timeout=60, what="the pull of a missing image to fail")
    assert "127.0.0.1:9" in message  # containerd's only "registry": a closed local port


def test_a_second_cluster_with_a_real_node_is_refused(tmp_path: Path, kubectl: Kubectl) -> None:
    with pytest.raises(local.ControlPlaneError, match=f"bridge {BRIDGE}"):
        local.start_control_plane(tmp_path / "second", real_node=True)
    node = kubectl.json("get", "node", REAL_NODE_NAME)
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"


def test_stop_leaves_no_bridge_route_rule_mount_sysctl_or_process_behind(
    plane: Any, host_before: dict[str, Any]
) -> None:
    pids = list(plane.pids().values())
    shims = [int(p) for p in sh("pgrep", "-f", f"containerd-shim.*{plane.node_files.containerd_socket}").split()]
    assert shims, "the Pods of the earlier tests run in shims"
    plane.stop()
    assert sh("ip", "link", "show", "dev", BRIDGE, check=False) == ""
    assert sh("ip", "route", "show").strip() == host_before["routes"]
    for table in ("nat", "filter", "mangle"):
        chains = [line for line in sh("iptables-save", "-t", table).splitlines() if line.startswith(":")]
        assert not [c for c in chains if c[1:].startswith(OUR_CHAIN_PREFIXES)], (table, chains)
    assert str(plane.workdir) not in Path("/proc/self/mountinfo").read_text()
    assert sysctls() == host_before["sysctls"]
    assert not [pid for pid in pids + shims if Path(f"/proc/{pid}").exists()]
    assert not plane.node_files.root.exists()
    assert not plane.node_files.socket_dir.exists()
    log_links = Path("/var/log/containers")
    assert not [link for link in log_links.glob("*.log") if str(plane.workdir) in str(link.readlink())]
    assert not Path("/var/lib/kubelet/device-plugins/kubelet.sock").exists()
