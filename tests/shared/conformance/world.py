"""The fake side's starting point: a FakeApiServer holding what the real cluster holds before a
check runs (the InferenceService CRD from deploy/crds)."""

from __future__ import annotations

from pathlib import Path

import yaml

from inference_operator.sim.apiserver.server import FakeApiServer

CRD_FILE = (
    Path(__file__).resolve().parents[3] / "deploy" / "crds" / "serving.inference-operator.dev_inferenceservices.yaml"
)


def crd() -> dict[str, object]:
    loaded: dict[str, object] = yaml.safe_load(CRD_FILE.read_text())
    return loaded


def fake_server() -> FakeApiServer:
    server = FakeApiServer()
    server.create(crd())
    return server
