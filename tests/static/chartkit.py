"""What the chart tests share: where the chart is, how it is rendered, and small readers.

The ``helm``, ``template`` and ``render`` fixtures built on these live in conftest.py, so every
chart test module gets them without importing fixtures by name.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "inference-operator"
DEPLOY = ROOT / "deploy"
RELEASE = "ops"
RELEASE_NAMESPACE = "operators"
FULLNAME = f"{RELEASE}-inference-operator"
# The Kubernetes version the tests render for (explicit, so they do not depend on the default
# compiled into helm; test_helm_template_without_a_cluster_assumes_kubernetes_1_36 checks that).
KUBE_VERSION = "1.36.0"
Obj = dict[str, Any]
Render = Callable[..., list[Obj]]


def find_helm() -> Path:
    """helm from the bin dir of the local control plane (the build script prints it; cached: ~0 s)."""
    sys.path.insert(0, str(ROOT / "hack"))
    try:
        import cluster  # hack/cluster.py

        bin_dir = cluster.ensure_binaries()
    except Exception as err:  # noqa: BLE001 - any failure to find helm fails the tests loudly
        pytest.fail(f"cannot find helm: hack/build-controlplane.sh failed: {err}", pytrace=False)
    finally:
        sys.path.remove(str(ROOT / "hack"))
    helm = bin_dir / "helm"
    if not os.access(helm, os.X_OK):
        pytest.fail(f"helm is missing from the bin dir {bin_dir}; run hack/build-controlplane.sh", pytrace=False)
    return helm


def only(objects: list[Obj], kind: str) -> Obj:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, rendered {[o['metadata']['name'] for o in found]}"
    return found[0]
