"""The crash-point test hook (``inference_operator.kube.crashpoint``), offline.

Covers: off by default (no counting, never exits); armed with N, it exits with 137 right after
the Nth call returned, not before, and counts a call that raised too; with a prefix, only the
calls it names count; the load balancer wrapper counts register and release but not lookup,
and is not applied when the hook is off; ``INFERENCE_OPERATOR_CRASH_AFTER_WRITES`` and
``INFERENCE_OPERATOR_CRASH_ON`` are read by OperatorConfig, and negatives refused.
"""

from __future__ import annotations

import pytest

from inference_operator.core.ports import Registration
from inference_operator.kube.config import ConfigError, OperatorConfig
from inference_operator.kube.crashpoint import CrashingLoadBalancer, CrashPoint, with_crash_point
from inference_operator.lb.memory import InMemoryLoadBalancer


class Exited(Exception):
    """Stands in for the end of the process."""


def crash_point(after: int, codes: list[int], *, on: str = "") -> CrashPoint:
    def exit_(code: int) -> None:
        codes.append(code)
        raise Exited

    return CrashPoint(after, on=on, exit=exit_)


def test_the_hook_is_off_by_default_and_never_counts() -> None:
    codes: list[int] = []
    crash = crash_point(0, codes)
    for _ in range(5):
        assert crash.call("write", lambda: 1) == 1
    assert not crash.armed and crash.count == 0 and codes == []


def test_an_armed_hook_exits_with_137_right_after_the_nth_call_returned() -> None:
    codes: list[int] = []
    done: list[int] = []
    crash = crash_point(3, codes)
    crash.call("first", lambda: done.append(1))
    crash.call("second", lambda: done.append(2))
    assert codes == []
    with pytest.raises(Exited):
        crash.call("third", lambda: done.append(3))
    assert done == [1, 2, 3], "the third write happened before the exit"
    assert codes == [137]


def test_a_call_that_raised_counts_too() -> None:
    codes: list[int] = []
    crash = crash_point(1, codes)

    def fails() -> None:
        raise RuntimeError("HTTP 409")

    with pytest.raises(Exited):
        crash.call("conflict", fails)
    assert codes == [137]


def test_a_prefix_counts_only_the_calls_it_names() -> None:
    codes: list[int] = []
    crash = crash_point(2, codes, on="update_status ")
    crash.call("apply Deployment ns/a", lambda: None)
    crash.call("update_status InferenceService ns/a", lambda: None)
    crash.call("apply Deployment ns/a", lambda: None)
    assert codes == [] and crash.count == 3 and crash.matched == 1
    with pytest.raises(Exited):
        crash.call("update_status InferenceService ns/a", lambda: None)
    assert codes == [137]


def test_the_load_balancer_wrapper_counts_register_and_release_not_lookup() -> None:
    codes: list[int] = []
    crash = crash_point(2, codes)
    lb = with_crash_point(InMemoryLoadBalancer(), crash)
    assert isinstance(lb, CrashingLoadBalancer)
    registered = lb.register("ns/a", target="a.ns.svc:8000")
    assert isinstance(registered, Registration)
    assert lb.lookup("ns/a") == registered
    assert crash.count == 1
    with pytest.raises(Exited):
        lb.release("ns/a")
    assert codes == [137] and lb.lookup("ns/a") is None


def test_an_unarmed_hook_leaves_the_load_balancer_unwrapped() -> None:
    inner = InMemoryLoadBalancer()
    assert with_crash_point(inner, CrashPoint()) is inner


def test_the_setting_is_read_from_the_environment_and_refuses_negatives() -> None:
    assert OperatorConfig.from_env({}).crash_after_writes == 0
    assert OperatorConfig.from_env({"INFERENCE_OPERATOR_CRASH_AFTER_WRITES": "7"}).crash_after_writes == 7
    assert OperatorConfig.from_env({"INFERENCE_OPERATOR_CRASH_ON": "release "}).crash_on == "release "
    with pytest.raises(ConfigError, match="CRASH_AFTER_WRITES"):
        OperatorConfig.from_env({"INFERENCE_OPERATOR_CRASH_AFTER_WRITES": "-1"})
