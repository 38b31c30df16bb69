"""Generated InferenceService specs, field by field (valid, or one field broken the ways users
break it), and the three verdicts on each: admission on the fake, the parser, the children.
Shared by the property test on the fake (tests/unit/api) and its sample on the real server (e2e)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from inference_operator.api.constants import API_VERSION, KIND
from inference_operator.api.crd import crd
from inference_operator.api.models import SpecError, parse_spec
from inference_operator.core.errors import ApiError
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.server import FakeApiServer

CRD = crd()


Field = tuple[st.SearchStrategy[Any], list[Any]]
"""A field's valid values, and the ways it is broken."""


WRONG_TYPES = ["3", True, 1.5, [1], {"a": 1}]
QUANTITIES = st.integers(min_value=0, max_value=10**6) | st.sampled_from(
    ["500m", "16Gi", "1.5", "+2", "1e3", "0.5Mi", "100"]
)
BAD_QUANTITIES = ["lots", "1.2.3", "Gi", "", -1, True, 0.5, [], "-1"]
LABEL_KEYS = st.sampled_from(["gpu", "nvidia.com/gpu.present", "pool", "kubernetes.io/arch"])
TEXT = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)

ENV_VAR = st.fixed_dictionaries(
    {"name": st.sampled_from(["A", "HF_TOKEN", "VLLM_X", "a.b-c"])},
    optional={
        "value": TEXT,
        "valueFrom": st.sampled_from(
            [{"secretKeyRef": {"name": "s", "key": "token"}}, {"configMapKeyRef": {"name": "c", "key": "k"}}]
        ),
    },
)
TOLERATION = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(["nvidia.com/gpu", "dedicated"]),
        "operator": st.sampled_from(["Exists", "Equal"]),
        "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "tolerationSeconds": st.integers(min_value=0, max_value=3600),
    },
)
FIELDS: dict[str, Field] = {
    "image": (st.sampled_from(["vllm/vllm-openai:v0.7.0", "localhost/standin:dev"]), ["", "x" * 513, 3, None]),
    "model": (st.sampled_from(["m", "meta-llama/Meta-Llama-3-8B-Instruct"]), ["", 3, ["m"]]),
    "replicas": (st.integers(min_value=0, max_value=1000), [-1, 1001, *WRONG_TYPES]),
    "port": (st.integers(min_value=1, max_value=65535), [0, 65536, "8000", 80.5]),
    "gpu": (st.integers(min_value=0, max_value=16), [17, -1, "1", False]),
    "healthPath": (st.sampled_from(["/health", "/v1/models"]), ["health", "", 1]),
    "resources": (
        st.fixed_dictionaries(
            {},
            optional={
                "requests": st.dictionaries(st.sampled_from(["cpu", "memory", "ephemeral-storage"]), QUANTITIES),
                "limits": st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITIES),
            },
        ),
        [[], *({part: {"cpu": q}} for part in ("requests", "limits") for q in BAD_QUANTITIES),
         {"limits": {"nvidia.com/gpu": 1}}, {"requests": {"cpu": 1}, "claims": []}],
    ),
    "args": (st.lists(st.sampled_from(["--max-model-len", "8192", "--enforce-eager"]), max_size=3),
             ["x", ["--port=1"], ["--model", "x"], [1], [None]]),
    "env": (st.lists(ENV_VAR, max_size=3, unique_by=lambda e: e["name"]),
            [{"A": "1"}, [{"name": "1A", "value": "x"}], [{"name": "A B"}], [{"name": "A", "value": 3}],
             [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}], [{"name": "A", "valueFrom": {}}],
             [{"name": "A", "value": "1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
             [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": "yes"}}}]]),
    "nodeSelector": (st.dictionaries(LABEL_KEYS, st.sampled_from(["true", "h100"]), max_size=2),
                     [["a"], {"gpu": 1}, {"gpu": "x" * 64}, {"a b": "x"}, {"-x": "y"}, {"": "y"}]),
    "tolerations": (st.lists(TOLERATION, max_size=2),
                    [{}, [{"operator": "exists"}], [{"operator": "In"}], [{"effect": "noschedule"}],
                     [{"key": "k", "tolerationSeconds": -1}], [{"key": "k", "tolerationSeconds": "30"}],
                     [{"key": "k", "operator": "Exists", "value": "v"}], [{"key": 3}]]),
    "progressDeadlineSeconds": (st.integers(min_value=10, max_value=86400), [9, 86401, "600"]),
    "loadBalancer": (st.fixed_dictionaries({}, optional={"enabled": st.booleans()}),
                     [{"enabled": "yes"}, {"enabled": 1}, {"enable": True}, "on"]),
    "podSecurity": (st.sampled_from(["Baseline", "Restricted"]), ["restricted", "Privileged", 1]),
    "runAsUser": (st.integers(min_value=1, max_value=2**31 - 1), [0, 2**31, "1000", -5]),
    "sharedMemory": (st.sampled_from(["16Gi", "512Mi", "2048Mi", 1073741824, "1e9"]),
                     [0, "0", "0Gi", *BAD_QUANTITIES]),
}  # fmt: skip
REQUIRED = ("image", "model")
UNKNOWN_FIELDS = ["replica", "serviceAccountName", "hostNetwork", "command"]


@st.composite
def specs(draw: st.DrawFn) -> Obj:
    """A spec with a few optional fields; at most one field broken, in half of them."""
    chosen = [*REQUIRED, *sorted(draw(st.sets(st.sampled_from([f for f in FIELDS if f not in REQUIRED]), max_size=5)))]
    spec = {name: draw(FIELDS[name][0]) for name in chosen}
    broken = draw(st.sampled_from([None, None, None, None, "(unknown)", "(missing)", *FIELDS]))
    if broken == "(unknown)":
        spec[draw(st.sampled_from(UNKNOWN_FIELDS))] = 3
    elif broken == "(missing)":
        del spec[draw(st.sampled_from(REQUIRED))]
    elif broken is not None:
        spec[broken] = draw(st.sampled_from(FIELDS[broken][1]))
    return spec


def manifest(spec: Obj) -> Obj:
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "prop", "namespace": "default"}, "spec": spec}


def admission(api: FakeApiServer, spec: Obj) -> str | None:
    try:
        api.apply(manifest(spec), field_manager="kubectl")
    except ApiError as err:
        return str(err)
    return None


def parser(spec: Obj) -> str | None:
    try:
        parse_spec(spec)
    except SpecError as err:
        return err.message
    return None


KNOWN_GAPS: dict[str, Callable[[Obj], bool]] = {}
"""Specs admission takes and the parser refuses, by why (the operator would report InvalidSpec
naming the field). None left: negative quantities and node-selector keys that are no label
keys, the two there were, are refused at admission now (``minimum: 0`` and a pattern without a
sign; a CEL rule over the keys)."""


CLOSED_GAPS: dict[str, Obj] = {  # specs admission used to take and the parser refused
    "negative-int-quantity": {"resources": {"requests": {"cpu": -1}}},
    "negative-string-quantity": {"resources": {"limits": {"memory": "-1Gi"}}},
    "key-with-space": {"nodeSelector": {"a b": "x"}},
    "key-with-dash": {"nodeSelector": {"-x": "y"}},
    "key-too-long": {"nodeSelector": {"x" * 317: "y"}},
    "65-keys": {"nodeSelector": {f"k{i}": "v" for i in range(65)}},
    "selector-value-with-space": {"nodeSelector": {"pool": "has space"}},
    "config-key-with-bang": {
        "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "bad key!"}}}]
    },
}
