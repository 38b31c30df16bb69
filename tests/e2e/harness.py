"""Helpers for the e2e suite: kubectl, polling with deadlines, the operator process, audit log.

Everything talks to a real API server (the local control plane, or any cluster the suite is
pointed at) through the same kubectl a user would run. Nothing sleeps to wait: every wait
polls a condition until a deadline and fails with what it last saw.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from inference_operator.api.samples import make_inference_service

T = TypeVar("T")
Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
OPERATOR_USER_AGENT = "inference-operator/"


class WaitTimeout(AssertionError):
    """A condition did not hold before its deadline."""


def wait_until(check: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.25) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = check()
        except Exception as err:  # noqa: BLE001 - a failing probe is just "not yet"
            last = f"{type(err).__name__}: {err}"
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last saw: {last!r}")
        # A bounded poll interval, not a wait for the condition itself.
        time.sleep(interval)


def _ephemeral_ports() -> range:
    """The range the kernel picks outgoing connections' local ports from."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


_LOW_PORTS = range(20000, 32000)
_START = os.getpid() % len(_LOW_PORTS)  # processes of one run start apart
_next_port = itertools.cycle([*_LOW_PORTS[_START:], *_LOW_PORTS[:_START]])


def free_port() -> int:
    """A free port on 127.0.0.1 outside the kernel's ephemeral range. A port from ``bind(0)`` is
    drawn from that range, and between its choice and the server's bind (seconds, for an
    operator that imports Kopf) one of the suite's many outgoing connections (kubectl, the
    apiserver's clients) may be given the same number; the server then cannot listen on it."""
    ephemeral = _ephemeral_ports()
    for _ in range(2000):
        port = next(_next_port)
        if port in ephemeral:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # the low range exhausted (it never is in this suite): any port
        s.bind(("127.0.0.1", 0))
        found: int = s.getsockname()[1]
        return found


def run_tool(
    binary: str,
    kubeconfig: Path,
    args: tuple[str, ...],
    *,
    env: dict[str, str],
    timeout: float,
    stdin: str | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run kubectl or helm against the cluster; with ``check``, a failure names the command."""
    result = subprocess.run(
        [binary, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    if check and result.returncode != 0:
        name = Path(binary).name
        raise AssertionError(f"{name} {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


@dataclass
class Kubectl:
    kubeconfig: Path
    env: dict[str, str]

    def run(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_tool("kubectl", self.kubeconfig, args, env=self.env, timeout=60, stdin=stdin, check=check)

    def wait_for(
        self, kind: str, name: str, namespace: str, holds: Callable[[Obj], bool], *, what: str, timeout: float = 90
    ) -> Obj:
        """Poll the object until ``holds(obj)``; returns it."""
        return wait_until(lambda: (o := self.get(kind, name, namespace)) and holds(o) and o, timeout=timeout, what=what)

    def wait_gone(self, kind: str, name: str, namespace: str, *, what: str, timeout: float = 90) -> None:
        wait_until(lambda: self.get(kind, name, namespace) is None, timeout=timeout, what=what)

    def json(self, *args: str, stdin: str | None = None) -> Obj:
        data: Obj = json.loads(self.run(*args, "-o", "json", stdin=stdin).stdout)
        return data

    def get(self, kind: str, name: str, namespace: str) -> Obj | None:
        result = self.run("get", kind, name, "-n", namespace, "-o", "json", "--ignore-not-found", check=False)
        if result.returncode != 0:
            raise AssertionError(f"kubectl get {kind} {name} failed: {result.stderr.strip()}")
        return json.loads(result.stdout) if result.stdout.strip() else None

    def apply(
        self, manifest: Obj | str, namespace: str | None = None, *, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        text = manifest if isinstance(manifest, str) else yaml.safe_dump(manifest)
        args = ["apply", "-f", "-"] + (["-n", namespace] if namespace else [])
        return self.run(*args, stdin=text, check=check)


ADMISSION_POLICY_DIR = ROOT / "deploy" / "admission"
FINALIZER = "serving.inference-operator.dev/loadbalancer-cleanup"  # spelled out: a fixed, public name


def probe_object(namespace: str) -> Obj:
    return make_inference_service("admission-probe", image="vllm/vllm-openai:v0.7.0", model="m", namespace=namespace)


def finalizers_on_create(kubectl: Kubectl, obj: Obj) -> list[str]:
    """The finalizers the API server gives ``obj`` on create, asked with a server-side dry run
    (admission runs, nothing is stored, no operator sees it)."""
    created = kubectl.json("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(obj))
    return list(created["metadata"].get("finalizers") or [])


def install_crds(kubectl: Kubectl) -> None:
    """deploy/crds applied, and the InferenceService CRD Established (served) before returning."""
    kubectl.run("apply", "-f", str(ROOT / "deploy" / "crds"))
    kubectl.run(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/inferenceservices.serving.inference-operator.dev"
    )


def install_admission_policy(kubectl: Kubectl, namespace: str, *, timeout: float = 30) -> None:
    """Apply deploy/admission and wait until the API server enforces it (policies take effect
    when the API server's informer has seen them, a moment after the apply returns)."""
    kubectl.run("apply", "-f", str(ADMISSION_POLICY_DIR))
    wait_until(
        lambda: FINALIZER in finalizers_on_create(kubectl, probe_object(namespace)),
        timeout=timeout,
        what="the finalizer admission policy to take effect",
    )


CONFINEMENT_POLICY = ADMISSION_POLICY_DIR / "confinement-policy.yaml"
SHIPPED_OPERATOR_USER = "system:serviceaccount:inference-operator:inference-operator"


def install_confinement_policy(kubectl: Kubectl, *, namespace: str, service_account: str, suffix: str) -> None:
    """deploy/admission/confinement-policy.yaml for another ServiceAccount (the suite's operator
    runs as its own), under names ending in ``suffix``, as the Helm chart renders it."""
    docs = _policy_docs(CONFINEMENT_POLICY, namespace=namespace, service_account=service_account, suffix=suffix)
    kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def _policy_docs(path: Path, *, namespace: str, service_account: str, suffix: str) -> list[Obj]:
    """A shipped admission policy and its binding, for another ServiceAccount, under names ending
    in ``suffix``."""
    text = path.read_text().replace(SHIPPED_OPERATOR_USER, f"system:serviceaccount:{namespace}:{service_account}")
    docs = [d for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        doc["metadata"]["name"] += suffix
        if "policyName" in doc["spec"]:
            doc["spec"]["policyName"] += suffix
    return docs


def condition(obj: Obj | None, type_: str) -> Obj:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return {}


def is_ready(obj: Obj | None) -> bool:
    status = (obj or {}).get("status") or {}
    meta = (obj or {}).get("metadata") or {}
    return condition(obj, "Ready").get("status") == "True" and status.get("observedGeneration") == meta.get(
        "generation"
    )


class AuditLog:
    """The API server's audit log (JSON lines, one event per request)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def events_since(self, offset: int) -> Iterator[Obj]:
        with self.path.open("rb") as f:
            f.seek(offset)
            for line in f:
                if line.strip():
                    yield json.loads(line)

    def operator_writes_since(self, offset: int) -> list[str]:
        """Mutating requests the operator sent (Events and Lease renewals excluded), as
        ``verb resource ns/name``."""
        out = []
        for event in self.events_since(offset):
            if event.get("stage") != "ResponseComplete":
                continue
            if not str(event.get("userAgent", "")).startswith(OPERATOR_USER_AGENT):
                continue
            ref = event.get("objectRef") or {}
            if event.get("verb") not in ("create", "update", "patch", "delete"):
                continue
            if ref.get("resource") in ("events", "leases"):  # posting Events, renewing the leader lease
                continue
            out.append(
                f"{event['verb']} {ref.get('resource')}/{ref.get('subresource', '')} "
                f"{ref.get('namespace')}/{ref.get('name')}"
            )
        return out


class OperatorProcess:
    """``inference-operator run`` as a child process, the way a user starts it."""

    def __init__(
        self,
        kubeconfig: Path,
        env: dict[str, str],
        log_path: Path,
        *extra_args: str,
        identity: str = "",
        lease_namespace: str = "",
        standby: bool = False,
        python_args: tuple[str, ...] = (),
    ) -> None:
        """``identity`` names the replica in the leader Lease (kept across ``start`` after a
        crash, so a restart takes its own Lease back at once, as a restarted pod of the same
        name does; it writes only a renew deadline later, as a record it did not write may
        have replaced a live holder); ``lease_namespace`` is where the Lease lives (the identity needs get, create
        and update on Leases there); ``standby``: ``start`` does not wait for it to lead;
        ``python_args``: what the interpreter runs the operator through (a profiler's
        ``-m memray run -o FILE``), before ``-m inference_operator``."""
        self.kubeconfig = kubeconfig
        self.identity = identity or f"e2e-{uuid.uuid4().hex[:8]}"
        self.standby = standby
        self.env = {**env, "KUBECONFIG": str(kubeconfig), "INFERENCE_OPERATOR_IDENTITY": self.identity}
        if lease_namespace:
            self.env["INFERENCE_OPERATOR_LEASE_NAMESPACE"] = lease_namespace
        self.log_path = log_path
        self.extra_args = list(extra_args)
        self.python_args = list(python_args)
        self.port = free_port()
        self.metrics_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def probe_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/healthz"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def start(self, timeout: float = 60) -> None:
        assert self.process is None, "operator already running"
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                *self.python_args,
                "-m",
                "inference_operator",
                "run",
                "--liveness",
                self.probe_url,
                "--metrics-address",
                f"127.0.0.1:{self.metrics_port}",
                *self.extra_args,
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
        log.close()
        try:
            wait_until(self._alive_and_serving, timeout=timeout, what="the operator to start its workers")
            wait_until(self._alive_and_live, timeout=timeout, what=f"the operator's liveness endpoint {self.probe_url}")
            if not self.standby:
                wait_until(self.leading, timeout=timeout, what=f"the operator {self.identity} to hold the leader lease")
        except WaitTimeout as err:
            raise WaitTimeout(f"{err}\noperator log {self.log_path}, last lines:\n{self.log_tail()}") from None

    def leading(self) -> bool:
        """True while this replica holds the leader lease (its metrics say so)."""
        return self.stats().get("leader_election_master_status") == 1.0

    def _check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"operator exited with {self.process.returncode}; log tail:\n{self.log_tail()}")

    def _alive_and_serving(self) -> dict[str, float] | None:
        self._check_alive()
        return self.stats()

    def _alive_and_live(self) -> Obj | None:
        self._check_alive()
        return self._liveness()

    def _liveness(self) -> Obj | None:
        with urllib.request.urlopen(self.probe_url, timeout=2) as response:
            data: Obj = json.loads(response.read())
            return data

    def stats(self) -> dict[str, float]:
        """The operator's live counters from /metrics, by short name (``reconcile_total`` …)."""
        with urllib.request.urlopen(self.metrics_url, timeout=2) as response:
            text = response.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                series, value = line.rsplit(" ", 1)
                name = series.partition("{")[0].removeprefix("inference_operator_")
                out[name] = out.get(name, 0.0) + float(value)  # summed over labels
        return out

    def wait_idle(self, *, reconciles_at_least: float, timeout: float = 60) -> dict[str, float]:
        """Until at least that many reconciles ran and no key is ready or being processed."""
        return wait_until(
            lambda: (
                (st := self.stats())["reconcile_total"] >= reconciles_at_least and st["workqueue_depth"] == 0 and st
            ),
            timeout=timeout,
            what=f"the operator to run {reconciles_at_least:.0f} reconciles and go idle",
        )

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM (graceful: Kopf stops watching, workers finish the item in hand), then wait."""
        if self.process is None:
            return 0
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise AssertionError(f"operator did not stop within {timeout}s; log tail:\n{self.log_tail()}") from None
        finally:
            self.process = None
        return code

    def kill(self) -> None:
        """SIGKILL, as a lost node does: nothing is released, nothing is flushed."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGKILL)
        try:
            self.process.wait(10)
        finally:
            self.process = None

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


QUICK_LEASE = {
    "INFERENCE_OPERATOR_LEASE_DURATION": "8",
    "INFERENCE_OPERATOR_RENEW_DEADLINE": "5",
    "INFERENCE_OPERATOR_RETRY_PERIOD": "1",
}
"""Leader election timings for tests that start operators again and again, or take over again
and again, but do not measure the default figures (15, 10 and 2 s): a start with a Lease it did
not last write waits one renew deadline before writing (5 s here instead of 10), and a takeover
from a frozen leader waits one lease duration (8 s instead of 15). The operator's order (retry
period < renew deadline - safety margin < lease duration) holds. What shrinks: a leader's write
window is 4 s after a renewal is sent (renewals every 1 s), and a write's flight budget is 4 s
after an expiry (6 s with the defaults) and 1 s after a deletion (the same)."""


def operator_env(bin_dir: Path | None, *, quick_lease: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    if bin_dir is not None:
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    if quick_lease:
        env.update(QUICK_LEASE)
    return env
