"""``inference-operator trace view``: a trace as one self-contained HTML page.

The page (``inference_operator/trace/viewer/``: index.html, viewer.css, capacity.js, model.js,
capview.js, diagram.js, viewer.js) is plain HTML, CSS and JavaScript with no build step. This module only
reads the trace, checks it, and inlines the stylesheet, the scripts and the records into the
template, so the file works offline, from ``file://`` or from the small loopback server
``--serve`` starts: the page fetches nothing.

Why the Python side is this small: everything a learner sees (phases, queue, spec vs status,
causality links, the cluster's capacity) is derived in the browser from the records, following docs/trace-format.md's
"For a viewer"; the format is the contract, not a Python model of it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from inference_operator.core.files import InputFileError, check_regular_file
from inference_operator.core.objects import Obj
from inference_operator.trace.sink import TraceError, read_trace, ring_files

__all__ = ["ViewError", "embed_json", "load_records", "page_server", "render_page", "serve_page", "write_page"]

_TEMPLATE_DIR = "viewer"
_DATA_SLOT = "/*TRACE_DATA*/"
_CSS_SLOT = "/*VIEWER_CSS*/"
_SCRIPTS = (
    ("/*CAPACITY_JS*/", "capacity.js"),
    ("/*MODEL_JS*/", "model.js"),
    ("/*CAPVIEW_JS*/", "capview.js"),
    ("/*DIAGRAM_JS*/", "diagram.js"),
    ("/*VIEWER_JS*/", "viewer.js"),
)
"""The inline scripts, each one's slot and file, in the page's order (and the policy's)."""
_TITLE_SLOT = "TRACE_TITLE"
_CSP_STYLE_SLOT = "CSP_STYLE_HASH"
_CSP_SCRIPT_SLOT = "CSP_SCRIPT_HASHES"
MAX_TRACE_FILE_BYTES = 1 << 30
"""A ring file holds at most ``TRACE_MAX_BYTES`` (1 GiB at most); anything larger is no trace of ours."""


class ViewError(Exception):
    """A trace that cannot be shown: the message names the file and the problem."""


def load_records(path: str | os.PathLike[str]) -> list[Obj]:
    """The records of ``path``; when ``path`` has rotated siblings (``FILE.1`` …, a ``run --trace``
    ring), of the whole ring, oldest first."""
    file = Path(path)
    if not file.exists():
        raise ViewError(f"{path}: no such file")
    if file.is_dir():
        raise ViewError(f"{path}: is a directory, not a trace file")
    files = ring_files(file)
    try:
        for part in files:  # a FIFO would block the read, /dev/zero never end
            check_regular_file(str(part), limit=MAX_TRACE_FILE_BYTES)
    except InputFileError as err:
        raise ViewError(str(err)) from None
    try:
        records = read_trace(file, ring=len(files) > 1)
    except TraceError as err:
        raise ViewError(str(err)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ViewError(f"{path}: not a trace (not JSON lines: {err})") from None
    except OSError as err:
        raise ViewError(f"{path}: cannot read: {err.strerror}") from None
    return records


def embed_json(value: Any) -> str:
    """``value`` as JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``
    (so no ``</script>`` or ``<!--`` can end the element early) and no U+2028/U+2029."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def csp_hash(text: str) -> str:
    """The Content-Security-Policy source that allows an inline block of exactly ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def _template(name: str) -> str:
    return resources.files(__package__).joinpath(_TEMPLATE_DIR, name).read_text(encoding="utf-8")


def render_page(records: list[Obj], *, title: str) -> str:
    """The viewer page with ``records`` embedded, everything inline."""
    page = _template("index.html")
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    # the script and stylesheet must not close their own element either
    css = _template("viewer.css").replace("</", "<\\/")
    scripts = {slot: _template(name).replace("</", "<\\/") for slot, name in _SCRIPTS}
    values = {_TITLE_SLOT: safe_title, _CSS_SLOT: css, **scripts}
    # The Content-Security-Policy allows exactly these inline blocks, by hash: no 'unsafe-inline',
    # so markup that got into the page some other way could never run or restyle it.
    values[_CSP_STYLE_SLOT] = csp_hash(css)
    values[_CSP_SCRIPT_SLOT] = " ".join(csp_hash(scripts[slot]) for slot, _ in _SCRIPTS)
    try:
        values[_DATA_SLOT] = embed_json(records)
    except RecursionError:
        raise ViewError(f"{title}: a record is nested too deeply to show") from None
    except ValueError as err:  # NaN in records not read from a file
        raise ViewError(f"{title}: a record is not JSON: {err}") from None
    missing = [slot for slot in values if slot not in page]
    if missing:
        raise RuntimeError(f"viewer template: no slot {missing}")
    # one pass over the template: text put in a slot is never searched for another slot
    pattern = re.compile("|".join(re.escape(slot) for slot in values))
    return pattern.sub(lambda m: values[m.group(0)], page)


def write_page(trace: str | os.PathLike[str], output: str | os.PathLike[str] | None = None) -> Path:
    """Read ``trace`` and write its page to ``output`` (default: the trace's path + ``.html``)."""
    records = load_records(trace)
    out = Path(output) if output is not None else Path(f"{trace}.html")
    html = render_page(records, title=Path(trace).name)
    try:
        out.write_text(html, encoding="utf-8")
    except OSError as err:
        raise ViewError(f"{out}: cannot write: {err.strerror}") from None
    return out


def page_server(html: str, *, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server (bound, not yet serving) of ``html`` on ``127.0.0.1:PORT``.

    Loopback is not enough on its own: a web page elsewhere can point a name it controls at
    127.0.0.1 (DNS rebinding) and read the trace. So a request is answered only when its
    ``Host`` is this server's own ``127.0.0.1:PORT`` or ``localhost:PORT``; any other is 421.
    """
    body = html.encode("utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            bound = port_of(self.server)
            if self.headers.get("Host", "") not in (f"127.0.0.1:{bound}", f"localhost:{bound}"):
                self.send_error(421, "Misdirected Request", "this page is served to 127.0.0.1 and localhost only")
                return
            if self.path not in ("/", "/index.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: the URL was printed, requests are the user's own

    return http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)


def port_of(server: Any) -> int:
    """The port a bound TCP server listens on."""
    return int(server.server_address[1])


def serve_page(html: str, *, port: int = 0, ready: Callable[[str], None] = print) -> None:
    """Serve ``html`` at ``http://127.0.0.1:PORT/`` (loopback only, see :func:`page_server`)
    until interrupted (Ctrl-C). ``ready`` is told the URL once the socket listens."""
    with page_server(html, port=port) as server, _stop_on_signals():
        ready(f"http://127.0.0.1:{server.server_address[1]}/")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: the normal way to stop
            server.serve_forever()


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Ctrl-C and SIGTERM stop serving, also when SIGINT came in ignored (a shell starts
    background commands so, and Python then installs no Ctrl-C handler of its own)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
