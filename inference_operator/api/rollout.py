"""How a template change rolls out: ``spec.rollout``, and what status says of it.

A Deployment's default rolling update starts a new pod before an old one stops. On a GPU pool
that is full, the new pod waits for a GPU an old pod holds, and the old pod waits for the new
one to be ready: the rollout never ends. Three strategies, named for what a person sees:

- ``Surge`` (the default when ``rollout`` is unset, so that nothing about existing objects
  changes): new pods first, ``maxSurge`` extra at a time; fast when GPUs are spare;
- ``Replace``: an old pod stops before a new one starts (``maxSurge: 0``), ``maxUnavailable`` at
  a time: never needs a spare GPU, costs capacity while it runs;
- ``Auto``: the operator counts, before each template change, how many more replicas the free
  GPUs on the nodes the pods may run on could hold, surges that many and replaces the rest,
  never more than ``maxUnavailable`` below ``spec.replicas``; and if a new pod still cannot be
  scheduled for want of GPUs while old pods hold them, it switches to replacing and says so.

Counts are an integer or a percentage of ``spec.replicas``, as a Deployment's are (a
percentage of unavailable pods rounds down, of surge pods up).
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

from pydantic import BeforeValidator, ConfigDict, Field, field_validator, model_validator

from inference_operator.api.base import Rule, StrictModel, rules_schema
from inference_operator.api.constants import MAX_CONDITION_MESSAGE
from inference_operator.api.fielderrors import at, int_or_string

SURGE: Final = "Surge"
REPLACE: Final = "Replace"
AUTO: Final = "Auto"
STRATEGIES = (SURGE, REPLACE, AUTO)
DEFAULT_MAX_UNAVAILABLE = 1
"""``Replace`` and ``Auto`` take at most one replica away at a time unless told otherwise."""

SURGE_PATTERN = r"^[0-9]+%$"
UNAVAILABLE_PATTERN = r"^(100|[1-9]?[0-9])%$"
_SURGE_RE = re.compile(SURGE_PATTERN)
_UNAVAILABLE_RE = re.compile(UNAVAILABLE_PATTERN)


SurgeCount = Annotated[
    int | str,
    BeforeValidator(int_or_string),
    Field(json_schema_extra={"x-kubernetes-int-or-string": True, "pattern": SURGE_PATTERN}),
]
UnavailableCount = Annotated[
    int | str,
    BeforeValidator(int_or_string),
    Field(json_schema_extra={"x-kubernetes-int-or-string": True, "pattern": UNAVAILABLE_PATTERN}),
]


def _is_zero(value: int | str | None) -> bool:
    return value in (0, "0%")


def _check_count(value: int | str | None, *, pattern: re.Pattern[str], what: str) -> int | str | None:
    if isinstance(value, int) and value < 0:
        raise ValueError(f"{value!r} is not a count: use a whole number of replicas >= 0 or a percentage")
    if isinstance(value, str) and not pattern.match(value):
        raise ValueError(f"{value!r} is not a count: use a whole number of replicas or a percentage {what}")
    return value


SURGE_ONLY_WITH_SURGE = Rule(
    cel="!has(self.maxSurge) || !has(self.strategy) || self.strategy == 'Surge'",
    message="maxSurge applies only to strategy Surge: Replace never starts extra pods and Auto starts as many "
    "as the free GPUs allow",
    field_path=".maxSurge",
    check=lambda r: r.maxSurge is None or r.strategy == SURGE,
)
REPLACE_TAKES_ONE = Rule(
    cel="!has(self.strategy) || self.strategy != 'Replace' || !has(self.maxUnavailable) || "
    "(string(self.maxUnavailable) != '0' && string(self.maxUnavailable) != '0%')",
    message="strategy Replace stops old pods before new ones start, so maxUnavailable must be at least 1",
    field_path=".maxUnavailable",
    check=lambda r: r.strategy != REPLACE or not _is_zero(r.maxUnavailable),
)
SURGE_MOVES = Rule(
    cel="!has(self.maxSurge) || !has(self.maxUnavailable) || "
    "(string(self.maxSurge) != '0' && string(self.maxSurge) != '0%') || "
    "(string(self.maxUnavailable) != '0' && string(self.maxUnavailable) != '0%')",
    message="maxSurge and maxUnavailable cannot both be 0: the rollout could never move",
    field_path="",
    check=lambda r: not (_is_zero(r.maxSurge) and _is_zero(r.maxUnavailable)),
)
ROLLOUT_RULES = (SURGE_ONLY_WITH_SURGE, REPLACE_TAKES_ONE, SURGE_MOVES)


class RolloutSpec(StrictModel):
    """How pods of a new template replace the running ones."""

    strategy: Literal["Surge", "Replace", "Auto"] = Field(
        default=SURGE,
        description=(
            "Surge: new pods start before old ones stop (needs spare GPUs). Replace: an old pod stops before a "
            "new one starts (never needs a spare GPU; fewer replicas serve meanwhile). Auto: surge as many "
            "replicas as the free GPUs on the nodes the pods may run on allow, replace the rest, and switch to "
            "replacing if a new pod cannot get a GPU."
        ),
    )
    maxUnavailable: UnavailableCount | None = Field(
        default=None,
        description=(
            "The most replicas below spec.replicas at once while a rollout runs: a count or a percentage up to "
            "100%. Replace and Auto: default 1 (Auto with 0 never goes below spec.replicas, and waits when no "
            "GPU is free). Surge: default 25%, the Deployment's own."
        ),
    )
    maxSurge: SurgeCount | None = Field(
        default=None,
        description="Surge only: the most extra replicas at once, a count or a percentage (default 25%).",
    )

    model_config = ConfigDict(json_schema_extra=rules_schema(*ROLLOUT_RULES))

    @field_validator("maxUnavailable")
    @classmethod
    def _unavailable(cls, v: int | str | None) -> int | str | None:
        return _check_count(v, pattern=_UNAVAILABLE_RE, what="of at most 100%")

    @field_validator("maxSurge")
    @classmethod
    def _surge(cls, v: int | str | None) -> int | str | None:
        return _check_count(v, pattern=_SURGE_RE, what="such as 25%")

    @model_validator(mode="after")
    def _cross_field(self) -> RolloutSpec:
        for rule in ROLLOUT_RULES:
            if not rule.check(self):
                raise ValueError(at(rule.field_path.lstrip("."), rule.message))
        return self


class RolloutStatus(StrictModel):
    """What the current or last rollout does and why, in numbers."""

    strategy: str | None = Field(default=None, description="spec.rollout.strategy, as the operator applied it.")
    plan: str | None = Field(
        default=None, description="What the rollout does, in a few words: Surge, Replace, Surge 2 + Replace, Blocked."
    )
    maxSurge: int | None = Field(default=None, description="Extra replicas the Deployment may start at once.")
    maxUnavailable: int | None = Field(
        default=None, description="Replicas the Deployment may take below spec.replicas at once."
    )
    message: str | None = Field(default=None, max_length=MAX_CONDITION_MESSAGE, description="Why, with the numbers.")
