"""The conformance checks, one module per area; importing this package registers them all."""

from . import basics, concurrency, defaults, finalizers, status  # noqa: F401
