"""Process and loopback-HTTP plumbing for the local control plane.

Why a module of its own: stopping processes reliably (SIGTERM, a deadline,
SIGKILL, reaping, not killing a recycled pid) and probing endpoints without
ever going through an HTTP proxy are fiddly, and ``cluster.py`` should read as
the start/stop sequence only. Standard library only; Linux (/proc) assumed.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

LOG_TAIL_LINES = 30
STOP_GRACE_SECONDS = 15.0


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a log file, or a note that it is missing."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def die_with_parent() -> None:
    """Popen preexec_fn: SIGKILL the child when the thread that started it dies (Linux).

    SIGKILL, not SIGTERM: all components would get it at once, and a
    kube-apiserver whose etcd is gone hangs in its graceful shutdown. When the
    test process is gone nobody needs a graceful shutdown of throw-away data.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def pid_alive(pid: int) -> bool:
    """True if `pid` runs and is not a zombie (orphans may be reaped late by pid 1)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def pid_runs(pid: int, executable: str) -> bool:
    """True if `pid` is alive and still runs `executable` (guards against pid reuse)."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
    except OSError:
        return False
    return argv0 == executable and pid_alive(pid)


def terminate(
    pids: dict[str, int], *, grace: float = STOP_GRACE_SECONDS, reap: Callable[[], None] = lambda: None
) -> list[str]:
    """SIGTERM all `pids`, wait up to `grace` seconds, then SIGKILL. Returns the names killed.

    `reap` is called while waiting so a parent can collect its exited children.
    """
    for pid in pids.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap()
        if not any(pid_alive(pid) for pid in pids.values()):
            return []
        time.sleep(0.05)
    killed = [name for name, pid in pids.items() if pid_alive(pid)]
    for name in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pids[name], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(pid_alive(pids[name]) for name in killed):
        reap()
        time.sleep(0.05)
    return killed


class ApiClient:
    """Just enough HTTPS for health checks and bootstrap objects; never proxied.

    Authenticates with the client certificate `pki/<user>.crt` and trusts only
    `pki/ca.crt`.
    """

    def __init__(self, server: str, pki: Path, user: str = "admin") -> None:
        self.server = server
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / f"{user}.crt"), str(pki / f"{user}.key"))
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )

    def request(self, method: str, url: str, body: object = None) -> tuple[int, bytes]:
        """(status, body) for a path on the API server or a full https URL; OSError if nothing answers."""
        data = None if body is None else json.dumps(body).encode()
        full = url if url.startswith("https://") else self.server + url
        request = urllib.request.Request(full, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with self._opener.open(request, timeout=5) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def get_json(self, url: str) -> Any:
        """The decoded body of a 200 answer, else None."""
        status, body = self.request("GET", url)
        return json.loads(body) if status == 200 else None


def get_plain_json(url: str) -> Any:
    """GET a plain-http loopback URL (etcd's /health), bypassing any proxy settings."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        return json.loads(response.read())
