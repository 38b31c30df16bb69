"""The project's container images as the e2e tests get them: built by hack/build-images.sh.

One build per session (``image_set`` in conftest.py); a second run of the script over an
unchanged tree is a no-op. A failed build fails the tests that need it, in the script's own
words: never a skip.
"""

from __future__ import annotations

import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from .harness import ROOT

SCRIPT = ROOT / "hack" / "build-images.sh"
BASE = "localhost/inference-operator/python:3.11-slim-bookworm"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
OPERATOR_REPOSITORY = "localhost/inference-operator/operator"
OPERATOR = f"{OPERATOR_REPOSITORY}:{VERSION}"
BUILD_TIMEOUT = 1800  # a cold build takes ~2-5 min on 2 cores


@dataclass(frozen=True)
class Image:
    ref: str
    digest: str
    archive: Path


@dataclass(frozen=True)
class ImageSet:
    directory: Path
    images: dict[str, Image]
    """By ref."""
    python_image: str
    """PYTHON_IMAGE=… as the script passes it to the Dockerfile."""


def build_images() -> tuple[Path, str]:
    """Run the build script; fail (never skip) with its own words when it cannot build."""
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.splitlines()[-40:])
        pytest.fail(f"hack/build-images.sh failed (exit {result.returncode}):\n{tail}", pytrace=False)
    return Path(result.stdout.splitlines()[-1]), result.stderr


def load_image_set(directory: Path) -> ImageSet:
    """The set the script wrote: ``images.txt`` holds one ``ref digest archive`` per line."""
    images: dict[str, Image] = {}
    python_image = ""
    for line in (directory / "images.txt").read_text().splitlines():
        if line.startswith("PYTHON_IMAGE="):
            python_image = line.removeprefix("PYTHON_IMAGE=")
        elif line and not line.startswith("#"):
            ref, digest, archive = line.split()
            images[ref] = Image(ref, digest, Path(archive))
    return ImageSet(directory, images, python_image)
