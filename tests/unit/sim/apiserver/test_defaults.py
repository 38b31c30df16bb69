"""What the FakeApiServer stores for the built-in kinds, as the real server does.

Covers: configMap, secret, projected and downwardAPI volumes get ``defaultMode: 420`` (an own mode
stays); ``fieldRef.apiVersion`` and ``resourceFieldRef.divisor`` are defaulted; an empty
``affinity`` is kept; empty top-level maps (``data: {}``) are dropped; a Secret's ``stringData`` is
merged into ``data`` as base64, ``type`` defaults to ``Opaque``, a TLS Secret needs its keys,
``data`` must be base64; config keys are validated and may not be in both ``data`` and
``binaryData``; an immutable ConfigMap keeps its data; list items of built-in kinds carry no
kind/apiVersion (an informer's list does), a custom resource's keep theirs; fields the Go types do
not declare are dropped.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.core.errors import ApiError, Invalid
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock

Obj = dict[str, Any]


@pytest.fixture
def api() -> FakeApiServer:
    return FakeApiServer(FakeClock())


def deployment(pod: Obj) -> Obj:
    labels = {"app": "d"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def pod_of(obj: Obj) -> Obj:
    pod: Obj = obj["spec"]["template"]["spec"]
    return pod


def test_volumes_get_the_default_mode_420_unless_they_name_one(api: FakeApiServer) -> None:
    volumes = [
        {"name": "a", "configMap": {"name": "c"}},
        {"name": "b", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "c", "projected": {"sources": [{"configMap": {"name": "c"}}]}},
        {"name": "d", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"name": "e", "emptyDir": {}},
    ]
    pod = {"containers": [{"name": "s", "image": "i:1"}], "volumes": volumes}
    stored = pod_of(api.create(deployment(pod)))["volumes"]
    assert [v.get(next(k for k in v if k != "name"), {}).get("defaultMode") for v in stored] == [
        420,
        256,
        420,
        420,
        None,
    ]
    assert stored[3]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"


def test_env_references_and_an_empty_affinity_are_defaulted_and_kept(api: FakeApiServer) -> None:
    env = [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]
    pod = {"containers": [{"name": "s", "image": "i:1", "env": env}], "affinity": {}}
    stored = pod_of(api.create(deployment(pod)))
    assert stored["containers"][0]["env"][0]["valueFrom"]["resourceFieldRef"]["divisor"] == "0"
    assert stored["affinity"] == {}


def test_empty_top_level_maps_are_dropped(api: FakeApiServer) -> None:
    created = api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}})
    assert "data" not in created


class TestSecrets:
    def secret(self, **fields: Any) -> Obj:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, **fields}

    def test_string_data_is_merged_into_data_and_type_defaults_to_opaque(self, api: FakeApiServer) -> None:
        created = api.create(self.secret(data={"a": "eA==", "b": "eA=="}, stringData={"b": "pw"}))
        assert (created["data"], created["type"]) == ({"a": "eA==", "b": "cHc="}, "Opaque")
        assert "stringData" not in created
        patched = api.patch("Secret", "default", "s", {"stringData": {"c": "value"}})
        assert patched["data"]["c"] == "dmFsdWU=" and "stringData" not in patched

    def test_a_tls_secret_needs_both_keys(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match=r"data\[tls\.crt\]: Required value; data\[tls\.key\]: Required value"):
            api.create(self.secret(type="kubernetes.io/tls"))

    def test_data_must_be_base64_or_the_request_is_bad(self, api: FakeApiServer) -> None:
        with pytest.raises(ApiError, match="cannot be handled as a Secret: illegal base64 data") as err:
            api.create(self.secret(data={"k": "not base64!"}))
        assert err.value.code == 400


class TestConfigMaps:
    def configmap(self, **fields: Any) -> Obj:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, **fields}

    def test_keys_are_config_keys_and_unique_across_data_and_binary_data(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match=r"data\[bad key!\]: Invalid value"):
            api.create(self.configmap(data={"bad key!": "v"}))
        with pytest.raises(Invalid, match=r"data\[k\]: Invalid value: \"k\": duplicate of key present in binaryData"):
            api.create(self.configmap(data={"k": "v"}, binaryData={"k": "AAE="}))

    def test_an_immutable_configmap_keeps_its_data_and_stays_immutable(self, api: FakeApiServer) -> None:
        created = api.create(self.configmap(data={"k": "v"}, immutable=True))
        with pytest.raises(Invalid, match="data: Forbidden: field is immutable when `immutable` is set"):
            api.update({**created, "data": {"k": "w"}})
        with pytest.raises(Invalid, match="immutable: Forbidden"):
            api.update({**created, "immutable": False})


def test_list_items_of_built_in_kinds_carry_no_kind_but_an_informers_list_does(api: FakeApiServer) -> None:
    api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    [item] = api.list("ConfigMap")
    assert "kind" not in item and "apiVersion" not in item
    [informed], watch = api.list_and_watch("ConfigMap")
    assert (informed["kind"], informed["apiVersion"]) == ("ConfigMap", "v1")
    watch.stop()


def test_fields_the_go_types_do_not_declare_are_dropped(api: FakeApiServer) -> None:
    pod = {"containers": [{"name": "s", "image": "i:1", "extra": 1}], "extra": True}
    manifest = {**deployment(pod), "extra": "x"}
    manifest["spec"]["replica"] = 3  # a typo: dropped, not stored
    manifest["metadata"]["extra"] = "x"
    stored = api.create(manifest)
    assert "extra" not in stored and "extra" not in stored["metadata"] and "replica" not in stored["spec"]
    assert "extra" not in pod_of(stored) and "extra" not in pod_of(stored)["containers"][0]
    assert "f:extra" not in str(stored["metadata"]["managedFields"])
    custom = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "extra": 1}
    assert api.create(custom)["extra"] == 1  # a custom resource's own schema decides (not this table)
