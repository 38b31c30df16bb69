"""A real Kubernetes control plane as local processes, for the e2e suite.

Why this exists: the machines this project is built on have no Docker, so kind
cannot create clusters. The e2e suite still wants the real thing - the same
kube-apiserver, kube-controller-manager and kube-scheduler a kind node runs,
on a real etcd - because wherever our in-process fake and a real API server
disagree, the real one is right. kwok stands in for kubelets: it marks fake
Nodes (with ``nvidia.com/gpu`` capacity) and the Pods bound to them Ready.

Binaries come from ``hack/build-controlplane.sh`` (built once from pinned Go
modules, cached outside the repo). Everything else - PKI, kubeconfigs, the
audit policy, etcd data, logs - lives in a throw-away work directory:

    workdir/kubeconfig     admin (system:masters) kubeconfig
    workdir/audit.log      every mutating request, Metadata level (JSON lines)
    workdir/logs/*.log     one log per component: read these first when paged
    workdir/state.json     pids and ports, for ``down`` and ``status``

From pytest: ``start_control_plane(workdir)`` or ``with LocalControlPlane(...)``;
``plane.restart("kube-apiserver")`` stops one component and starts it again, same flags.
From a shell::

    eval "$(python hack/cluster.py up)"   # prints: export KUBECONFIG=...
    python hack/cluster.py status
    python hack/cluster.py down

With ``real_node=True`` (``up`` does it by default; ``--no-node`` or
``INFERENCE_OPERATOR_REAL_NODE=0`` leave it out) one real node joins the kwok ones:
containerd + kubelet + kube-proxy, Pods on a bridge at 198.18.200.0/24, the API server on
the bridge address 198.18.200.1 (see ``cluster_node.py`` for the host side and
``cluster_node_config.py`` for its configs). Needs root.

Standard library only (plus the ``openssl`` CLI, and ``ip``/``iptables``/``runc`` for the real
node). All traffic stays on this machine: 127.0.0.1, and the node's bridge.
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

HACK_DIR = Path(__file__).resolve().parent
if str(HACK_DIR) not in sys.path:  # also when this file is imported by path
    sys.path.insert(0, str(HACK_DIR))

from cluster_config import (  # noqa: E402
    COMPONENTS,
    NODE_BRIDGE_ADDRESS,
    PkiError,
    Workdir,
    component_flags,
    fake_node,
    write_configs,
)
from cluster_node import (  # noqa: E402
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
from cluster_node_config import NODE_COMPONENTS, NodeFiles, node_flags, write_node_configs  # noqa: E402
from cluster_procs import (  # noqa: E402
    STOP_GRACE_SECONDS,
    ApiClient,
    die_with_parent,
    free_port,
    log_tail,
    pid_runs,
    terminate,
)
from cluster_ready import ReadinessChecks  # noqa: E402
from cluster_state import print_status, read_state, stop_from_state  # noqa: E402

DEFAULT_WORKDIR = HACK_DIR.parent / ".cluster"
BUILD_SCRIPT = HACK_DIR / "build-controlplane.sh"
KWOK_STAGES = HACK_DIR / "controlplane" / "kwok-stages.yaml"
BIN_DIR_ENV = "INFERENCE_OPERATOR_BIN_DIR"
REAL_NODE_ENV = "INFERENCE_OPERATOR_REAL_NODE"  # 0: `up` starts no real node
PAUSE_ARCHIVE = Path("images") / "pause.oci.tar"  # in the bin dir (hack/build-node.sh)
POLL_INTERVAL_SECONDS = 0.1

logger = logging.getLogger("cluster")


class ControlPlaneError(RuntimeError):
    """The local control plane could not be built, started, or stopped."""


def ensure_binaries() -> Path:
    """The bin dir holding every control-plane binary, built first if needed.

    ``$INFERENCE_OPERATOR_BIN_DIR`` skips the build script (for machines that
    ship the binaries). Cold build: 5-25 minutes; cached: about a second.
    """
    if override := os.environ.get(BIN_DIR_ENV):
        return Path(override)
    logger.info("Ensuring control-plane binaries, script=%s", BUILD_SCRIPT)
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} failed with exit code {result.returncode}; its output above says why "
            "(build logs: ~/.cache/inference-operator/logs/)."
        )
    return Path(result.stdout.strip().splitlines()[-1])


@dataclass
class _Component:
    name: str
    argv: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None


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
        self._components: dict[str, _Component] = {}
        self._deadline = 0.0

    @property
    def server(self) -> str:
        host = NODE_BRIDGE_ADDRESS if self.real_node else "127.0.0.1"  # Pods reach it on the bridge
        return f"https://{host}:{self.ports['kube-apiserver']}"

    def node_names(self) -> list[str]:
        return [f"kwok-node-{i}" for i in range(self.nodes)]

    def pids(self) -> dict[str, int]:
        """The process id of each running component, by name."""
        return {c.name: c.process.pid for c in self._components.values() if c.process is not None}

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
        self._deadline = started + self.ready_timeout
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
                f"stop it with: python {Path(__file__)} down --workdir {self.workdir}"
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
            self._components[name] = _Component(
                name, [str(self.bin_dir / name), *flags], self.files.logs / f"{name}.log", env
            )
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
            self._components[name] = _Component(
                name, [str(self.bin_dir / name), *flags], self.files.logs / f"{name}.log", env
            )

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
        component = self._components[name]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | component.env
        with component.log.open("ab") as log:
            log.write(f"# {' '.join(component.argv)}\n".encode())
            log.flush()
            component.process = subprocess.Popen(
                component.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.workdir,
                start_new_session=True,  # a Ctrl-C in the terminal goes to us, not to them
                preexec_fn=None if self.detach else die_with_parent,
            )
        logger.info("Started %s, pid=%d, log=%s", name, component.process.pid, component.log)
        self._write_state()

    # readiness --------------------------------------------------------------

    def _wait(self, name: str, check: Callable[[], str | None]) -> None:
        """Poll `check` (None: ready; else what is missing) until the start deadline."""
        missing = "not checked yet"
        while time.monotonic() < self._deadline:
            self._check_alive()
            try:
                result = check()
            except (OSError, ValueError, http.client.HTTPException) as error:  # refused/reset while starting
                result = f"not answering yet ({error})"
            if result is None:
                logger.info("Checked %s is ready", name)
                return
            missing = result
            time.sleep(POLL_INTERVAL_SECONDS)
        log = self._components[name].log
        raise ControlPlaneError(
            f"{name} was not ready {self.ready_timeout:g}s after start: {missing}.\n"
            f"Last lines of {log} (all logs: {self.files.logs}):\n{log_tail(log)}"
        )

    def _check_alive(self) -> None:
        for component in self._components.values():
            if component.process is not None and component.process.poll() is not None:
                raise ControlPlaneError(
                    f"{component.name} exited with code {component.process.returncode} while the control plane "
                    f"was starting. Its command line is the first line of its log.\n"
                    f"Last lines of {component.log} (all logs: {self.files.logs}):\n{log_tail(component.log)}"
                )

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
        component = self._components.get(name)
        if component is None or component.process is None:
            raise ControlPlaneError(f"cannot restart {name}: it is not running (components: {', '.join(self.pids())})")
        started = time.monotonic()
        process = component.process
        if hard:
            process.kill()
            process.wait(timeout=STOP_GRACE_SECONDS)
        else:

            def reap() -> None:
                process.poll()

            killed = terminate({name: process.pid}, reap=reap)
            process.wait(timeout=5)
            if killed:
                logger.warning("Killed %s, it ignored SIGTERM for %.0fs", name, STOP_GRACE_SECONDS)
        component.process = None
        logger.info("Stopped %s for a restart, hard=%s, pid=%d", name, hard, process.pid)
        self._deadline = time.monotonic() + self.ready_timeout
        self._launch(name)
        self._wait(name, self._readiness(name))
        away = time.monotonic() - started
        logger.info("Restarted %s, seconds=%.1f, pid=%d", name, away, self.pids()[name])
        return away

    def _readiness(self, name: str) -> Callable[[], str | None]:
        """The check that says ``name`` is ready (None) or what is missing, as at start."""
        return self._checks.of(name)

    # stop -------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every component (etcd last) and reap it; idempotent."""
        running = {c.name: c.process for c in self._components.values() if c.process is not None}
        if not running:
            self._cleanup_node()  # a start that failed before launching anything may have made the bridge
            return

        def reap() -> None:
            for process in running.values():
                process.poll()

        pids = {name: process.pid for name, process in running.items()}
        killed = terminate({n: p for n, p in pids.items() if n in NODE_COMPONENTS}, reap=reap)
        killed += terminate({n: p for n, p in pids.items() if n not in NODE_COMPONENTS and n != "etcd"}, reap=reap)
        if "etcd" in pids:
            killed += terminate({"etcd": pids["etcd"]}, reap=reap)
        for component in self._components.values():
            if component.process is not None:
                component.process.wait(timeout=5)
                component.process = None
        if killed:
            logger.warning("Killed components that ignored SIGTERM for %.0fs, names=%s", STOP_GRACE_SECONDS, killed)
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
            "executables": {c.name: c.argv[0] for c in self._components.values()},
            "ports": self.ports,
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "audit_log": str(self.audit_log),
            "logs": str(self.files.logs),
            "real_node": self.real_node,
            "containerd_socket": str(self.node_files.containerd_socket) if self.real_node else None,
        }
        self.files.state.write_text(json.dumps(state, indent=2) + "\n")


def start_control_plane(
    workdir: Path,
    *,
    bin_dir: Path | None = None,
    nodes: int = 2,
    gpus_per_node: int = 8,
    ready_timeout: float = 90.0,
    real_node: bool = False,
) -> LocalControlPlane:
    """For pytest: build binaries if needed, start, return a ready control plane. Caller calls stop().

    `real_node` adds the one real node (containerd + kubelet + kube-proxy, see cluster_node.py).
    """
    plane = LocalControlPlane(
        workdir,
        bin_dir or ensure_binaries(),
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        ready_timeout=ready_timeout,
        real_node=real_node,
    )
    plane.start()
    return plane


# --- CLI --------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a local Kubernetes control plane for the e2e suite.")
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help=f"default: {DEFAULT_WORKDIR}")
    parser.add_argument("--bin-dir", type=Path, help=f"binaries (default: ${BIN_DIR_ENV}, else build them)")
    parser.add_argument("--nodes", type=int, default=2, help="number of fake kwok Nodes (default: 2)")
    parser.add_argument(
        "--no-node",
        action="store_true",
        help=f"start no real node (containerd + kubelet + kube-proxy); also: {REAL_NODE_ENV}=0",
    )
    parser.add_argument("-v", "--verbosity", type=int, default=0, help="component log verbosity (default: 0)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    workdir: Path = args.workdir.resolve()
    try:
        if args.command == "up":
            bin_dir = args.bin_dir or ensure_binaries()
            real_node = not args.no_node and os.environ.get(REAL_NODE_ENV, "1") != "0"
            plane = LocalControlPlane(
                workdir, bin_dir, nodes=args.nodes, verbosity=args.verbosity, detach=True, real_node=real_node
            )
            plane.start()
            print(f"export KUBECONFIG={plane.kubeconfig}")
            return 0
        if args.command == "down":
            if not stop_from_state(workdir):
                print(f"nothing to stop (no state in {workdir})", file=sys.stderr)
            return 0
        return print_status(workdir)
    except (ControlPlaneError, NodeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
