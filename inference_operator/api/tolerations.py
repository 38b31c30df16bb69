"""Tolerations of the inference pods: the taints they may be scheduled onto, as a pod has them.

Each rule kube-apiserver applies to a pod's tolerations is written here twice, CEL for admission
and Python for the parser, so that no admitted toleration makes the Deployment be refused: a key
is a label key (or empty, with operator Exists), a value a label value (empty with Exists), and
tolerationSeconds goes with effect NoExecute only.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from inference_operator.api.base import Rule, StrictModel, rules_schema
from inference_operator.api.fielderrors import WHOLE, at
from inference_operator.api.kubesyntax import (
    LABEL_VALUE_PATTERN,
    MAX_LABEL_KEY_LENGTH,
    MAX_LABEL_KEY_PREFIX,
    OPTIONAL_LABEL_KEY_PATTERN,
    label_key_prefix_cel,
    label_key_prefix_fits,
)

__all__ = ["TOLERATION_RULES", "Toleration"]


TOLERATION_EXISTS_NO_VALUE = Rule(
    cel="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",
    message="a toleration with operator Exists must not set value",
    field_path="",
    check=lambda t: t.operator != "Exists" or not t.value,
)
TOLERATION_KEYLESS_EXISTS = Rule(
    cel="(has(self.key) && self.key != '') || (has(self.operator) && self.operator == 'Exists')",
    message="a toleration without a key must use operator Exists (it then tolerates every taint)",
    field_path=".operator",
    check=lambda t: bool(t.key) or t.operator == "Exists",
)
TOLERATION_SECONDS_NO_EXECUTE = Rule(
    cel="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
    message="tolerationSeconds applies only to effect NoExecute (how long the pod stays on a node tainted so)",
    field_path=".tolerationSeconds",
    check=lambda t: t.tolerationSeconds is None or t.effect == "NoExecute",
)
TOLERATION_KEY_PREFIX = Rule(
    cel=f"!has(self.key) || {label_key_prefix_cel('self.key')}",
    message=f"the key's prefix (before '/') must be at most {MAX_LABEL_KEY_PREFIX} characters",
    field_path=".key",
    check=lambda t: t.key is None or label_key_prefix_fits(t.key),
)
TOLERATION_RULES = (
    TOLERATION_EXISTS_NO_VALUE,
    TOLERATION_KEYLESS_EXISTS,
    TOLERATION_SECONDS_NO_EXECUTE,
    TOLERATION_KEY_PREFIX,
)


class Toleration(StrictModel):
    key: str | None = Field(
        default=None,
        max_length=MAX_LABEL_KEY_LENGTH,
        pattern=OPTIONAL_LABEL_KEY_PATTERN,
        description="Taint key (a label key); empty with Exists matches all.",
    )
    operator: Literal["Exists", "Equal"] | None = Field(default=None, description="Exists or Equal (default).")
    value: str | None = Field(default=None, max_length=63, pattern=LABEL_VALUE_PATTERN, description="A label value.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: Annotated[int, Field(ge=0), WHOLE] | None = None

    model_config = ConfigDict(json_schema_extra=rules_schema(*TOLERATION_RULES))

    @model_validator(mode="after")
    def _rules(self) -> Toleration:
        for rule in TOLERATION_RULES:
            if not rule.check(self):
                raise ValueError(at(rule.field_path.lstrip("."), rule.message) if rule.field_path else rule.message)
        return self
