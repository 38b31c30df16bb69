"""ReplicaSet and Pod builders: the pod-template-hash (FNV-32a, collision count, safe alphabet),
names, labels, selectors and owner references from Deployment to ReplicaSet to Pod."""

from __future__ import annotations

from inference_operator.sim.cluster.replicasets import (
    POD_TEMPLATE_HASH,
    SAFE_ALPHABET,
    _fnv32a,
    build_pod,
    build_replicaset,
    pod_template_hash,
    safe_encode,
    template_without_hash,
)

TEMPLATE = {"metadata": {"labels": {"app": "llama"}}, "spec": {"containers": [{"name": "server", "image": "vllm"}]}}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "llama", "namespace": "default", "uid": "u-1"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "llama"}}, "template": TEMPLATE},
}


def test_fnv32a_matches_the_published_test_vectors() -> None:
    assert _fnv32a(b"") == 0x811C9DC5
    assert _fnv32a(b"a") == 0xE40C292C
    assert _fnv32a(b"foobar") == 0xBF9CF968


def test_safe_encoding_maps_each_digit_through_the_vowel_free_alphabet() -> None:
    assert safe_encode("0123456789") == "".join(SAFE_ALPHABET[ord(c) % 27] for c in "0123456789")
    assert safe_encode("4") == "8"  # ord("4") is 52, and 52 % 27 is 25: the 26th letter
    assert set(safe_encode("3141592653")) <= set(SAFE_ALPHABET)


def test_hash_is_stable_and_changes_with_the_template_and_the_collision_count() -> None:
    first = pod_template_hash(TEMPLATE)
    assert first == pod_template_hash({"spec": TEMPLATE["spec"], "metadata": TEMPLATE["metadata"]})
    assert 1 <= len(first) <= 10 and set(first) <= set(SAFE_ALPHABET)
    other = {**TEMPLATE, "spec": {"containers": [{"name": "server", "image": "vllm:2"}]}}
    assert pod_template_hash(other) != first
    assert pod_template_hash(TEMPLATE, collision_count=1) != pod_template_hash(TEMPLATE, collision_count=0)
    assert pod_template_hash(TEMPLATE, collision_count=0) != first  # a count of 0 still adds its bytes


def test_replicaset_is_named_labelled_and_owned_by_its_deployment() -> None:
    rs = build_replicaset(DEPLOYMENT, template_hash="5d4c8b7f9", replicas=3, revision=2, max_surge=1)
    assert rs["metadata"]["name"] == "llama-5d4c8b7f9"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "llama", POD_TEMPLATE_HASH: "5d4c8b7f9"}
    assert rs["spec"]["template"]["metadata"]["labels"][POD_TEMPLATE_HASH] == "5d4c8b7f9"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "3"
    (owner,) = rs["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "llama",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert POD_TEMPLATE_HASH not in DEPLOYMENT["spec"]["template"]["metadata"]["labels"]  # not mutated
    assert template_without_hash(rs["spec"]["template"]) == TEMPLATE


def test_pod_is_generated_from_the_replicaset_template_and_owned_by_it() -> None:
    rs = build_replicaset(DEPLOYMENT, template_hash="abc", replicas=1, revision=1, max_surge=0)
    rs["metadata"]["uid"] = "u-2"
    pod = build_pod(rs)
    assert pod["metadata"]["generateName"] == "llama-abc-"
    assert pod["metadata"]["labels"] == {"app": "llama", POD_TEMPLATE_HASH: "abc"}
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "u-2"
    assert pod["spec"] == TEMPLATE["spec"]
