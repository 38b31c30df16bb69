"""Fixed names that users, tests and manifests depend on; defined once, used everywhere.

Changing a value here is an API change: finalizers and labels live on objects in real clusters.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "serving.inference-operator.dev"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "InferenceService"
PLURAL: Final = "inferenceservices"
SINGULAR: Final = "inferenceservice"
SHORT_NAME: Final = "infsvc"
CATEGORY: Final = "inference"

DEPLOYMENT: Final = "Deployment"
SERVICE: Final = "Service"
DEPLOYMENT_API_VERSION: Final = "apps/v1"
SERVICE_API_VERSION: Final = "v1"

FINALIZER: Final = f"{GROUP}/loadbalancer-cleanup"
OWNER_LABEL: Final = f"{GROUP}/inferenceservice"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "inference-operator"
NAME_LABEL: Final = "app.kubernetes.io/name"
GPU_RESOURCE: Final = "nvidia.com/gpu"
FIELD_MANAGER: Final = "inference-operator"

# Bounds on strings that come from elsewhere (the API server, the load balancer registry) and go
# into status: enforced by the operator before it writes, and by the CRD's maxLength after.
MAX_CONDITION_MESSAGE: Final = 32768
"""A condition's message, in characters: apimachinery's own limit for metav1.Condition."""
MAX_LB_ID: Final = 256
"""A load balancer registration id (an AWS target group ARN is about 100)."""
MAX_LB_ADDRESS: Final = 2048
"""The address clients use, an http(s) URL (what browsers and proxies reliably accept)."""
MAX_LB_TARGET: Final = 512
"""The in-cluster address the balancer forwards to: a Service DNS name and port (under 330)."""


class ConditionType:
    """The condition types an InferenceService reports; ``READY`` is the aggregate."""

    READY: Final = "Ready"
    DEPLOYMENT_READY: Final = "DeploymentReady"
    SERVICE_READY: Final = "ServiceReady"
    LOAD_BALANCER_READY: Final = "LoadBalancerReady"
    PROGRESSING: Final = "Progressing"
    DEGRADED: Final = "Degraded"

    ALL: Final = (READY, DEPLOYMENT_READY, SERVICE_READY, LOAD_BALANCER_READY, PROGRESSING, DEGRADED)


class Reason:
    """CamelCase condition reasons; also used as Event reasons."""

    # Ready / aggregate
    READY: Final = "Ready"
    INVALID_SPEC: Final = "InvalidSpec"
    CHILD_CONFLICT: Final = "ChildConflict"  # a same-named child controlled by someone else
    CHILD_REJECTED: Final = "ChildRejected"  # the API server refused the child (422/400, webhook denial)
    CHILD_FORBIDDEN: Final = "ChildForbidden"  # 403: RBAC, quota, a policy
    API_UNAVAILABLE: Final = "ApiUnavailable"  # 5xx, timeouts: expected to pass
    PODS_REFUSED: Final = "PodsRefused"  # the API server refuses the ReplicaSet's pods (Pod Security, quota…)
    # Stalls that need a person: the phase is Failed until the cause is fixed.
    ROLLOUT_BLOCKED: Final = "RolloutBlocked"  # a rollout nothing will move on: GPUs held, a replica too big
    NEEDS_ACTION: Final = (INVALID_SPEC, CHILD_CONFLICT, CHILD_REJECTED, CHILD_FORBIDDEN, PODS_REFUSED, ROLLOUT_BLOCKED)
    WAITING_FOR_CHILDREN: Final = "WaitingForChildren"
    TERMINATING: Final = "Terminating"
    # Deployment
    DEPLOYMENT_AVAILABLE: Final = "DeploymentAvailable"
    DEPLOYMENT_NOT_OBSERVED: Final = "DeploymentNotObserved"
    ROLLOUT_IN_PROGRESS: Final = "RolloutInProgress"
    ROLLOUT_PAUSED: Final = "RolloutPaused"  # the Deployment is paused (kubectl rollout pause) mid-rollout
    PROGRESS_DEADLINE_EXCEEDED: Final = "ProgressDeadlineExceeded"
    REPLICAS_UNAVAILABLE: Final = "ReplicasUnavailable"
    SCALED_TO_ZERO: Final = "ScaledToZero"
    PODS_UNSCHEDULABLE: Final = "PodsUnschedulable"
    IMAGE_PULL_FAILED: Final = "ImagePullFailed"
    CRASH_LOOPING: Final = "CrashLoopBackOff"
    CONTAINER_CONFIG_ERROR: Final = "CreateContainerConfigError"  # e.g. runAsNonRoot, image user root
    SERVER_STARTING: Final = "ServerStarting"  # running, startup probe not passed yet: loading the model
    # Service
    SERVICE_CREATED: Final = "ServiceCreated"
    SERVICE_MISSING: Final = "ServiceMissing"
    # Load balancer
    LOAD_BALANCER_REGISTERED: Final = "LoadBalancerRegistered"
    LOAD_BALANCER_DISABLED: Final = "LoadBalancerDisabled"
    LOAD_BALANCER_PENDING: Final = "LoadBalancerPending"
    LOAD_BALANCER_FAILED: Final = "LoadBalancerFailed"
    # Progressing / Degraded
    ROLLOUT_COMPLETE: Final = "RolloutComplete"
    AS_EXPECTED: Final = "AsExpected"
    FEWER_READY_REPLICAS: Final = "FewerReadyReplicas"


class EventReason:
    """Reasons of the Kubernetes Events the operator posts on meaningful transitions."""

    CREATED: Final = "Created"
    PATCHED: Final = "Patched"
    RECREATED: Final = "Recreated"
    READY: Final = "Ready"
    DEGRADED: Final = "Degraded"
    FAILED: Final = "Failed"
    INVALID_SPEC: Final = "InvalidSpec"
    LB_REGISTERED: Final = "LoadBalancerRegistered"
    LB_RELEASED: Final = "LoadBalancerReleased"
    LB_FAILED: Final = "LoadBalancerFailed"
    ROLLOUT_SWITCHED: Final = "RolloutSwitched"


class Phase:
    """Human summary derived from the conditions; never drives logic."""

    PENDING: Final = "Pending"
    PROGRESSING: Final = "Progressing"
    READY: Final = "Ready"
    DEGRADED: Final = "Degraded"
    FAILED: Final = "Failed"
    TERMINATING: Final = "Terminating"
