"""Which fields the Go types of the built-in kinds the operator writes declare: the rest is dropped.

kube-apiserver decodes a ConfigMap, Secret, Service or Deployment into its Go struct, so a field
the struct does not declare (a typo such as ``spec.replica``, a field of a newer version) is
silently dropped (with a warning), never stored. A fake that kept it would let an operator
believe a misspelt field took effect. The tables list the fields of ``k8s.io/api`` v0.36
structs down to the container level; what sits deeper (probes, volumes, security contexts,
strategies) is kept as sent (a deliberate limit: the operator's own children are checked
against the real server by the conformance suite).
"""

from __future__ import annotations

from typing import Any, Final

from inference_operator.core.objects import Obj

__all__ = ["prune_unknown"]

Fields = dict[str, Any]
"""field name → None (kept as sent), a nested :data:`Fields` table, or a one-item list of one (a
list of such structs)."""


def _names(text: str) -> Fields:
    """A table of leaf fields from their space-separated names."""
    return dict.fromkeys(text.split())


_OBJECT_META: Final[Fields] = _names(
    "name generateName namespace selfLink uid resourceVersion generation creationTimestamp deletionTimestamp "
    "deletionGracePeriodSeconds labels annotations ownerReferences finalizers managedFields"
)
OBJECT_META_FIELDS: Final = frozenset(_OBJECT_META)
"""What ObjectMeta knows, for every kind: custom resources' metadata is pruned to it too."""
_CONTAINER: Final[Fields] = _names(
    "name image command args workingDir ports envFrom env resources resizePolicy restartPolicy "
    "restartPolicyRules volumeMounts volumeDevices livenessProbe readinessProbe startupProbe lifecycle "
    "terminationMessagePath terminationMessagePolicy imagePullPolicy securityContext stdin stdinOnce tty"
)
_POD_SPEC: Final[Fields] = {
    **_names(
        "volumes ephemeralContainers restartPolicy terminationGracePeriodSeconds activeDeadlineSeconds dnsPolicy "
        "nodeSelector serviceAccountName serviceAccount automountServiceAccountToken nodeName hostNetwork hostPID "
        "hostIPC shareProcessNamespace securityContext imagePullSecrets hostname subdomain affinity schedulerName "
        "tolerations hostAliases priorityClassName priority dnsConfig readinessGates runtimeClassName "
        "enableServiceLinks preemptionPolicy overhead topologySpreadConstraints setHostnameAsFQDN os hostUsers "
        "schedulingGates resourceClaims resources hostnameOverride workloadRef"
    ),
    "containers": [_CONTAINER],
    "initContainers": [_CONTAINER],
}
_DEPLOYMENT_SPEC: Final[Fields] = {
    **_names("replicas selector strategy minReadySeconds revisionHistoryLimit paused progressDeadlineSeconds"),
    "template": {"metadata": _OBJECT_META, "spec": _POD_SPEC},
}
_SERVICE_SPEC: Final[Fields] = {
    **_names(
        "selector clusterIP clusterIPs type externalIPs sessionAffinity loadBalancerIP loadBalancerSourceRanges "
        "externalName externalTrafficPolicy healthCheckNodePort publishNotReadyAddresses sessionAffinityConfig "
        "ipFamilies ipFamilyPolicy allocateLoadBalancerNodePorts loadBalancerClass internalTrafficPolicy "
        "trafficDistribution"
    ),
    "ports": [_names("name protocol appProtocol port targetPort nodePort")],
}
_ENVELOPE: Final[Fields] = {"apiVersion": None, "kind": None, "metadata": _OBJECT_META}
_KINDS: Final[dict[str, Fields]] = {
    "ConfigMap": {**_ENVELOPE, **dict.fromkeys(["data", "binaryData", "immutable"])},
    "Secret": {**_ENVELOPE, **dict.fromkeys(["data", "stringData", "type", "immutable"])},
    "Service": {**_ENVELOPE, "spec": _SERVICE_SPEC, "status": None},
    "Deployment": {**_ENVELOPE, "spec": _DEPLOYMENT_SPEC, "status": None},
}


def prune_unknown(kind: str, obj: Obj) -> Obj:
    """``obj`` without the fields ``kind``'s Go type does not declare (in place; other kinds untouched)."""
    fields = _KINDS.get(kind)
    if fields is not None:
        _prune(obj, fields)
    return obj


def _prune(node: Obj, fields: Fields) -> None:
    for key in [k for k in node if k not in fields]:
        del node[key]
    for key, value in node.items():
        shape = fields[key]
        if isinstance(shape, dict) and isinstance(value, dict):
            _prune(value, shape)
        elif isinstance(shape, list) and isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    _prune(item, shape[0])
