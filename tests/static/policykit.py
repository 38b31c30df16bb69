"""ValidatingAdmissionPolicies evaluated statically: their CEL, run as kube-apiserver runs it.

Shared by the static tests of the shipped policies (confinement, image allow-list): ``failing``
evaluates a policy's variables in order, then each validation's expression, with ``object``,
``oldObject`` and ``request`` bound, and names the validations that fail. The e2e suite runs the
same policies on a real API server.
"""

from __future__ import annotations

from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel

Obj = dict[str, Any]


def variables_of(spec: Obj, activation: dict[str, Any]) -> Any:
    """The policy's ``variables``, each evaluated with those before it in scope."""
    env = celpy.Environment()
    variables = celtypes.MapType({})
    for variable in spec.get("variables") or []:
        program = env.program(env.compile(variable["expression"]))
        value = program.evaluate({**activation, "variables": variables})
        variables = celtypes.MapType({**variables, celtypes.StringType(variable["name"]): value})
    return variables


def failing(spec: Obj, obj: Obj, *, old: Obj | None = None) -> list[str]:
    """The validations ``obj`` fails, each named by its ``message`` (or, where the message is an
    expression, by the validation's own expression)."""
    env = celpy.Environment()
    activation: dict[str, Any] = {
        "object": json_to_cel(obj),
        "oldObject": json_to_cel(old),
        "request": json_to_cel({"operation": "CREATE" if old is None else "UPDATE"}),
    }
    activation["variables"] = variables_of(spec, activation)
    return [
        v.get("message", v["expression"])
        for v in spec["validations"]
        if not bool(env.program(env.compile(v["expression"])).evaluate(activation))
    ]
