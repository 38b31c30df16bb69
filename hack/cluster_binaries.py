"""Where the local cluster's binaries come from: ``hack/build-controlplane.sh``, which builds
them once from pinned Go modules into a cache outside the repo, or a bin dir given in
``$INFERENCE_OPERATOR_BIN_DIR`` (machines that ship the binaries skip the build)."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from cluster_components import ControlPlaneError

HACK_DIR = Path(__file__).resolve().parent
BUILD_SCRIPT = HACK_DIR / "build-controlplane.sh"
BIN_DIR_ENV = "INFERENCE_OPERATOR_BIN_DIR"

logger = logging.getLogger("cluster")


def ensure_binaries() -> Path:
    """The bin dir holding every control-plane binary, built first if needed.

    ``$INFERENCE_OPERATOR_BIN_DIR`` skips the build script (for machines that
    ship the binaries). Cold build: 5-25 minutes; cached: about a second.
    """
    if override := os.environ.get(BIN_DIR_ENV):
        return Path(override)
    logger.info("Ensuring control-plane binaries, script=%s", BUILD_SCRIPT)
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} failed with exit code {result.returncode}; its output above says why "
            "(build logs: ~/.cache/inference-operator/logs/)."
        )
    return Path(result.stdout.strip().splitlines()[-1])
