"""The stand-in inference server (images/standin), built with ``go build`` and run as a process.

Covers, on 127.0.0.1 and a free port: the binary the image ships is built from source; with
``--load-delay 1s`` and a vLLM option it does not know, ``/health`` answers 503 first and then
200; ``/v1/models`` lists the model; a completion returns the prompt's words reversed; SIGTERM
stops it with exit code 0 promptly; ``--crash-after`` makes it exit with code 3 and say why.

Go is required: without it these tests fail (the stand-in is part of the product), they do not skip.
Waiting is polling with a deadline, never a sleep for the condition itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = "test/stand-in-model"
BUILD_TIMEOUT = 600  # a cold Go build cache on a busy machine
DEADLINE = 15.0
POLL_INTERVAL = 0.05


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in built exactly as the image build does (static, trimmed)."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not on PATH: the stand-in server (images/standin) is built with Go; install Go 1.26+")
    out = tmp_path_factory.mktemp("standin") / "standin"
    build = subprocess.run(
        [go, "build", "-trimpath", "-o", str(out), "./standin"],
        cwd=ROOT / "images",
        env={**os.environ, "CGO_ENABLED": "0"},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    if build.returncode != 0:
        pytest.fail(f"go build ./standin failed (exit {build.returncode}):\n{build.stderr}")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Standin:
    process: subprocess.Popen[str]
    base: str
    log: Path

    def output(self) -> str:
        return self.log.read_text()

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, str]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def exit_code(self, *, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the stand-in did not exit within {timeout}s; its output:\n{self.output()}")


@pytest.fixture
def start(binary: Path, tmp_path: Path) -> Iterator[Callable[..., Standin]]:
    """Starts stand-ins with extra arguments; kills any still running at the end."""
    started: list[Standin] = []

    def _start(*args: str) -> Standin:
        port = free_port()
        log = tmp_path / f"standin-{len(started)}.log"
        with log.open("w") as sink:
            process = subprocess.Popen(
                [str(binary), "--model", MODEL, "--host", "127.0.0.1", "--port", str(port), *args],
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
                env={k: v for k, v in os.environ.items() if not k.startswith("STANDIN_")},
            )
        standin = Standin(process, f"http://127.0.0.1:{port}", log)
        started.append(standin)
        return standin

    yield _start
    for standin in started:
        if standin.process.poll() is None:
            standin.process.kill()
            standin.process.wait(timeout=DEADLINE)


def test_health_turns_200_after_the_load_delay_and_the_api_answers(start: Callable[..., Standin]) -> None:
    standin = start("--load-delay", "1s", "--max-model-len", "8192")
    seen: list[int] = []
    deadline = time.monotonic() + DEADLINE
    while not seen or seen[-1] != 200:
        if time.monotonic() > deadline or standin.process.poll() is not None:
            pytest.fail(f"/health answered {seen} (no 200 within {DEADLINE}s); output:\n{standin.output()}")
        with contextlib.suppress(ConnectionError, urllib.error.URLError):  # not listening yet
            seen.append(standin.request("GET", "/health")[0])
        time.sleep(POLL_INTERVAL)  # a bounded poll interval, not a wait for the condition itself
    assert 503 in seen, f"/health never answered 503 during the 1s load: {seen}"
    assert set(seen) == {503, 200}

    status, body = standin.request("GET", "/v1/models")
    assert status == 200
    models = json.loads(body)
    assert models["object"] == "list" and [m["id"] for m in models["data"]] == [MODEL]

    status, body = standin.request("POST", "/v1/completions", {"model": MODEL, "prompt": "one two three"})
    assert status == 200, body
    completion = json.loads(body)
    assert completion["object"] == "text_completion" and completion["model"] == MODEL
    assert completion["choices"][0]["text"] == " three two one"

    status, body = standin.request("POST", "/v1/completions", {"model": "other", "prompt": "x"})
    assert status == 404 and json.loads(body)["error"]["code"] == "model_not_found"

    standin.process.send_signal(signal.SIGTERM)
    assert standin.exit_code(timeout=5) == 0
    output = standin.output()
    assert 'option="--max-model-len 8192"' in output
    assert "Received a stop signal; shutting down" in output and "msg=Stopped" in output


def test_crash_after_exits_with_code_3_and_says_why(start: Callable[..., Standin]) -> None:
    standin = start("--load-delay", "0s", "--crash-after", "500ms")
    assert standin.exit_code(timeout=DEADLINE) == 3
    assert "Crashing on purpose: --crash-after elapsed" in standin.output()
