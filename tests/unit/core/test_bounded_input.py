"""Bounded input: files a user names, and YAML, read without hanging or exhausting memory.

Covers: a FIFO, a character device, a directory, a missing file and a file over the cap are
refused with the reason, before reading; standard input is read up to the cap; text that is
not UTF-8 is refused naming the line and byte; the YAML loader (the libyaml one and the pure
Python one alike) refuses an alias bomb (a few hundred bytes that would expand to a billion
values) at once, a recursive alias, nesting past the depth bound (also through aliases), more
aliases than allowed; it keeps timestamps as strings, refuses a key given twice (also ``1``
and ``true``, one key in Python), NaN and infinities, binary and sets, non-string keys
other than integers and booleans (which become their JSON text, as kubectl has them); a merge
key is overridden by the map's own key without complaint.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inference_operator.core.boundedyaml import MAX_DEPTH, YamlLimitError, _PythonLoader, load_documents
from inference_operator.core.files import InputFileError, read_regular_file, read_text_file
from tests.shared.yamlbombs import alias_bomb


@pytest.fixture(params=["libyaml", "python"])
def load(request: pytest.FixtureRequest) -> Callable[[str], list[Any]]:
    loader = None if request.param == "libyaml" else _PythonLoader
    return lambda text: list(load_documents(text, loader=loader))


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="is a FIFO"):
        read_regular_file(str(fifo), limit=100)


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"), ("/", "a directory")])
def test_what_is_not_a_regular_file_is_refused(path: str, kind: str) -> None:
    with pytest.raises(InputFileError, match=f"is {kind}, not a regular file"):
        read_regular_file(path, limit=100)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="cannot read: No such file"):
        read_regular_file(str(tmp_path / "nope"), limit=100)


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(InputFileError, match="is 2048 bytes, more than the 1 KiB allowed"):
        read_regular_file(str(big), limit=1024)


def test_standard_input_is_read_up_to_the_cap() -> None:
    assert read_regular_file("-", limit=10, stdin=io.BytesIO(b"hello")) == b"hello"
    with pytest.raises(InputFileError, match="standard input is more than the 10 bytes allowed"):
        read_regular_file("-", limit=10, stdin=io.BytesIO(b"x" * 1000))


def test_text_that_is_not_utf8_is_refused_naming_the_byte(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputFileError, match=r"line 1: not UTF-8 text \(byte 0xe9 at offset 9\)"):
        read_text_file(str(latin), limit=100)
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert read_text_file(str(tmp_path / "bom.yaml"), limit=100) == "a: 1\n"


def test_an_alias_bomb_is_refused_at_once(load: Callable[[str], list[Any]]) -> None:
    text = alias_bomb()
    assert len(text) < 600
    started = time.monotonic()
    with pytest.raises(YamlLimitError, match="values once aliases are expanded"):
        load(text)
    assert time.monotonic() - started < 5


def test_a_few_aliases_are_fine(load: Callable[[str], list[Any]]) -> None:
    assert load("base: &b {cpu: 1}\nrequests: *b\nlimits: *b\n") == [
        {"base": {"cpu": 1}, "requests": {"cpu": 1}, "limits": {"cpu": 1}}
    ]


def test_aliases_share_no_objects_once_loaded(load: Callable[[str], list[Any]]) -> None:
    (doc,) = load("a: &x {k: 1}\nb: *x\n")
    doc["a"]["k"] = 2
    assert doc["b"] == {"k": 1}


def test_a_recursive_alias_is_refused(load: Callable[[str], list[Any]]) -> None:
    with pytest.raises(YamlLimitError, match="refers to a node that contains it"):
        load("a: &a [1, *a]\n")


def test_nesting_past_the_bound_is_refused(load: Callable[[str], list[Any]]) -> None:
    load("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))
    with pytest.raises(Exception, match="nest") as info:
        load("[" * 20000 + "]" * 20000)
    assert "Traceback" not in str(info.value)


def test_nesting_through_aliases_counts_too(load: Callable[[str], list[Any]]) -> None:
    deep = "[" * 60 + "]" * 60
    with pytest.raises(YamlLimitError, match="nests more than"):
        load(f"a: &a {deep}\nb: {'[' * 45}*a{']' * 45}\n")


def test_more_aliases_than_allowed_are_refused(load: Callable[[str], list[Any]]) -> None:
    with pytest.raises(YamlLimitError, match="more than 1000 aliases"):
        load("a: &a 1\nb: [" + ", ".join(["*a"] * 1001) + "]\n")


def test_timestamps_stay_strings(load: Callable[[str], list[Any]]) -> None:
    assert load("t: 2026-05-01T10:00:00Z\nd: 2026-05-01\n") == [{"t": "2026-05-01T10:00:00Z", "d": "2026-05-01"}]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: 1\nb: 2\na: 3\n", "line 3: key 'a' is already set in this map"),
        ("{1: a, true: b, 1: c}", "already set"),
        ("x: .nan\n", "x: nan is not a JSON number"),
        ("x: [1, -.inf]\n", r"x\[1\]: -inf is not a JSON number"),
        ("x: !!binary aGVsbG8=\n", "x: binary data"),
        ("x: !!set {a, b}\n", "x: a set is no JSON value"),
        ("{null: 1}", "keys must be strings"),
        ("{[1]: 1}", "keys must be strings"),
        ("x: " + "9" * 5000, "an integer has more than 4300 digits"),
    ],
)
def test_what_json_cannot_carry_is_refused(load: Callable[[str], list[Any]], text: str, problem: str) -> None:
    with pytest.raises(YamlLimitError, match=problem):
        load(text)


def test_integer_and_boolean_keys_become_their_json_text(load: Callable[[str], list[Any]]) -> None:
    assert load("{1: a, true: b}") == [{"1": "a", "true": "b"}]


def test_a_merged_key_is_overridden_by_the_maps_own(load: Callable[[str], list[Any]]) -> None:
    assert load("b: &b {p: 1, q: 1}\nm: {<<: *b, q: 2}\n")[0]["m"] == {"p": 1, "q": 2}


def test_empty_documents_are_skipped(load: Callable[[str], list[Any]]) -> None:
    assert load("---\n---\na: 1\n---\n") == [{"a": 1}]


def test_y_and_n_are_booleans_as_kubectl_reads_them(load: Callable[[str], list[Any]]) -> None:
    text = "a: y\nb: N\nc: yes\nd: 'y'\ne: Off\nf: yellow\ng: tRue\n"
    assert load(text) == [{"a": True, "b": False, "c": True, "d": "y", "e": False, "f": "yellow", "g": "tRue"}]
