"""checkov in `make lint` reaches nothing on the network, and every check it skips says why.

Covers: `make lint` (and `make checkov`) run checkov only through hack/checkov.sh, from its own
virtual environment, installed pinned with its dependencies (hack/checkov-constraints.txt); the
script, run with a stand-in checkov and helm (given relative paths, as the Makefile does), starts
checkov in a network namespace with nothing but loopback, with every network switch off (update
check, platform mappings and downloads, secret validation, VCS calls), without an API key even
when the caller has one, on the Dockerfile, deploy/ and the rendered chart, with .checkov.yaml;
.checkov.yaml selects the offline frameworks, and each skipped check and path has a reason (a
comment above it), no check is skipped by severity, none twice.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".checkov.yaml"
SCRIPT = ROOT / "hack" / "checkov.sh"


def dry_run(target: str) -> list[str]:
    """The shell lines `make` would run for TARGET, every rule taken as out of date."""
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not installed (Debian: apt-get install make)")
    done = subprocess.run([make, "-n", "-B", "-C", str(ROOT), target], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.strip() and not line.startswith("make")]


FAKE_CHECKOV = """#!/bin/sh
# Stands in for checkov: records what it was given and which network it can see.
if [ "$1" = --version ]; then echo 0.0.0-stand-in; exit 0; fi
printf '%s\\n' "$@" > "$RECORD/argv"
env > "$RECORD/env"
sed -n '3,$p' /proc/net/dev | cut -d: -f1 | tr -d ' ' > "$RECORD/interfaces"
find . -type f | sort > "$RECORD/files"
cp chart/default.yaml "$RECORD/chart.yaml"
"""
FAKE_HELM = """#!/bin/sh
printf '%s\\n' "$@" >> "$RECORD/helm-argv"
printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: rendered}\\n'
"""


def run_script(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    record = tmp_path / "record"
    record.mkdir()
    checkov, helm = tmp_path / "checkov", tmp_path / "helm"
    checkov.write_text(FAKE_CHECKOV)
    helm.write_text(FAKE_HELM)
    checkov.chmod(0o755)
    helm.chmod(0o755)
    scratch = tmp_path / "scratch" / "of" / "the" / "script"  # its mktemp -d: deeper than the repository
    scratch.mkdir(parents=True)
    env = {
        **os.environ,
        "TMPDIR": str(scratch),
        "CHECKOV": os.path.relpath(checkov, ROOT),  # relative, as the Makefile passes it
        "RECORD": str(record),
        "BC_API_KEY": "caller-key",  # set by the caller: must not reach checkov
        "PRISMA_API_URL": "https://api.example.invalid",
    }
    done = subprocess.run(
        ["bash", str(SCRIPT), os.path.relpath(helm, ROOT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    return done, record


def test_make_lint_runs_checkov_only_through_the_offline_script_from_its_own_environment() -> None:
    for target in ("lint", "checkov"):
        lines = dry_run(target)
        runs = [line for line in lines if "checkov" in line and "pip" not in line and " -m venv " not in line]
        runs = [line for line in runs if not line.startswith(("echo ", "touch ", "rm -f "))]
        assert len(runs) == 1, runs
        assert runs[0].startswith("CHECKOV=.venv/checkov/bin/checkov bash hack/checkov.sh "), runs


def test_checkov_is_installed_in_its_own_environment_pinned_with_its_dependencies() -> None:
    (install,) = [line for line in dry_run("checkov-venv") if " pip " in line and " install " in line]
    assert install.startswith(".venv/checkov/bin/python -m pip ")
    assert " -c hack/checkov-constraints.txt " in install and re.search(r" checkov==\d+\.\d+\.\d+$", install)
    pins = [line for line in (ROOT / "hack" / "checkov-constraints.txt").read_text().splitlines() if line[:1] != "#"]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[^=\s]+", line) for line in pins), pins


def test_checkov_runs_with_no_network_and_every_network_feature_off(tmp_path: Path) -> None:
    done, record = run_script(tmp_path)
    assert done.returncode == 0, done.stderr
    assert (record / "interfaces").read_text().split() == ["lo"], "checkov saw a network interface besides loopback"
    argv = (record / "argv").read_text().splitlines()
    assert "--skip-download" in argv
    assert argv[argv.index("--config-file") + 1] == str(CONFIG)
    assert not [a for a in argv if a.startswith(("--bc-api-key", "--prisma-api-url", "--external-checks-git"))]
    env = dict(line.split("=", 1) for line in (record / "env").read_text().splitlines() if "=" in line)
    assert env["CKV_SKIP_PACKAGE_UPDATE_CHECK"] == "True"
    assert env["BC_SKIP_MAPPING"] == "TRUE"
    assert env["CKV_VALIDATE_SECRETS"] == "False"
    assert env["CKV_GITHUB_CONFIG_FETCH_DATA"] == env["CKV_GITLAB_CONFIG_FETCH_DATA"] == "False"
    assert "BC_API_KEY" not in env and "PRISMA_API_URL" not in env


def test_checkov_is_given_the_dockerfile_deploy_and_the_rendered_chart(tmp_path: Path) -> None:
    done, record = run_script(tmp_path)
    assert done.returncode == 0, done.stderr
    files = (record / "files").read_text().splitlines()
    assert "./Dockerfile" in files and "./deploy/kustomization.yaml" in files
    assert {"./chart/default.yaml", "./chart/namespaced-all-options.yaml"} <= set(files)
    assert yaml.safe_load((record / "chart.yaml").read_text())["metadata"]["name"] == "rendered"
    helm_argv = (record / "helm-argv").read_text().splitlines()
    assert helm_argv[0] == "template" and str(ROOT / "charts" / "inference-operator") in helm_argv


def test_the_checkov_config_selects_offline_frameworks_and_every_skip_says_why() -> None:
    text = CONFIG.read_text()
    config = yaml.safe_load(text)
    assert config["framework"] == ["dockerfile", "kubernetes"]
    assert set(config) <= {"framework", "skip-check", "skip-path"}, "network switches belong in hack/checkov.sh"
    checks = config["skip-check"]
    assert len(checks) == len(set(checks)), "a check is skipped twice"
    assert all(re.fullmatch(r"CKV2?_[A-Z0-9]+_\d+", c) for c in checks), f"skip checks by id, not by severity: {checks}"
    lines = text.splitlines()
    for key in ("skip-check", "skip-path"):
        for item in config[key]:
            (at,) = [n for n, line in enumerate(lines) if line.strip() == f"- {item}"]
            reason: list[str] = []
            for line in reversed(lines[:at]):
                if not line.strip().startswith("#"):
                    break
                reason.insert(0, line.strip().lstrip("#").strip())
            assert len(" ".join(reason).split()) >= 10, f"{key} {item} has no reason (a comment above it)"
