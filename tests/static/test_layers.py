"""The package's import contracts (pyproject.toml, `[tool.importlinter]`) hold, and can fail.

Covers: `lint-imports` keeps every contract on the package as it is; on a copy of the package
with one wrong import added (a layer importing upwards, two independent siblings meeting, the
control loop naming the InferenceService API, Kopf outside the kube backend) it fails, names the
broken contract and the import; an import that closes a loop (the registry's HTTP side and its
server, the fake API server's keys and its write strategy) breaks the no-cycles contract; a new
top-level module that no layer lists breaks the layers contract, so the contracts cannot
silently fall behind the package. And the one alias the layers share, ``Obj``, is defined once,
in core/objects.py.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "inference_operator"


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` of the .venv running these tests, on the package and pyproject.toml in CWD."""
    command = Path(sys.executable).parent / "lint-imports"
    if not command.exists():
        pytest.fail(f"{command} is missing: install the development tools (make deps)")
    env = {**os.environ, "COLUMNS": "500", "NO_COLOR": "1", "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [str(command), "--no-logo", "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture()
def package_copy(tmp_path: Path) -> Path:
    """A copy of the package and its pyproject.toml, to be broken on purpose."""
    shutil.copytree(ROOT / PACKAGE, tmp_path / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_package_keeps_every_contract() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("importer", "imported", "contract"),
    [
        ("core.objects", "reconcile.status", "Layers import only downwards"),
        ("api.models", "core.errors", "Layers import only downwards"),
        ("sim.quiescence", "demo", "Layers import only downwards"),
        ("kube.backend", "sim.clock", "The two backends know nothing of each other"),
        ("reconcile.status", "control.workqueue", "The InferenceService logic and the control loop know nothing"),
        ("lb.http", "trace.redact", "The flight recorder and the load balancer clients know nothing"),
        ("ssa.compare", "core.clock", "Core helpers and server-side apply know nothing of each other"),
        ("control.controller", "api.constants", "The control loop knows nothing of InferenceService"),
    ],
)
def test_a_wrong_import_breaks_its_contract_and_is_named(
    package_copy: Path, importer: str, imported: str, contract: str
) -> None:
    module = package_copy / PACKAGE / (importer.replace(".", "/") + ".py")
    with module.open("a") as source:
        source.write(f"\nimport {PACKAGE}.{imported}  # noqa: E402\n")
    done = lint_imports(package_copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{contract}" in done.stdout and " BROKEN" in done.stdout, done.stdout
    assert f"{PACKAGE}.{importer} -> {PACKAGE}.{imported} (l." in done.stdout, done.stdout


def test_kopf_outside_the_kube_backend_breaks_its_contract(package_copy: Path) -> None:
    module = package_copy / PACKAGE / "reconcile" / "status.py"
    with module.open("a") as source:
        source.write("\nimport kopf  # noqa: E402\n")
    done = lint_imports(package_copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Only the kube backend and the commands talk to Kopf and the Kubernetes client BROKEN" in done.stdout
    assert f"{PACKAGE}.reconcile.status -> kopf (l." in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("importer", "imported", "package"),
    [
        ("lb.registry.http", "lb.registry.server", "lb.registry"),
        ("sim.apiserver.keys", "sim.apiserver.strategy", "sim.apiserver"),
    ],
)
def test_an_import_that_closes_a_loop_breaks_the_no_cycles_contract(
    package_copy: Path, importer: str, imported: str, package: str
) -> None:
    module = package_copy / PACKAGE / (importer.replace(".", "/") + ".py")
    with module.open("a") as source:
        source.write(f"\nimport {PACKAGE}.{imported}  # noqa: E402\n")
    done = lint_imports(package_copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "No sibling modules or packages import each other, directly or round a loop BROKEN" in done.stdout
    assert f"No cycles are allowed in {PACKAGE}.{package}." in done.stdout, done.stdout


def test_a_top_level_module_no_layer_lists_breaks_the_layers_contract(package_copy: Path) -> None:
    (package_copy / PACKAGE / "stray.py").write_text('"""A module no layer lists."""\n')
    done = lint_imports(package_copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Layers import only downwards BROKEN" in done.stdout, done.stdout
    assert f"{PACKAGE}.stray" in done.stdout, done.stdout


def test_obj_is_defined_once_in_core_objects() -> None:
    """Every module at core and above imports ``Obj`` from core/objects.py (api/ and ssa/, which
    may not import core, write ``dict[str, Any]``)."""
    defined = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / PACKAGE).rglob("*.py")
        for node in ast.parse(path.read_text(), filename=str(path)).body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            isinstance(t, ast.Name) and t.id == "Obj"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
    )
    assert defined == [f"{PACKAGE}/core/objects.py"], f"import Obj from {PACKAGE}.core.objects instead: {defined}"
