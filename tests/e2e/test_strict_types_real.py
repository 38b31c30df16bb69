"""Strict types, checked against the real kube-apiserver: the unit table's verdicts and words hold.

Covers: every case of tests/unit/test_strict_types.py (a value of each JSON type in each typed
field, nulls, whole floats, enums, unknown fields) is accepted or refused by the real server
exactly as the table says the fake and the parser do; each refusal line the parser gives (the
API server's words) appears in the real server's answer; a bounded sample of the property
test's generated specs meets the same verdict on the real server as on the fake
(``INFERENCE_OPERATOR_REAL_PROPERTY_EXAMPLES``, default 40), and for each spec the parser
accepts, the real server accepts what the operator would build from it: the Deployment (with
the rollout strategy of a first pass) and the Service, applied as the operator applies them
(server-side apply, its field manager, its own ServiceAccount's token, so RBAC and the
confinement policy judge too), and a Pod of the Deployment's template (as the ReplicaSet
controller creates them; a Pod is held to a few rules its template is not). The specs that used
to be admitted and then refused in the pod (``CLOSED_GAPS``) are always among the examples.
kubectl and ``demo -f`` read an unquoted ``y`` in YAML as the same boolean. Sent with
``--dry-run=server`` (admission runs, nothing is stored, no operator is involved), as JSON where
the values matter.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, example, given, settings

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.api.models import InferenceService
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from tests.shared.specgen import CLOSED_GAPS, CRD, KNOWN_GAPS, RICH_SPEC, admission, children, parser, specs
from tests.shared.strictcases import BASE, CASES, manifest

from .conftest import Cluster
from .harness import Kubectl

LINES = [  # (fields, the parser's line) — the parser's words, as the real server must say them
    ({"replicas": "3"}, 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer'),
    ({"replicas": True}, 'spec.replicas: Invalid value: "boolean": spec.replicas in body must be of type integer'),
    ({"replicas": 2.5}, 'spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer'),
    ({"loadBalancer": {"enabled": "yes"}}, 'spec.loadBalancer.enabled: Invalid value: "string"'),
    ({"resources": {"requests": {"cpu": True}}}, "spec.resources.requests.cpu in body must be of type integer,string"),
    ({"podSecurity": "restricted"}, 'spec.podSecurity: Unsupported value: "restricted": supported values:'),
    ({"replicas": -1}, "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"),
]


OWNER_UID = "00000000-0000-4000-8000-000000000021"  # where a dry run's answer carries no uid


def dry_run_create(cluster: Cluster, spec: dict[str, Any]) -> tuple[bool, str]:
    ok, stderr, _ = dry_run_answer(cluster, spec)
    return ok, stderr


def dry_run_answer(cluster: Cluster, spec: dict[str, Any]) -> tuple[bool, str, Obj | None]:
    """The real server's verdict on the InferenceService, and the object it would store."""
    obj = {**manifest(spec), "metadata": {"name": "strict", "namespace": "default"}}
    # JSON, not YAML: the values sent are exactly the table's (kubectl's YAML reads `y` as true).
    result = cluster.kubectl.run(
        "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(obj), check=False
    )
    ok = result.returncode == 0
    return ok, result.stderr, json.loads(result.stdout) if ok else None


def pod_of(deployment: Obj) -> Obj:
    """A Pod of the Deployment's template, as the ReplicaSet controller would create it."""
    template = deployment["spec"]["template"]
    metadata = {**template["metadata"], "name": f"{deployment['metadata']['name']}-pod"}
    metadata["namespace"] = deployment["metadata"]["namespace"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


def refusals_of_children(cluster: Cluster, as_operator: Kubectl, admitted: Obj) -> list[str]:
    """What the real server says to the children the operator would build from ``admitted``
    (the object as the server would store it, defaults applied), nothing stored: the Deployment
    and Service as the operator applies them, with its identity; a Pod of the template as an
    administrator (the ReplicaSet controller creates Pods, not the operator)."""
    uid = admitted["metadata"].get("uid") or OWNER_UID
    isvc = InferenceService.from_object({**admitted, "metadata": {**admitted["metadata"], "uid": uid}})
    built = children(isvc)
    refusals: list[str] = []
    applied = as_operator.run(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}", "--dry-run=server",
        "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": built}), check=False,
    )  # fmt: skip
    if applied.returncode != 0:
        refusals.append(applied.stderr.strip())
    (deployment,) = [c for c in built if c["kind"] == "Deployment"]
    pod = cluster.kubectl.run(
        "create", "--dry-run=server", "-f", "-", stdin=json.dumps(pod_of(deployment)), check=False
    )
    if pod.returncode != 0:
        refusals.append(pod.stderr.strip())
    return refusals


pytestmark = pytest.mark.usefixtures("crd")


@pytest.mark.parametrize(("fields", "accepted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_real_server_accepts_and_refuses_as_the_table_says(
    cluster: Cluster, fields: dict[str, Any], accepted: bool
) -> None:
    ok, stderr = dry_run_create(cluster, {**BASE, **fields})
    assert ok == accepted, stderr


@pytest.mark.parametrize(("fields", "line"), LINES, ids=[str(f) for f, _ in LINES])
def test_the_parsers_words_are_the_real_servers(cluster: Cluster, fields: dict[str, Any], line: str) -> None:
    ok, stderr = dry_run_create(cluster, {**BASE, **fields})
    assert not ok and line in stderr, stderr


REAL_EXAMPLES = int(os.environ.get("INFERENCE_OPERATOR_REAL_PROPERTY_EXAMPLES", "40"))
T = TypeVar("T", bound=Callable[..., Any])


def with_closed_gaps(test: T) -> T:
    """Every spec of ``CLOSED_GAPS`` as an explicit example: each one, admitted, would reach the
    children's dry run (before admission held its strings to the pod's rules, the Deployment or
    its Pod was refused there)."""
    for fields in CLOSED_GAPS.values():
        test = example(spec={**BASE, **fields})(test)
    return test


@settings(max_examples=REAL_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(spec=specs())
@with_closed_gaps
@example(spec=RICH_SPEC)
@example(spec={**RICH_SPEC, "rollout": {"strategy": "Replace"}, "gpu": 0, "podSecurity": "Baseline"})
def test_generated_specs_meet_the_same_verdict_on_the_real_server_and_what_it_admits_it_can_run(
    cluster: Cluster, operator_kubeconfig: Path, spec: Obj
) -> None:
    """The property test's specs (tests/unit/api/test_admitted_realizable.py), a bounded sample:
    admission on the real server agrees with admission on the fake, and the parser agrees too
    except for the listed gaps; what it admits and parses, the real server takes as children."""
    api = FakeApiServer(FakeClock())
    api.create(CRD)
    on_fake = admission(api, spec) is None
    on_real, stderr, admitted = dry_run_answer(cluster, spec)
    assert on_real == on_fake, stderr
    if on_real and parser(spec) is not None:
        assert any(applies(spec) for applies in KNOWN_GAPS.values()), (spec, parser(spec))
    if admitted is not None and parser(spec) is None:
        refusals = refusals_of_children(cluster, Kubectl(operator_kubeconfig, cluster.kubectl.env), admitted)
        assert not refusals, (spec, refusals)


def test_kubectl_and_demo_read_y_in_yaml_alike(cluster: Cluster) -> None:
    """YAML 1.1 as kubectl reads it: an unquoted ``y`` is a boolean, so a node selector value
    written ``y`` is refused by both, in the same words."""
    from inference_operator.manifests import ManifestError, read_manifests

    text = (
        "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\n"
        "metadata: {name: strict, namespace: default}\nspec: {image: v, model: m, nodeSelector: {gpu: y}}\n"
    )
    result = cluster.kubectl.run("create", "--dry-run=server", "-f", "-", stdin=text, check=False)
    line = 'spec.nodeSelector.gpu: Invalid value: "boolean": spec.nodeSelector.gpu in body must be of type string'
    assert result.returncode != 0 and line in result.stderr, result.stderr
    path = cluster.kubeconfig.parent / "y.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError) as info:
        read_manifests(str(path))
    assert line in str(info.value)


@pytest.mark.parametrize("fields", list(CLOSED_GAPS.values()), ids=list(CLOSED_GAPS))
def test_what_the_operator_cannot_build_is_refused_by_the_real_server(cluster: Cluster, fields: Obj) -> None:
    ok, stderr = dry_run_create(cluster, {**BASE, **fields})
    assert not ok and "spec." in stderr, stderr
