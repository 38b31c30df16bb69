#!/usr/bin/env python3
"""Kopf alone: the operator's streams and Kopf settings, into a sink that drops every event.

What the operator costs before any work of its own: Kopf lists and watches the same kinds with
the same selectors and page size (``operator.configure`` and ``operator.register_streams``, the
operator's own functions), parses every event and hands it to a sink that drops it. It never
reconciles, caches or writes. ``bench/cluster.py --kopf-alone`` runs it beside the operator
(:class:`KopfAlone`), so both see the same events, and prints its CPU per object and memory:
the floor of the operator's.

It logs in as the operator does (``operator.login``: the credentials of ``kube/kubeconfig.py``).

It always runs cluster-wide (the benchmark's operator does too), without the operator's
liveness endpoint and log options.

Usage: KUBECONFIG=... python bench/kopfalone.py
(prints "kopf alone: started" once its startup handler ran)
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procstats import cpu_seconds

if TYPE_CHECKING:
    import kopf

ROOT = Path(__file__).resolve().parents[1]
STARTED = "kopf alone: started"


class KopfAlone:
    """This script as a child process, its output in ``log_path``."""

    name = "kopf alone"

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else 0

    def start(self, timeout: float = 60) -> None:
        """Start it and wait until its startup handler ran (the watches begin right after); a
        restart appends to the same log and waits for its own line."""
        from tests.e2e.harness import WaitTimeout, wait_until  # the launcher's, not the measured process's

        args = [sys.executable, str(Path(__file__).resolve())]
        with self.log_path.open("ab") as log:
            offset = log.tell()
            process = self.process = subprocess.Popen(
                args, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
            )

        def started() -> bool:
            if process.poll() is not None:  # SystemExit passes through wait_until
                raise SystemExit(f"{self.name} exited with {process.returncode}:\n{self._output(offset)[-3000:]}")
            return STARTED in self._output(offset)

        try:
            wait_until(started, timeout=timeout, what=f"{self.name} to start", interval=0.1)
        except WaitTimeout as err:
            raise SystemExit(f"{err}:\n{self._output(offset)[-3000:]}") from None

    def _output(self, offset: int) -> str:
        with self.log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")

    def wait_idle(self, timeout: float = 120, quiet: float = 1.0) -> None:
        """Wait until it used no CPU for ``quiet`` seconds: every event it was sent is handled."""
        from tests.e2e.harness import wait_until

        last: list[float] = []

        def settled() -> bool:
            now = cpu_seconds(self.pid)
            idle = bool(last) and now == last[-1]
            last.append(now)
            return idle

        wait_until(settled, timeout=timeout, what=f"{self.name} to use no CPU for {quiet:.0f}s", interval=quiet)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
            self.process = None


def build() -> kopf.OperatorRegistry:
    """The registry Kopf runs: the operator's watches with handlers that return at once, its
    settings at startup, and its login handler."""
    import kopf

    from inference_operator.kube.config import OperatorConfig
    from inference_operator.operator import configure, login, register_streams

    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def start(settings: kopf.OperatorSettings, **_: Any) -> None:
        configure(settings, OperatorConfig.from_env())
        print(STARTED, flush=True)

    # A registry of one's own has none of the login handlers Kopf puts in its default one.
    kopf.on.login(registry=registry)(login)
    register_streams(registry, ready)
    return registry


def drop(_kind: str, _type: str | None, _obj: object) -> None:
    """The sink of every stream: Kopf has done all its work when it is called."""


def ready() -> tuple[Any, Callable[[str, str | None, Any], None]]:
    """What the streams follow (what the operator streams, by its config from this
    environment) and their sink."""
    from inference_operator.kube.config import OperatorConfig
    from inference_operator.kube.streams import sources_of

    config = OperatorConfig.from_env()
    return sources_of(namespaces=config.namespaces, reads_capacity=config.reads_capacity), drop


def main() -> None:
    sys.path.insert(0, str(ROOT))
    registry = build()

    import kopf

    from inference_operator.core.process import limit_malloc_arenas

    limit_malloc_arenas()
    kopf.configure(verbose=False)
    kopf.run(registry=registry, clusterwide=True, standalone=True)


if __name__ == "__main__":
    main()
