#!/usr/bin/env python3
"""Write requirements.lock: the operator image's runtime dependencies, pinned to what is
installed here (``pip install -e .`` first), each with the sha256 of every file the image's
platforms could install (Linux x86_64 and aarch64, CPython 3.11: wheels, or the sdist where
there is no wheel), so the Dockerfile installs them with ``--require-hashes``. Windows-only
packages are left out. Needs the package index (``pip download``); takes about six minutes.

The platforms are the image's own: Debian bookworm has glibc 2.36, so pip in the image accepts
every ``manylinux_2_x`` wheel up to 2.36, best first. Asking for ``manylinux2014`` (glibc 2.17)
alone missed wheels built only for newer glibc (google-re2 ships ``manylinux_2_28`` wheels only)
and locked their sdist, which the image cannot build: it has no compiler, by design.
pip's ``--require-hashes`` then picks the best file among those whose hash is locked."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = ("kopf", "urllib3", "pydantic", "PyYAML", "prometheus_client", "cel-python")
SKIP = {"colorama"}  # only required on Windows
OUT = Path(__file__).resolve().parents[1] / "requirements.lock"
ARCHITECTURES = ("x86_64", "aarch64")
GLIBC_MINORS = range(36, 16, -1)  # Debian bookworm: glibc 2.36; manylinux starts at 2.17


def platform_tags(arch: str) -> list[str]:
    """The manylinux tags pip on bookworm accepts for ARCH, best first (as pip itself ranks them)."""
    return [f"manylinux_2_{minor}_{arch}" for minor in GLIBC_MINORS] + [f"manylinux2014_{arch}"]


def pins() -> dict[str, str]:
    found: dict[str, str] = {}

    def walk(name: str) -> None:
        key = name.lower().replace("_", "-")
        if key in found or key in SKIP:
            return
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            return
        found[key] = dist.version
        for requirement in dist.requires or []:
            if "extra ==" not in requirement and (m := re.match(r"[A-Za-z0-9_.\-]+", requirement)):
                walk(m.group(0))

    for name in TOP:
        walk(name)
    return dict(sorted(found.items()))


def hashes(pinned: dict[str, str]) -> dict[str, set[str]]:
    """sha256 of each file pip picks for each platform (binary first, else the sdist)."""
    out: dict[str, set[str]] = {name: set() for name in pinned}
    for arch in ARCHITECTURES:
        platforms = [flag for tag in platform_tags(arch) for flag in ("--platform", tag)]
        with tempfile.TemporaryDirectory() as tmp:
            for name, version in pinned.items():
                base = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, f"{name}=={version}"]
                binary = [*base, "--only-binary=:all:", *platforms, "--python-version", "3.11"]
                if subprocess.run(binary, capture_output=True, check=False).returncode != 0:
                    subprocess.run([*base, "--no-binary=:all:"], capture_output=True, check=True)
            for file in Path(tmp).iterdir():
                project = re.split(r"-\d", file.name, maxsplit=1)[0].lower().replace("_", "-").replace(".", "-")
                match = next((n for n in pinned if n.replace(".", "-") == project), None)
                if match is None:
                    raise SystemExit(f"downloaded {file.name}, which no pin names")
                out[match].add(hashlib.sha256(file.read_bytes()).hexdigest())
    return out


def main() -> None:
    pinned = pins()
    sums = hashes(pinned)
    lines = ["# Runtime dependencies of the operator image, pinned with hashes (pip --require-hashes).\n"]
    lines.append("# Regenerate: python hack/lock_requirements.py\n")
    for name, version in pinned.items():
        lines.append(f"{name}=={version} \\\n")
        lines.extend(f"    --hash=sha256:{digest} \\\n" for digest in sorted(sums[name])[:-1])
        lines.append(f"    --hash=sha256:{sorted(sums[name])[-1]}\n")
    OUT.write_text("".join(lines))


if __name__ == "__main__":
    main()
