#!/usr/bin/env bash
# checkov (infrastructure-as-code static analysis) over what ships: the Dockerfile, deploy/ and the
# rendered Helm chart (`make checkov`, part of `make lint`).
#
# Why a script: checkov has network features (an update check on PyPI, mappings and guidelines from
# its vendor's platform, upload of results with an API key, secret validation, external checks from
# git). None may run here: they are all switched off below, and checkov runs in a network namespace
# of its own (`unshare --net`: only a loopback that is down), so a feature forgotten here, or added
# by a later release, reaches nothing. Without such a namespace the script refuses to run checkov.
#
# Usage: hack/checkov.sh HELM   (HELM: the helm binary that renders the chart)
# Env:   CHECKOV (default .venv/checkov/bin/checkov, made by `make checkov-venv`)
# What is scanned is copied into one temporary folder, so the report names Dockerfile, deploy/…
# and chart/…; the checks not followed, and why, are in .checkov.yaml (the only place).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HELM=${1:?usage: hack/checkov.sh HELM (the helm binary)}
CHECKOV=${CHECKOV:-$ROOT/.venv/checkov/bin/checkov}
CHART=$ROOT/charts/inference-operator

log() { printf '[checkov] %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

[[ -x $CHECKOV ]] || die "no checkov at $CHECKOV; make checkov-venv installs it into its own virtual environment"
[[ -x $HELM ]] || die "no helm at $HELM; bash hack/build-controlplane.sh builds it"
CHECKOV=$(realpath "$CHECKOV") # checkov runs from the folder of what it scans
HELM=$(realpath "$HELM")

# A network namespace: as root directly, otherwise inside a user namespace of our own.
if unshare --net true 2>/dev/null; then
  NO_NETWORK=(unshare --net --)
elif unshare --user --map-root-user --net true 2>/dev/null; then
  NO_NETWORK=(unshare --user --map-root-user --net --)
else
  die "cannot create a network namespace (unshare --net, as root or in a user namespace): checkov runs only where it can reach nothing"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$ROOT/Dockerfile" "$work/Dockerfile"
cp -R "$ROOT/deploy" "$work/deploy"
mkdir "$work/chart"

# The chart as installed by default (cluster mode), and in namespaced mode with every optional
# object on, so that every template is checked. No cluster is asked (KUBECONFIG points nowhere).
helm_home=$work/.helm
render() {
  local name=$1
  shift
  HELM_CACHE_HOME=$helm_home/cache HELM_CONFIG_HOME=$helm_home/config HELM_DATA_HOME=$helm_home/data \
    KUBECONFIG=$helm_home/no-kubeconfig \
    "$HELM" template inference-operator "$CHART" --namespace inference-operator --kube-version 1.36.0 "$@" \
    >"$work/chart/$name.yaml"
}
render default
render namespaced-all-options \
  --set 'watchNamespaces={models}' \
  --set networkPolicy.enabled=true \
  --set 'imagePolicy.enabled=true,imagePolicy.allowedPrefixes={registry.example.com/inference/}' \
  --set metrics.serviceMonitor.enabled=true \
  --set metrics.dashboard.enabled=true \
  --set inferenceNetworkPolicy.enabled=true \
  --set-json 'inferenceNetworkPolicy.from=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"gateway"}}}]'
rm -rf "$helm_home"

log "checkov $("${NO_NETWORK[@]}" env CKV_SKIP_PACKAGE_UPDATE_CHECK=True "$CHECKOV" --version) on Dockerfile, deploy/ and the rendered chart (no network: ${NO_NETWORK[*]})"
# Every network feature off by its own switch as well:
#   CKV_SKIP_PACKAGE_UPDATE_CHECK  no "is there a newer checkov" request to PyPI
#   BC_SKIP_MAPPING                no download of the check-id mapping from the vendor's platform
#   --skip-download                no guidelines, custom policies or suppressions from the platform
#   CKV_VALIDATE_SECRETS           no secret sent to its issuer to see whether it is live
#   CKV_GITHUB/GITLAB_CONFIG_FETCH_DATA  no calls to a VCS API
#   no --bc-api-key (and BC_API_KEY and PRISMA_API_URL unset): nothing is uploaded
cd "$work"
"${NO_NETWORK[@]}" env -u BC_API_KEY -u PRISMA_API_URL -u BC_API_URL \
  CKV_SKIP_PACKAGE_UPDATE_CHECK=True \
  BC_SKIP_MAPPING=TRUE \
  CKV_VALIDATE_SECRETS=False \
  CKV_GITHUB_CONFIG_FETCH_DATA=False \
  CKV_GITLAB_CONFIG_FETCH_DATA=False \
  "$CHECKOV" --config-file "$ROOT/.checkov.yaml" --skip-download --directory . --output cli --compact --quiet
