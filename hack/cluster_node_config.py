"""What the local cluster's real node is made of: its files, configs and command lines.

Why a module of its own: like ``cluster_config.py`` for the control plane, this is static
configuration with no process or network handling, so ``cluster_node.py`` reads as the
start/stop/cleanup sequence only. Everything lives under ``<workdir>/node/`` - never in
/var/lib/kubelet, /var/lib/containerd, /run/containerd or /etc/cni - so a cluster's state
goes with its work dir; only containerd's socket is in ``/run/inference-operator/<hash of the
work dir>/`` (a socket path must be short). What the choices protect:

- containerd never pulls: the sandbox image is pinned to a locally imported one, and the
  registry config sends every registry to a closed local port (``NO_REGISTRY``).
- No masquerading, no default route in Pods: the CNI bridge is no gateway and has
  ``ipMasq: false``; Pods get one route, the Service range via the bridge address, so
  nothing they send can be routed off this machine.
- kube-proxy serves NodePorts on the bridge address only, leaves conntrack sysctls and
  ``route_localnet`` alone.
- Nothing needs privileges this machine does not grant (raising rlimits or lowering
  oom_score_adj): containerd restricts oom_score_adj to its own, kubelet keeps its own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_config import NODE_BRIDGE_ADDRESS, NODE_POD_CIDR, POD_CIDR, REAL_NODE_NAME, SERVICE_CIDR, Workdir

NODE_COMPONENTS = ("containerd", "kubelet", "kube-proxy")
# For every registry without its own hosts.toml (all of them): a closed port on this machine
# replaces the registry, so a missing image fails at once (ErrImagePull naming 127.0.0.1:9)
# instead of a DNS lookup and a connection to docker.io or registry.k8s.io.
NO_REGISTRY = """\
# This node never pulls: images are imported (ctr images import). See hack/README.md.
server = "https://127.0.0.1:9"

[host."https://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
"""
NODE_KIND_LABEL = ("inference-operator.dev/node-kind", "real")
BRIDGE = "iop-node0"  # at most 15 characters (IFNAMSIZ)
CNI_NETWORK = "inference-operator-node"
CONTAINERD_NAMESPACE = "k8s.io"  # the namespace the CRI plugin (so the kubelet) uses
# A unix socket path holds at most 107 bytes, and pytest's work dirs are longer than that
# allows: containerd's socket lives in a short per-work-dir directory here instead.
SOCKET_ROOT = Path("/run/inference-operator")


@dataclass(frozen=True)
class NodeFiles:
    """Where each file of the real node lives; everything is under ``<workdir>/node``."""

    workdir: Workdir

    @property
    def root(self) -> Path:
        return self.workdir.root / "node"

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd" / "state"

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd" / "config.toml"

    @property
    def socket_dir(self) -> Path:
        """The one directory outside the work dir: named by a hash of it, removed on stop."""
        return SOCKET_ROOT / hashlib.sha256(str(self.workdir.root).encode()).hexdigest()[:12]

    @property
    def containerd_socket(self) -> Path:
        return self.socket_dir / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet-config.yaml"

    @property
    def kube_proxy_config(self) -> Path:
        return self.root / "kube-proxy-config.yaml"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def ipam_dir(self) -> Path:
        return self.root / "cni" / "ipam"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def saved_sysctls(self) -> Path:
        """Host sysctls the kubelet overwrites, as they were before it started (restored on stop)."""
        return self.workdir.root / "node-sysctls.json"


def containerd_config(files: NodeFiles, *, bin_dir: Path, sandbox_image: str) -> str:
    """containerd 2.x config (version 3): private dirs, local images only, CNI bridge."""
    return f"""\
version = 3
root = "{files.containerd_root}"
state = "{files.containerd_state}"
imports = []  # not /etc/containerd/conf.d: this node reads its own config only
# Not on this machine: NRI (a socket in /var/run/nri), /opt plugins, tracing.
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt", \
"io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{files.containerd_socket}"

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.image-verifier.v1.bindir"]
  bin_dir = "{files.root / "containerd" / "image-verifiers"}"  # none: the CRI needs the plugin, not a verifier

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  # Never garbage-collect or re-pull: images here were imported, not pulled.
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{sandbox_image}"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "{files.root / "containerd" / "certs.d"}"

[plugins."io.containerd.cri.v1.runtime"]
  # oom_score_adj below containerd's own needs CAP_SYS_RESOURCE, which this machine withholds.
  restrict_oom_score_adj = true
  enable_selinux = false
  enable_cdi = false
  netns_mounts_under_state_dir = true  # Pod netns under state/, not /var/run/netns
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{bin_dir / "cni"}"]
    conf_dir = "{files.cni_conf_dir}"
    max_conf_num = 1
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{files.containerd_state / "runc"}"

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


def cni_conflist(files: NodeFiles) -> dict[str, Any]:
    """bridge (no gateway, no masquerade) + host-local in the node's /24 + portmap (no SNAT)."""
    return {
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": False,  # a gateway bridge would turn on net.ipv4.ip_forward for the whole host
                "isDefaultGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": NODE_POD_CIDR, "rangeStart": NODE_POD_CIDR.replace(".0/24", ".10")}]],
                    # The only route a Pod gets: Services, through the host's bridge address.
                    "routes": [{"dst": SERVICE_CIDR, "gw": NODE_BRIDGE_ADDRESS}],
                    "dataDir": str(files.ipam_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}, "snat": False},
        ],
    }


def kubelet_config(files: NodeFiles, *, pki: Path, port: int, healthz_port: int) -> dict[str, Any]:
    """KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fitted to this machine."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,  # cgroups are v1 here
        "cgroupDriver": "cgroupfs",
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{files.containerd_socket}",
        "address": NODE_BRIDGE_ADDRESS,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDomain": "cluster.local",
        "clusterDNS": [],  # no DNS server in this cluster
        "resolvConf": "",  # and the host's resolvers are not reachable from Pods
        "podLogsDir": str(files.pod_logs),
        "volumePluginDir": str(files.kubelet_root / "volume-plugins"),  # not /usr/libexec/kubernetes
        "oomScoreAdj": 0,  # the default -999 needs CAP_SYS_RESOURCE
        "makeIPTablesUtilChains": False,
        "protectKernelDefaults": False,
        "serializeImagePulls": False,
        # Imported images cannot be pulled again: never garbage-collect them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        # A shared machine's disk and memory are not this node's to defend: evict only when nearly out.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "nodeStatusReportFrequency": "10s",
        "shutdownGracePeriod": "0s",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "registerNode": True,
    }


def kube_proxy_config(*, kubeconfig: Path, healthz_port: int, metrics_port: int) -> dict[str, Any]:
    """KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1): iptables, touching no sysctl."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": REAL_NODE_NAME,
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "detectLocalMode": "ClusterCIDR",
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "nodePortAddresses": [f"{NODE_BRIDGE_ADDRESS}/32"],  # never on eth0
        "iptables": {"localhostNodePorts": False, "masqueradeAll": False},  # localhost ones need route_localnet
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }


def write_node_configs(
    files: NodeFiles, *, bin_dir: Path, sandbox_image: str, ports: dict[str, int], pki: Path
) -> None:
    """Every config file of the node (JSON is YAML, so the kubelet and kube-proxy read these)."""
    for directory in (
        files.containerd_root,
        files.containerd_state,
        files.kubelet_root,
        files.cni_conf_dir,
        files.socket_dir,
    ):
        directory.mkdir(parents=True, exist_ok=True)
    (files.root / "containerd" / "certs.d" / "_default").mkdir(parents=True, exist_ok=True)
    (files.root / "containerd" / "certs.d" / "_default" / "hosts.toml").write_text(NO_REGISTRY)
    files.pod_logs.mkdir(exist_ok=True)
    files.containerd_config.write_text(containerd_config(files, bin_dir=bin_dir, sandbox_image=sandbox_image))
    (files.cni_conf_dir / f"10-{CNI_NETWORK}.conflist").write_text(json.dumps(cni_conflist(files), indent=2))
    kubelet = kubelet_config(files, pki=pki, port=ports["kubelet"], healthz_port=ports["kubelet-healthz"])
    files.kubelet_config.write_text(json.dumps(kubelet, indent=2))
    proxy = kube_proxy_config(
        kubeconfig=files.workdir.kubeconfig_of("kube-proxy"),
        healthz_port=ports["kube-proxy-healthz"],
        metrics_port=ports["kube-proxy-metrics"],
    )
    files.kube_proxy_config.write_text(json.dumps(proxy, indent=2))


def node_flags(name: str, *, files: NodeFiles, verbosity: int) -> list[str]:
    """The command line of one node component, without the binary."""
    if name == "containerd":
        return [f"--config={files.containerd_config}", f"--log-level={'debug' if verbosity > 0 else 'info'}"]
    if name == "kubelet":
        return [
            f"--config={files.kubelet_config}",
            f"--kubeconfig={files.workdir.kubeconfig_of('kubelet')}",
            f"--root-dir={files.kubelet_root}",
            f"--cert-dir={files.kubelet_root / 'pki'}",
            f"--hostname-override={REAL_NODE_NAME}",
            f"--node-ip={NODE_BRIDGE_ADDRESS}",
            "--node-labels=" + "=".join(NODE_KIND_LABEL),
            f"--v={verbosity}",
        ]
    if name == "kube-proxy":
        return [f"--config={files.kube_proxy_config}", f"--v={verbosity}"]
    raise ValueError(f"unknown node component {name!r}; expected one of {NODE_COMPONENTS}")
