"""The shipped security extras on a real API server: roles for people and the image allow-list.

Covers (security review):
- deploy/rbac/user_roles.yaml aggregates into the built-in roles: a user bound to ``view`` in a
  namespace may read InferenceServices there but not create them; a user bound to ``edit`` may
  create, patch, scale and delete them; neither gains anything in another namespace.
- deploy/optional/image-allowlist.yaml (off unless applied) makes the API server refuse an
  InferenceService whose image is outside the allowed prefixes, with a message naming
  spec.image and the prefixes, and admit one inside them; removing it lifts the refusal.
  Edited to a prefix without its trailing "/" (``registry.example.com``), it lets nothing through,
  ``registry.example.com.evil.io/…`` included, and says the list is misconfigured.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import yaml

from .conftest import Cluster
from .harness import ROOT, probe_object, wait_until

USER_ROLES = ROOT / "deploy" / "rbac" / "user_roles.yaml"
ALLOWLIST = ROOT / "deploy" / "optional" / "image-allowlist.yaml"
ISVC = "inferenceservices.serving.inference-operator.dev"


@pytest.fixture()
def scratch(cluster: Cluster, crd: None) -> Iterator[str]:
    name = f"sec-{uuid.uuid4().hex[:8]}"
    cluster.kubectl.run("create", "namespace", name)
    yield name
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


def can(cluster: Cluster, user: str, verb: str, resource: str, namespace: str) -> bool:
    result = cluster.kubectl.run("auth", "can-i", verb, resource, "--as", user, "-n", namespace, check=False)
    return result.stdout.strip() == "yes"


def test_people_bound_to_view_or_edit_get_inference_services_through_aggregation(
    cluster: Cluster, scratch: str
) -> None:
    cluster.kubectl.run("apply", "-f", str(USER_ROLES))
    try:
        for user, role in (("alice", "view"), ("bob", "edit")):
            cluster.kubectl.run(
                "create", "rolebinding", f"{user}-{role}", f"--clusterrole={role}", f"--user={user}", "-n", scratch
            )
        wait_until(
            lambda: can(cluster, "alice", "list", ISVC, scratch) and can(cluster, "bob", "create", ISVC, scratch),
            timeout=60,
            what="the aggregated rules to reach view and edit",
        )
        assert can(cluster, "alice", "get", f"{ISVC}/status", scratch)
        assert not can(cluster, "alice", "create", ISVC, scratch)
        assert not can(cluster, "alice", "delete", ISVC, scratch)
        for verb, resource in (("patch", ISVC), ("delete", ISVC), ("update", f"{ISVC}/scale")):
            assert can(cluster, "bob", verb, resource, scratch), (verb, resource)
        assert not can(cluster, "bob", "create", ISVC, "default")
    finally:
        cluster.kubectl.run("delete", "-f", str(USER_ROLES), "--ignore-not-found", check=False)


def dry_run_create(cluster: Cluster, namespace: str, image: str) -> tuple[bool, str]:
    obj = probe_object(namespace)
    obj["spec"]["image"] = image
    result = cluster.kubectl.run("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(obj), check=False)
    return result.returncode == 0, result.stderr.strip()


def test_the_image_allow_list_refuses_images_from_elsewhere(cluster: Cluster, scratch: str) -> None:
    outside, inside = "docker.io/someone/vllm:latest", "registry.example.com/inference/vllm:0.7.0"
    cluster.kubectl.run("apply", "-f", str(ALLOWLIST))
    try:
        refusal = wait_until(
            lambda: (r := dry_run_create(cluster, scratch, outside)) and not r[0] and r[1],
            timeout=60,
            what="the image allow-list policy to take effect",
        )
        assert "spec.image: docker.io/someone/vllm:latest is not from an allowed registry" in refusal
        assert "registry.example.com/inference/" in refusal
        assert dry_run_create(cluster, scratch, inside) == (True, "")
    finally:
        cluster.kubectl.run("delete", "-f", str(ALLOWLIST), "--ignore-not-found", check=False)
    wait_until(lambda: dry_run_create(cluster, scratch, outside)[0], timeout=60, what="the allow-list to be lifted")


def test_the_image_allow_list_with_a_bare_registry_prefix_lets_nothing_through(cluster: Cluster, scratch: str) -> None:
    shipped = ALLOWLIST.read_text()
    assert "['registry.example.com/inference/']" in shipped
    bare = shipped.replace("['registry.example.com/inference/']", "['registry.example.com']")
    lookalike, under = "registry.example.com.evil.io/vllm:0.7.0", "registry.example.com/inference/vllm:0.7.0"
    cluster.kubectl.run("apply", "-f", "-", stdin=bare)
    try:
        refusal = wait_until(
            lambda: (r := dry_run_create(cluster, scratch, lookalike)) and not r[0] and r[1],
            timeout=60,
            what="the misconfigured image allow-list policy to take effect",
        )
        assert "the image allow-list is misconfigured" in refusal and "[registry.example.com]" in refusal, refusal
        admitted, words = dry_run_create(cluster, scratch, under)
        assert not admitted and "the image allow-list is misconfigured" in words, words
    finally:
        cluster.kubectl.run("delete", "-f", "-", "--ignore-not-found", stdin=bare, check=False)
    wait_until(lambda: dry_run_create(cluster, scratch, lookalike)[0], timeout=60, what="the allow-list to be lifted")
