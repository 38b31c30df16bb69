"""The tests' own layout: unit tests mirror the package, test modules stand alone, `make unit` is offline.

Covers: no test module (``test_*.py``) imports another test module — what tests share lives in
helper modules (``fakes.py``, ``workloads.py``, ``helm.py``, …); every folder of tests/unit
mirrors a sub-package of inference_operator (the test of ``inference_operator/x/y.py`` is
``tests/unit/x/test_y.py``); every folder of tests is a package, so that modules of the same
name in two folders both collect; nothing under tests/unit reaches hack/build-controlplane.sh
(helm and the other binaries are for tests/static and tests/e2e), so `make unit` on a fresh
machine never waits for a control-plane build.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
UNIT = TESTS / "unit"
PACKAGE = ROOT / "inference_operator"
# What would make the unit tests find (and so build) the control plane's binaries.
CONTROL_PLANE_WORDS = ("build-controlplane", "ensure_binaries", "chartkit", "find_helm")


def python_folders(top: Path) -> list[Path]:
    return sorted({p.parent for p in top.rglob("*.py") if "__pycache__" not in p.parts})


def imported_modules(path: Path) -> list[str]:
    """Every module an import statement of this file names (relative ones with their dots)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append(base)
            # `from . import test_x` and `from tests.unit import test_x` import the module test_x
            found += [f"{base}.{alias.name}" if node.module else base + alias.name for alias in node.names]
    return found


def test_no_test_module_imports_another_test_module() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for module in imported_modules(path)
        if module.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert not offenders, "move what they share into a helper module:\n" + "\n".join(offenders)


def test_every_unit_test_folder_mirrors_a_sub_package_of_inference_operator() -> None:
    strays = [
        str(folder.relative_to(ROOT))
        for folder in python_folders(UNIT)
        if folder != UNIT and not (PACKAGE / folder.relative_to(UNIT) / "__init__.py").is_file()
    ]
    assert not strays, f"these folders mirror no sub-package of inference_operator: {strays}"


def test_every_test_folder_is_a_package() -> None:
    loose = [str(f.relative_to(ROOT)) for f in python_folders(TESTS) if not (f / "__init__.py").is_file()]
    assert not loose, f"add an __init__.py (same-named modules in two folders must both collect): {loose}"


def test_nothing_under_tests_unit_reaches_the_control_plane_build() -> None:
    mentions = [
        f"{path.relative_to(ROOT)}: {word}"
        for path in sorted(UNIT.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
        for word in CONTROL_PLANE_WORDS
        if word in path.read_text(errors="replace")
    ]
    assert not mentions, f"`make unit` must not need the control plane (move such tests to tests/static): {mentions}"
