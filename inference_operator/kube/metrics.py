"""A Prometheus text endpoint with the operator's counters (``/metrics``).

Kopf's liveness probe caches its answers for ten seconds, which is right for kubelets but
too coarse to watch a control loop; this endpoint reads the counters live. It also serves
``/healthz``, which answers 503 and names the problem (a dead worker or Event poster thread)
whenever the operator's health check finds one. Bind it to 127.0.0.1 or a pod IP; it
exposes counts only, no object data.
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
    "events_posted": ("inference_operator_events_posted_total", "counter", "Events created or patched."),
    "event_post_failures": (
        "inference_operator_event_post_failures_total",
        "counter",
        "Events that could not be posted (API errors, connection failures) and were dropped.",
    ),
    "events_dropped": (
        "inference_operator_events_dropped_total",
        "counter",
        "Events dropped because the posting queue was full.",
    ),
    "events_deduplicated": (
        "inference_operator_events_deduplicated_total",
        "counter",
        "Events sent as a count bump of an identical earlier Event.",
    ),
    "events_aggregated": (
        "inference_operator_events_aggregated_total",
        "counter",
        "Events folded into a '(combined from similar events)' Event.",
    ),
    "events_spam_filtered": (
        "inference_operator_events_spam_filtered_total",
        "counter",
        "Events dropped by the per-object spam filter (burst 25, one more per 5 minutes).",
    ),
    "cache_consistency_drops": (
        "inference_operator_cache_consistency_drops_total",
        "counter",
        "Cached objects dropped because a consistency LIST showed them deleted (missed DELETED events).",
    ),
    "dead_threads": ("inference_operator_dead_threads", "gauge", "Operator threads that died (unhealthy if > 0)."),
}


def healthz(problems: list[str]) -> tuple[int, bytes]:
    """The ``/healthz`` answer: 200 ``ok``, or 503 with one problem per line."""
    if not problems:
        return 200, b"ok\n"
    return 503, ("unhealthy: " + "; ".join(problems) + "\n").encode()


def render(values: dict[str, int]) -> str:
    lines = []
    for key, value in sorted(values.items()):
        name, kind, text = HELP.get(key, (f"inference_operator_{key}", "gauge", key))
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", f"{name} {value}"]
    return "\n".join(lines) + "\n"


class MetricsServer:
    """Serves ``render(collect())`` on ``/metrics`` and ``healthz(health())`` on ``/healthz``
    from a background thread. ``start`` binds once: calling it again reuses the bound server."""

    def __init__(
        self,
        address: str,
        collect: Callable[[], dict[str, int]],
        health: Callable[[], list[str]] = list,
    ) -> None:
        host, _, port = address.rpartition(":")
        self.host = host or "0.0.0.0"
        self.port = int(port)
        self.collect = collect
        self.health = health
        self._httpd: http.server.ThreadingHTTPServer | None = None

    @property
    def address(self) -> tuple[str, int] | None:
        """The bound (host, port), None when not serving."""
        if self._httpd is None:
            return None
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        if self._httpd is not None:
            return
        collect, health = self.collect, self.health

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status = 200
                if self.path == "/healthz":
                    (status, body), ctype = healthz(health()), "text/plain"
                elif self.path == "/metrics":
                    body, ctype = render(collect()).encode(), "text/plain; version=0.0.4"
                else:
                    self.send_error(404)
                    return
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = http.server.ThreadingHTTPServer((self.host, self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="metrics", daemon=True).start()
        log.info("Started metrics server address=%s:%d", self.host, self._httpd.server_address[1])

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
