"""Seeded explorer runs, and the ``make explore`` command line.

``explore(...)`` runs the state machine under fixed hypothesis settings (a seed, no example
database, no deadline), so the same seed always replays the same sequences, and returns what
it found: for a broken invariant, the shrunk sequence as a ready-to-paste pytest function.

``python -m inference_operator.sim.explore`` explores each invariant in turn (one targeted run
per invariant, so each gets its own minimal sequence; ``--cluster``: on a simulated cluster of
GPU nodes, :mod:`.capacitymachine`), prints a report, and exits non-zero
when an invariant that is supposed to hold broke. Invariants still waiting for a fix
(``PENDING_INVARIANTS``) are checked and reported just the same, in their own section.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.reporting import with_reporter
from hypothesis.stateful import run_state_machine_as_test

from inference_operator.sim.explore.capacitymachine import ClusterExplorer
from inference_operator.sim.explore.invariants import INVARIANTS, PENDING_INVARIANTS
from inference_operator.sim.explore.machine import Explorer, InvariantViolation

__all__ = ["Finding", "Report", "explore", "explorer_settings", "main", "quiet_operator_logs"]

CI_EXAMPLES = 150
CI_STEPS = 30
EXPLORE_EXAMPLES = 150
EXPLORE_STEPS = 50


def explorer_settings(*, examples: int, steps: int, shrink: bool = True) -> settings:
    """Deterministic settings: with a seed, a run replays exactly; nothing is remembered between runs."""
    phases = [Phase.explicit, Phase.generate, *([Phase.shrink] if shrink else [])]
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=False,
        phases=phases,
        report_multiple_bugs=False,
        verbosity=Verbosity.normal,
        suppress_health_check=list(HealthCheck),
    )


@contextlib.contextmanager
def quiet_operator_logs() -> Iterator[None]:
    """Thousands of injected failures log thousands of warnings; keep them out of the way."""
    logger = logging.getLogger("inference_operator")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


@dataclass
class Finding:
    """A broken invariant: the minimal sequence that breaks it, and what broke."""

    invariant: str
    seed: int
    steps: list[str]
    error: str

    def as_test(self) -> str:
        """The sequence as a pytest function, ready to paste into tests/unit/sim/explore/test_explorer.py."""
        body = list(self.steps)
        if body and body[0].startswith("state = ") and body[0].endswith("()"):
            body[0] = f"{body[0][:-2]}(invariants={{{self.invariant!r}}})"
        lines = [f"def test_{self.invariant}_regression_seed_{self.seed}() -> None:"]
        lines += [_indent(step, 4) for step in body]
        return "\n".join(lines)


@dataclass
class Report:
    invariant: str
    seed: int
    examples: int
    steps: int
    seconds: float
    finding: Finding | None = None
    observed: dict[str, int] = field(default_factory=dict)


def explore(
    invariants: frozenset[str] | None = None,
    *,
    seed: int = 0,
    examples: int = CI_EXAMPLES,
    steps: int = CI_STEPS,
    shrink: bool = True,
    machine: type[Explorer] = Explorer,
) -> tuple[Finding | None, dict[str, int]]:
    """Explore ``examples`` sequences of up to ``steps`` actions, enforcing ``invariants``
    (default: all). Returns the first broken invariant's finding (shrunk) or None, and how often
    each invariant broke, enforced or not."""
    enforced = frozenset(INVARIANTS) if invariants is None else invariants
    observed: dict[str, int] = {}

    class Run(machine):  # type: ignore[valid-type,misc]  # a fresh class: its own observed counts
        pass

    Run.observed = observed
    Run.__name__ = Run.__qualname__ = machine.__name__  # what hypothesis prints: `state = Explorer()`

    def factory() -> Explorer:
        return Run(invariants=enforced)

    seeded: Any = hypothesis_seed(seed)(factory)  # hypothesis accepts any factory of machines
    lines: list[str] = []

    def collect(value: object) -> None:
        lines.append(str(value))

    with quiet_operator_logs(), with_reporter(collect):
        try:
            run_state_machine_as_test(seeded, settings=explorer_settings(examples=examples, steps=steps, shrink=shrink))
        except InvariantViolation as err:
            name = next(iter(err.broken))
            return Finding(name, seed, _steps([*getattr(err, "__notes__", []), *lines]), str(err)), observed
    return None, observed


def _steps(notes: Sequence[str]) -> list[str]:
    """The printed steps (``state = …``, ``state.rule(…)``, each possibly spanning lines).

    Hypothesis attaches them to the exception as notes (older versions reported them)."""
    steps: list[str] = []
    for note in notes:
        if note.startswith("state = ") and steps:
            break  # the same steps, reported a second way
        if note.startswith("state"):
            steps.append(note)
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m inference_operator.sim.explore", description="Explore the operator's unhappy paths."
    )
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0): the same seed replays")
    parser.add_argument("--examples", type=int, default=EXPLORE_EXAMPLES, help="sequences per invariant")
    parser.add_argument("--steps", type=int, default=EXPLORE_STEPS, help="actions per sequence, at most")
    parser.add_argument(
        "--invariant", action="append", choices=sorted(INVARIANTS), help="explore only these (repeatable)"
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="on a simulated cluster of GPU nodes: nodes added, removed, tainted, cordoned, drained, filled by "
        "another workload; full pools; scales past capacity; spec.rollout set and templates changed mid-rollout",
    )
    args = parser.parse_args(argv)
    machine = ClusterExplorer if args.cluster else Explorer
    names = args.invariant or list(INVARIANTS)
    total = time.monotonic()
    unexpected = 0
    reports = []
    for name in names:
        started = time.monotonic()
        finding, observed = explore(
            frozenset({name}), seed=args.seed, examples=args.examples, steps=args.steps, machine=machine
        )
        report = Report(name, args.seed, args.examples, args.steps, time.monotonic() - started, finding, observed)
        reports.append(report)
        pending = PENDING_INVARIANTS.get(name)
        if finding is None:
            note = f" -- pending ({pending}) but held: consider enforcing it" if pending else ""
            print(f"[holds]   {name}: {args.examples} sequences in {report.seconds:.1f}s{note}", flush=True)
            continue
        if pending is None:
            unexpected += 1
        label = "[pending]" if pending else "[BROKEN] "
        waits = f" -- waits for {pending}" if pending else ""
        print(f"{label} {name}: broken (seed {args.seed}, {report.seconds:.1f}s){waits}")
        print(_indent(finding.error, 4))
        print("    minimal sequence, as a test:")
        print(_indent(finding.as_test(), 8), flush=True)
    print(
        f"explored {len(names)} invariant(s), {args.examples} sequences of up to {args.steps} actions each, "
        f"seed {args.seed}, in {time.monotonic() - total:.0f}s; {unexpected} unexpected failure(s)"
    )
    return 1 if unexpected else 0


def _indent(text: str, n: int) -> str:
    return re.sub(r"(?m)^", " " * n, text)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
