"""The README's two commands install into a project-local virtual environment, never the machine's Python.

Covers: `make demo` and `make test` (dry run, every rule forced) create `.venv` from the base
Python and run pip, the tools and the tests only through `.venv/bin/python` (checkov, for `make
lint`, alone in its own `.venv/checkov`); the demo needs only the package, not the development
tools; the README opens with exactly the two commands and `.ci/run` runs the test one. `make
unit` never builds the control plane; `make static` does (helm), then runs tests/static; `make
test` runs the whole of tests.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ".venv/bin/python"
CHECKOV_VENV = ".venv/checkov"


def dry_run(*targets: str) -> list[str]:
    """The shell lines `make` would run for TARGETS, every rule taken as out of date."""
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not installed; the README's commands need it (Debian: apt-get install make)")
    done = subprocess.run([make, "-n", "-B", "-C", str(ROOT), *targets], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.strip() and not line.startswith("make")]


def python_runs(lines: list[str]) -> list[str]:
    """Lines that run a Python interpreter or pip (the control-plane build script aside)."""
    runner = re.compile(r"(^|[\s;&|(])(python3?|pip3?|\S*/bin/python3?)(\s|$)")
    return [line for line in lines if runner.search(line) and "build-controlplane.sh" not in line]


@pytest.mark.parametrize("target", ["demo", "test"])
def test_every_python_and_pip_command_runs_in_the_project_virtual_environment(target: str) -> None:
    lines = dry_run(target)
    runs = python_runs(lines)
    assert runs, f"`make {target}` runs no Python at all?"
    # checkov has a virtual environment of its own (its dependencies clash with ours): only it.
    checkov = [line for line in runs if CHECKOV_VENV in line]
    assert all(
        line.startswith((f"python3 -m venv {CHECKOV_VENV} ", f"{CHECKOV_VENV}/bin/python -m pip ")) for line in checkov
    ), checkov
    creation = [line for line in runs if " -m venv " in line and line not in checkov]
    assert len(creation) == 1 and creation[0].startswith("python3 -m venv .venv"), creation
    strays = [line for line in runs if line not in creation + checkov and not line.startswith(f"{VENV_PYTHON} ")]
    assert not strays, f"`make {target}` runs Python or pip outside .venv: {strays}"


def test_the_demo_installs_only_the_package_and_the_tests_add_the_development_tools() -> None:
    demo_installs = [line for line in dry_run("demo") if " pip " in line and " install " in line]
    assert len(demo_installs) == 1 and demo_installs[0].rstrip().endswith("-e ."), demo_installs
    test_installs = [line for line in dry_run("test") if " pip " in line and " install " in line]
    assert any(line.rstrip().endswith("-e '.[dev]'") for line in test_installs), test_installs


def test_the_readme_opens_with_exactly_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == "exec make test"


def test_make_unit_never_builds_the_control_plane_and_make_static_runs_the_static_checks() -> None:
    unit = dry_run("unit")
    assert not [line for line in unit if "build-controlplane.sh" in line], unit
    assert unit[-1] == f"{VENV_PYTHON} -m pytest -q tests/unit"
    static = dry_run("static")
    assert any("build-controlplane.sh" in line for line in static), static
    assert static[-1] == f"{VENV_PYTHON} -m pytest -q tests/static"
    test = dry_run("test")
    assert f"{VENV_PYTHON} -m pytest -q tests --durations=10" in test, "make test: every folder, the ten slowest"
