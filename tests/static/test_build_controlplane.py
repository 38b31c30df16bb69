"""hack/build-controlplane.sh's version check, on fake binaries, without building anything.

Covers: ``check_version`` (run under ``set -euo pipefail``, the script sourced, which only
defines its functions) accepts a binary that prints more lines than the check reads — etcd
prints four and the check reads three; piping into ``head`` let it die of SIGPIPE, and pipefail
failed a good build (fixed in 0c2ae6e); the fourth line here is long enough that a binary
still writing it when ``head`` exits always gets SIGPIPE, so the old check fails every time,
not at random. A binary reporting another version is still refused, naming what it reported.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "hack" / "build-controlplane.sh"
ETCD_VERSION = "etcd Version: 3.6.16"
# What `etcd --version` prints (four lines); the last one padded to 1 MiB, far past a pipe's buffer.
FAKE_ETCD = f"""#!/bin/sh
printf '{ETCD_VERSION}\\nGit SHA: 0123abc\\nGo Version: go1.26.0\\n'
printf 'Go OS/Arch: linux/amd64 %01048576d\\n' 0
"""


def check_version(expected: str, binary: Path) -> subprocess.CompletedProcess[str]:
    """``check_version EXPECTED BINARY --version`` in a strict shell with the script sourced."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.fail("bash is not installed; hack/build-controlplane.sh needs it")
    program = 'set -euo pipefail; source "$1"; check_version "$2" "$3" --version; echo checked'
    return subprocess.run(
        [bash, "-c", program, "bash", str(SCRIPT), expected, str(binary)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.fixture()
def fake_etcd(tmp_path: Path) -> Path:
    binary = tmp_path / "etcd"
    binary.write_text(FAKE_ETCD)
    binary.chmod(0o755)
    return binary


def test_a_binary_printing_more_lines_than_the_check_reads_passes_it(fake_etcd: Path) -> None:
    done = check_version(ETCD_VERSION, fake_etcd)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "checked\n"


def test_a_binary_reporting_another_version_is_refused_with_what_it_reported(fake_etcd: Path) -> None:
    done = check_version("etcd Version: 3.7.0", fake_etcd)
    assert done.returncode == 1
    assert "checked" not in done.stdout
    assert f"reports '{ETCD_VERSION}" in done.stderr and "expected 'etcd Version: 3.7.0'" in done.stderr
