"""No merge conflict markers are committed.

Covers: every tracked text file (code, docs, manifests, data) is free of the lines git writes
around a conflict; once a merge left them in docs/architecture.md, and nothing else noticed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^(<{7}|>{7})( |$)|^={7}$", re.MULTILINE)


def test_no_tracked_file_carries_merge_conflict_markers() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    found = []
    for name in tracked.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.suffix in (".png", ".gz", ".tgz"):
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}" for m in MARKER.finditer(text)]
    assert not found, f"merge conflict markers committed: {found}"
