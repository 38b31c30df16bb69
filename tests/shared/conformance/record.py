"""Record what the real API server answers to every conformance check, for offline replay.

    python -m tests.shared.conformance.record --kubeconfig /path/to/kubeconfig

writes tests/shared/data/conformance_real.json: per check, the namespace it ran in and its
normalised trace. tests/unit/sim/apiserver/test_conformance_replay.py runs every check on the
FakeApiServer in the same namespace and compares, so a change that breaks the fake's agreement
shows up in the offline unit tests within seconds, not only in the e2e suite (which stays the
referee: it runs both backends live). Re-record whenever a check is added or changed; a check
missing from the recording fails the replay test with that instruction.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import checks  # noqa: F401 - registers the checks
from .registry import CHECKS
from .session import new_namespace, run_check
from .transports import RealTransport

RECORDING = Path(__file__).resolve().parents[1] / "data" / "conformance_real.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("-o", "--output", type=Path, default=RECORDING)
    parser.add_argument("-k", "--only", action="append", help="record only checks containing this (repeatable)")
    args = parser.parse_args(argv)
    real = RealTransport(args.kubeconfig)
    recorded = json.loads(args.output.read_text()) if args.only and args.output.exists() else {}
    for name in sorted(CHECKS):
        if args.only and not any(part in name for part in args.only):
            continue
        namespace = new_namespace(name)
        recorded[name] = {"namespace": namespace, "trace": run_check(name, real, namespace)}
        print(f"recorded {name} ({len(recorded[name]['trace'])} steps)", flush=True)
    recorded = {name: recorded[name] for name in sorted(recorded) if name in CHECKS}
    args.output.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(recorded)} checks to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
