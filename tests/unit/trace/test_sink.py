"""Trace files on disk: private, never written through a symlink, and a ring that deletes only its own files.

Covers: a ring whose file name holds glob characters (``*``, ``?``,
``[``) deletes and reads only its own ``FILE.N`` files, never unrelated ones the name would
match as a pattern; ring files and ``demo --trace`` files are created 0600 (a trace is
operational data), also when the file existed before with wider permissions; a symlink at the
trace path is refused with an error naming the path, and the file it points at is untouched.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from inference_operator.trace.sink import FileSink, RingSink, ring_files

HEADER = {"seq": 0, "type": "header", "format": "inference-operator-trace", "version": 1}


def fill(sink: RingSink | FileSink, n: int = 200) -> None:
    sink.write(HEADER)
    for i in range(1, n + 1):
        sink.write({"seq": i, "type": "note", "text": "x" * 100})
    sink.close()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.mark.parametrize("name", ["a*.jsonl", "t?.jsonl", "[ab].jsonl"])
def test_a_ring_named_with_glob_characters_touches_only_its_own_files(tmp_path: Path, name: str) -> None:
    bystanders = [tmp_path / n for n in ("abc.jsonl.1", "tx.jsonl.2", "a.jsonl.1", "b.jsonl.3")]
    for path in bystanders:
        path.write_text("not yours\n")
    fill(RingSink(tmp_path / name, max_bytes=2048, files=3))
    fill(RingSink(tmp_path / name, max_bytes=2048, files=3))  # a new recording deletes the previous ring
    assert all(p.read_text() == "not yours\n" for p in bystanders)
    assert [p.name for p in ring_files(tmp_path / name)] == [f"{name}.2", f"{name}.1", name]


def test_ring_and_demo_trace_files_are_private(tmp_path: Path) -> None:
    ring = tmp_path / "ring.jsonl"
    fill(RingSink(ring, max_bytes=2048, files=3))
    assert [mode(p) for p in ring_files(ring)] == [0o600, 0o600, 0o600]
    single = tmp_path / "demo.jsonl"
    single.write_text("old\n")
    single.chmod(0o644)
    fill(FileSink(single), n=3)
    assert mode(single) == 0o600


@pytest.mark.parametrize("make", [lambda p: RingSink(p, max_bytes=2048, files=2), FileSink])
def test_a_symlink_at_the_trace_path_is_refused_and_its_target_untouched(tmp_path: Path, make: object) -> None:
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    link = tmp_path / "trace.jsonl"
    link.symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        make(link)  # type: ignore[operator]
    assert target.read_text() == "keep me\n" and link.is_symlink()
