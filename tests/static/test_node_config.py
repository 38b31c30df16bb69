"""The real node's static configuration (hack/cluster_node_config.py, hack/oci_archive.py), offline.

Covers: the node's Pod subnet stays clear of kwok's and inside the blackholed range; the CNI
config neither masquerades nor makes the bridge a gateway and gives Pods one route, to the
Services; containerd's config is valid TOML with the locally built sandbox image pinned, its
state in the work dir and every registry sent to a closed local port; kube-proxy serves
NodePorts on the bridge address only and touches no sysctl; the kubelet fits this machine;
the pause image archive is reproducible and names itself; an archive named only by a full
reference (as buildah writes it) is accepted, a bare tag is refused before any import.
"""

from __future__ import annotations

import ipaddress
import json
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "hack"))

from cluster_config import (  # noqa: E402
    KWOK_POD_CIDR,
    NODE_BRIDGE_ADDRESS,
    NODE_POD_CIDR,
    POD_CIDR,
    SERVICE_CIDR,
    Workdir,
)
from cluster_node import BLACKHOLE_ROUTES, NodeError, image_name  # noqa: E402
from cluster_node_config import (  # noqa: E402
    BRIDGE,
    NO_REGISTRY,
    NodeFiles,
    cni_conflist,
    containerd_config,
    kube_proxy_config,
    kubelet_config,
)
from oci_archive import write_oci_archive  # noqa: E402

PAUSE = "localhost/inference-operator/pause:3.10"


@pytest.fixture
def files(tmp_path: Path) -> NodeFiles:
    return NodeFiles(Workdir(tmp_path / "cluster"))


def test_node_subnet_is_clear_of_kwok_inside_the_pod_range_and_blackholed() -> None:
    node, kwok = ipaddress.ip_network(NODE_POD_CIDR), ipaddress.ip_network(KWOK_POD_CIDR)
    assert not node.overlaps(kwok)
    assert node.subnet_of(ipaddress.ip_network(POD_CIDR))  # type: ignore[arg-type]
    assert ipaddress.ip_address(NODE_BRIDGE_ADDRESS) in node
    blackhole = ipaddress.ip_network(BLACKHOLE_ROUTES[0])
    for cidr in (POD_CIDR, SERVICE_CIDR):
        assert ipaddress.ip_network(cidr).subnet_of(blackhole)  # type: ignore[arg-type]
    assert len(BRIDGE) <= 15


def test_cni_bridge_neither_masquerades_nor_routes_pods_anywhere_but_to_services(files: NodeFiles) -> None:
    bridge, portmap = cni_conflist(files)["plugins"]
    assert (bridge["type"], bridge["bridge"]) == ("bridge", BRIDGE)
    assert bridge["ipMasq"] is False and bridge["isGateway"] is False and bridge["isDefaultGateway"] is False
    assert bridge["ipam"]["routes"] == [{"dst": SERVICE_CIDR, "gw": NODE_BRIDGE_ADDRESS}]
    assert bridge["ipam"]["ranges"][0][0]["subnet"] == NODE_POD_CIDR
    assert bridge["ipam"]["dataDir"].startswith(str(files.workdir.root))
    assert (portmap["type"], portmap["snat"]) == ("portmap", False)


def test_containerd_config_pins_the_local_sandbox_and_keeps_state_in_the_work_dir(files: NodeFiles) -> None:
    config = tomllib.loads(containerd_config(files, bin_dir=Path("/bin-dir"), sandbox_image=PAUSE))
    assert config["version"] == 3
    assert config["root"].startswith(str(files.root)) and config["state"].startswith(str(files.root))
    assert config["imports"] == []
    images = config["plugins"]["io.containerd.cri.v1.images"]
    assert images["pinned_images"]["sandbox"] == PAUSE
    assert images["registry"]["config_path"].startswith(str(files.root))
    runtime = config["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True  # this machine withholds CAP_SYS_RESOURCE
    assert runtime["netns_mounts_under_state_dir"] is True
    assert runtime["cni"]["conf_dir"] == str(files.cni_conf_dir)
    assert runtime["cni"]["bin_dirs"] == ["/bin-dir/cni"]


def test_every_registry_is_a_closed_local_port() -> None:
    hosts = tomllib.loads(NO_REGISTRY)
    assert hosts["server"] == "https://127.0.0.1:9"
    assert list(hosts["host"]) == ["https://127.0.0.1:9"]


def test_kube_proxy_serves_node_ports_on_the_bridge_only_and_leaves_sysctls_alone(tmp_path: Path) -> None:
    config = kube_proxy_config(kubeconfig=tmp_path / "kubeconfig", healthz_port=1, metrics_port=2)
    assert config["nodePortAddresses"] == [f"{NODE_BRIDGE_ADDRESS}/32"]
    assert config["iptables"]["localhostNodePorts"] is False  # would set route_localnet
    assert config["conntrack"]["maxPerCore"] == 0
    assert config["clusterCIDR"] == POD_CIDR
    assert config["healthzBindAddress"].startswith("127.0.0.1:")


def test_kubelet_fits_this_machine_and_never_garbage_collects_images(files: NodeFiles) -> None:
    config: dict[str, Any] = kubelet_config(files, pki=Path("/pki"), port=1, healthz_port=2)
    assert (config["failCgroupV1"], config["cgroupDriver"], config["failSwapOn"]) == (False, "cgroupfs", False)
    assert config["oomScoreAdj"] == 0
    assert config["clusterDNS"] == []
    assert config["imageGCHighThresholdPercent"] == 100
    assert config["address"] == NODE_BRIDGE_ADDRESS and config["readOnlyPort"] == 0
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["authorization"]["mode"] == "Webhook"
    for key in ("podLogsDir", "volumePluginDir"):
        assert config[key].startswith(str(files.root))


def test_pause_archive_is_reproducible_and_names_itself(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF not really")
    first, second = tmp_path / "a.tar", tmp_path / "b.tar"
    digest = write_oci_archive(binary=binary, name=PAUSE, entrypoint="/pause", user="65535:65535", out=first)
    assert write_oci_archive(binary=binary, name=PAUSE, entrypoint="/pause", user="65535:65535", out=second) == digest
    assert first.read_bytes() == second.read_bytes()
    assert image_name(first) == PAUSE
    with tarfile.open(first) as archive:
        names = archive.getnames()
    assert names[:2] == ["oci-layout", "index.json"]
    assert f"blobs/sha256/{digest.removeprefix('sha256:')}" in names


def test_an_archive_named_only_by_a_full_ref_name_is_accepted_a_bare_tag_is_not(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"binary")
    archive = tmp_path / "image.tar"
    write_oci_archive(binary=binary, name=PAUSE, entrypoint="/pause", user="0:0", out=archive)
    layout = tmp_path / "layout"
    with tarfile.open(archive) as tar:
        tar.extractall(layout, filter="data")
    index = json.loads((layout / "index.json").read_text())
    for ref_name, expected in (("localhost/x/buildah:1", "localhost/x/buildah:1"), ("1", None)):
        index["manifests"][0]["annotations"] = {"org.opencontainers.image.ref.name": ref_name}
        (layout / "index.json").write_text(json.dumps(index))
        with tarfile.open(archive, "w") as tar:
            for name in ("oci-layout", "index.json", "blobs"):
                tar.add(layout / name, arcname=name)
        if expected:
            assert image_name(archive) == expected
        else:
            with pytest.raises(NodeError, match="names no image"):
                image_name(archive)
