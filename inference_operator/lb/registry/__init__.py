"""The reference load balancer registry: a real external system for kind users and the e2e suite.

The operator's promise is that nothing it registers outside the cluster is leaked or forgotten.
That can only be checked against something that outlives the operator, so this is a small HTTP
server (stdlib only) that keeps its records in a JSON state file, counts every register and
release call per key (``GET /v1/stats``: "released exactly once"), and can be told to fail the
next calls (``POST /v1/faults``) to exercise the retry and finalizer paths. ``HttpLoadBalancer``
in ``inference_operator.lb.http`` is its client.

This package's ``__init__`` is the registry's public face (it only re-exports) and
``__main__`` its ``python -m`` entry point:

- ``cli``: the ``serve`` and ``list`` commands;
- ``server``: ``RegistryServer``, the records, counters and faults under one lock;
- ``http``: routing, validation, auth and JSON framing of requests;
- ``state``: the state file, a journal of JSON lines: one appended per change.

Run it with ``python -m inference_operator.lb.registry serve --port 9090``.
"""

from __future__ import annotations

from inference_operator.lb.registry.cli import configure_parser, main
from inference_operator.lb.registry.server import DEFAULT_ADDRESS_TEMPLATE, RegistryServer
from inference_operator.lb.registry.state import RegistryStateError

__all__ = ["DEFAULT_ADDRESS_TEMPLATE", "RegistryServer", "RegistryStateError", "configure_parser", "main"]
