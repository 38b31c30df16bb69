"""Tests for label and field selectors in the FakeApiServer's lists and watches.

Covers:
- The selector syntax as kube-apiserver parses it: equality (``=``, ``==``), ``!=`` (which also
  selects objects without the label), ``in``/``notin`` sets (``()`` and ``(a,)`` hold the empty
  value), existence and ``!key``, ``gt``/``lt`` on integers, several terms that must all hold;
  malformed selectors are BadRequest (400).
- Field selectors: ``metadata.name``/``metadata.namespace`` with ``=``, ``==``, ``!=``; any other
  field is BadRequest.
- Watches with a selector: an object entering the selector is ADDED, leaving it is DELETED with
  its old state at the new resourceVersion, changes outside it are not seen.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.sim.apiserver.selectors import parse_label_selector
from inference_operator.sim.apiserver.server import BadRequest, FakeApiServer

Obj = dict[str, Any]


def configmap(name: str, namespace: str = "default", **labels: str) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


@pytest.fixture
def api() -> FakeApiServer:
    server = FakeApiServer()
    server.create(configmap("web", app="a", tier="web"))
    server.create(configmap("db", app="b", tier="db"))
    server.create(configmap("plain", app="c"))
    server.create(configmap("bare"))
    server.create(configmap("blank", app=""))
    return server


def names(api: FakeApiServer, selector: str = "", fields: str = "") -> list[str]:
    return [
        o["metadata"]["name"] for o in api.list("ConfigMap", "default", label_selector=selector, field_selector=fields)
    ]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=a", ["web"]),
        ("app==b", ["db"]),
        ("app!=a", ["bare", "blank", "db", "plain"]),
        ("app in (a, c)", ["plain", "web"]),
        ("app notin (a,b)", ["bare", "blank", "plain"]),
        ("tier", ["db", "web"]),
        ("!tier", ["bare", "blank", "plain"]),
        ("app,tier!=db", ["blank", "plain", "web"]),
        ("app=a,app=b", []),
        ("app=", ["blank"]),
        ("app in ()", ["blank"]),
        ("app in (a,)", ["blank", "web"]),
        ("", ["bare", "blank", "db", "plain", "web"]),
    ],
)
def test_a_label_selector_selects_what_the_real_server_selects(
    api: FakeApiServer, selector: str, expected: list[str]
) -> None:
    assert names(api, selector) == expected


def test_gt_and_lt_compare_integer_values_and_skip_the_rest() -> None:
    api = FakeApiServer()
    for value in ("1", "5", "10", "many"):
        api.create(configmap(f"n-{value}", n=value))
    assert names(api, "n>4") == ["n-10", "n-5"]
    assert names(api, "n<5") == ["n-1"]


@pytest.mark.parametrize(
    "selector", ["app in (a", "a b", "=a", "app=a,", "!app=a", "app=-x", "bad key=1", "app>x", "Bad_/x=1"]
)
def test_a_malformed_label_selector_is_a_bad_request(api: FakeApiServer, selector: str) -> None:
    with pytest.raises(BadRequest) as caught:
        api.list("ConfigMap", "default", label_selector=selector)
    assert caught.value.code == 400


def test_a_parsed_selector_is_reusable_and_empty_matches_everything() -> None:
    selector = parse_label_selector("app in (a,b),!canary")
    assert selector.matches({"app": "a"}) and not selector.matches({"app": "a", "canary": "1"})
    assert parse_label_selector("").matches({"anything": "x"})


def test_field_selectors_on_name_and_namespace(api: FakeApiServer) -> None:
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    api.create(configmap("web", namespace="other"))
    assert names(api, fields="metadata.name=db") == ["db"]
    assert names(api, fields="metadata.name!=db") == ["bare", "blank", "plain", "web"]
    everywhere = api.list("ConfigMap", None, field_selector="metadata.namespace==other,metadata.name=web")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in everywhere] == [("other", "web")]


@pytest.mark.parametrize("fields", ["data.k=v", "metadata.labels=x", "metadata.name"])
def test_a_field_selector_on_another_field_is_a_bad_request(api: FakeApiServer, fields: str) -> None:
    with pytest.raises(BadRequest):
        api.list("ConfigMap", "default", field_selector=fields)


def test_a_watch_with_a_selector_sees_objects_enter_and_leave_it() -> None:
    api = FakeApiServer()
    watch = api.watch("ConfigMap", "default", label_selector="app=a")
    api.create(configmap("never", app="b"))
    api.create(configmap("x", app="b"))
    entered = api.patch("ConfigMap", "default", "x", {"metadata": {"labels": {"app": "a"}}})
    changed = api.patch("ConfigMap", "default", "x", {"data": {"k": "1"}})
    left = api.patch("ConfigMap", "default", "x", {"metadata": {"labels": {"app": "c"}}})
    api.patch("ConfigMap", "default", "x", {"data": {"k": "2"}})
    events = watch.drain()
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[0].object == entered and events[1].object == changed
    assert events[2].object["metadata"]["labels"] == {"app": "a"}, "a leave carries the old state"
    assert events[2].object["metadata"]["resourceVersion"] == left["metadata"]["resourceVersion"]


def test_a_watch_with_a_selector_sees_the_deletion_of_a_matching_object_only() -> None:
    api = FakeApiServer()
    api.create(configmap("in", app="a"))
    api.create(configmap("out", app="b"))
    watch = api.watch("ConfigMap", "default", label_selector="app=a")
    api.delete("ConfigMap", "default", "out")
    api.delete("ConfigMap", "default", "in")
    assert [(e.type, e.object["metadata"]["name"]) for e in watch.drain()] == [("DELETED", "in")]


def test_a_watch_with_a_malformed_selector_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        FakeApiServer().watch("ConfigMap", "default", label_selector="app in (")
