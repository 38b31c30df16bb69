"""The operator image, built by hack/build-images.sh with buildah, run with podman.

Covers: the build script succeeds (a failure fails every test here, never skips) and a second
run with nothing changed is a no-op that takes well under a few seconds; each OCI archive holds
the digest images.txt records and carries the image's name for `ctr images import`; the base
has `python` 3.11 and `pip` on PATH, no EXTERNALLY-MANAGED marker, no man pages, docs or apt
lists; the operator image runs as 10001:10001 by default, carries the OCI labels (version from
pyproject.toml), holds no compiler, pip cache, wheels or source tree, stays under a size bound;
`kopf run … --help` and `import inference_operator.operator` work as 10001 on a read-only root
filesystem with no writable /tmp; and the image, run that way with all capabilities dropped
against the local control plane, leads, reconciles an InferenceService to Ready (Deployment and
Service created) and logs no write error. Every images/<name>/Containerfile image is in the set
with its entrypoint.
"""

from __future__ import annotations

import base64
import hashlib
import json
import resource
import subprocess
import tarfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import OPERATOR_NAMESPACE, OPERATOR_SA, Cluster, leader_election_rbac
from .harness import ROOT, free_port, is_ready, wait_until
from .images import BASE, OPERATOR, VERSION, ImageSet, build_images

RUN_TIMEOUT = 120
OPERATOR_SIZE_LIMIT = 400 * 1024 * 1024  # 320 MB with the kubernetes client (170 MB of it), which it no longer has
BASE_SIZE_LIMIT = 200 * 1024 * 1024  # 149 MB today
READ_ONLY_ERRORS = ("Read-only file system", "PermissionError", "Permission denied")


def podman_flags() -> list[str]:
    """What every container here needs (as in hack/build-images.sh): runc (crun 1.8 refuses
    hybrid cgroups) and limits at or below the hard limits, which may not be raised."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nofile = 1048576 if nofile == resource.RLIM_INFINITY else nofile
    nproc = 32768 if nproc == resource.RLIM_INFINITY else min(nproc, 32768)
    return ["--runtime", "runc", "--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


def podman(*args: str, check: bool = True, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


def run_in(image: str, *command: str, entrypoint: str | None = None, check: bool = True, read_only: bool = True) -> str:
    """Run the image as a pod with readOnlyRootFilesystem would: read-only root, no tmpfs on
    /tmp, no network, all capabilities dropped, no privilege escalation (``read_only=False``:
    as a build step runs it)."""
    args = ["run", "--rm", *podman_flags(), "--network", "none"]
    if read_only:
        args += ["--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    if entrypoint is not None:
        args += ["--entrypoint", entrypoint]
    result = podman(*args, image, *command, check=check)
    return result.stdout + result.stderr


def inspect(ref: str) -> dict[str, Any]:
    data: list[dict[str, Any]] = json.loads(podman("image", "inspect", ref).stdout)
    return data[0]


def test_an_unchanged_tree_is_a_no_op_that_takes_well_under_a_few_seconds(image_set: ImageSet) -> None:
    started = time.monotonic()
    directory, log = build_images()
    elapsed = time.monotonic() - started
    assert directory == image_set.directory
    assert "building" not in log, log
    assert elapsed < 5, f"a cached run took {elapsed:.1f}s"


def test_each_archive_holds_the_recorded_digest_and_the_image_name(image_set: ImageSet) -> None:
    assert {BASE, OPERATOR} <= set(image_set.images)
    for image in image_set.images.values():
        with tarfile.open(image.archive) as archive:
            index_file = archive.extractfile("index.json")
            assert index_file is not None, f"{image.archive} has no index.json"
            (manifest,) = json.load(index_file)["manifests"]
        assert manifest["digest"] == image.digest, image.ref
        assert manifest["annotations"]["org.opencontainers.image.ref.name"] == image.ref
        raw = subprocess.run(
            ["skopeo", "inspect", "--raw", f"oci-archive:{image.archive}"], capture_output=True, check=True
        ).stdout
        assert "sha256:" + hashlib.sha256(raw).hexdigest() == image.digest, image.ref
    assert image_set.python_image == f"{BASE.rsplit(':', 1)[0]}@{image_set.images[BASE].digest}"


def test_the_images_resolve_in_local_storage_by_their_archive_digests(image_set: ImageSet) -> None:
    for image in image_set.images.values():
        by_digest = f"{image.ref.rsplit(':', 1)[0]}@{image.digest}"
        assert inspect(by_digest)["Id"] == inspect(image.ref)["Id"], image.ref


def test_the_base_has_python_311_and_pip_on_path_and_lets_pip_install(image_set: ImageSet) -> None:
    script = (
        "import os, sys, sysconfig, pip; "
        "print(sys.version_info[:2], pip.__version__, "
        "os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"
    )
    out = run_in(BASE, "python", "-c", script)
    assert out.startswith("(3, 11)") and out.strip().endswith("False"), out
    assert "pip " in run_in(BASE, "pip", "--version")
    # PEP 668 would refuse this with "externally-managed-environment" before anything else.
    command = ("python", "-m", "pip", "install", "--no-index", "--dry-run", "nothing-here")
    refused = run_in(BASE, *command, check=False, read_only=False)
    assert "externally-managed" not in refused and "No matching distribution" in refused, refused


def test_the_base_is_slim(image_set: ImageSet) -> None:
    listing = run_in(
        BASE,
        "sh",
        "-c",
        "find /usr/share/man /usr/share/locale -type f 2>/dev/null; "
        "find /var/lib/apt/lists -type f ! -name lock; find /usr/share/doc -type f ! -name copyright",
        read_only=False,  # as root with its capabilities: apt's partial/ is root-only
    )
    assert listing.strip() == "", listing
    assert inspect(BASE)["Size"] < BASE_SIZE_LIMIT


def test_the_operator_image_runs_as_10001_and_carries_its_labels(image_set: ImageSet) -> None:
    config = inspect(OPERATOR)["Config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["kopf", "run", "-m", "inference_operator.operator"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.title"] == "inference-operator"
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.revision"] not in ("", "unknown")
    assert run_in(OPERATOR, "-c", "echo $(id -u) $(id -g)", entrypoint="sh").split() == ["10001", "10001"]


def test_kopf_help_and_the_operator_import_work_on_a_read_only_root_without_tmp(image_set: ImageSet) -> None:
    assert "Usage: kopf run" in run_in(OPERATOR, "--help")
    out = run_in(OPERATOR, "-c", "import inference_operator.operator; print('imported')", entrypoint="python")
    assert out.strip() == "imported", out


def test_the_operator_image_holds_no_compiler_pip_cache_or_build_leftovers(image_set: ImageSet) -> None:
    out = run_in(
        OPERATOR,
        "-c",
        "for p in /wheels /src /root/.cache/pip /usr/bin/gcc /usr/bin/cc /usr/bin/g++ /usr/bin/make; "
        'do [ -e "$p" ] && echo "$p"; done; true',
        entrypoint="sh",
    )
    assert out.strip() == "", out
    assert inspect(OPERATOR)["Size"] < OPERATOR_SIZE_LIMIT


def test_every_containerfile_image_is_built_with_its_entrypoint(image_set: ImageSet) -> None:
    for containerfile in sorted((ROOT / "images").glob("*/Containerfile")):
        name = containerfile.parent.name
        refs = [ref for ref in image_set.images if ref.startswith(f"localhost/inference-operator/{name}:")]
        assert len(refs) == 1, f"images/{name} is not in the set: {sorted(image_set.images)}"
        assert inspect(refs[0])["Config"]["Entrypoint"] == [f"/{name}"]


# -- the image against a real API server ----------------------------------------------------------

IMAGE_TEST_NAMESPACE = "io-image-e2e"


@pytest.fixture(params=["in-cluster", "kubeconfig"])
def containerised_operator(
    request: pytest.FixtureRequest,
    image_set: ImageSet,
    cluster: Cluster,
    crd: None,
    operator_kubeconfig: Path,
    tmp_path: Path,
) -> Iterator[tuple[str, str]]:
    """The operator image run as a pod runs it (10001, read-only root, no capabilities) on the
    host network, with the suite operator's least-privilege identity and its Lease in a
    namespace of its own. Yields (container name, namespace it is tested in).

    "in-cluster": the ServiceAccount files and KUBERNETES_SERVICE_* as the kubelet provides
    them, and no writable /tmp at all. "kubeconfig": a kubeconfig file, as when run outside a
    cluster; Python's ssl reads a client certificate only from files (written to /tmp, loaded,
    removed at once; Kopf's client keeps its own), so this mode gets a tmpfs /tmp (the chart's emptyDir)."""
    cluster.kubectl.run("create", "namespace", IMAGE_TEST_NAMESPACE)
    for doc in leader_election_rbac(IMAGE_TEST_NAMESPACE, OPERATOR_SA, OPERATOR_NAMESPACE):
        cluster.kubectl.apply(doc)
    port, metrics_port = free_port(), free_port()
    name = f"io-image-e2e-{uuid.uuid4().hex[:8]}"
    env = {
        "INFERENCE_OPERATOR_IDENTITY": name,
        "INFERENCE_OPERATOR_LEASE_NAMESPACE": IMAGE_TEST_NAMESPACE,
        "INFERENCE_OPERATOR_METRICS_ADDRESS": f"127.0.0.1:{metrics_port}",
        "INFERENCE_OPERATOR_LB_PROVIDER": "memory",
    }
    args = ["run", "--detach", "--name", name, *podman_flags(), "--network", "host", "--read-only"]
    args += ["--read-only-tmpfs=false", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    credentials = yaml.safe_load(operator_kubeconfig.read_text())
    if request.param == "in-cluster":
        account = tmp_path / "serviceaccount"
        account.mkdir()
        server = urllib.parse.urlsplit(credentials["clusters"][0]["cluster"]["server"])
        ca = base64.b64decode(credentials["clusters"][0]["cluster"]["certificate-authority-data"])
        (account / "ca.crt").write_bytes(ca)
        (account / "token").write_text(credentials["users"][0]["user"]["token"])
        (account / "namespace").write_text(OPERATOR_NAMESPACE)
        args += ["--volume", f"{account}:/var/run/secrets/kubernetes.io/serviceaccount:ro"]
        env |= {"KUBERNETES_SERVICE_HOST": server.hostname or "", "KUBERNETES_SERVICE_PORT": str(server.port)}
    else:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(operator_kubeconfig.read_text())
        args += ["--volume", f"{kubeconfig}:/etc/inference-operator/kubeconfig:ro", "--tmpfs", "/tmp:size=64m"]
        env["KUBECONFIG"] = "/etc/inference-operator/kubeconfig"
    for path in tmp_path.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # test credentials, readable by uid 10001
    args += [arg for key, value in env.items() for arg in ("--env", f"{key}={value}")]
    podman(*args, OPERATOR, "--all-namespaces", f"--liveness=http://127.0.0.1:{port}/healthz")
    try:
        try:
            wait_until(
                lambda: running(name) and liveness(port), timeout=90, what=f"the operator container {name} to be live"
            )
        except AssertionError as err:
            raise AssertionError(f"{err}\nthe container's log ends:\n{container_log(name)}") from None
        yield name, IMAGE_TEST_NAMESPACE
    finally:
        podman("rm", "--force", "--time", "10", name, check=False)
        cluster.kubectl.run("delete", "namespace", IMAGE_TEST_NAMESPACE, "--wait=true", "--timeout=60s", check=False)


def container_log(name: str, tail: int = 40) -> str:
    logs = podman("logs", "--tail", str(tail), name, check=False)
    return logs.stdout + logs.stderr


def running(name: str) -> bool:
    state = podman("inspect", "--format", "{{.State.Status}}", name).stdout.strip()
    if state != "running":
        raise AssertionError(f"the operator container is {state}")
    return True


def liveness(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
        return bool(response.status == 200)


def test_the_image_reconciles_an_inference_service_as_10001_on_a_read_only_root(
    containerised_operator: tuple[str, str], cluster: Cluster
) -> None:
    name, namespace = containerised_operator
    manifest = {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": {"name": "from-image", "namespace": namespace},
        "spec": {"image": "vllm/vllm-openai:v0.6.3", "model": "m", "replicas": 1},
    }
    cluster.kubectl.apply(yaml.safe_dump(manifest))
    obj = cluster.kubectl.wait_for(
        "infsvc", "from-image", namespace, is_ready, what="the InferenceService to be Ready", timeout=120
    )
    assert obj["status"]["readyReplicas"] == 1
    assert cluster.kubectl.get("deployment", "from-image", namespace) is not None
    assert cluster.kubectl.get("service", "from-image", namespace) is not None
    # Deletion goes through the finalizer: the image's operator releases the balancer first.
    cluster.kubectl.run("delete", "infsvc", "from-image", "-n", namespace, "--wait=false")
    cluster.kubectl.wait_gone("infsvc", "from-image", namespace, what="the InferenceService to be deleted")
    log = container_log(name, tail=100000)
    assert not [line for line in log.splitlines() if any(e in line for e in READ_ONLY_ERRORS)], log
