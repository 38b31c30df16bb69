"""The registry's state file (inference_operator.lb.registry.state), without a server.

Covers: a change is one appended line, earlier bytes untouched; replaying the journal gives the
records back, and the id counter never goes back to an id that was released; dead lines are
compacted away once they outnumber live ones, so the file stays proportional to the records,
not to the history; a file deleted under a running registry is written whole on the next
change; a last line torn by a crash (never acknowledged) is dropped and the file
rewritten; a version 1 file (one JSON document) is read and rewritten as version 2; a bad line
stops the load naming its number.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference_operator.core.ports import Registration
from inference_operator.lb.registry.state import COMPACT_MIN_LINES, RegistryStateError, StateFile


def record(n: int) -> Registration:
    return Registration(id=f"lb-{n}", address=f"http://s{n}.lb", target=f"s{n}.ns.svc.cluster.local:8000")


def test_each_change_appends_one_line_and_leaves_earlier_bytes_alone(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "state.json")
    live: dict[str, Registration] = {}
    live["ns/a"] = record(1)
    state.put("ns/a", record(1), live, 1)
    before = state.path.read_bytes()
    live["ns/b"] = record(2)
    state.put("ns/b", record(2), live, 2)
    del live["ns/a"]
    state.delete("ns/a", live, 2)
    after = state.path.read_bytes()
    assert after.startswith(before)
    assert [json.loads(line) for line in after[len(before) :].splitlines()] == [
        {"put": "ns/b", "id": "lb-2", "address": "http://s2.lb", "target": "s2.ns.svc.cluster.local:8000"},
        {"delete": "ns/a"},
    ]


def test_replaying_gives_the_records_and_never_reuses_a_released_id(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "state.json")
    live = {"ns/a": record(1)}
    state.put("ns/a", record(1), live, 1)
    live["ns/b"] = record(2)
    state.put("ns/b", record(2), live, 2)
    del live["ns/b"]
    state.delete("ns/b", live, 2)
    assert StateFile(state.path).load() == ({"ns/a": record(1)}, 2)


def test_dead_lines_are_compacted_so_the_file_follows_the_records_not_the_history(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "state.json")
    live = {"ns/keep": record(1)}
    state.put("ns/keep", record(1), live, 1)
    for n in range(2, 2 + 3 * COMPACT_MIN_LINES):
        live["ns/churn"] = record(n)
        state.put("ns/churn", record(n), live, n)
        del live["ns/churn"]
        state.delete("ns/churn", live, n)
    lines = state.path.read_text().splitlines()
    assert len(lines) <= COMPACT_MIN_LINES + 2
    last = 1 + 3 * COMPACT_MIN_LINES
    assert StateFile(state.path).load() == ({"ns/keep": record(1)}, last)


def test_a_state_file_deleted_under_the_registry_is_written_whole_on_the_next_change(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "state.json")
    live = {"ns/a": record(1)}
    state.put("ns/a", record(1), live, 1)
    state.path.unlink()
    live["ns/b"] = record(2)
    state.put("ns/b", record(2), live, 2)
    assert StateFile(state.path).load() == (live, 2)


def test_a_torn_last_line_is_dropped_and_the_file_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    put_a = json.dumps({"put": "ns/a", "id": "lb-1", "address": "http://s1.lb", "target": "t:1"})
    path.write_text(f'{{"version": 2, "next_id": 0}}\n{put_a}\n{{"put": "ns/b", "id": "lb-2", "addr')
    registrations, next_id = StateFile(path).load()
    assert list(registrations) == ["ns/a"] and next_id == 1
    assert path.read_text().endswith("\n") and len(path.read_text().splitlines()) == 2


def test_a_version_1_file_is_read_and_rewritten_as_version_2(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    old = {"id": "lb-4", "address": "http://a", "target": "t:1"}
    path.write_text(json.dumps({"version": 1, "next_id": 9, "registrations": {"ns/a": old}}, indent=2))
    assert StateFile(path).load() == ({"ns/a": Registration(**old)}, 9)
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"version": 2, "next_id": 9},
        {"put": "ns/a", **old},
    ]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"version": 2, "next_id": 0}\n{"put": "ns/a"}\n{"delete": "ns/a"}\n', "line 2 is not a registry change"),
        ('{"version": 2, "next_id": 0}\n{"delete": "ns/a"}\nnope\n', "line 3 is not valid JSON"),
        ('{"next_id": 0}\n', "no version header on line 1"),
        ('{"version": 2}\n', "header"),
        ("\n", "empty"),
    ],
)
def test_a_bad_line_stops_the_load_naming_it(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(RegistryStateError, match=fragment):
        StateFile(path).load()
