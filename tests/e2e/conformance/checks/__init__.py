"""The conformance checks, one module per area; importing this package registers them all."""

from . import apply, basics, errors, gc, lists, watch  # noqa: F401
