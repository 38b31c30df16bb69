#!/usr/bin/env python3
"""Write requirements.lock: the operator image's runtime dependencies, pinned to what is
installed here (``pip install -e .`` first). Windows-only packages are left out."""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

TOP = ("kopf", "kubernetes", "pydantic", "PyYAML", "prometheus_client", "cel-python")
SKIP = {"colorama"}  # only required on Windows
OUT = Path(__file__).resolve().parents[1] / "requirements.lock"


def main() -> None:
    pins: dict[str, str] = {}

    def walk(name: str) -> None:
        key = name.lower().replace("_", "-")
        if key in pins or key in SKIP:
            return
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            return
        pins[key] = dist.version
        for requirement in dist.requires or []:
            if "extra ==" not in requirement and (m := re.match(r"[A-Za-z0-9_.\-]+", requirement)):
                walk(m.group(0))

    for name in TOP:
        walk(name)
    header = "# Runtime dependencies of the operator image, pinned. Regenerate: python hack/lock_requirements.py\n"
    OUT.write_text(header + "".join(f"{k}=={v}\n" for k, v in sorted(pins.items())))


if __name__ == "__main__":
    main()
