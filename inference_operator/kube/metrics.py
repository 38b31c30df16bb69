"""A Prometheus text endpoint with the operator's counters (``/metrics``).

Kopf's liveness probe caches its answers for ten seconds, which is right for kubelets but
too coarse to watch a control loop; this endpoint reads the counters live. It also serves
``/healthz``. Bind it to 127.0.0.1 or a pod IP; it exposes counts only, no object data.
"""

from __future__ import annotations

import http.server
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("inference_operator.metrics")

HELP = {
    "reconciles": ("inference_operator_reconcile_total", "counter", "Reconcile passes run."),
    "reconcile_errors": (
        "inference_operator_reconcile_errors_total",
        "counter",
        "Reconcile passes that failed and went back to the queue with backoff.",
    ),
    "writes": (
        "inference_operator_api_writes_total",
        "counter",
        "Mutating requests sent to the API server (Events excluded).",
    ),
    "queue_depth": ("inference_operator_workqueue_depth", "gauge", "Keys ready to be reconciled."),
    "waiting": ("inference_operator_workqueue_waiting", "gauge", "Keys waiting for a delayed requeue."),
    "cached_objects": ("inference_operator_cached_objects", "gauge", "Objects in the watch cache."),
}


def render(values: dict[str, int]) -> str:
    lines = []
    for key, value in sorted(values.items()):
        name, kind, text = HELP.get(key, (f"inference_operator_{key}", "gauge", key))
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", f"{name} {value}"]
    return "\n".join(lines) + "\n"


class MetricsServer:
    """Serves ``render(collect())`` on ``/metrics`` from a background thread."""

    def __init__(self, address: str, collect: Callable[[], dict[str, int]]) -> None:
        host, _, port = address.rpartition(":")
        self.host = host or "0.0.0.0"
        self.port = int(port)
        self.collect = collect
        self._httpd: http.server.ThreadingHTTPServer | None = None

    def start(self) -> None:
        collect = self.collect

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/healthz":
                    body, ctype = b"ok\n", "text/plain"
                elif self.path == "/metrics":
                    body, ctype = render(collect()).encode(), "text/plain; version=0.0.4"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = http.server.ThreadingHTTPServer((self.host, self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="metrics", daemon=True).start()
        log.info("Serving metrics address=%s:%d", self.host, self._httpd.server_address[1])

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
