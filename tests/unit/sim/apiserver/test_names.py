"""Tests for names in the FakeApiServer, as the real kube-apiserver (v1.36) judges them.

Covers:
- generateName: the prefix (cut to 58 characters) and 5 characters of the generator's alphabet;
  a name wins over it; a taken name is drawn again; the prefix is validated (a trailing '-' is
  fine), the generated name too; neither name nor generateName is Invalid on metadata.name.
- Name rules per kind: Services and Namespaces are RFC 1123 labels (63; a Service may start
  with a digit since 1.36), other kinds RFC 1123 subdomains (253); a Namespace's name is also
  its label's value.
- Names in a request path: '%' (and '.', '..') is a bad request, '/' addresses nothing.
- A Service's selector must be made of valid labels.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from inference_operator.sim.apiserver.server import BadRequest, FakeApiServer, Invalid, NotFound

Obj = dict[str, Any]


@pytest.fixture
def api() -> FakeApiServer:
    return FakeApiServer()


def configmap(**meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", **meta}}


def service(selector: dict[str, str] | None = None, **meta: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"namespace": "default", **meta},
        "spec": {"selector": selector or {"app": "web"}, "ports": [{"port": 80}]},
    }


class TestGenerateName:
    def test_a_generated_name_is_the_prefix_and_five_random_characters(self, api: FakeApiServer) -> None:
        made = api.create(configmap(generateName="web-"))
        assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", made["metadata"]["name"])
        assert made["metadata"]["generateName"] == "web-"
        assert api.get("ConfigMap", "default", made["metadata"]["name"]) == made

    def test_a_name_wins_over_generate_name(self, api: FakeApiServer) -> None:
        assert api.create(configmap(name="explicit", generateName="web-"))["metadata"]["name"] == "explicit"

    def test_a_long_prefix_is_cut_to_58_characters(self, api: FakeApiServer) -> None:
        name = api.create(configmap(generateName="g" * 70))["metadata"]["name"]
        assert len(name) == 63
        assert name.startswith("g" * 58)

    def test_generated_names_differ_and_a_taken_one_is_drawn_again(self, api: FakeApiServer) -> None:
        names = {api.create(configmap(generateName="x"))["metadata"]["name"] for _ in range(200)}
        assert len(names) == 200

    def test_an_invalid_prefix_is_invalid_with_the_generated_name(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match=r"metadata\.generateName: Invalid value.*metadata\.name: Invalid value"):
            api.create(configmap(generateName="Web-"))

    def test_a_service_prefix_longer_than_63_is_invalid(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match=r"metadata\.generateName: Invalid value: .*no more than 63"):
            api.create(service(generateName="s" * 64))
        assert len(api.create(service(generateName="s" * 63))["metadata"]["name"]) == 63

    def test_neither_name_nor_generate_name_is_invalid(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match=r"metadata\.name: Required value: name or generateName is required"):
            api.create(configmap())

    def test_a_namespace_can_be_generated_and_its_label_names_it(self, api: FakeApiServer) -> None:
        made = api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "team-"}})
        assert made["metadata"]["labels"] == {"kubernetes.io/metadata.name": made["metadata"]["name"]}


class TestNameRules:
    @pytest.mark.parametrize("name", ["7b", "0", "a" * 63])
    def test_a_service_name_is_an_rfc_1123_label(self, api: FakeApiServer, name: str) -> None:
        api.create(service(name=name))

    @pytest.mark.parametrize("name", ["a" * 64, "web.v1", "Web", "web_1", "-web", "web-"])
    def test_a_service_name_outside_the_label_rules_is_invalid(self, api: FakeApiServer, name: str) -> None:
        with pytest.raises(Invalid, match=r"metadata\.name: Invalid value"):
            api.create(service(name=name))

    @pytest.mark.parametrize("name", ["web.v1", "7", "a" * 253])
    def test_a_configmap_name_is_an_rfc_1123_subdomain(self, api: FakeApiServer, name: str) -> None:
        api.create(configmap(name=name))

    @pytest.mark.parametrize("name", ["a" * 254, "Web", "web_1", "web..v1", ".", "..", "a/b", "a%b", "web."])
    def test_a_configmap_name_outside_the_subdomain_rules_is_invalid(self, api: FakeApiServer, name: str) -> None:
        with pytest.raises(Invalid, match=r"metadata\.name: Invalid value"):
            api.create(configmap(name=name))

    def test_a_namespace_name_is_also_a_label_value(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match=r"metadata\.labels: Invalid value") as caught:
            api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n" * 64}})
        assert "metadata.name: Invalid value" in caught.value.message


class TestPathNames:
    def test_a_percent_in_a_requested_name_is_a_bad_request(self, api: FakeApiServer) -> None:
        with pytest.raises(BadRequest, match="may not contain '%'"):
            api.get("ConfigMap", "default", "a%b")
        with pytest.raises(BadRequest, match=r"may not be '\.\.'"):
            api.delete("ConfigMap", "default", "..")

    def test_a_slash_in_a_requested_name_addresses_nothing(self, api: FakeApiServer) -> None:
        with pytest.raises(NotFound, match="could not find the requested resource"):
            api.get("ConfigMap", "default", "a/b")


class TestServiceSelector:
    @pytest.mark.parametrize("value", ["-web", "web-", "w" * 64, "a b"])
    def test_a_selector_value_that_is_no_label_value_is_invalid(self, api: FakeApiServer, value: str) -> None:
        with pytest.raises(Invalid, match=r"spec\.selector: Invalid value"):
            api.create(service(name="web", selector={"app": value}))
