"""The simulated cluster under the operator: Nodes, a scheduler, ReplicaSets, Pods, a kubelet.

GPUs run out on real clusters, and the failures users meet most (a surge pod that needs a GPU
the old pods still hold) come from that. These modules model the parts of kube-scheduler,
kube-controller-manager and the kubelet that decide it, with their real arithmetic and words:
pure functions (resources, fit, rollout arithmetic, builders) plus thin controllers that read
and write through the FakeApiServer like the real components do.
"""
