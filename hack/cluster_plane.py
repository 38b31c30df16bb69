"""``LocalControlPlane``: one local cluster, its components started in dependency order and
stopped leaving nothing behind; optionally with the real node (``cluster_node.py``).

Why apart from ``cluster.py``: that file is the entry point (CLI, ``start_control_plane``); this
one is the cluster's life cycle, which the tests drive directly (``restart``, ``import_image``).
What each component is lives in ``cluster_config.py`` / ``cluster_node_config.py``, when it is
ready in ``cluster_ready.py``, how its process runs in ``cluster_components.py``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from cluster_binaries import BUILD_SCRIPT, HACK_DIR
from cluster_components import Components, ControlPlaneError
from cluster_config import (
    COMPONENTS,
    NODE_BRIDGE_ADDRESS,
    PkiError,
    Workdir,
    component_flags,
    fake_node,
    write_configs,
)
from cluster_node import (
    NodeError,
    bridge_owner,
    cleanup_node,
    ctr,
    image_name,
    import_image,
    import_images,
    refuse_if_taken,
    save_kernel_tunables,
    setup_network,
)
from cluster_node_config import NODE_COMPONENTS, NodeFiles, node_flags, write_node_configs
from cluster_procs import ApiClient, free_port, pid_runs
from cluster_ready import ReadinessChecks
from cluster_state import read_state

KWOK_STAGES = HACK_DIR / "controlplane" / "kwok-stages.yaml"
PAUSE_ARCHIVE = Path("images") / "pause.oci.tar"  # in the bin dir (hack/build-node.sh)
CLI = HACK_DIR / "cluster.py"

logger = logging.getLogger("cluster")


class LocalControlPlane:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok, on 127.0.0.1.

    ``start()`` returns once the API is ready, the fake Nodes are Ready and
    untainted, the default ServiceAccount exists and the controller-manager and
    scheduler are healthy; ``stop()`` leaves no process behind. With
    ``detach=False`` the components are killed if the thread that started
    them dies (so a crashed or forgotten test run leaks nothing: start from
    the main thread, or from a thread that outlives the cluster);
    ``detach=True`` lets them outlive this process (the ``up`` command).
    """

    def __init__(
        self,
        workdir: Path,
        bin_dir: Path,
        *,
        nodes: int = 2,
        gpus_per_node: int = 8,
        ready_timeout: float = 90.0,
        verbosity: int = 0,
        detach: bool = False,
        real_node: bool = False,
    ) -> None:
        self.files = Workdir(workdir.resolve())
        self.workdir = self.files.root
        self.bin_dir = bin_dir
        self.nodes = nodes
        self.gpus_per_node = gpus_per_node
        self.ready_timeout = ready_timeout
        self.verbosity = verbosity
        self.detach = detach
        self.real_node = real_node
        self.node_files = NodeFiles(self.files)
        self.kubeconfig = self.files.kubeconfig
        self.audit_log = self.files.audit_log
        self.ports: dict[str, int] = {}
        self._checks = ReadinessChecks(
            client=self.client, ports=self.ports, nodes=nodes, real_node=real_node, ctr=self._ctr_version
        )
        self.startup_seconds: float | None = None
        self._components = Components(
            cwd=self.workdir,
            logs=self.files.logs,
            detach=detach,
            ready_timeout=ready_timeout,
            on_launch=self._write_state,
        )

    @property
    def server(self) -> str:
        host = NODE_BRIDGE_ADDRESS if self.real_node else "127.0.0.1"  # Pods reach it on the bridge
        return f"https://{host}:{self.ports['kube-apiserver']}"

    def node_names(self) -> list[str]:
        return [f"kwok-node-{i}" for i in range(self.nodes)]

    def pids(self) -> dict[str, int]:
        """The process id of each running component, by name."""
        return self._components.pids()

    def _ctr_version(self) -> None:
        ctr(self.bin_dir, self.node_files, "version", timeout=5)

    def client(self) -> ApiClient:
        """An admin HTTPS client for the API server."""
        return ApiClient(self.server, self.files.pki)

    def __enter__(self) -> LocalControlPlane:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # start ------------------------------------------------------------------

    def start(self) -> None:
        started = time.monotonic()
        self._components.start_clock()
        binaries = [*COMPONENTS, *((*NODE_COMPONENTS, "ctr", str(PAUSE_ARCHIVE)) if self.real_node else ())]
        missing = [name for name in binaries if not os.access(self.bin_dir / name, os.R_OK)]
        if missing:
            raise ControlPlaneError(f"missing binaries in {self.bin_dir}: {', '.join(missing)}; run {BUILD_SCRIPT}")
        self._refuse_if_running()
        if self.real_node:
            try:
                refuse_if_taken(self.node_files)
            except NodeError as error:
                raise ControlPlaneError(str(error)) from error
        try:
            self._prepare_workdir()
            if self.real_node:
                setup_network(self.node_files)  # the API server listens on the bridge
            self._launch("etcd")
            self._wait("etcd", self._readiness("etcd"))
            self._launch("kube-apiserver")
            self._wait("kube-apiserver", self._readiness("kube-apiserver"))
            for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
                self._launch(name)
            self._create_nodes()
            self._wait("kwok", self._readiness("kwok"))
            self._wait("kube-controller-manager", self._readiness("kube-controller-manager"))
            self._wait("kube-scheduler", self._readiness("kube-scheduler"))
            if self.real_node:
                self._start_node()
        except (PkiError, NodeError) as error:
            self.stop()
            raise ControlPlaneError(str(error)) from error
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        logger.info(
            "Started local control plane, seconds=%.1f, server=%s, kubeconfig=%s",
            self.startup_seconds,
            self.server,
            self.kubeconfig,
        )

    def _refuse_if_running(self) -> None:
        state = read_state(self.workdir)
        if state and any(pid_runs(pid, state["executables"].get(n, "")) for n, pid in state["pids"].items()):
            raise ControlPlaneError(
                f"a control plane is already running from {self.workdir}; "
                f"stop it with: python {CLI} down --workdir {self.workdir}"
            )

    def _prepare_workdir(self) -> None:
        """A fresh cluster every time: remove what a previous start wrote (only that), write configs."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.node_files.root.exists() or self.node_files.saved_sysctls.exists():  # a crashed real node
            cleanup_node(self.node_files, kube_proxy=self.bin_dir / "kube-proxy")
        for stale in self.files.generated():
            if stale.is_dir():
                shutil.rmtree(stale)
            else:
                stale.unlink(missing_ok=True)
        self.files.logs.mkdir()
        for name in ("etcd-client", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            self.ports[name] = free_port()
        write_configs(self.files, server=self.server, kwok_stages=KWOK_STAGES)
        for name in COMPONENTS:
            flags = component_flags(
                name, workdir=self.files, ports=self.ports, verbosity=self.verbosity, real_node=self.real_node
            )
            # kwok also reads ~/.kwok/kwok.yaml when it exists: a private HOME keeps it hermetic.
            env = {"HOME": str(self.workdir / "kwok-home")} if name == "kwok" else {}
            self._components.add(name, [str(self.bin_dir / name), *flags], env)
        if self.real_node:
            self._prepare_node()

    def _prepare_node(self) -> None:
        for name in ("kubelet", "kubelet-healthz", "kube-proxy-healthz", "kube-proxy-metrics"):
            self.ports[name] = free_port()
        sandbox = image_name(self.bin_dir / PAUSE_ARCHIVE)
        write_node_configs(
            self.node_files, bin_dir=self.bin_dir, sandbox_image=sandbox, ports=self.ports, pki=self.files.pki
        )
        # containerd finds its shim and runc on PATH; everything it runs is the bin dir's or Debian's.
        env = {"PATH": f"{self.bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        for name in NODE_COMPONENTS:
            flags = node_flags(name, files=self.node_files, verbosity=self.verbosity)
            self._components.add(name, [str(self.bin_dir / name), *flags], env)

    def _start_node(self) -> None:
        """containerd, the local images, then kubelet and kube-proxy; returns when the Node is Ready."""
        save_kernel_tunables(self.node_files)
        self._launch("containerd")
        self._wait("containerd", self._readiness("containerd"))
        import_images(self.bin_dir, self.node_files)
        self._launch("kubelet")
        self._launch("kube-proxy")
        self._wait("kubelet", self._readiness("kubelet"))
        self._wait("kube-proxy", self._readiness("kube-proxy"))

    def _launch(self, name: str) -> None:
        self._components.launch(name)

    def _wait(self, name: str, check: Callable[[], str | None]) -> None:
        self._components.wait(name, check)

    def _create_nodes(self) -> None:
        client = self.client()
        for index, name in enumerate(self.node_names()):
            node = fake_node(name, index=index, gpus=self.gpus_per_node, gpu_taint=self.real_node)
            status, body = client.request("POST", "/api/v1/nodes", node)
            if status not in (201, 409):
                raise ControlPlaneError(f"creating Node {name} failed with {status}: {body[-500:]!r}")
        logger.info("Created fake nodes, names=%s, gpus_per_node=%d", self.node_names(), self.gpus_per_node)

    # images -----------------------------------------------------------------

    def import_image(self, archive: Path) -> str:
        """Import an OCI image archive into the real node's containerd (namespace k8s.io); its name."""
        if not self.real_node:
            raise ControlPlaneError("import_image needs the real node: start with real_node=True")
        try:
            name = import_image(self.bin_dir, self.node_files, archive)
        except NodeError as error:
            raise ControlPlaneError(str(error)) from error
        logger.info("Imported image into the real node, image=%s, archive=%s", name, archive)
        return name

    # restart ----------------------------------------------------------------

    def restart(self, name: str, *, hard: bool = False) -> float:
        """Stop one component and start it again with the same command line (same port,
        certificates, flags and data), as a crash-looping or upgraded pod would come back;
        return once it is ready again, with the seconds it was away.

        ``hard`` kills it with SIGKILL (a crash: no graceful shutdown, open watches cut);
        otherwise SIGTERM, as a rolling restart. The other components keep running and
        reconnect on their own, which is the point: clients see the outage a real one causes.
        """
        return self._components.restart(name, self._readiness(name), hard=hard)

    def _readiness(self, name: str) -> Callable[[], str | None]:
        """The check that says ``name`` is ready (None) or what is missing, as at start."""
        return self._checks.of(name)

    # stop -------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every component (etcd last) and reap it; idempotent."""
        if not self._components.stop(first=NODE_COMPONENTS, last="etcd"):  # etcd last: all need it
            self._cleanup_node()  # a start that failed before launching anything may have made the bridge
            return
        self.files.state.unlink(missing_ok=True)
        logger.info("Stopped local control plane, workdir=%s", self.workdir)
        self._cleanup_node()

    def _cleanup_node(self) -> None:
        """After the API server stopped (it listens on the bridge): containers, mounts, bridge, routes, rules."""
        files = self.node_files
        if not self.real_node or not (
            files.root.exists() or files.saved_sysctls.exists() or bridge_owner() == str(self.workdir)
        ):
            return  # already clean: a second stop() touches nothing
        try:
            cleanup_node(self.node_files, kube_proxy=self.bin_dir / "kube-proxy")
        except NodeError as error:
            raise ControlPlaneError(f"the real node was not cleaned up completely: {error}") from error

    def _write_state(self) -> None:
        state = {
            "pids": self.pids(),
            "executables": self._components.executables(),
            "ports": self.ports,
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "audit_log": str(self.audit_log),
            "logs": str(self.files.logs),
            "real_node": self.real_node,
            "containerd_socket": str(self.node_files.containerd_socket) if self.real_node else None,
        }
        self.files.state.write_text(json.dumps(state, indent=2) + "\n")
