"""The conformance checks, one module per area; importing this package registers them all."""

from . import basics, crd_rules, crd_schema  # noqa: F401
