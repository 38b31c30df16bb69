"""The conformance checks, one module per area; importing this package registers them all."""

from . import apply, basics, concurrency, defaults, errors, finalizers, gc, lists, status, watch  # noqa: F401
