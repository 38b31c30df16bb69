"""Generated InferenceService specs, field by field (valid, or one field broken the ways users
break it), and the three verdicts on each: admission on the fake, the parser, the children
(built as the reconciler's first pass builds them: :func:`children`).
Shared by the property test on the fake (tests/unit/api) and its sample on the real server (e2e)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from inference_operator.api.constants import API_VERSION, KIND
from inference_operator.api.crd import crd
from inference_operator.api.models import InferenceService, SpecError, parse_spec
from inference_operator.core.errors import ApiError
from inference_operator.core.objects import Obj
from inference_operator.reconcile.builders import desired_deployment, desired_service, pod_template
from inference_operator.reconcile.capacity import UNKNOWN
from inference_operator.reconcile.rollout import ANNOTATION, plan_rollout
from inference_operator.sim.apiserver.server import FakeApiServer

CRD = crd()


Field = tuple[st.SearchStrategy[Any], list[Any]]
"""A field's valid values, and the ways it is broken."""


WRONG_TYPES = ["3", True, 1.5, [1], {"a": 1}]
QUANTITIES = st.integers(min_value=0, max_value=10**6) | st.sampled_from(
    ["500m", "16Gi", "1.5", "+2", "1e3", "0.5Mi", "100"]
)
BAD_QUANTITIES = ["lots", "1.2.3", "Gi", "", -1, True, 0.5, [], "-1"]
# The longest label key there can be: a prefix of 253 and a name of 63.
LONGEST_LABEL_KEY = "a" * 253 + "/" + "x" * 63
LABEL_KEYS = st.sampled_from(["gpu", "nvidia.com/gpu.present", "pool", "kubernetes.io/arch", LONGEST_LABEL_KEY])
TEXT = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)

ENV_VAR = st.fixed_dictionaries(
    {"name": st.sampled_from(["A", "HF_TOKEN", "VLLM_X", "a.b-c"])},
    optional={
        "value": TEXT,
        "valueFrom": st.sampled_from(
            [
                {"secretKeyRef": {"name": "s", "key": "token"}},
                {"configMapKeyRef": {"name": "c", "key": "k"}},
                {"secretKeyRef": {"name": "hf.token-1", "key": ".dotted_KEY-1"}},
            ]
        ),
    },
)
TOLERATION = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(["nvidia.com/gpu", "dedicated", LONGEST_LABEL_KEY]),
        "operator": st.sampled_from(["Exists", "Equal"]),
        "value": st.sampled_from(["", "true", "h100-80gb"]),
        "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "tolerationSeconds": st.integers(min_value=0, max_value=3600),
    },
)
COUNTS = st.integers(min_value=0, max_value=3) | st.sampled_from(["0%", "25%", "100%"])
ROLLOUT = st.fixed_dictionaries(
    {},
    optional={
        "strategy": st.sampled_from(["Surge", "Replace", "Auto"]),
        "maxUnavailable": COUNTS,
        "maxSurge": COUNTS | st.sampled_from(["150%"]),
    },
)
# Strings the API server refuses in a pod (template) though they would fit a schema's type and
# length: each one, admitted, would have made the Deployment or its Pods be refused.
POD_REFUSED_IMAGES = [" vllm/vllm-openai:v0.7.0", "vllm/vllm-openai:v0.7.0\t", "vllm\u00a0", "\u3000vllm"]
POD_REFUSED_ENV = [
    [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "Bad Name", "key": "k"}}}],
    [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "a..b", "key": "k"}}}],
    [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": ".."}}}],
    [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "..x"}}}],
    [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "."}}}],
]
POD_REFUSED_SELECTORS = [{"x" * 64: "y"}, {"a" * 254 + "/x": "y"}]
POD_REFUSED_TOLERATIONS = [
    [{"key": "a b", "operator": "Exists"}],
    [{"key": "x" * 64, "operator": "Exists"}],
    [{"key": "a" * 254 + "/x", "operator": "Exists"}],
    [{"key": "k", "value": "a b"}],
    [{"key": "k", "operator": "Equal", "value": "-x"}],
]
FIELDS: dict[str, Field] = {
    "image": (st.sampled_from(["vllm/vllm-openai:v0.7.0", "localhost/standin:dev"]),
              ["", "x" * 513, 3, None, *POD_REFUSED_IMAGES]),
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
             [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": "yes"}}}],
             *POD_REFUSED_ENV]),
    "nodeSelector": (st.dictionaries(LABEL_KEYS, st.sampled_from(["true", "h100"]), max_size=2),
                     [["a"], {"gpu": 1}, {"gpu": "x" * 64}, {"a b": "x"}, {"-x": "y"}, {"": "y"},
                      *POD_REFUSED_SELECTORS]),
    "tolerations": (st.lists(TOLERATION, max_size=2),
                    [{}, [{"operator": "exists"}], [{"operator": "In"}], [{"effect": "noschedule"}],
                     [{"key": "k", "tolerationSeconds": -1}], [{"key": "k", "tolerationSeconds": "30"}],
                     [{"key": "k", "operator": "Exists", "value": "v"}], [{"key": 3}], *POD_REFUSED_TOLERATIONS]),
    "progressDeadlineSeconds": (st.integers(min_value=10, max_value=86400), [9, 86401, "600"]),
    "rollout": (ROLLOUT, [{"strategy": "surge"}, {"maxSurge": -1}, {"maxUnavailable": "101%"}, {"maxSurge": "5"},
                          {"strategy": "Replace", "maxUnavailable": 0}, {"maxSurge": 0, "maxUnavailable": "0%"},
                          {"strategy": "Auto", "maxSurge": 1}, "Surge"]),
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


RICH_SPEC: Obj = {  # every field the builders copy into the pod template, at the edges of what is valid
    "image": "vllm/vllm-openai:v0.7.0",
    "model": "meta-llama/Meta-Llama-3-8B-Instruct",
    "replicas": 2,
    "gpu": 8,
    "resources": {"requests": {"cpu": "4", "memory": "32Gi", "ephemeral-storage": "1"}, "limits": {"cpu": 4}},
    "args": ["--max-model-len", "8192"],
    "env": [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf.token-1", "key": ".dotted_KEY-1"}}},
        {"name": "a.b-c", "value": " spaced "},
    ],
    "nodeSelector": {LONGEST_LABEL_KEY: "h100-80gb", "pool": ""},
    "tolerations": [
        {
            "key": LONGEST_LABEL_KEY,
            "operator": "Equal",
            "value": "true",
            "effect": "NoExecute",
            "tolerationSeconds": 30,
        },
        {"operator": "Exists"},
    ],
    "rollout": {"strategy": "Auto", "maxUnavailable": "0%"},
    "podSecurity": "Restricted",
    "runAsUser": 2147483647,
    "sharedMemory": "16Gi",
}


def manifest(spec: Obj) -> Obj:
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "prop", "namespace": "default"}, "spec": spec}


def admission(api: FakeApiServer, spec: Obj) -> str | None:
    try:
        api.apply(manifest(spec), field_manager="kubectl")
    except ApiError as err:
        return str(err)
    return None


def children(isvc: InferenceService) -> list[Obj]:
    """The Deployment and the Service a first pass of the reconciler applies for ``isvc``: its
    pure builders, with the strategy and annotation of the rollout plan made when no Deployment
    exists yet and no capacity can be read (``RolloutStep.desired`` with empty caches)."""
    template = pod_template(isvc)
    plan = plan_rollout(isvc, template=template, live=None, capacity=lambda: UNKNOWN, stall=None)
    annotations = {ANNOTATION: plan.annotation()} if plan.written else None
    deployment = desired_deployment(
        isvc, template=template, strategy=plan.deployment_strategy(), annotations=annotations
    )
    return [deployment, desired_service(isvc)]


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
    # Refused in the pod (template), not at admission, until admission held these strings to
    # the pod's rules (inference_operator/api/kubesyntax.py): each ended as ChildRejected, or,
    # the image, as a Deployment whose Pods could never be created.
    **{f"pod-refused-image-{i}": {"image": image} for i, image in enumerate(POD_REFUSED_IMAGES)},
    **{f"pod-refused-env-{i}": {"env": env} for i, env in enumerate(POD_REFUSED_ENV)},
    **{f"pod-refused-selector-{i}": {"nodeSelector": sel} for i, sel in enumerate(POD_REFUSED_SELECTORS)},
    **{f"pod-refused-toleration-{i}": {"tolerations": t} for i, t in enumerate(POD_REFUSED_TOLERATIONS)},
}
