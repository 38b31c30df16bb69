"""Headless Chromium driven over the DevTools protocol on a pipe (no sockets, no dependencies).

Why our own client: Playwright's browsers cannot be downloaded here and the Debian ``chromium``
package is what CI has; ``--remote-debugging-pipe`` speaks CDP as NUL-separated JSON on file
descriptors 3 (commands in) and 4 (answers and events out), which a thread can read.

Used by the viewer's browser tests (tests/integration/test_viewer_browser.py,
tests/e2e/test_trace.py) and bench/viewer.py. ``chromium_path()`` installs the Debian package
through hack/install-chromium.sh when it is missing and fails loudly when it cannot.
The browser is kept off the network: it loads ``file://`` pages, resolves no host names
(``--host-resolver-rules``) and every request the page makes is recorded for the tests to check.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--no-first-run",
    "--metrics-recording-only",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--remote-debugging-pipe",
    "--window-size=1366,768",
    "--hide-scrollbars",
]
KEYS = {
    "ArrowRight": ("ArrowRight", 39, None),
    "ArrowLeft": ("ArrowLeft", 37, None),
    "Home": ("Home", 36, None),
    "End": ("End", 35, None),
    " ": ("Space", 32, " "),
    "Enter": ("Enter", 13, "\r"),
    "Tab": ("Tab", 9, None),
}


class BrowserError(RuntimeError):
    """Chromium did not start, answered with an error, or did not answer in time."""


def chromium_path() -> str:
    """The chromium binary, installed from Debian first if it is missing (never a skip)."""
    done = subprocess.run(
        ["bash", str(ROOT / "hack" / "install-chromium.sh")], capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise BrowserError(f"chromium is needed and could not be installed: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1]


class Page:
    """One tab, attached with a flat session: commands, events, and what the page did wrong."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.loaded = threading.Event()

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
            self.errors.append(f"console.{params['type']}: {[a.get('value') for a in params.get('args', [])]}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
            entry = params["entry"]
            self.errors.append(f"log {entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            self.requests.append(params.get("request", {}).get("url", ""))
        elif method == "Page.loadEventFired":
            self.loaded.set()

    def send(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def open(self, url: str, *, timeout: float = 30.0) -> None:
        self.loaded.clear()
        self.send("Page.navigate", {"url": url})
        if not self.loaded.wait(timeout):
            raise BrowserError(f"{url} did not finish loading in {timeout}s")

    def eval(self, expression: str, *, timeout: float = 30.0) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        answer = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=timeout,
        )
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression!r} threw: {answer['exceptionDetails']}")
        return answer.get("result", {}).get("value")

    def wait_for(self, expression: str, *, timeout: float = 10.0) -> Any:
        """Poll ``expression`` in the page, once per animation frame, until truthy or the deadline."""
        ms, quoted = int(timeout * 1000), json.dumps(expression)
        script = (
            f"new Promise((resolve, reject) => {{ const end = performance.now() + {ms};"
            f" const poll = () => {{ let v; try {{ v = ({expression}); }} catch (e) {{ v = undefined; }}"
            f" if (v) resolve(v); else if (performance.now() > end) reject(new Error('timed out: ' + {quoted}));"
            " else requestAnimationFrame(poll); }; poll(); })"
        )
        return self.eval(script, timeout=timeout + 10)

    def press(self, key: str) -> None:
        """A real key press: keyDown (with text for printable keys) then keyUp, to the focused element."""
        code, vk, text = KEYS[key]
        down: dict[str, Any] = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk}
        if text:
            down["text"] = text
        self.send("Input.dispatchKeyEvent", down)
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk})

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path


def _above_4(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """A headless Chromium process with its DevTools pipe; use :func:`chromium`."""

    def __init__(self, binary: str) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="io-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        cmd_r, res_w = _above_4(cmd_r), _above_4(res_w)  # so that moving them to 3 and 4 clobbers neither
        # the child gets the pipe ends as fds 3 and 4, as --remote-debugging-pipe expects
        wrapper = f'exec 3<&{cmd_r} 4>&{res_w} {cmd_r}<&- {res_w}>&- "$0" "$@"'
        self.process = subprocess.Popen(
            ["bash", "-c", wrapper, binary, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            pass_fds=(cmd_r, res_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(cmd_r)
        os.close(res_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._answers: dict[int, dict[str, Any]] = {}
        self._answered = threading.Condition(self._lock)
        self._pages: dict[str, Page] = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="cdp-reader", daemon=True)
        self._reader.start()
        self._stderr: list[bytes] = []
        threading.Thread(target=self._drain_stderr, name="chromium-stderr", daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line)

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._res_r, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(1 << 16)
                if not chunk:
                    break
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    self._dispatch(json.loads(raw))
        with self._lock:
            self._closed = True
            self._answered.notify_all()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            with self._lock:
                self._answers[message["id"]] = message
                self._answered.notify_all()
            return
        page = self._pages.get(message.get("sessionId", ""))
        if page is not None:
            page.on_event(message.get("method", ""), message.get("params", {}))

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._lock:
            while ident not in self._answers:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    tail = b"".join(self._stderr[-10:]).decode(errors="replace")
                    raise BrowserError(
                        f"no answer to {method} ({'browser gone' if self._closed else 'timeout'}) {tail}"
                    )
                self._answered.wait(left)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def new_page(self, *, width: int = 1366, height: int = 768) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        self._pages[session] = page
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page

    def close(self) -> None:
        with suppress(BrowserError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        os.close(self._cmd_w)
        self._profile.cleanup()


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium for the duration of the block."""
    browser = Browser(chromium_path())
    try:
        yield browser
    finally:
        browser.close()
