"""The processes of one local cluster: launched with a log each, polled until ready against one
start deadline, restarted with the same command line, stopped in order.

Why apart from ``cluster_plane.py``: what a component *is* (flags, configs, readiness checks)
belongs to the plane and its config modules; how a process is run, watched and reaped is the
same for all of them, and is what a crash-looping or leaked component gets wrong.
"""

from __future__ import annotations

import http.client
import logging
import os
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cluster_procs import STOP_GRACE_SECONDS, die_with_parent, log_tail, terminate

POLL_INTERVAL_SECONDS = 0.1

logger = logging.getLogger("cluster")


class ControlPlaneError(RuntimeError):
    """The local control plane could not be built, started, or stopped."""


@dataclass
class Component:
    name: str
    argv: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None


class Components:
    """The component processes by name, in the order they were added.

    ``detach=False`` kills them if the thread that launched them dies (a crashed or forgotten
    test run leaks nothing); ``detach=True`` lets them outlive this process (the ``up`` command).
    ``on_launch`` runs after every launch (the plane writes its ``state.json`` there).
    """

    def __init__(
        self, *, cwd: Path, logs: Path, detach: bool, ready_timeout: float, on_launch: Callable[[], None]
    ) -> None:
        self.cwd = cwd
        self.logs = logs
        self.detach = detach
        self.ready_timeout = ready_timeout
        self.on_launch = on_launch
        self.items: dict[str, Component] = {}
        self.deadline = 0.0

    def add(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.items[name] = Component(name, argv, self.logs / f"{name}.log", env or {})

    def pids(self) -> dict[str, int]:
        """The process id of each running component, by name."""
        return {c.name: c.process.pid for c in self.items.values() if c.process is not None}

    def executables(self) -> dict[str, str]:
        return {c.name: c.argv[0] for c in self.items.values()}

    def start_clock(self) -> None:
        """Every ``wait`` from now on shares one deadline, ``ready_timeout`` away."""
        self.deadline = time.monotonic() + self.ready_timeout

    def launch(self, name: str) -> None:
        component = self.items[name]
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
                cwd=self.cwd,
                start_new_session=True,  # a Ctrl-C in the terminal goes to us, not to them
                preexec_fn=None if self.detach else die_with_parent,
            )
        logger.info("Started %s, pid=%d, log=%s", name, component.process.pid, component.log)
        self.on_launch()

    def wait(self, name: str, check: Callable[[], str | None]) -> None:
        """Poll `check` (None: ready; else what is missing) until the start deadline."""
        missing = "not checked yet"
        while time.monotonic() < self.deadline:
            self.check_alive()
            try:
                result = check()
            except (OSError, ValueError, http.client.HTTPException) as error:  # refused/reset while starting
                result = f"not answering yet ({error})"
            if result is None:
                logger.info("Checked %s is ready", name)
                return
            missing = result
            time.sleep(POLL_INTERVAL_SECONDS)
        log = self.items[name].log
        raise ControlPlaneError(
            f"{name} was not ready {self.ready_timeout:g}s after start: {missing}.\n"
            f"Last lines of {log} (all logs: {self.logs}):\n{log_tail(log)}"
        )

    def check_alive(self) -> None:
        for component in self.items.values():
            if component.process is not None and component.process.poll() is not None:
                raise ControlPlaneError(
                    f"{component.name} exited with code {component.process.returncode} while the control plane "
                    f"was starting. Its command line is the first line of its log.\n"
                    f"Last lines of {component.log} (all logs: {self.logs}):\n{log_tail(component.log)}"
                )

    def restart(self, name: str, check: Callable[[], str | None], *, hard: bool) -> float:
        """Stop one component (SIGKILL if ``hard``, else SIGTERM) and launch it again with the
        same command line; return once ``check`` says it is ready, with the seconds it was away."""
        component = self.items.get(name)
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
        self.start_clock()
        self.launch(name)
        self.wait(name, check)
        away = time.monotonic() - started
        logger.info("Restarted %s, seconds=%.1f, pid=%d", name, away, self.pids()[name])
        return away

    def stop(self, *, first: Iterable[str], last: str) -> bool:
        """Stop the running components: ``first`` together, then the rest but ``last``, then
        ``last``; reap every one. False when nothing was running."""
        running = {c.name: c.process for c in self.items.values() if c.process is not None}
        if not running:
            return False

        def reap() -> None:
            for process in running.values():
                process.poll()

        early = set(first)
        pids = {name: process.pid for name, process in running.items()}
        killed = terminate({n: p for n, p in pids.items() if n in early}, reap=reap)
        killed += terminate({n: p for n, p in pids.items() if n not in early and n != last}, reap=reap)
        if last in pids:
            killed += terminate({last: pids[last]}, reap=reap)
        for component in self.items.values():
            if component.process is not None:
                component.process.wait(timeout=5)
                component.process = None
        if killed:
            logger.warning("Killed components that ignored SIGTERM for %.0fs, names=%s", STOP_GRACE_SECONDS, killed)
        return True
