"""Objects that got past admission: how a test stores an InferenceService the CRD now refuses.

On a real cluster such an object exists when it was created under an older CRD whose schema or
rules were laxer, and the CRD was upgraded since. The FakeApiServer applies the CRD's schema to
every write, so tests build exactly that history: swap in a CRD that checks nothing, write the
object, put the real CRD back.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

from inference_operator.api.constants import GROUP, PLURAL
from inference_operator.sim.apiserver.server import FakeApiServer

CRD_KIND = "CustomResourceDefinition"
CRD_NAME = f"{PLURAL}.{GROUP}"
ANYTHING = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


@contextlib.contextmanager
def past_admission(api: FakeApiServer) -> Iterator[None]:
    """Inside: the CRD checks nothing (and has no scale subresource, which checks spec.replicas)."""
    current = api.get(CRD_KIND, "", CRD_NAME)
    lax = copy.deepcopy(current)
    for version in lax["spec"]["versions"]:
        version["schema"] = {"openAPIV3Schema": ANYTHING}
        version["subresources"] = {"status": {}}
    upgraded = api.update(lax)
    try:
        yield
    finally:
        api.update({**upgraded, "spec": current["spec"]})


def create_past_admission(api: FakeApiServer, obj: dict[str, Any]) -> dict[str, Any]:
    """Create ``obj`` under a CRD that checks nothing, then restore the CRD; the created object."""
    with past_admission(api):
        return api.create(obj)
