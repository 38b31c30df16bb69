"""The conformance checks, one module per area; importing this package registers them all."""

from . import apply, basics, crd_rules, crd_schema, errors, gc, lists, watch  # noqa: F401
