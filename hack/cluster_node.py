"""The host side of the local cluster's one real node: bridge, routes, images, cleanup.

Why a module of its own: a real kubelet needs more of the host than the control plane does
(a Linux bridge, routes, iptables rules made by kube-proxy, mounts, cgroups, container
processes that outlive their parents, kernel sysctls the kubelet sets), and every one of
them must be undone on stop - also after a crash, from another process (``cluster.py down``).
``cluster.py`` only calls ``setup_network``, ``import_images`` and ``cleanup_node``.

Network rules this module keeps (this machine must never send Pod traffic off-host):

- the bridge ``iop-node0`` holds 198.18.200.1/24 (the node's Pod subnet); its alias names the
  work dir that owns it, and a second cluster with a real node is refused while it exists;
- ``blackhole 198.18.0.0/15``: no address of the Pod and Service ranges can leave the machine,
  even when kube-proxy is down (the bridge's /24 is more specific and still works, and so is
  198.19.0.0/16 via the bridge, so the host reaches ClusterIPs through kube-proxy's rules);
- ``net.ipv4.ip_forward`` is never turned on (only the bridge forwards, back into itself: see
  ``_guard_forwarding``) and nothing is masqueraded (see
  ``cluster_node_config``); the host's own iptables rules are never flushed or rewritten:
  cleanup removes only chains named ``KUBE-*``/``CNI-HOSTPORT-*``/``CNI-DN-*`` and the jumps to them.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import tarfile
import time
import urllib.request
from pathlib import Path

from cluster_config import NODE_BRIDGE_ADDRESS, NODE_POD_CIDR, SERVICE_CIDR
from cluster_node_config import BRIDGE, CNI_NETWORK, CONTAINERD_NAMESPACE, SOCKET_ROOT, NodeFiles

BLACKHOLE_ROUTES = ("198.18.0.0/15",)
# What the kubelet sets on the host (container_manager_linux.go); restored on stop.
KERNEL_TUNABLES = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
)
FORWARD_GUARD = "IOP-NODE-FORWARD"  # mangle table: what enters from the bridge may only leave through it
OUR_CHAIN_PREFIXES = ("KUBE-", "CNI-HOSTPORT-", "CNI-DN-", FORWARD_GUARD)
IPTABLES_TABLES = ("nat", "filter", "mangle")
CGROUP_ROOT = Path("/sys/fs/cgroup")
# Paths the kubelet hard-codes whatever its root dir: the device-plugin socket, and a symlink per
# container into the Pod logs dir. The symlinks are ours when they point into our work dir.
KUBELET_DEVICE_PLUGINS = Path("/var/lib/kubelet/device-plugins")
CONTAINER_LOG_LINKS = Path("/var/log/containers")
SHIM_SOCKETS = Path("/run/containerd/s")  # fixed in containerd (defaults.DefaultStateDir), names hashed
CNI_CACHE = Path("/var/lib/cni/results")  # libcni's cache: containerd offers no setting for it
COMMAND_TIMEOUT_SECONDS = 30.0
MNT_DETACH = 2

logger = logging.getLogger("cluster")


class NodeError(RuntimeError):
    """The real node could not be set up or cleaned up."""


def _run(*argv: str, check: bool = True, timeout: float = COMMAND_TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PATH": os.environ.get("PATH", "") + ":/usr/sbin:/sbin"}
    try:
        result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NodeError(f"{shlex.join(argv)} failed: {error}") from error
    if check and result.returncode != 0:
        raise NodeError(f"{shlex.join(argv)} failed with exit code {result.returncode}: {result.stderr.strip()}")
    return result


# --- network ----------------------------------------------------------------


def bridge_owner() -> str | None:
    """The work dir that owns the node bridge (its alias), '' if unnamed, None if there is no bridge."""
    result = _run("ip", "-j", "-d", "link", "show", "dev", BRIDGE, check=False)
    if result.returncode != 0:
        return None
    links = json.loads(result.stdout or "[]")
    return str(links[0].get("ifalias", "")) if links else None


HOST_TOOLS = {"ip": "iproute2", "iptables": "iptables", "iptables-save": "iptables", "sysctl": "procps"}
HOST_TOOLS |= {"nsenter": "util-linux", "runc": "runc", "conntrack": "conntrack"}


def refuse_if_taken(files: NodeFiles) -> None:
    """Refuse early: without root or the host tools; or when a second cluster with a real node would
    share the bridge, routes and iptables."""
    if os.geteuid() != 0:
        raise NodeError(
            "the real node needs root (it creates a bridge, routes, iptables rules and mounts); "
            "run as root, or start without it (--no-node, INFERENCE_OPERATOR_REAL_NODE=0)"
        )
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    if missing := sorted({package for tool, package in HOST_TOOLS.items() if not shutil.which(tool, path=path)}):
        raise NodeError(
            f"the real node needs the Debian packages {', '.join(missing)}: apt-get install -y {' '.join(missing)} "
            "(hack/build-controlplane.sh installs them when run as root)"
        )
    owner = bridge_owner()
    if owner is not None and owner != str(files.workdir.root):
        raise NodeError(
            f"the real node's bridge {BRIDGE} ({NODE_POD_CIDR}) already exists, owned by the cluster in "
            f"{owner or 'an unknown work dir'}: only one cluster per machine can run a real node. Stop that one "
            f"(python hack/cluster.py down --workdir {owner or 'DIR'}), start this one without a real node "
            f"(--no-node), or, if no such cluster runs, remove the leftover with: ip link del {BRIDGE}"
        )


def setup_network(files: NodeFiles) -> None:
    """The bridge with the node's host address, and the blackhole routes. Before the API server starts:
    it listens on the bridge address."""
    refuse_if_taken(files)
    if bridge_owner() is None:
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
    _run("ip", "link", "set", "dev", BRIDGE, "alias", str(files.workdir.root))
    _run("ip", "addr", "replace", f"{NODE_BRIDGE_ADDRESS}/{NODE_POD_CIDR.split('/')[1]}", "dev", BRIDGE)
    _run("ip", "link", "set", "dev", BRIDGE, "up")
    for route in BLACKHOLE_ROUTES:
        _run("ip", "route", "replace", "blackhole", route)
    # The host reaches ClusterIPs too (kube-proxy's OUTPUT rules), from its bridge address; without
    # kube-proxy such packets only reach the bridge. The route goes with the bridge.
    _run("ip", "route", "replace", SERVICE_CIDR, "dev", BRIDGE, "src", NODE_BRIDGE_ADDRESS)
    _guard_forwarding()
    logger.info(
        "Set up node network, bridge=%s, address=%s, blackhole=%s", BRIDGE, NODE_BRIDGE_ADDRESS, BLACKHOLE_ROUTES
    )


def _guard_forwarding() -> None:
    """Let the host route between Pods of the bridge (a Service whose endpoint is another Pod: DNAT,
    then back out of the bridge), and nothing else.

    Only the bridge's own ``forwarding`` flag is set (IPv4 decides per input interface, and the
    flag goes with the bridge); ``net.ipv4.ip_forward`` stays off for every other interface. The
    guard chain, first in mangle FORWARD, drops anything from the bridge to another interface, so
    even a Service with a hand-made endpoint off this machine cannot send a packet out of eth0.
    """
    iptables = ("iptables", "-w", "5", "-t", "mangle")
    if _run(*iptables, "-n", "-L", FORWARD_GUARD, check=False).returncode != 0:
        _run(*iptables, "-N", FORWARD_GUARD)
    _run(*iptables, "-F", FORWARD_GUARD)
    _run(*iptables, "-A", FORWARD_GUARD, "-i", BRIDGE, "!", "-o", BRIDGE, "-j", "DROP")
    if _run(*iptables, "-C", "FORWARD", "-j", FORWARD_GUARD, check=False).returncode != 0:
        _run(*iptables, "-I", "FORWARD", "1", "-j", FORWARD_GUARD)
    _run("sysctl", "-q", "-w", f"net.ipv4.conf.{BRIDGE}.forwarding=1")


def save_kernel_tunables(files: NodeFiles) -> None:
    """Remember the sysctls the kubelet will change (only the first time: a restart must not save its values)."""
    if files.saved_sysctls.exists():
        return
    values = {name: _run("sysctl", "-n", name).stdout.strip() for name in KERNEL_TUNABLES}
    files.saved_sysctls.write_text(json.dumps(values, indent=2) + "\n")


# --- images -----------------------------------------------------------------


def image_name(archive: Path) -> str:
    """The reference ``ctr images import`` registers an OCI archive as: its io.containerd.image.name
    annotation, else an org.opencontainers.image.ref.name that is a full reference (what
    ``buildah push IMAGE oci-archive:FILE:localhost/inference-operator/NAME:TAG`` writes)."""
    return image_reference(archive)[0]


def image_reference(archive: Path) -> tuple[str, str]:
    """The name (as :func:`image_name`) and the digest of the archive's image manifest."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        if member is None:
            raise NodeError(f"{archive} has no index.json: not an OCI image archive")
        index = json.load(member)
    for manifest in index.get("manifests", []):
        annotations = manifest.get("annotations", {})
        if name := annotations.get("io.containerd.image.name"):
            return str(name), str(manifest.get("digest", ""))
        if "/" in (name := annotations.get("org.opencontainers.image.ref.name", "")):
            return str(name), str(manifest.get("digest", ""))
    raise NodeError(
        f"{archive} names no image: its index.json has neither an io.containerd.image.name annotation nor a full "
        "reference as org.opencontainers.image.ref.name (ctr would call it import-<date>:<tag>); write it with "
        "the full name, e.g. buildah push IMAGE oci-archive:FILE:localhost/inference-operator/NAME:TAG"
    )


def ctr(bin_dir: Path, files: NodeFiles, *args: str, timeout: float = COMMAND_TIMEOUT_SECONDS) -> str:
    """Run ``ctr`` against this node's containerd, in the Kubernetes namespace; its stdout."""
    argv = [str(bin_dir / "ctr"), "--address", str(files.containerd_socket), "--namespace", CONTAINERD_NAMESPACE]
    return _run(*argv, *args, timeout=timeout).stdout


def import_image(bin_dir: Path, files: NodeFiles, archive: Path) -> str:
    """Import one OCI (or docker-save) archive into the node's containerd; the name it registered.

    Pods use it with ``imagePullPolicy: IfNotPresent`` or ``Never``; nothing is ever pulled.
    """
    if not archive.is_file():
        raise NodeError(f"no image archive at {archive}")
    name, digest = image_reference(archive)  # before the import: an unnamed one would become import-<date>:<tag>
    ctr(bin_dir, files, "images", "import", "--local", "--platform", "linux/amd64", str(archive), timeout=120)
    if digest:
        # A pull records the image by digest too; an import does not. Without this reference a
        # pod naming the image as repository@sha256:… would look for it in a registry.
        repository = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
        ctr(bin_dir, files, "images", "tag", "--force", name, f"{repository}@{digest}")
    return name


def import_images(bin_dir: Path, files: NodeFiles) -> list[str]:
    """Import every archive in ``<bin_dir>/images/`` (the pause image, at least) into containerd."""
    names = [import_image(bin_dir, files, archive) for archive in sorted((bin_dir / "images").glob("*.tar"))]
    logger.info("Imported images into the node's containerd, images=%s", names)
    return names


def get_plain(url: str) -> tuple[int, str]:
    """(status, body) of a plain-http loopback URL (kubelet and kube-proxy /healthz), never proxied."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


# --- cleanup ----------------------------------------------------------------


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline)
    return found


def kill_containers(files: NodeFiles, *, timeout: float = 15.0) -> list[str]:
    """SIGKILL every shim of this node's containerd and every process under them (the containers).

    Shims outlive containerd by design; they are found by the containerd address on their
    command line, so another cluster's containers are never touched. Returns the shims' ids (the
    Pod sandboxes, whose CNI cache entries are left behind: no CNI DEL ran).
    """
    address = str(files.containerd_socket)
    processes = _processes()
    targets = {pid for pid, (_, cmdline) in processes.items() if "containerd-shim" in cmdline and address in cmdline}
    frontier = set(targets)
    while frontier:  # descendants: bounded by the process table
        frontier = {pid for pid, (ppid, _) in processes.items() if ppid in frontier and pid not in targets}
        targets |= frontier
    for pid in targets:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in targets):
        time.sleep(0.05)
    ids = []
    for pid in targets:  # a killed shim leaves its socket behind (containerd's pkg/shim.SocketAddress)
        words = processes[pid][1].split()
        if "containerd-shim" in processes[pid][1] and "-id" in words and "-namespace" in words:
            ids.append(words[words.index("-id") + 1])
            path = "/".join((address, words[words.index("-namespace") + 1], ids[-1]))
            for variant in (path, path + "/debug"):
                (SHIM_SOCKETS / hashlib.sha256(variant.encode()).hexdigest()).unlink(missing_ok=True)
    return sorted(set(ids))


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root) + "/"
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")  # \040 and friends
        if point.startswith(prefix):
            mounts.append(point)
    return mounts


def unmount_all(root: Path) -> list[str]:
    """Lazily unmount everything mounted under `root` (rootfs overlays, shm, netns, volumes); what is left."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    for _ in range(10):  # stacked mounts need several passes; bounded
        mounts = _mounts_under(root)
        if not mounts:
            return []
        for point in sorted(mounts, key=len, reverse=True):
            libc.umount2(point.encode(), MNT_DETACH)
    return _mounts_under(root)


def _remove_our_iptables_chains() -> list[str]:
    """Delete the jumps to, then the chains named KUBE-*/CNI-HOSTPORT-*/CNI-DN-*; nothing else."""
    removed = []
    for table in IPTABLES_TABLES:
        dump = _run("iptables-save", "-t", table, check=False).stdout.splitlines()
        ours = [
            line[1:].split()[0] for line in dump if line.startswith(":") and line[1:].startswith(OUR_CHAIN_PREFIXES)
        ]
        if not ours:
            continue
        for line in dump:  # jumps from chains that are not ours (built-in ones): delete exactly those rules
            if line.startswith("-A ") and not line.split()[1].startswith(OUR_CHAIN_PREFIXES):
                words = shlex.split(line)
                if any(words[i] in ("-j", "-g") and words[i + 1] in ours for i in range(len(words) - 1)):
                    _run("iptables", "-w", "5", "-t", table, "-D", *words[1:], check=False)
        for chain in ours:
            _run("iptables", "-w", "5", "-t", table, "-F", chain, check=False)
        for chain in ours:
            _run("iptables", "-w", "5", "-t", table, "-X", chain, check=False)
        removed += [f"{table}/{chain}" for chain in ours]
    return removed


def _remove_cgroups() -> None:
    """rmdir the kubelet's empty kubepods hierarchies (cgroup v1: one per controller), deepest first."""
    for top in CGROUP_ROOT.glob("*/kubepods*"):
        for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def cleanup_host(files: NodeFiles, *, kube_proxy: Path | None) -> None:
    """Undo what the node did to the host: bridge, routes, iptables, sysctls, cgroups, CNI cache.

    Only for the work dir that owns the bridge (or when no bridge is left at all): another
    cluster's running node is never disturbed.
    """
    owner = bridge_owner()
    if owner not in (None, str(files.workdir.root)):
        logger.warning("Left the node network alone: bridge %s belongs to %s", BRIDGE, owner)
        return
    if kube_proxy is not None and kube_proxy.exists():
        _run(str(kube_proxy), "--cleanup", check=False, timeout=60)
    removed = _remove_our_iptables_chains()
    if owner is not None:
        _run("ip", "link", "del", BRIDGE, check=False)
    for route in BLACKHOLE_ROUTES:
        if _run("ip", "route", "show", "type", "blackhole", route, check=False).stdout.strip():
            _run("ip", "route", "del", "blackhole", route, check=False)
    if files.saved_sysctls.exists():
        for name, value in json.loads(files.saved_sysctls.read_text()).items():
            _run("sysctl", "-q", "-w", f"{name}={value}", check=False)
        files.saved_sysctls.unlink()
    _remove_cgroups()
    (KUBELET_DEVICE_PLUGINS / "kubelet.sock").unlink(missing_ok=True)
    for directory in (
        SHIM_SOCKETS,
        SHIM_SOCKETS.parent,
        CNI_CACHE,
        CNI_CACHE.parent,
        KUBELET_DEVICE_PLUGINS,
        KUBELET_DEVICE_PLUGINS.parent,
        CONTAINER_LOG_LINKS,
    ):  # if we made them
        with contextlib.suppress(OSError):
            directory.rmdir()  # only when empty
    logger.info("Cleaned up node network, bridge=%s, iptables_chains_removed=%d", BRIDGE, len(removed))


def cleanup_node(files: NodeFiles, *, kube_proxy: Path | None) -> None:
    """Everything after the node's processes got SIGTERM: containers, mounts, host state, files."""
    sandboxes = kill_containers(files)
    for sandbox in sandboxes:  # libcni's cache of the results CNI DEL never got to remove
        for cached in (f"{CNI_NETWORK}-{sandbox}-eth0", f"cni-loopback-{sandbox}-lo"):
            (CNI_CACHE / cached).unlink(missing_ok=True)
    for link in CONTAINER_LOG_LINKS.glob("*.log"):
        with contextlib.suppress(OSError):
            if link.is_symlink() and os.readlink(link).startswith(f"{files.pod_logs}/"):
                link.unlink()
    left = unmount_all(files.root)
    cleanup_host(files, kube_proxy=kube_proxy)
    if left:
        raise NodeError(
            f"could not unmount {len(left)} mount(s) under {files.root} (first: {left[0]}); "
            f"{files.root} is left in place: unmount by hand (umount -l), then remove it"
        )
    shutil.rmtree(files.root, ignore_errors=True)
    shutil.rmtree(files.socket_dir, ignore_errors=True)
    with contextlib.suppress(OSError):
        SOCKET_ROOT.rmdir()  # when no other cluster's socket is in it
    logger.info("Cleaned up the real node, pods_killed=%d, workdir=%s", len(sandboxes), files.workdir.root)
