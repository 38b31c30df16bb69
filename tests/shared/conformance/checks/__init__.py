"""The conformance checks, one module per area; importing this package registers them all."""

from . import (  # noqa: F401
    apply,
    basics,
    binding,
    concurrency,
    crd_rules,
    crd_schema,
    defaults,
    errors,
    finalizers,
    gc,
    lists,
    names,
    namespaces,
    podtemplate,
    status,
    watch,
)
