"""What-if runs: a change simulated on a snapshot of a real cluster before it is applied there.

``inference-operator demo -f CHANGE.yaml --cluster SNAPSHOT.yaml`` reads the snapshot
(:mod:`.snapshot`), loads it into the simulator converged (:mod:`.load`), applies the change and
prints the rollout it would do (:mod:`.run`, measured by :mod:`.observe`).
"""

from inference_operator.whatif.run import DEFAULT_HORIZON, run_whatif
from inference_operator.whatif.snapshot import MAX_SNAPSHOT_BYTES, Snapshot, read_snapshot

__all__ = ["DEFAULT_HORIZON", "MAX_SNAPSHOT_BYTES", "Snapshot", "read_snapshot", "run_whatif"]
