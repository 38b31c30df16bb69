"""Kopf glue: ``kopf run -m inference_operator.operator`` (or ``inference-operator run``).

Kopf supplies what is hard to get right: list+watch with reconnects and 410 handling, the
event loop, the liveness endpoint (our probe fails it when a worker, the
Event poster or a watch stream died), logging and the CLI. Every watched kind is streamed with
Kopf's own list+watch straight into ``OperatorRuntime.on_event`` (:mod:`.kube.streams`), which
feeds the cache and the workqueue whose worker threads run the same reconciler as the
simulator; no Kopf resource handler runs, so nothing of Kopf's is ever written to an object (no
bookkeeping annotations, no Kopf finalizer). Deployments and Services are streamed with a
server-side label selector (the owner label), so the operator never caches the cluster's other
workloads. In cluster mode it also streams every Node and every unfinished Pod (a field
selector), slimmed in the cache to what a rollout's GPU count reads. The streams start once the
runtime has (its cache primed), so namespaced mode never asks for Nodes it cannot read. Kopf's
streams log in with the very credentials the operator's own requests use (:func:`login`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import kopf

from inference_operator.core.process import limit_malloc_arenas
from inference_operator.kube.client import KubeClient
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.kubeconfig import Credentials, KubeconfigError, load_credentials
from inference_operator.kube.manager import LIST_PAGE_SIZE, OperatorRuntime
from inference_operator.kube.streams import Sink, Source, Streams
from inference_operator.reconcile.watches import CAPACITY_READS, WATCHES

log = logging.getLogger(__name__)
_runtime: OperatorRuntime | None = None
_logins = 0
LOGIN_RETRY_SECONDS = 10.0


def runtime() -> OperatorRuntime:
    if _runtime is None:
        raise RuntimeError("the operator runtime is not started (Kopf startup handler has not run)")
    return _runtime


def namespaces_from_argv(argv: list[str]) -> tuple[str, ...]:
    """The ``-n/--namespace`` values of a ``kopf run`` command line."""
    found: list[str] = []
    for i, arg in enumerate(argv):
        if arg in ("-n", "--namespace") and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith("--namespace="):
            found.append(arg.split("=", 1)[1])
    return tuple(found)


@kopf.on.startup()
def start(settings: kopf.OperatorSettings, **_: Any) -> None:
    global _runtime
    limit_malloc_arenas()  # also when started as `kopf run -m inference_operator.operator`
    config = OperatorConfig.from_env()
    if not config.namespaces:  # `kopf run -m inference_operator.operator -n NS` sets no env var
        config = dataclasses.replace(config, namespaces=namespaces_from_argv(sys.argv))
    configure(settings, config)
    # Kopf retries this handler when it raises (say the first LIST failed): reuse the runtime
    # unless its failed start closed it; start() binds the metrics port only after the LIST.
    if _runtime is None or _runtime.closed:
        try:
            # A connection for each worker, the Event poster, the election and the checks.
            client = KubeClient.from_environment(identity=config.identity, connections=config.workers + 4)
        except KubeconfigError as err:
            # Nothing a retry can fix, and nothing has started yet: one line, exit code 2 (as
            # `inference-operator run` says it), not Kopf's tracebacks of a failed activity.
            log.error("Stopped: %s", err)
            logging.shutdown()
            os._exit(2)
        _runtime = OperatorRuntime(config, client)
    _runtime.start()


@kopf.on.login(errors=kopf.ErrorsMode.TEMPORARY)
def login(retry: int = 0, **_: Any) -> kopf.ConnectionInfo:
    """Kopf's credentials: the runtime client's own (loaded once, at startup), so that Kopf's
    streams and the operator's requests reach the same server as the same user. Kopf asks
    again when the API server answers 401 or an exec plugin's credential expires: then the
    token file is read and the plugin run again. Credentials that cannot be had (the plugin
    fails) are logged and asked for again after a pause, until they can."""
    global _logins
    try:
        credentials = _runtime.client.transport.credentials if _runtime is not None else load_credentials()
        if _logins:
            credentials.refresh()
        _logins += 1
        return connection_info(credentials)
    except KubeconfigError as err:
        raise kopf.TemporaryError(f"Cannot log in (attempt {retry + 1}): {err}", delay=LOGIN_RETRY_SECONDS) from None


def connection_info(credentials: Credentials) -> kopf.ConnectionInfo:
    """The credentials as Kopf's ``ConnectionInfo``: the current token or client certificate."""
    certificate = credentials.client_certificate()
    token = credentials.token()
    basic = credentials.basic if not token else None
    return kopf.ConnectionInfo(
        server=credentials.server,
        ca_data=credentials.ca_data.encode() if credentials.ca_data else None,
        insecure=credentials.insecure or None,
        token=token,
        username=basic[0] if basic else None,
        password=basic[1] if basic else None,
        certificate_data=certificate[0].encode() if certificate else None,
        private_key_data=certificate[1].encode() if certificate else None,
        default_namespace=credentials.namespace,
        expiration=credentials.expiration(),
    )


def configure(settings: kopf.OperatorSettings, config: OperatorConfig) -> None:
    """Kopf's settings for the operator, among them the selectors its streams read from them:
    the owner label for the children, and in cluster mode the unfinished Pods."""
    settings.posting.enabled = False  # we post the Events we mean, not log lines
    # List in pages, not all at once: a restart with thousands of objects would otherwise hold
    # every one of them twice over while parsing.
    settings.watching.chunk_size = LIST_PAGE_SIZE
    for watch in WATCHES:
        if watch.label_selector:  # children: only those carrying the owner label are listed and watched
            settings.watching.label_selectors[watch.group or watch.version, watch.plural] = watch.label_selector
    if config.reads_capacity:
        for read in CAPACITY_READS:
            if read.field_selector:
                settings.watching.field_selectors[read.group or read.version, read.plural] = read.field_selector
    settings.peering.standalone = True  # replicas coordinate through our own Lease, not Kopf peering
    # Kopf's scanning of CRDs and namespaces finds resources for its handlers; there are none.
    settings.scanning.disabled = True


def liveness(rt: OperatorRuntime) -> dict[str, int]:
    """The probe's answer: the counters, or a failure naming what died (a worker, the Event
    poster, a stream) or went deaf. Kopf answers a failed probe handler with HTTP 500, so the kubelet restarts us."""
    problems = rt.health()
    if problems:
        raise kopf.PermanentError("Unhealthy: " + "; ".join(problems))
    return rt.probe()


@kopf.on.probe(id="operator", errors=kopf.ErrorsMode.PERMANENT)
def probe(**_: Any) -> dict[str, int]:
    return liveness(runtime())


def register_streams(registry: kopf.OperatorRegistry, ready: Callable[[], tuple[list[Source], Sink]]) -> Streams:
    """Stream the sources ``ready()`` names into its sink once Kopf has started, until it
    stops. ``ready`` may raise ``kopf.TemporaryError``: Kopf then asks again later."""
    streams = Streams()

    @kopf.on.startup(id="streams-start", registry=registry)
    async def start_streams(settings: kopf.OperatorSettings, **_: Any) -> None:
        sources, sink = ready()
        streams.start(sources, settings=settings, sink=sink)

    @kopf.on.cleanup(id="streams-stop", registry=registry)
    async def stop_streams(**_: Any) -> None:
        await streams.stop()

    return streams


def runtime_ready(rt: OperatorRuntime | None, streams: Streams) -> tuple[list[Source], Sink]:
    """What the runtime primed its cache from, and its event entry, for ``streams``, once it has started (Kopf runs the
    startup handlers in order, so it has, unless its start failed and is being retried)."""
    if rt is None or not rt.started:
        raise kopf.TemporaryError("the operator runtime has not started yet", delay=1)
    rt.streams_health = streams.problems  # liveness, and the metrics server's /healthz
    return rt.sources(), rt.on_event


def _ready() -> tuple[list[Source], Sink]:
    return runtime_ready(_runtime, _streams)


_streams: Streams = register_streams(kopf.get_default_registry(), _ready)


@kopf.on.cleanup()
def stop(**_: Any) -> None:
    """After the streams stopped (cleanup handlers run in order)."""
    if _runtime is not None:
        _runtime.stop()
