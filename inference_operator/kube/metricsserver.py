"""The HTTP endpoint of the operator's metrics (``/metrics``) and health (``/healthz``).

The metrics themselves are :mod:`inference_operator.control.metrics` (controller-runtime's and
client-go's families, in a prometheus_client registry); this module adds the operator's own
live counters to them (:func:`live`, read at each scrape) and serves the text. Kopf's liveness
probe caches its answers for ten seconds, which is right for kubelets but too coarse to watch a
control loop; this endpoint reads everything live. It also serves
``/healthz``, which answers 503 and names the problem (a dead worker or Event poster thread)
whenever the operator's health check finds one. It exposes counts only, no object data.

Anything that can reach the port can talk to it, so it defends itself: each connection has
``request_timeout`` seconds for the whole exchange (a client trickling a byte at a time is cut
off too), at most ``max_connections`` are served at once (the next are closed at once, so a
flood cannot pile up threads), and a client that goes away mid-answer is one debug line, not a
traceback. Without a host (``:9090``) it listens on 127.0.0.1 only; in a pod the chart binds
all of the pod's interfaces explicitly, as the kubelet and Prometheus connect to the pod IP.
"""

from __future__ import annotations

import http.server
import logging
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from inference_operator.core.deadline import Deadline, bounded_reader

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
REQUEST_TIMEOUT = 5.0
"""Seconds for one whole exchange: a scrape answers in milliseconds, Prometheus waits 10 s."""
MAX_CONNECTIONS = 16
"""Clients served at once; a scraper and a probe or two need a handful."""

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
    "cached_nodes": ("inference_operator_cached_nodes", "gauge", "Nodes in the cache, for the rollouts' GPU count."),
    "cached_pods": (
        "inference_operator_cached_pods",
        "gauge",
        "Unfinished Pods of every namespace in the cache (slimmed), for the rollouts' GPU count.",
    ),
    "deaf_watches": (
        "inference_operator_deaf_watches",
        "gauge",
        "Watched kinds whose watch stopped delivering (an object the API server holds never reached the cache).",
    ),
    "writes_refused_not_leader": (
        "inference_operator_writes_refused_not_leader",
        "gauge",
        "Writes refused since start because this replica's leadership had lapsed or ended (fenced).",
    ),
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


class _BoundedServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server with at most ``max_connections`` handler threads, quiet about
    clients that went away."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[http.server.BaseHTTPRequestHandler], cap: int) -> None:
        self._slots = threading.BoundedSemaphore(cap)
        self._lock = threading.Lock()
        self.connections = 0
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            log.debug("Refused metrics client, every connection slot is busy address=%s", _host(client_address))
            self.shutdown_request(request)
            return
        with self._lock:
            self.connections += 1
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._free()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._free()

    def _free(self) -> None:
        with self._lock:
            self.connections -= 1
        self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        err = sys.exc_info()[1]
        if isinstance(err, OSError):  # reset, broken pipe, timeout: the client went away
            log.debug("Dropped metrics client address=%s error=%s", _host(client_address), err)
        else:  # a bug of ours: say so once, with the traceback, in the log (not on stderr)
            log.warning("Failed to answer metrics client address=%s", _host(client_address), exc_info=True)


def _host(client_address: Any) -> str:
    return str(client_address[0]) if isinstance(client_address, tuple) and client_address else "?"


class MetricsServer:
    """Serves ``render()`` on ``/metrics`` and ``healthz(health())`` on ``/healthz``
    from a background thread. ``start`` binds once: calling it again reuses the bound server.

    ``address`` is ``HOST:PORT`` or ``:PORT`` (127.0.0.1); ``request_timeout`` bounds each
    connection's whole exchange, ``max_connections`` how many are served at once.
    """

    def __init__(
        self,
        address: str,
        render: Callable[[], bytes],
        health: Callable[[], list[str]] = list,
        *,
        request_timeout: float = REQUEST_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        host, _, port = address.rpartition(":")
        if request_timeout <= 0 or max_connections < 1:
            raise ValueError("request_timeout must be positive and max_connections at least 1")
        self.host = host or DEFAULT_HOST
        self.port = int(port)
        self.render = render
        self.health = health
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        self._httpd: _BoundedServer | None = None

    @property
    def connections(self) -> int:
        """Connections being served now."""
        return self._httpd.connections if self._httpd is not None else 0

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
        render, health, request_timeout = self.render, self.health, self.request_timeout

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = request_timeout  # the socket's, until the first read sets the time left

            def setup(self) -> None:
                super().setup()
                self.deadline = Deadline(request_timeout)
                self.rfile = bounded_reader(self.rfile, self.connection, self.deadline)  # type: ignore[arg-type]

            def do_GET(self) -> None:
                status = 200
                if self.path == "/healthz":
                    (status, body), ctype = healthz(health()), "text/plain"
                elif self.path == "/metrics":
                    body, ctype = render(), "text/plain; version=0.0.4; charset=utf-8"
                else:
                    self.send_error(404)
                    return
                connection: socket.socket = self.connection
                connection.settimeout(self.deadline.remaining())  # the answer, sent as a whole, too
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = _BoundedServer((self.host, self.port), Handler, self.max_connections)
        threading.Thread(target=self._httpd.serve_forever, name="metrics", daemon=True).start()
        log.info("Started metrics server address=%s:%d", self.host, self._httpd.server_address[1])

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
