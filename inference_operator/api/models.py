"""The InferenceService API, as pydantic models: the one source of truth.

The CRD's OpenAPI schema is generated from these models (``crd.py``), and the reconciler
parses every spec through them once, at the entry of reconcile. A rule that spans fields is
written twice, side by side (:class:`.base.Rule`): CEL for admission, Python for the reconciler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from inference_operator.api.base import Rule, StrictModel, rules_schema
from inference_operator.api.constants import MAX_CONDITION_MESSAGE, MAX_LB_ADDRESS, MAX_LB_ID, MAX_LB_TARGET
from inference_operator.api.fielderrors import WHOLE, Integer, at, format_validation_error, without_nulls
from inference_operator.api.kubesyntax import (
    CONFIG_KEY_PATTERN,
    DNS_SUBDOMAIN_PATTERN,
    IMAGE_TRIMMED,
    LABEL_VALUE_PATTERN,
    is_label_key,
    label_key_cel,
)
from inference_operator.api.quantity import parse_quantity
from inference_operator.api.resources import QUANTITY_PATTERN, Quantity, Resources
from inference_operator.api.rollout import RolloutSpec, RolloutStatus
from inference_operator.api.tolerations import Toleration

MAX_GPUS_PER_REPLICA = 16
MAX_REPLICAS = 1000
MAX_LIST_ITEMS = 64
MAX_USER_ID = 2147483647  # int32, what a pod's securityContext.runAsUser holds

ENV_NAME_PATTERN = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"


# The InferenceService's name becomes its Service's name, and a label value on its children
# and pods: so it must be an RFC 1123 label (Service names in Kubernetes >= 1.36; DNS-1035, which
# older releases required, also forbids a leading digit).
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
MAX_NAME_LENGTH = 63
NAME_MESSAGE = (
    f"metadata.name must be at most {MAX_NAME_LENGTH} characters of lowercase letters, digits and '-', "
    "starting and ending with a letter or digit (no dots): it becomes the name of the Service"
)
_NAME_RE = re.compile(NAME_PATTERN)


class KeyRef(StrictModel):
    name: str = Field(
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="Name of the Secret or ConfigMap (lowercase letters, digits, '-' and '.').",
    )
    key: str = Field(
        min_length=1,
        max_length=253,
        pattern=CONFIG_KEY_PATTERN,
        description="Key inside it: letters, digits, '-', '_' and '.' (not '.', nor starting with '..').",
    )
    optional: bool | None = None


ENV_SOURCE_ONE = Rule(
    cel="has(self.secretKeyRef) != has(self.configMapKeyRef)",
    message="set exactly one of secretKeyRef or configMapKeyRef",
    field_path="",
    check=lambda s: (s.secretKeyRef is None) != (s.configMapKeyRef is None),
)


class EnvVarSource(StrictModel):
    secretKeyRef: KeyRef | None = Field(default=None, description="A key of a Secret in the same namespace.")
    configMapKeyRef: KeyRef | None = Field(default=None, description="A key of a ConfigMap in the same namespace.")

    model_config = ConfigDict(json_schema_extra=rules_schema(ENV_SOURCE_ONE))

    @model_validator(mode="after")
    def _exactly_one(self) -> EnvVarSource:
        if not ENV_SOURCE_ONE.check(self):
            raise ValueError(ENV_SOURCE_ONE.message)
        return self


ENV_VALUE_XOR_SOURCE = Rule(
    cel="!(has(self.value) && has(self.valueFrom))",
    message="set either value or valueFrom, not both",
    field_path="",
    check=lambda e: not (e.value is not None and e.valueFrom is not None),
)


class EnvVar(StrictModel):
    name: str = Field(min_length=1, max_length=256, pattern=ENV_NAME_PATTERN, description="Variable name.")
    value: str | None = Field(default=None, max_length=32768, description="Literal value.")
    valueFrom: EnvVarSource | None = Field(default=None, description="Take the value from a Secret or ConfigMap key.")

    model_config = ConfigDict(json_schema_extra=rules_schema(ENV_VALUE_XOR_SOURCE))

    @model_validator(mode="after")
    def _value_xor_source(self) -> EnvVar:
        if not ENV_VALUE_XOR_SOURCE.check(self):
            raise ValueError(ENV_VALUE_XOR_SOURCE.message)
        return self


class LoadBalancerSpec(StrictModel):
    enabled: bool = Field(default=True, description="Register the Service with the external load balancer.")


RESERVED_ARGS = ("--model", "--port")
ARGS_NOT_RESERVED = Rule(
    cel="!has(self.args) || !self.args.exists(a, a == '--model' || a.startsWith('--model=')"
    " || a == '--port' || a.startsWith('--port='))",
    message="args must not set --model or --port: use spec.model and spec.port",
    field_path=".args",
    check=lambda s: not any(a.split("=", 1)[0] in RESERVED_ARGS for a in s.args),
)
ENV_NAMES_UNIQUE = Rule(
    cel="!has(self.env) || self.env.all(e, self.env.exists_one(f, f.name == e.name))",
    message="env names must be unique",
    field_path=".env",
    check=lambda s: len({e.name for e in s.env}) == len(s.env),
)
SPEC_RULES = (ARGS_NOT_RESERVED, ENV_NAMES_UNIQUE)
_QUANTITY_RE = re.compile(QUANTITY_PATTERN)
SHARED_MEMORY_POSITIVE = Rule(
    # The schema's pattern and minimum already refuse what is no quantity, or a negative one.
    cel="!isQuantity(string(self)) || quantity(string(self)).isGreaterThan(quantity('0'))",
    message="sharedMemory must be more than 0, e.g. 16Gi (unset: no limit of its own)",
    field_path="",
    check=lambda v: (amount := parse_quantity(v)) is not None and amount > 0,
)
NODE_SELECTOR_KEYS = Rule(
    # Structural schemas have no propertyNames, so the keys' syntax is a CEL rule; its cost is
    # bounded by maxProperties and the key size.
    cel=f"self.all(k, {label_key_cel('k')})",
    message="every key must be a label key: an optional DNS subdomain (at most 253 characters) and '/', then a "
    "name of at most 63 letters, digits, '-', '_' and '.' that starts and ends with a letter or digit",
    field_path="",
    check=lambda selector: all(is_label_key(k) for k in selector),
)


class InferenceServiceSpec(StrictModel):
    """What the user asks for: one inference server, replicated."""

    image: str = Field(
        min_length=1,
        max_length=512,
        description="Container image of the inference server, e.g. vllm/vllm-openai:v0.7.0.",
        json_schema_extra=rules_schema(IMAGE_TRIMMED),
    )
    model: str = Field(min_length=1, max_length=512, description="Model to serve; passed as --model.")
    replicas: Integer = Field(default=1, ge=0, le=MAX_REPLICAS, description="Number of server replicas.")
    port: Integer = Field(
        default=8000, ge=1, le=65535, description="Container port the server listens on; passed as --port."
    )
    gpu: Integer = Field(default=0, ge=0, le=MAX_GPUS_PER_REPLICA, description="nvidia.com/gpu per replica.")
    healthPath: str = Field(
        default="/health",
        min_length=1,
        max_length=256,
        pattern=r"^/",
        description="HTTP path of the server's health endpoint (readiness and startup probes).",
    )
    resources: Resources | None = Field(default=None, description="CPU and memory requests and limits per replica.")
    args: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS, description="Extra server arguments, after --model and --port."
    )
    env: list[EnvVar] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS, description="Environment variables of the server container."
    )
    nodeSelector: dict[str, Annotated[str, Field(max_length=63, pattern=LABEL_VALUE_PATTERN)]] = Field(
        default_factory=dict,
        max_length=MAX_LIST_ITEMS,
        description="Schedule only on nodes with these labels.",
        json_schema_extra=rules_schema(NODE_SELECTOR_KEYS),
    )
    tolerations: list[Toleration] = Field(
        default_factory=list,
        max_length=MAX_LIST_ITEMS,
        description="Tolerate these node taints (GPU nodes are often tainted).",
    )
    progressDeadlineSeconds: Integer = Field(
        default=1800,
        ge=10,
        le=86400,
        description="Seconds a rollout may make no progress before it is reported Failed.",
    )
    loadBalancer: LoadBalancerSpec = Field(
        default_factory=LoadBalancerSpec, description="External load balancer registration."
    )
    # No schema default: an unset field keeps existing Deployments as they are (their strategy is
    # the Deployment's default, a Surge).
    rollout: RolloutSpec | None = Field(
        default=None,
        description="How a template change replaces running pods: Surge (the default), Replace or Auto.",
    )
    # Only ever a tightening: Restricted adds what the restricted Pod Security Standard asks for
    # on top of the container context every pod already gets; runAsUser >= 1 can never mean root.
    # No schema default: an unset field keeps existing objects byte for byte as they were stored.
    podSecurity: Literal["Baseline", "Restricted"] | None = Field(
        default=None,
        description=(
            "Baseline (the default when unset): the image may run as root (vLLM's does). Restricted: the pod must "
            "run as a non-root user with the RuntimeDefault seccomp profile, so it is admitted in a "
            "namespace that enforces the restricted Pod Security Standard; the image needs a numeric "
            "non-root USER, or set runAsUser."
        ),
    )
    # No schema default: an unset field keeps existing Deployments as they are (no size limit).
    sharedMemory: Quantity | None = Field(
        default=None,
        description=(
            "Size limit of the server's shared memory, /dev/shm (a memory-backed emptyDir), e.g. 16Gi: "
            "tensor-parallel workers exchange data through it. What it holds counts as the pod's memory. "
            "Unset: no limit of its own (only the memory limit, if any, bounds it)."
        ),
        json_schema_extra=rules_schema(SHARED_MEMORY_POSITIVE),
    )
    runAsUser: Annotated[int, Field(ge=1, le=MAX_USER_ID), WHOLE] | None = Field(
        default=None,
        description="Run the server as this user id (never 0): for images whose USER is a name, not a number.",
    )

    model_config = ConfigDict(json_schema_extra=rules_schema(*SPEC_RULES))

    @field_validator("nodeSelector")
    @classmethod
    def _label_keys(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if not is_label_key(key):
                raise ValueError(at(key, f"{key!r} is not a valid label key"))
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        if not IMAGE_TRIMMED.check(v):
            raise ValueError(IMAGE_TRIMMED.message)
        return v

    @field_validator("sharedMemory")
    @classmethod
    def _shared_memory(cls, v: int | str | None) -> int | str | None:
        if v is None:
            return v
        if (isinstance(v, str) and not _QUANTITY_RE.match(v)) or (isinstance(v, int) and v < 0):
            raise ValueError(f"{v!r} is not a valid quantity (use e.g. 16Gi)")
        if not SHARED_MEMORY_POSITIVE.check(v):
            raise ValueError(SHARED_MEMORY_POSITIVE.message)
        return v

    @model_validator(mode="after")
    def _cross_field(self) -> InferenceServiceSpec:
        for rule in SPEC_RULES:
            if not rule.check(self):
                raise ValueError(at(rule.field_path.lstrip("."), rule.message))
        return self


class Condition(StrictModel):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = Field(default="", max_length=MAX_CONDITION_MESSAGE)
    observedGeneration: int | None = None
    lastTransitionTime: str | None = None


class LoadBalancerStatus(StrictModel):
    id: str | None = Field(default=None, max_length=MAX_LB_ID, description="Registration id at the load balancer.")
    address: str | None = Field(default=None, max_length=MAX_LB_ADDRESS, description="Address clients use.")
    target: str | None = Field(
        default=None, max_length=MAX_LB_TARGET, description="In-cluster address the load balancer forwards to."
    )


class InferenceServiceStatus(StrictModel):
    """What the operator observed; written only by the operator."""

    observedGeneration: int | None = None
    replicas: int | None = None
    readyReplicas: int | None = None
    updatedReplicas: int | None = None
    selector: str | None = Field(default=None, description="Label selector of the pods (scale subresource).")
    phase: Literal["Pending", "Progressing", "Ready", "Degraded", "Failed", "Terminating"] | None = None
    url: str | None = Field(default=None, max_length=MAX_LB_ADDRESS)
    loadBalancer: LoadBalancerStatus | None = None
    rollout: RolloutStatus | None = Field(default=None, description="What the rollout does and why.")
    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


class SpecError(ValueError):
    """The spec is invalid; ``message`` names every bad field (``spec.replicas: …``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


NAME_RULE = Rule(
    cel=f"size(self.metadata.name) <= {MAX_NAME_LENGTH} && self.metadata.name.matches('{NAME_PATTERN}')",
    message=NAME_MESSAGE,
    field_path="",
    check=lambda name: len(name) <= MAX_NAME_LENGTH and bool(_NAME_RE.match(name)),
)


def check_name(name: str) -> None:
    """Raise :class:`SpecError` when ``name`` cannot become a Service's name (what admission
    refuses; checked again here for objects that never went through admission)."""
    if not NAME_RULE.check(name):
        raise SpecError(f"{NAME_MESSAGE}; {name!r} is not")


def parse_spec(spec: Any) -> InferenceServiceSpec:
    """Parse a raw ``spec`` dict, raising :class:`SpecError` that names each bad field."""
    if not isinstance(spec, dict):
        raise SpecError("spec: must be an object with at least image and model")
    try:
        # Nulls are dropped first, as the API server drops them from a custom resource before
        # defaulting: `replicas: null` means "not set" (the default), not a wrong type.
        return InferenceServiceSpec.model_validate(without_nulls(spec))
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc)) from None


@dataclass(frozen=True)
class InferenceService:
    """A typed view of one InferenceService object: identity plus the parsed spec."""

    name: str
    namespace: str
    uid: str
    generation: int
    spec: InferenceServiceSpec
    raw: dict[str, Any]

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> InferenceService:
        """Parse the object's name and spec; raises :class:`SpecError` naming each bad field."""
        meta = obj.get("metadata") or {}
        check_name(str(meta.get("name") or ""))
        return cls(
            name=meta["name"],
            namespace=meta.get("namespace", "default"),
            uid=meta.get("uid", ""),
            generation=int(meta.get("generation") or 1),
            spec=parse_spec(obj.get("spec")),
            raw=obj,
        )
