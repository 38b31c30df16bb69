"""inference-operator: run GPU inference servers on Kubernetes from one InferenceService resource."""

__version__ = "0.1.0"
