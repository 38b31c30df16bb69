"""The operator as users run it: its own image, installed with Helm and with Kustomize onto the
local cluster's real node, reconciling a stand-in inference server that real pods serve.

Covers:
- ``helm install`` with the image built by hack/build-images.sh (referenced by digest), in a
  namespace that enforces the restricted Pod Security Standard: both operator pods Running and
  Ready on the real node with a read-only root filesystem; their liveness and metrics endpoints
  answer on the pod IPs; one leads; the operator reaches the API server with in-cluster config
  (its ServiceAccount's projected token, through the ``kubernetes`` Service: the audit log shows
  its writes coming from a pod address);
- the in-cluster operator takes the stand-in InferenceService (deploy/samples/standin.yaml) to
  Ready only once the stand-in's pods pass their real readiness probe, and a completion request
  through the Service's cluster IP is answered by the model;
- ``kubectl delete pod`` of the leader: the standby leads, a new pod joins, and no write reaches
  the converged objects;
- pods on the real kubelet: a stand-in loading for longer than a readiness budget allows is
  waited out by the startup probe (no restart) while status says it is still starting
  (``ServerStarting``, phase Progressing); one that exits with code 3 goes into CrashLoopBackOff
  and status names the container, the exit code and the restarts; ``podSecurity: Restricted``
  (deploy/samples/standin-restricted.yaml) runs in a namespace that enforces the restricted
  standard, and an image that runs as root gets the kubelet's ``CreateContainerConfigError``
  ("container has runAsNonRoot and image will run as root") in status;
- ``helm upgrade`` rolls both operator pods, the stand-in stays Ready; ``helm uninstall``
  (after the InferenceService is deleted and released) leaves nothing of the release but the CRD;
- the same install with ``kubectl apply -k`` of an overlay of deploy/ that sets the image.

The cluster is this module's own (``real_node=True``); the figures (operator pod start to its
first reconcile, apply to Ready of the stand-in) are printed for the closing note. If the node
or the image build fails, every test here fails with the reason: never a skip. Tests run in
file order and share the install of the first.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from inference_operator.api.constants import Phase, Reason
from inference_operator.lb.registry import RegistryServer

from .conftest import Cluster
from .harness import ROOT, condition, is_ready, wait_until
from .helm import CHART, Helm, helm_for, names, wait_available, wait_release_gone
from .images import BASE, OPERATOR, OPERATOR_REPOSITORY, ImageSet
from .incluster import (
    APPS_NS,
    FULLNAME,
    OPERATOR_NS,
    RELEASE,
    STANDIN,
    STANDIN_RESTRICTED,
    TIMEOUT,
    Obj,
    delete_and_wait,
    explained,
    http_get,
    leader,
    metric,
    operator_pods,
    parse_time,
    ready_pods,
    real_node_cluster,
    server_pods,
    standin,
    writes_by_operator,
)

sys.path.insert(0, str(ROOT / "hack"))

from cluster_config import NODE_BRIDGE_ADDRESS, REAL_NODE_NAME

RESTRICTED_NS = "apps-restricted"
LONG_LOAD_SECONDS = 45
"""Past the 30 s (3 failures x 10 s) the serving probes' budget allows, the point where a probe
with those settings that also covered loading would have the kubelet restart the server; far
inside the startup probe's 1800 s (180 x 10 s, builders.py), which holds the other probes off
until /health answers. restartCount 0 shows it did; the test stays near a minute."""
CRASH_AFTER = "2s"  # the stand-in exits with code 3 this long after each start


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory, image_set: ImageSet) -> Iterator[Cluster]:
    with real_node_cluster(tmp_path_factory.mktemp("in-cluster"), image_set, RESTRICTED_NS) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def registry(real: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    """The load balancer registry on the node bridge's host address, where pods reach this
    machine (the chart's default in-memory provider forgets its records with the leader, so a
    new leader would register everything again under new ids)."""
    state = tmp_path_factory.mktemp("lb") / "state.json"
    server = RegistryServer(host=NODE_BRIDGE_ADDRESS, port=0, state_file=state)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def helm(real: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return helm_for(real, tmp_path_factory.mktemp("helm"))


# Helm ------------------------------------------------------------------------------------------


def test_helm_install_runs_the_operator_image_in_cluster_on_the_real_node(
    real: Cluster, helm: Helm, image_set: ImageSet, registry: RegistryServer
) -> None:
    image = image_set.images[OPERATOR]
    assert real.audit is not None
    mark = real.audit.mark()
    real.kubectl.apply({**STANDIN, "metadata": {"name": "early"}}, APPS_NS)  # waits for the operator
    started = time.monotonic()
    helm.run(
        "install",
        RELEASE,
        str(CHART),
        "--namespace",
        OPERATOR_NS,
        "--set",
        f"image.repository={OPERATOR_REPOSITORY}",
        "--set",
        f"image.digest={image.digest}",
        "--set",
        "loadBalancer.provider=http",
        "--set",
        f"loadBalancer.url={registry.url}",
    )
    pods = ready_pods(real, f"app.kubernetes.io/instance={RELEASE}", OPERATOR_NS, 2)
    print(f"\nhelm install to both operator pods Ready: {time.monotonic() - started:.1f}s")
    for pod in pods:
        assert pod["spec"]["nodeName"] == REAL_NODE_NAME
        container = pod["spec"]["containers"][0]
        assert container["image"] == f"{OPERATOR_REPOSITORY}@{image.digest}"
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        status = pod["status"]["containerStatuses"][0]
        assert status["ready"] and status["restartCount"] == 0, status
        assert status["imageID"].endswith(image.digest)
        ip = pod["status"]["podIP"]
        assert ip.startswith("198.18.200.")
        assert http_get(f"http://{ip}:8080/healthz")[0] == 200
        assert metric(pod, "controller_runtime_active_workers") == 0
    lead = leader(real, pods)
    assert (
        real.kubectl.json("get", "lease", "-n", OPERATOR_NS, FULLNAME)["spec"]["holderIdentity"]
        == (lead["metadata"]["name"])
    )
    # Operator pod start to its first reconcile: the leader's first write for the waiting object.
    real.kubectl.wait_for(
        "infsvc", "early", APPS_NS, is_ready, what="the waiting InferenceService Ready", timeout=TIMEOUT
    )
    first = min(
        parse_time(e["requestReceivedTimestamp"])
        for e in writes_by_operator(real, mark, OPERATOR_NS)
        if (e.get("objectRef") or {}).get("name") == "early"
    )
    running_since = parse_time(lead["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
    took = (first - running_since).total_seconds()
    print(f"operator container start to its first write for a waiting object: {took:.1f}s")


def test_the_in_cluster_operator_serves_the_stand_in_to_ready_and_it_answers(
    real: Cluster, registry: RegistryServer
) -> None:
    assert real.audit is not None
    mark = real.audit.mark()
    started = time.monotonic()
    real.kubectl.apply(STANDIN, APPS_NS)
    name = STANDIN["metadata"]["name"]
    seen_unready = False

    def ready() -> Obj | None:
        nonlocal seen_unready
        obj = real.kubectl.get("infsvc", name, APPS_NS)
        if obj is not None and not is_ready(obj):
            seen_unready = True
        return obj if obj is not None and is_ready(obj) else None

    obj = wait_until(ready, timeout=TIMEOUT, what="the stand-in InferenceService to be Ready")
    took = time.monotonic() - started
    print(f"\nkubectl apply of the stand-in to Ready with real pods: {took:.1f}s")
    assert seen_unready, "Ready at once: the readiness probe cannot have been waited for"
    assert took >= 5, "Ready before the stand-in's load delay (5 s) passed: the probe was not real"
    pods = real.kubectl.json("get", "pods", "-n", APPS_NS, "-l", f"app.kubernetes.io/name={name}")["items"]
    assert pods and all(p["spec"]["nodeName"] == REAL_NODE_NAME for p in pods)
    assert obj["status"]["readyReplicas"] == STANDIN["spec"]["replicas"]
    assert obj["status"]["loadBalancer"]["id"] == registry.registrations()[f"{APPS_NS}/{name}"].id

    service = real.kubectl.get("service", name, APPS_NS)
    assert service is not None
    url = f"http://{service['spec']['clusterIP']}:{service['spec']['ports'][0]['port']}/v1/completions"
    body = json.dumps({"model": STANDIN["spec"]["model"], "prompt": "one two three", "max_tokens": 8}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        answer = json.loads(response.read())
    assert answer["model"] == STANDIN["spec"]["model"]
    assert answer["choices"][0]["text"].split() == ["three", "two", "one"]

    # In-cluster config: the writes came from a pod address, as the ServiceAccount, over the
    # kubernetes Service (kube-proxy), not from this machine's loopback.
    writes = writes_by_operator(real, mark, OPERATOR_NS)
    assert writes, "the operator wrote nothing"
    sources = {ip for e in writes for ip in e.get("sourceIPs", [])}
    assert sources and all(ip.startswith("198.18.200.") for ip in sources), sources


def test_deleting_the_leader_pod_hands_over_with_no_write_to_converged_objects(real: Cluster) -> None:
    assert real.audit is not None
    selector = f"app.kubernetes.io/instance={RELEASE}"
    pods = operator_pods(real, selector, OPERATOR_NS)
    old = leader(real, pods)
    mark = real.audit.mark()
    deleted = time.monotonic()
    real.kubectl.run("delete", "pod", "-n", OPERATOR_NS, old["metadata"]["name"])
    fresh = ready_pods(real, selector, OPERATOR_NS, 2)
    assert old["metadata"]["uid"] not in {p["metadata"]["uid"] for p in fresh}
    new = leader(real, fresh)
    print(f"\nleader pod deleted to a new leader: {time.monotonic() - deleted:.1f}s")
    wait_until(
        lambda: metric(new, "controller_runtime_reconcile_total") >= 1 and metric(new, "workqueue_depth") == 0,
        timeout=60,
        what="the new leader to reconcile everything once",
    )
    writes = [
        f"{e['verb']} {e['objectRef'].get('resource')}/{e['objectRef'].get('subresource', '')} "
        f"{e['objectRef'].get('name')} by {e['user']['username']}"
        for e in writes_by_operator(real, mark, OPERATOR_NS)
    ]
    assert writes == []
    assert is_ready(real.kubectl.get("infsvc", STANDIN["metadata"]["name"], APPS_NS) or {})


# Pods on a real kubelet -----------------------------------------------------------------------


def test_a_long_model_load_is_waited_out_by_the_startup_probe_with_honest_status(real: Cluster) -> None:
    name = "slow-load"
    started = time.monotonic()
    real.kubectl.apply(standin(name, env={"STANDIN_LOAD_DELAY": f"{LONG_LOAD_SECONDS}s"}), APPS_NS)
    loading: list[tuple[float, Obj]] = []

    def ready() -> Obj | None:
        obj = real.kubectl.get("infsvc", name, APPS_NS)
        if obj is not None and not is_ready(obj):
            loading.append((time.monotonic() - started, obj))
        return obj if obj is not None and is_ready(obj) else None

    wait_until(ready, timeout=LONG_LOAD_SECONDS + TIMEOUT, what=f"{name} Ready after its long load", interval=1)
    took = time.monotonic() - started
    print(f"\nkubectl apply of a stand-in loading {LONG_LOAD_SECONDS}s to Ready: {took:.1f}s")
    assert took >= LONG_LOAD_SECONDS, "Ready before the load delay passed: the probes were not real"
    written = [o for _, o in loading if condition(o, "Ready")]  # the first looks may come before any status
    seen = {(c["status"], c["reason"]) for c in (condition(o, "Ready") for o in written)}
    assert written and {status for status, _ in seen} == {"False"}, seen
    assert all(o["status"]["phase"] in (Phase.PENDING, Phase.PROGRESSING) for o in written)
    late = [o for at, o in loading if at > 30]  # past what a readiness budget alone would allow
    assert late, "no look at the status during the long load"
    said = condition(late[-1], "Ready")
    print(f"status while loading: phase={late[-1]['status']['phase']} reason={said['reason']} {said['message']!r}")
    assert said["reason"] == Reason.SERVER_STARTING, said
    assert "startup probe has not passed yet" in said["message"]
    assert late[-1]["status"]["phase"] == Phase.PROGRESSING
    assert condition(late[-1], "Progressing")["status"] == "True"
    [pod] = server_pods(real, name, APPS_NS)
    status = pod["status"]["containerStatuses"][0]
    assert pod["spec"]["nodeName"] == REAL_NODE_NAME
    assert status["restartCount"] == 0 and status["started"] and status["ready"], status
    delete_and_wait(real, name, APPS_NS)


def test_a_crashing_server_loops_on_the_kubelet_and_status_names_container_exit_code_and_restarts(
    real: Cluster,
) -> None:
    name = "crasher"
    started = time.monotonic()
    real.kubectl.apply(standin(name, env={"STANDIN_CRASH_AFTER": CRASH_AFTER}), APPS_NS)

    def backing_off() -> Obj | None:
        pods = server_pods(real, name, APPS_NS)
        statuses = [cs for p in pods for cs in p["status"].get("containerStatuses") or []]
        waiting = [cs for cs in statuses if (cs["state"].get("waiting") or {}).get("reason") == "CrashLoopBackOff"]
        return waiting[0] if waiting else None

    crashed = wait_until(backing_off, timeout=TIMEOUT, what=f"{name}'s pod in CrashLoopBackOff", interval=1)
    assert crashed["lastState"]["terminated"]["exitCode"] == 3, crashed
    obj, said = explained(real, name, APPS_NS, Reason.CRASH_LOOPING, "the crash loop")
    print(f"apply to the crash loop explained: {time.monotonic() - started:.1f}s")
    assert said["status"] == "False"
    assert re.fullmatch(
        r"0 of 1 replicas ready; 1 pod\(s\) keep crashing: container server exited with code 3 \(Error\), "
        r"restarted [1-9][0-9]* times?",
        said["message"],
    ), said
    assert obj["status"]["phase"] == Phase.PENDING  # no replica ever ready; time may still fix it
    delete_and_wait(real, name, APPS_NS)


def test_pod_security_restricted_runs_the_stand_in_where_restricted_is_enforced(real: Cluster) -> None:
    name = STANDIN_RESTRICTED["metadata"]["name"]
    real.kubectl.apply(STANDIN_RESTRICTED, RESTRICTED_NS)  # deploy/samples/standin-restricted.yaml
    real.kubectl.wait_for("infsvc", name, RESTRICTED_NS, is_ready, what=f"{name} Ready", timeout=TIMEOUT)
    [pod] = server_pods(real, name, RESTRICTED_NS)
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0


def test_pod_security_restricted_with_an_image_running_as_root_is_explained_in_status(real: Cluster) -> None:
    name = "root-image"
    real.kubectl.apply(standin(name, base=STANDIN_RESTRICTED, image=BASE), RESTRICTED_NS)
    _, said = explained(real, name, RESTRICTED_NS, Reason.CONTAINER_CONFIG_ERROR, "why its container cannot start")
    assert said["status"] == "False"
    assert said["message"].startswith("0 of 1 replicas ready; 1 pod(s) cannot start: container server: ")
    assert "container has runAsNonRoot and image will run as root" in said["message"]
    for gone in (name, STANDIN_RESTRICTED["metadata"]["name"]):
        delete_and_wait(real, gone, RESTRICTED_NS)


def test_helm_upgrade_rolls_the_operator_and_uninstall_leaves_only_the_crd(real: Cluster, helm: Helm) -> None:
    selector = f"app.kubernetes.io/instance={RELEASE}"
    before = {p["metadata"]["uid"] for p in operator_pods(real, selector, OPERATOR_NS)}
    helm.run("upgrade", RELEASE, str(CHART), "--namespace", OPERATOR_NS, "--reuse-values", "--set", "workers=2")
    wait_available(real, FULLNAME, OPERATOR_NS, env={"INFERENCE_OPERATOR_WORKERS": "2"})
    after = ready_pods(real, selector, OPERATOR_NS, 2)
    assert not before & {p["metadata"]["uid"] for p in after}, "the upgrade replaced both pods"
    assert is_ready(real.kubectl.get("infsvc", STANDIN["metadata"]["name"], APPS_NS) or {})

    real.kubectl.run("delete", "infsvc", "--all", "-n", APPS_NS, "--timeout=120s")  # released by the operator
    wait_until(
        lambda: not names(real, "deployments,services,pods", namespace=APPS_NS),
        timeout=TIMEOUT,
        what="the stand-ins' children to be garbage-collected",
    )
    helm.run("uninstall", RELEASE, "--namespace", OPERATOR_NS)
    wait_release_gone(real, RELEASE, [OPERATOR_NS])
    assert real.kubectl.get("crd", "inferenceservices.serving.inference-operator.dev", "default") is not None


# Kustomize -------------------------------------------------------------------------------------


def test_kubectl_apply_k_of_an_overlay_with_the_image_serves_the_stand_in(
    real: Cluster, image_set: ImageSet, tmp_path: Path
) -> None:
    image = image_set.images[OPERATOR]
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(ROOT / "deploy", overlay)],  # kustomize wants it relative
                "images": [{"name": "inference-operator", "newName": OPERATOR_REPOSITORY, "digest": image.digest}],
            }
        )
    )
    real.kubectl.run("apply", "-k", str(overlay))  # its Namespace enforces the restricted standard itself
    namespace = "inference-operator"
    pods = ready_pods(real, "app.kubernetes.io/name=inference-operator", namespace, 2)
    assert all(p["spec"]["containers"][0]["image"] == f"{OPERATOR_REPOSITORY}@{image.digest}" for p in pods)
    name = f"standin-{uuid.uuid4().hex[:4]}"
    real.kubectl.apply({**STANDIN, "metadata": {"name": name}}, APPS_NS)
    real.kubectl.wait_for("infsvc", name, APPS_NS, is_ready, what=f"{name} Ready under the kustomize install")
    real.kubectl.run("delete", "infsvc", name, "-n", APPS_NS, "--timeout=120s")
    real.kubectl.run("delete", "-k", str(overlay), "--ignore-not-found", "--wait=true", "--timeout=120s")
