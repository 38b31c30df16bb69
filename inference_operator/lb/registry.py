"""The reference load balancer registry: a real external system for kind users and the e2e suite.

The operator's promise is that nothing it registers outside the cluster is leaked or forgotten.
That can only be checked against something that outlives the operator, so this is a small HTTP
server (stdlib only) that keeps its records in a JSON state file, counts every register and
release call per key (``GET /v1/stats``: "released exactly once"), and can be told to fail the
next calls (``POST /v1/faults``) to exercise the retry and finalizer paths. ``HttpLoadBalancer``
in ``inference_operator.lb.http`` is its client.

This module is the registry's public face and its ``python -m`` entry point; it only re-exports.
The parts import downwards and never import this module, so running it as ``__main__`` does not
load it a second time:

- ``registry_cli``: the ``serve`` and ``list`` commands;
- ``registry_server``: ``RegistryServer``, the records, counters and faults under one lock;
- ``registry_http``: routing, validation, auth and JSON framing of requests;
- ``registry_state``: the state file, a journal of JSON lines: one appended per change.

Run it with ``python -m inference_operator.lb.registry serve --port 9090``.
"""

from __future__ import annotations

import sys

from .registry_cli import configure_parser, main
from .registry_server import DEFAULT_ADDRESS_TEMPLATE, RegistryServer
from .registry_state import RegistryStateError

__all__ = ["DEFAULT_ADDRESS_TEMPLATE", "RegistryServer", "RegistryStateError", "configure_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
