"""Every permission the shipped ClusterRole grants is one the operator used in this e2e session.

Covers (security review: RBAC trimmed to what the code uses): it runs last (see
conftest.py), after the whole suite drove the operator (as its ServiceAccount, under
deploy/rbac) through create, update, scale, drift, deletion, stalls and restarts; then it reads
the API server's audit log and checks that each (verb, resource) granted by
deploy/rbac/cluster_role.yaml and deploy/rbac/leader_election.yaml was requested (and allowed)
by that ServiceAccount at least once, and that nothing it asked for was refused by RBAC without
ever being allowed. A grant nothing used is a grant to remove; ``EXERCISED_BY_ADMISSION`` lists
the grants that are checked inside other requests, so no request of theirs shows.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .conftest import OPERATOR_NAMESPACE, OPERATOR_SA, RBAC_DIR, Cluster

EXERCISED_BY_ADMISSION = {
    ("serving.inference-operator.dev", "inferenceservices/finalizers", "update"):
    "checked by the OwnerReferencesPermissionEnforcement admission plugin when a child is created "
    "with blockOwnerDeletion; it is an authorization check inside another request, never a request",
    ("apps", "deployments", "create"):
    "a server-side apply that creates the Deployment is a PATCH request, authorized for create too",
    ("", "services", "create"):
    "a server-side apply that creates the Service is a PATCH request, authorized for create too",
}  # fmt: skip


def granted(*files: Path) -> set[tuple[str, str, str]]:
    out = set()
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc["kind"] not in ("ClusterRole", "Role"):
                continue
            for rule in doc["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        out.update((group, resource, verb) for verb in rule["verbs"])
    return out


def test_every_granted_permission_was_used_and_none_was_refused(cluster: Cluster) -> None:
    assert cluster.audit is not None, "this check reads the local control plane's audit log"
    user = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SA}"
    allowed: set[tuple[str, str, str]] = set()
    denied: dict[tuple[str, str, str], str] = {}
    for event in cluster.audit.events_since(0):
        if (event.get("user") or {}).get("username") != user:
            continue
        if event.get("stage") not in ("ResponseStarted", "ResponseComplete"):  # a watch starts long before it ends
            continue
        ref = event.get("objectRef") or {}
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        key = (ref.get("apiGroup", ""), resource, event.get("verb", ""))
        status = event.get("responseStatus") or {}
        message = str(status.get("message", ""))
        # Authorization refusals say "cannot <verb> resource"; a quota or a terminating namespace
        # is admission's 403, which the suite provokes on purpose.
        if status.get("code") == 403 and "cannot " in message:
            denied.setdefault(key, f"{message[:160]} at {event.get('requestReceivedTimestamp', '')}")
        else:
            allowed.add(key)
    grants = granted(RBAC_DIR / "cluster_role.yaml", RBAC_DIR / "leader_election.yaml")
    unused = sorted(grants - allowed - set(EXERCISED_BY_ADMISSION))
    assert not unused, f"granted but never used by the operator in the whole e2e session: {unused}"
    # A restarted kube-apiserver refuses everything until its authorizer's caches are synced (the
    # resilience test restarts it): only what was never allowed is missing from the RBAC.
    never_allowed = {key: why for key, why in denied.items() if key not in allowed}
    assert not never_allowed, "refused by RBAC and never allowed:\n" + "\n".join(
        f"{key}: {why}" for key, why in sorted(never_allowed.items())
    )
