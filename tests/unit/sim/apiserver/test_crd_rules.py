"""A CRD's CEL rules are compiled when the CRD is written, as kube-apiserver does.

Covers: a CRD with a rule that does not parse is refused on create and on update, naming the
rule's field path (under ``properties[...]``, ``items`` and ``additionalProperties``) and
"compilation failed"; an empty rule is a missing value, and keeps the rules beside and above it
from being compiled (a rule that does not compile stops nothing); versions with one schema are
named ``spec.validation`` once, others by their index (JSON types tell schemas apart); a refused
update keeps the stored CRD and its rules; the rules of a stored CRD are compiled before its
first object is written (that write no longer builds CEL's parser); and an object of a CRD never
meets a rule that does not compile (the fake once raised celpy's parse error out of the object's
create); no rule text, however broken, makes the CRD's write raise anything but Invalid.
"""

from __future__ import annotations

import json
import re
from typing import Any

import celpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference_operator.core.errors import Invalid
from inference_operator.sim.apiserver.server import FakeApiServer
from tests.shared.conformance.objects import widget_crd as shared_widget_crd

Obj = dict[str, Any]
PREFIX = "spec.validation.openAPIV3Schema"
"""Where kube-apiserver names the rules of a CRD whose versions share one schema (its internal form)."""


def widget_crd(spec_schema: Obj) -> Obj:
    return shared_widget_crd("example.com", spec_schema)


def with_rules(*rules: str) -> Obj:
    return {
        "type": "object",
        "properties": {"size": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": rule} for rule in rules],
    }


def widget(size: int) -> Obj:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": size}}


def test_a_rule_that_does_not_parse_refuses_the_crd_naming_the_rule() -> None:
    api = FakeApiServer()
    with pytest.raises(Invalid) as refused:
        api.create(widget_crd(with_rules("self.size > 0", "self.size ==")))
    message = str(refused.value)
    assert f"{PREFIX}.properties[spec].x-kubernetes-validations[1].rule: Invalid value" in message
    assert '"self.size ==": compilation failed' in message
    assert "x-kubernetes-validations[0]" not in message  # the rule that compiles is not named
    assert api.list("CustomResourceDefinition") == []
    # Without a CRD the kind has no schema: the object meets no rule, and raises nothing of celpy's.
    api.create(widget(0), namespace="default")


def test_an_empty_rule_is_a_missing_value() -> None:
    with pytest.raises(Invalid, match=r"x-kubernetes-validations\[0\]\.rule: Required value"):
        FakeApiServer().create(widget_crd(with_rules("   ")))


def test_rules_under_items_and_additional_properties_are_named_by_their_paths() -> None:
    spec_schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.("}]}},
            "labels": {
                "type": "object",
                "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": ")"}]},
            },
        },
    }
    with pytest.raises(Invalid) as refused:
        FakeApiServer().create(widget_crd(spec_schema))
    message = str(refused.value)
    assert f"{PREFIX}.properties[spec].properties[tags].items.x-kubernetes-validations[0].rule" in message
    assert f"{PREFIX}.properties[spec].properties[labels].additionalProperties.x-kubernetes-validations[0].rule" in (
        message
    )


def test_an_update_that_breaks_a_rule_is_refused_and_the_stored_rules_stay() -> None:
    api = FakeApiServer()
    stored = api.create(widget_crd(with_rules("self.size > 0")))
    broken = widget_crd(with_rules("self.size >"))
    broken["metadata"] = stored["metadata"]
    with pytest.raises(Invalid, match="compilation failed"):
        api.update(broken)
    kept = api.get("CustomResourceDefinition", "", "widgets.example.com")
    assert kept["spec"]["versions"][0]["schema"] == stored["spec"]["versions"][0]["schema"]
    with pytest.raises(Invalid, match=re.escape("failed rule: self.size > 0")):
        api.create(widget(0), namespace="default")
    api.create(widget(1), namespace="default")


def test_the_rules_are_compiled_when_the_crd_is_written_not_at_the_first_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = FakeApiServer()
    rule = "self.size != 424242"  # a rule no other test compiles
    api.create(widget_crd(with_rules(rule)))

    def no_compiling(*_: Any, **__: Any) -> Any:
        raise AssertionError("a rule was compiled at an object's write")

    monkeypatch.setattr(celpy.Environment, "compile", no_compiling)
    api.create(widget(1), namespace="default")
    with pytest.raises(Invalid, match=re.escape(f"failed rule: {rule}")):
        api.create({**widget(424242), "metadata": {"name": "v"}}, namespace="default")


def test_versions_with_one_schema_are_named_once_and_different_schemas_by_their_version() -> None:
    same = widget_crd(with_rules("self.size =="))
    same["spec"]["versions"].append({**same["spec"]["versions"][0], "name": "v2", "storage": False})
    with pytest.raises(Invalid) as refused:
        FakeApiServer().create(same)
    assert str(refused.value).count("compilation failed") == 1
    assert f"{PREFIX}.properties[spec].x-kubernetes-validations[0].rule" in str(refused.value)

    different = widget_crd(with_rules("self.size > 0"))
    v2 = widget_crd(with_rules("self.size > 0", "self.size =="))["spec"]["versions"][0]
    different["spec"]["versions"].append({**v2, "name": "v2", "storage": False})
    with pytest.raises(Invalid) as refused:
        FakeApiServer().create(different)
    message = str(refused.value)
    assert "spec.versions[1].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule" in message
    assert "spec.versions[0]" not in message


def test_a_missing_rule_keeps_the_rules_beside_and_above_it_from_being_compiled() -> None:
    with pytest.raises(Invalid) as refused:
        FakeApiServer().create(widget_crd(with_rules("  ", "self.size ==")))
    assert "[0].rule: Required value" in str(refused.value)
    assert "compilation failed" not in str(refused.value)

    nested = with_rules("self.size ==")
    nested["properties"]["size"]["x-kubernetes-validations"] = [{"rule": ""}]
    with pytest.raises(Invalid) as refused:
        FakeApiServer().create(widget_crd(nested))
    assert f"{PREFIX}.properties[spec].properties[size].x-kubernetes-validations[0].rule: Required" in str(
        refused.value
    )
    assert "compilation failed" not in str(refused.value)


def test_a_rule_that_does_not_compile_stops_nothing_above_it() -> None:
    nested = with_rules("self.size ==")
    nested["properties"]["size"]["x-kubernetes-validations"] = [{"rule": "self >"}]
    with pytest.raises(Invalid) as refused:
        FakeApiServer().create(widget_crd(nested))
    message = str(refused.value)
    assert message.count("compilation failed") == 2
    assert f"{PREFIX}.properties[spec].properties[size].x-kubernetes-validations[0].rule: Invalid" in message
    assert f"{PREFIX}.properties[spec].x-kubernetes-validations[0].rule: Invalid" in message


def test_versions_whose_schemas_differ_only_as_json_types_are_named_by_version() -> None:
    crd = widget_crd({"type": "object", "default": {"on": 1}, "x-kubernetes-validations": [{"rule": "self =="}]})
    v2 = json.loads(json.dumps(crd["spec"]["versions"][0]))
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["default"] = {"on": True}
    crd["spec"]["versions"].append({**v2, "name": "v2", "storage": False})
    with pytest.raises(Invalid) as refused:
        FakeApiServer().create(crd)
    assert "spec.versions[0].schema" in str(refused.value) and "spec.versions[1].schema" in str(refused.value)


def test_a_rule_nested_past_the_parsers_recursion_limit_is_refused_not_raised() -> None:
    deep = "(" * 1000 + "self.size > 0" + ")" * 1000
    with pytest.raises(Invalid, match="compilation failed: ERROR: expression recursion limit exceeded"):
        FakeApiServer().create(widget_crd(with_rules(deep)))


_RULE_PIECES = st.sampled_from(
    [
        *"()[]{}.,:?!<>=&|+-*/%\"'\\ \n\tabcxyz0123456789_",
        *("self.", "has(", "size(", "oldSelf", "true", "null", "b'", "r'", "0x", "1e", "'''", '"""'),
        *("\\u", "\\x", " in ", "&&", "||", "==", "!=", ".all(x, ", "matches("),
    ]
)


@settings(max_examples=200, deadline=None, database=None)
@given(rule=st.lists(_RULE_PIECES, max_size=30).map("".join) | st.text(max_size=40))
def test_no_rule_text_makes_the_crd_write_raise_anything_but_invalid(rule: str) -> None:
    api = FakeApiServer()
    try:
        api.create(widget_crd(with_rules(rule)))
    except Invalid as refused:
        assert "x-kubernetes-validations[0].rule: " in str(refused)
    else:
        assert rule.strip(), "an empty rule is refused"
