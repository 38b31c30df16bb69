"""The HTTP endpoint of the operator's metrics (``/metrics``) and health (``/healthz``).

The metrics themselves are :mod:`inference_operator.control.metrics` (controller-runtime's and
client-go's families, in a prometheus_client registry); this module adds the operator's own
live counters to them (:func:`live`, read at each scrape) and serves the text. Kopf's liveness
probe caches its answers for ten seconds, which is right for kubelets but too coarse to watch a
control loop; this endpoint reads everything live. It also serves
``/healthz``, which answers 503 and names the problem (a dead worker or Event poster thread)
whenever the operator's health check finds one. Bind it to 127.0.0.1 or a pod IP; it
exposes counts only, no object data.
"""

from __future__ import annotations

import http.server
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

HELP = {
    "reconciles": ("inference_operator_reconcile_total", "counter", "Reconcile passes run."),
    "reconcile_errors": (
        "inference_operator_reconcile_errors_total",
        "counter",
        "Reconcile passes that failed and went back to the queue with backoff.",
    ),
    "queue_depth": ("inference_operator_workqueue_depth", "gauge", "Keys ready to be reconciled."),
    "waiting": ("inference_operator_workqueue_waiting", "gauge", "Keys waiting for a delayed requeue."),
    "cached_objects": ("inference_operator_cached_objects", "gauge", "Objects in the watch cache."),
    "events_posted": ("inference_operator_events_posted_total", "counter", "Events created or patched."),
    "events_pending": ("inference_operator_events_pending", "gauge", "Events queued for posting, not yet sent."),
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


def live(values: Mapping[str, float]) -> dict[str, tuple[str, str, float]]:
    """The operator's counters by metric name: ``{name: (type, help, value)}`` (see ``HELP``)."""
    out = {}
    for key, value in values.items():
        name, kind, text = HELP.get(key, (f"inference_operator_{key}", "gauge", key))
        out[name] = (kind, text, float(value))
    return out


class MetricsServer:
    """Serves ``render()`` on ``/metrics`` and ``healthz(health())`` on ``/healthz``
    from a background thread. ``start`` binds once: calling it again reuses the bound server."""

    def __init__(
        self,
        address: str,
        render: Callable[[], bytes],
        health: Callable[[], list[str]] = list,
    ) -> None:
        host, _, port = address.rpartition(":")
        self.host = host or "0.0.0.0"
        self.port = int(port)
        self.render = render
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
        render, health = self.render, self.health

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status = 200
                if self.path == "/healthz":
                    (status, body), ctype = healthz(health()), "text/plain"
                elif self.path == "/metrics":
                    body, ctype = render(), "text/plain; version=0.0.4; charset=utf-8"
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
