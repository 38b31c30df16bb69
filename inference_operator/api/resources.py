"""Resource requests and limits of an InferenceService's replicas: quantities, and their rules.

Quantities follow Kubernetes' ``resource.Quantity`` grammar; a request above its limit is
refused at admission (CEL, with Kubernetes' quantity library) and by the parser, as the API
server would refuse the pod template built from it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, field_validator, model_validator

from inference_operator.api.base import Rule, StrictModel, cel_property, rules_schema
from inference_operator.api.fielderrors import at, int_or_string
from inference_operator.api.quantity import parse_quantity

__all__ = ["QUANTITY_PATTERN", "REQUESTS_WITHIN_LIMITS", "Quantity", "Resources"]

# The Kubernetes resource.Quantity grammar (what `kubectl` accepts for cpu and memory), without
# the minus sign: a container's requests and limits must not be negative, so a Deployment built
# from a negative one would be refused; admission refuses it first (and `minimum: 0` the integers).
QUANTITY_PATTERN = (
    r"^(\+)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY_RE = re.compile(QUANTITY_PATTERN)


Quantity = Annotated[
    int | str,
    BeforeValidator(int_or_string),
    Field(json_schema_extra={"x-kubernetes-int-or-string": True}),
]

ResourceName = Literal["cpu", "memory", "ephemeral-storage"]


def _check_quantities(values: dict[str, int | str] | None, where: str) -> dict[str, int | str] | None:
    for key, value in (values or {}).items():
        if isinstance(value, int) and value < 0:
            raise ValueError(at(key, f"{value!r} is not a valid quantity (use e.g. 2, 500m, 16Gi)"))
        if isinstance(value, str) and not _QUANTITY_RE.match(value):
            raise ValueError(at(key, f"{value!r} is not a valid quantity (use e.g. 2, 500m, 16Gi)"))
    return values


def _request_within_limit(resource: str) -> Rule:
    """``requests.<resource>`` at most ``limits.<resource>``, as the API server requires of a pod."""
    name = cel_property(resource)
    request, limit = f"self.requests.{name}", f"self.limits.{name}"
    return Rule(
        cel=f"!has(self.requests) || !has(self.limits) || !has({request}) || !has({limit}) || "
        f"!isQuantity(string({request})) || !isQuantity(string({limit})) || "
        f"!quantity(string({request})).isGreaterThan(quantity(string({limit})))",
        message=f"requests.{resource} must not exceed limits.{resource}: a pod may not ask for more than its limit",
        field_path="",
        check=lambda r: not _exceeds(r, resource),
    )


def _exceeds(resources: Any, resource: str) -> bool:
    request = (resources.requests or {}).get(resource)
    limit = (resources.limits or {}).get(resource)
    if request is None or limit is None:
        return False
    asked, allowed = parse_quantity(request), parse_quantity(limit)
    return asked is not None and allowed is not None and asked > allowed


REQUESTS_WITHIN_LIMITS = tuple(_request_within_limit(r) for r in ("cpu", "memory", "ephemeral-storage"))


class Resources(StrictModel):
    """CPU, memory and ephemeral-storage requests and limits; GPUs go in ``spec.gpu``."""

    model_config = ConfigDict(json_schema_extra=rules_schema(*REQUESTS_WITHIN_LIMITS))

    requests: dict[ResourceName, Quantity] | None = Field(
        default=None, description="Minimum resources per replica, e.g. {cpu: 4, memory: 32Gi}."
    )
    limits: dict[ResourceName, Quantity] | None = Field(default=None, description="Maximum resources per replica.")

    @field_validator("requests", "limits")
    @classmethod
    def _quantities(cls, v: dict[str, int | str] | None, info: Any) -> dict[str, int | str] | None:
        return _check_quantities(v, info.field_name)

    @model_validator(mode="after")
    def _within_limits(self) -> Resources:
        for rule in REQUESTS_WITHIN_LIMITS:
            if not rule.check(self):
                raise ValueError(rule.message)
        return self
