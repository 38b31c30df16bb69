"""Encoded field sets stay known however many objects are written between two writes of one.

The API server stores each managedFields entry as the encoding this process made, and a later
write reads the entry's set back by the encoding's identity instead of parsing it. With
thousands of objects, each written in turn, a table of the last few thousand encodings forgot
the ones every pod shares (its conditions, a Deployment's status): past about 2,000
InferenceServices most writes parsed their entries back, and the simulator's cost per object
grew with N. Sets encoded twice are now kept, and a parse of an entry whose own corner was
forgotten reads the shared subtrees by identity.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference_operator.ssa import fieldsv1
from inference_operator.ssa.fieldpaths import FieldSet, Path, field_element, key_element
from inference_operator.ssa.fieldsv1 import from_fields_v1, known_field_set, shared_fields_v1, to_fields_v1
from inference_operator.ssa.managedentries import Entry, _recorded


@pytest.fixture(autouse=True)
def small_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fieldsv1, "_FIELDS_OF", {})
    monkeypatch.setattr(fieldsv1, "_RECENT", {})
    monkeypatch.setattr(fieldsv1, "_KEPT", {})
    monkeypatch.setattr(fieldsv1, "_RECENT_ENCODINGS", 16)
    monkeypatch.setattr(fieldsv1, "_KEPT_ENCODINGS", 16)


def f(*names: str) -> Path:
    return tuple(field_element(name) for name in names)


CONDITIONS = frozenset(
    {
        (*f("status", "conditions"), key_element({"type": t}), field_element(leaf))
        for t in ("Ready", "Initialized")
        for leaf in ("type", "status", "lastTransitionTime")
    }
    | {(*f("status", "conditions"), key_element({"type": t})) for t in ("Ready", "Initialized")}
)


def pod_status(ip: str) -> FieldSet:
    """A kubelet's entry: the conditions every pod has, and one corner of its own."""
    podips = f("status", "podIPs")
    return CONDITIONS | {
        f("status", "phase"),
        (*podips, key_element({"ip": ip})),
        (*podips, key_element({"ip": ip}), field_element("ip")),
    }


def test_a_set_encoded_twice_stays_known_past_any_number_of_others() -> None:
    shared = frozenset({f("status", "phase"), f("status", "replicas")})
    first = shared_fields_v1(shared)
    assert shared_fields_v1(frozenset(shared)) is first  # the second time: kept
    for i in range(100):  # far more one-off sets than the tables hold
        shared_fields_v1(frozenset({f("metadata", f"x{i}")}))
    assert shared_fields_v1(shared) is first
    assert known_field_set(first) == shared


def test_a_set_encoded_once_is_forgotten_in_time() -> None:
    once = shared_fields_v1(frozenset({f("metadata", "once")}))
    for i in range(100):
        shared_fields_v1(frozenset({f("metadata", f"x{i}")}))
    assert known_field_set(once) is None


def test_an_entry_whose_own_corner_was_forgotten_is_parsed_through_its_shared_subtrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries = [shared_fields_v1(pod_status(f"198.18.0.{i}")) for i in range(40)]  # the oldest forgotten
    assert known_field_set(entries[0]) is None
    read: list[Any] = []
    real_read = fieldsv1._read

    def counting(node: Any, prefix: Path, out: set[Path]) -> bool:
        read.append(prefix)
        return real_read(node, prefix, out)

    monkeypatch.setattr(fieldsv1, "_read", counting)
    assert from_fields_v1(entries[0]) == pod_status("198.18.0.0")
    assert f("status", "conditions") not in read  # the conditions were known, not walked
    assert len(read) <= 6
    read.clear()
    assert from_fields_v1(to_fields_v1(pod_status("198.18.0.0"))) == pod_status("198.18.0.0")  # a copy: walked
    assert f("status", "conditions") in read


names = st.sampled_from(["a", "b", "c", "status", "spec"])
elements = st.one_of(names.map(field_element), st.sampled_from(["x", "y"]).map(lambda v: key_element({"name": v})))
paths = st.lists(elements, min_size=1, max_size=4).map(tuple)
sets = st.frozensets(paths, max_size=12)


@settings(max_examples=200, deadline=None)
@given(fields=sets, others=st.lists(sets, max_size=30))
def test_what_is_read_back_is_what_was_encoded_whatever_was_forgotten(fields: FieldSet, others: list[FieldSet]) -> None:
    for table in (fieldsv1._FIELDS_OF, fieldsv1._RECENT, fieldsv1._KEPT):
        table.clear()
    encoded = shared_fields_v1(fields)
    for other in others:
        shared_fields_v1(other)
    assert from_fields_v1(encoded) == from_fields_v1(to_fields_v1(fields))
    assert known_field_set(encoded) in (None, fields)


@settings(max_examples=300, deadline=None)
@given(fields=sets, asked=st.frozensets(st.one_of(paths, st.just(())), max_size=8))
def test_an_unparsed_entry_owns_what_its_encoding_records(fields: FieldSet, asked: FieldSet) -> None:
    encoded = to_fields_v1(fields)  # a copy: not known, so the entry answers from the encoding
    entry = Entry(None, "v1", fields_v1=encoded)
    assert entry.owns_any(asked) == any(_recorded(encoded, path) for path in asked)
    assert entry._fields is None  # and did not parse it


def test_a_set_kept_meanwhile_by_another_thread_is_not_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables are read outside the lock: what changed meanwhile must stay in them or be forgotten."""
    monkeypatch.setattr(fieldsv1, "_KEPT_ENCODINGS", 1)
    s, t = frozenset({f("a")}), frozenset({f("b")})

    def other_thread() -> None:  # t kept (s forgotten), then s encoded anew and kept
        for fields in (t, t, s, s):
            shared_fields_v1(fields)

    class Interleaved:
        """A lock that lets the other thread run when it is first taken."""

        def __enter__(self) -> None:
            monkeypatch.setattr(fieldsv1, "_FIELDS_OF_LOCK", threading.Lock())
            other_thread()

        def __exit__(self, *exc: object) -> None:
            return None

    shared_fields_v1(s)
    first = shared_fields_v1(s)  # kept: the next call finds it before taking the lock
    monkeypatch.setattr(fieldsv1, "_FIELDS_OF_LOCK", Interleaved())
    assert shared_fields_v1(s) is first
    held = {id(encoded) for encoded in (*fieldsv1._RECENT.values(), *fieldsv1._KEPT.values())}
    assert set(fieldsv1._FIELDS_OF) <= held  # nothing known that no table holds: nothing leaks
    assert fieldsv1._KEPT.get(s) is not None  # the other thread's encoding of s is still kept
