"""Fixtures of the chart tests (test_chart.py, test_chart_metrics.py): helm, offline."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from .chartkit import CHART, KUBE_VERSION, RELEASE, RELEASE_NAMESPACE, ROOT, Obj, Render, find_helm


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    binary = find_helm()
    home = tmp_path_factory.mktemp("helm-home")
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "KUBECONFIG": str(home / "no-kubeconfig"),  # static: nothing may talk to a cluster
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(binary), *args], capture_output=True, text=True, env=env, timeout=60, check=False, cwd=ROOT
        )

    return run


@pytest.fixture()
def template(
    helm: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`helm template` of the chart with these values (a dict written to a values file)."""

    def run(values: Obj | None = None, kube_version: str = KUBE_VERSION) -> subprocess.CompletedProcess[str]:
        values_file = tmp_path / "values.yaml"
        values_file.write_text(yaml.safe_dump(values or {}))
        return helm(
            "template",
            RELEASE,
            str(CHART),
            "--namespace",
            RELEASE_NAMESPACE,
            "--kube-version",
            kube_version,
            "--values",
            str(values_file),
        )

    return run


@pytest.fixture()
def render(template: Callable[..., subprocess.CompletedProcess[str]]) -> Render:
    """The rendered objects for these values; rendering must succeed."""

    def run(values: Obj | None = None, kube_version: str = KUBE_VERSION) -> list[Obj]:
        result = template(values, kube_version)
        assert result.returncode == 0, f"helm template failed: {result.stderr}"
        return [doc for doc in yaml.safe_load_all(result.stdout) if doc]

    return run
