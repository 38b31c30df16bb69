"""The InferenceService logic, knowing no queue, Kopf or simulator: the reconciler, the pure builders
of its children, status, stalls, the balancer step, pod diagnosis, and what it watches."""
