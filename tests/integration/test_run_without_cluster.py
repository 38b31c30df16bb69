"""``inference-operator run`` with no API server where KUBECONFIG points: it says so, and stops.

Covers: against a closed port on 127.0.0.1 (bound by the test, then closed), ``run
--connect-timeout 0`` makes one attempt and exits 1 with one line naming the server and the
cause; with a short timeout it prints one line per failed attempt, then the error, and exits
within the timeout plus one attempt; against a port that accepts and never answers (bound by
the test), the one attempt times out after its 5 s rather than hanging or being sent again.
Nothing but 127.0.0.1 is contacted.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "https://127.0.0.1:{port}", insecure-skip-tls-verify: true}}
users:
- name: me
  user: {{token: not-a-token}}
contexts:
- name: local
  context: {{cluster: local, user: me}}
current-context: local
"""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture()
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def run(tmp_path: Path, port: int, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.format(port=port))
    env = {"PATH": os.environ.get("PATH", "/usr/bin"), "HOME": str(tmp_path), "KUBECONFIG": str(kubeconfig)}
    return subprocess.run(
        [sys.executable, "-m", "inference_operator", "run", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_one_attempt_then_one_line_and_exit_code_one(tmp_path: Path) -> None:
    port = closed_port()
    done = run(tmp_path, port, "--connect-timeout", "0")
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"error: cannot reach the API server at https://127.0.0.1:{port}: connection refused\n"


def test_a_short_wait_prints_one_line_per_attempt_and_ends_in_time(tmp_path: Path) -> None:
    port = closed_port()
    started = time.monotonic()
    done = run(tmp_path, port, "--connect-timeout", "2")
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert lines[-1] == f"error: cannot reach the API server at https://127.0.0.1:{port} for 2s: connection refused"
    assert lines[:-1] and all(line.startswith("cannot reach the API server at") for line in lines[:-1])
    assert time.monotonic() - started < 30


def test_a_server_that_never_answers_is_given_up_on(tmp_path: Path, silent_server: int) -> None:
    started = time.monotonic()
    done = run(tmp_path, silent_server, "--connect-timeout", "0")
    took = time.monotonic() - started
    assert done.returncode == 1 and "Traceback" not in done.stderr
    # One attempt is one 5 s timeout (plus the start of a Python process), not four of them.
    assert took < 12, f"{took:.1f}s: the attempt was sent again after its timeout"
    assert done.stderr.startswith(f"error: cannot reach the API server at https://127.0.0.1:{silent_server}: ")
    assert len(done.stderr.splitlines()) == 1
