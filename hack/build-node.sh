# shellcheck shell=bash
# Build (once) and cache what the local cluster's ONE REAL NODE runs. Sourced by
# hack/build-controlplane.sh (it uses that script's log/run_logged/publish helpers); call
# build_node from there.
#
# Why: next to kwok's fake GPU nodes, the local cluster can run one real kubelet with a real
# container runtime, so Pods really run (CPU-only ones: see hack/README.md). Like the control
# plane, everything is built from pinned Go modules and cached outside the repo:
#
#   ${INFERENCE_OPERATOR_CACHE:-$HOME/.cache/inference-operator}/
#     kubernetes-node-v1.36.5/   kubelet kube-proxy (the control plane's wrapper module)
#     containerd-v2.2.9/         containerd containerd-shim-runc-v2 ctr
#     cni-plugins-v1.9.1/        bridge host-local loopback portmap
#     pause-image-<sha>/         pause (static) and pause.oci.tar, from images/pause/
#
# runc, iptables and conntrack come from Debian (apt-get; the only packages the node needs
# that are not built here). Versions of the node's own parts are pinned here and only here;
# kubelet and kube-proxy follow hack/controlplane/kube/go.mod.

CONTAINERD_VERSION=v2.2.9
CNI_PLUGINS_VERSION=v1.9.1
# The sandbox image every Pod of the real node starts with; built from images/pause/, never pulled.
PAUSE_IMAGE=localhost/inference-operator/pause:3.10
# Debian packages the node needs at run time: command -> package.
NODE_DEBIAN_PACKAGES=(runc:runc iptables:iptables iptables-save:iptables conntrack:conntrack ip:iproute2 nsenter:util-linux sysctl:procps)

# Install the Debian packages that provide missing commands (apt-get update once if needed).
install_node_packages() {
  local entry command package missing=()
  for entry in "${NODE_DEBIAN_PACKAGES[@]}"; do
    command=${entry%%:*}
    package=${entry#*:}
    PATH=$PATH:/usr/sbin:/sbin command -v "$command" >/dev/null 2>&1 || missing+=("$package")
  done
  ((${#missing[@]} == 0)) && return
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if ((EUID != 0)) || ! command -v apt-get >/dev/null 2>&1; then
    # Not fatal: the control plane alone does not need them, and a real node refuses to start without.
    log "WARNING: the real node needs the Debian packages ${missing[*]}; install them as root:"
    log "WARNING:   apt-get install -y ${missing[*]}"
    return
  fi
  log "installing Debian packages for the real node: ${missing[*]}..."
  local logfile=$LOG_DIR/node-debian-packages.log
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >"$logfile" 2>&1; then
    log "  apt-get install failed; running apt-get update once and retrying..."
    DEBIAN_FRONTEND=noninteractive apt-get update >>"$logfile" 2>&1 || {
      tail -n 20 "$logfile" >&2
      die "apt-get update failed (log: $logfile)"
    }
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >>"$logfile" 2>&1 || {
      tail -n 20 "$logfile" >&2
      die "apt-get install ${missing[*]} failed (log: $logfile)"
    }
  fi
  log "  installed ${missing[*]}"
}

# kubelet and kube-proxy from the control plane's wrapper module (same version, same ldflags).
build_kubernetes_node() {
  local module_dir=$HACK_DIR/controlplane/kube version final tmp
  version=$(module_version "$module_dir" k8s.io/kubernetes)
  final=$CACHE_DIR/kubernetes-node-$version
  KUBERNETES_NODE_DIR=$final
  if is_cached "$final"; then
    log "kubelet, kube-proxy $version: cached in $final"
    return
  fi
  local ldflags
  ldflags=$(kube_ldflags "$version")
  local commands=(k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy) total
  log "building kubelet, kube-proxy $version (cold build takes 3-15 min on 2 cores)..."
  (cd "$module_dir" && go mod download) || die "go mod download failed in $module_dir (is the Go module proxy reachable?)"
  total=$(cd "$module_dir" && go list -deps "${commands[@]}" | wc -l) || die "go list failed in $module_dir"
  new_tmp_dir "kubernetes-node-$version"
  tmp=$NEW_TMP_DIR
  run_logged "kubelet, kube-proxy $version" "$LOG_DIR/kubernetes-node-$version.log" "$total" \
    env -C "$module_dir" CGO_ENABLED=0 go build -v -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp/" "${commands[@]}"
  check_version "Kubernetes $version" "$tmp/kubelet" --version
  check_version "Kubernetes $version" "$tmp/kube-proxy" --version
  publish "$tmp" "$final"
  log "kubelet, kube-proxy $version: built into $final"
}

# go install several commands of one module at one version into the cache directory NAME-VERSION;
# sets GO_INSTALL_DIR. Usage: go_install_all NAME VERSION LDFLAGS TAGS PACKAGE...
go_install_all() {
  local name=$1 version=$2 ldflags=$3 tags=$4 final tmp package
  shift 4
  final=$CACHE_DIR/$name-$version
  GO_INSTALL_DIR=$final
  if is_cached "$final"; then
    log "$name $version: cached in $final"
    return
  fi
  log "building $name $version (cold build takes 1-5 min)..."
  new_tmp_dir "$name-$version"
  tmp=$NEW_TMP_DIR
  run_logged "$name $version" "$LOG_DIR/$name-$version.log" "" \
    env -C "$CACHE_DIR" CGO_ENABLED=0 GOBIN="$tmp" go install -v -trimpath -tags "$tags" -ldflags "$ldflags" \
    "${@/%/@$version}"
  for package in "$@"; do
    [[ -x $tmp/${package##*/} ]] || die "go install $package@$version produced no $tmp/${package##*/}"
  done
  publish "$tmp" "$final"
  log "$name $version: built into $final"
}

# The pause image: a static binary from images/pause/ and its OCI archive, keyed by the source.
build_pause_image() {
  local images_dir=$HACK_DIR/../images key final tmp
  key=$(cat "$images_dir/go.mod" "$images_dir"/pause/*.go "$HACK_DIR/oci_archive.py" | sha256sum | cut -c1-12)
  final=$CACHE_DIR/pause-image-$key
  PAUSE_DIR=$final
  if is_cached "$final"; then
    log "pause image ($PAUSE_IMAGE): cached in $final"
    return
  fi
  log "building the pause image $PAUSE_IMAGE from images/pause/..."
  new_tmp_dir "pause-image-$key"
  tmp=$NEW_TMP_DIR
  (cd "$images_dir" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp/pause" ./pause) \
    >"$LOG_DIR/pause-image.log" 2>&1 || {
    tail -n 20 "$LOG_DIR/pause-image.log" >&2
    die "go build ./pause failed in $images_dir (log: $LOG_DIR/pause-image.log)"
  }
  python3 "$HACK_DIR/oci_archive.py" --binary "$tmp/pause" --name "$PAUSE_IMAGE" --entrypoint /pause \
    --user 65535:65535 --out "$tmp/pause.oci.tar" 2>>"$LOG_DIR/pause-image.log" ||
    die "writing the pause image archive failed (log: $LOG_DIR/pause-image.log)"
  printf '%s\n' "$PAUSE_IMAGE" >"$tmp/image-name"
  publish "$tmp" "$final"
  log "pause image: built into $final"
}

# Everything the real node needs; sets the *_DIR variables link_node_bin_dir uses.
build_node() {
  install_node_packages
  build_kubernetes_node
  go_install_all containerd "$CONTAINERD_VERSION" \
    "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
    "no_btrfs no_devmapper no_zfs" \
    github.com/containerd/containerd/v2/cmd/containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr
  CONTAINERD_DIR=$GO_INSTALL_DIR
  go_install_all cni-plugins "$CNI_PLUGINS_VERSION" \
    "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS_VERSION" "" \
    github.com/containernetworking/plugins/plugins/main/bridge \
    github.com/containernetworking/plugins/plugins/ipam/host-local \
    github.com/containernetworking/plugins/plugins/main/loopback \
    github.com/containernetworking/plugins/plugins/meta/portmap
  CNI_PLUGINS_DIR=$GO_INSTALL_DIR
  build_pause_image
}

# The suffix of the bin dir name for the node's versions.
node_bin_dir_key() { printf '_containerd-%s_cni-%s' "$CONTAINERD_VERSION" "$CNI_PLUGINS_VERSION"; }

# Link the node's binaries into BIN_DIR; CNI plugins go to BIN_DIR/cni/ (a CNI bin dir must
# hold plugins only), the pause image archive to BIN_DIR/images/.
link_node_bin_dir() {
  local bin_dir=$1 source
  mkdir -p "$bin_dir/cni" "$bin_dir/images"
  for source in "$KUBERNETES_NODE_DIR"/kubelet "$KUBERNETES_NODE_DIR"/kube-proxy "$CONTAINERD_DIR"/containerd \
    "$CONTAINERD_DIR"/containerd-shim-runc-v2 "$CONTAINERD_DIR"/ctr; do
    [[ -x $source ]] || die "$source is missing or not executable; delete ${source%/*} and re-run $0"
    ln -sfn "$source" "$bin_dir/${source##*/}"
  done
  for source in bridge host-local loopback portmap; do
    [[ -x $CNI_PLUGINS_DIR/$source ]] || die "$CNI_PLUGINS_DIR/$source is missing; delete $CNI_PLUGINS_DIR and re-run $0"
    ln -sfn "$CNI_PLUGINS_DIR/$source" "$bin_dir/cni/$source"
  done
  ln -sfn "$PAUSE_DIR/pause.oci.tar" "$bin_dir/images/pause.oci.tar"
}
