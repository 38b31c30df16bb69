"""The conformance checks, one module per area; importing this package registers them all."""

from . import basics, names, namespaces  # noqa: F401
