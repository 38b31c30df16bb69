"""The drift check gives one answer whichever way it learns what the operator owns.

On the simulator, the live child comes from an informer cache that shares the API server's
stored managedFields entries, whose field sets are known without parsing them; a live child
read from the API (a copy) or from a real cluster has its entry parsed. Covers:
- a child just applied has no drift, from the cache and from a read alike;
- a field no longer applied (an env var, a label) is reported the same both ways;
- a changed value is reported the same both ways.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.informer import SharedInformer
from inference_operator.ssa.compare import drift
from inference_operator.ssa.fieldsv1 import known_field_set

Obj = dict[str, Any]


def deployment(*, env: bool = True, label: bool = True, image: str = "vllm:0.7.0") -> Obj:
    container: Obj = {"name": "server", "image": image}
    if env:
        container["env"] = [{"name": "MODEL", "value": "Llama-3"}]
    labels = {"app": "a", **({"tier": "serving"} if label else {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "a", "namespace": "default", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [container]}},
        },
    }


@pytest.fixture
def live() -> tuple[Obj, Obj]:
    """The applied Deployment as the informer caches it, and as a read returns it."""
    api = FakeApiServer()
    informer = SharedInformer(api, "Deployment")
    informer.start()
    api.apply(deployment(), field_manager=FIELD_MANAGER, force=True)
    informer.pump()
    cached = informer.get("default", "a")
    assert cached is not None
    read = api.get("Deployment", "default", "a")
    assert known_field_set(applied_entry(cached)) is not None  # the two ways really differ
    assert known_field_set(applied_entry(read)) is None
    return cached, read


def applied_entry(obj: Obj) -> Obj:
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == FIELD_MANAGER]
    fields: Obj = entry["fieldsV1"]
    return fields


def check(live: tuple[Obj, Obj], desired: Obj) -> list[str]:
    cached, read = live
    from_cache = drift(cached, desired, kind="Deployment", manager=FIELD_MANAGER)
    assert from_cache == drift(read, desired, kind="Deployment", manager=FIELD_MANAGER)
    return from_cache


def test_a_child_just_applied_has_no_drift(live: tuple[Obj, Obj]) -> None:
    assert check(live, deployment()) == []


def test_fields_no_longer_applied_are_reported_alike(live: tuple[Obj, Obj]) -> None:
    env = '.spec.template.spec.containers[name="server"].env[name="MODEL"]'
    assert check(live, deployment(env=False)) == [env, f"{env}.name", f"{env}.value"]
    assert check(live, deployment(label=False)) == [".metadata.labels.tier"]


def test_a_changed_value_is_reported_alike(live: tuple[Obj, Obj]) -> None:
    assert check(live, deployment(image="vllm:0.8.0")) == ['.spec.template.spec.containers[name="server"].image']
