#!/usr/bin/env bash
# Build (once) and cache the project's container images as OCI archives, without Docker and
# without pulling anything from an image registry.
#
# Why: these machines have no Docker engine and no registry access, only package clients
# (apt, pip, go). The images a real node runs are therefore built here, from Debian packages
# and PyPI, with buildah, and handed over as OCI archives (`ctr -n k8s.io images import`):
#
#   localhost/inference-operator/python:3.11-slim-bookworm
#       the base: an equivalent of python:3.11-slim-bookworm bootstrapped with mmdebstrap
#       from Debian bookworm (python3 3.11, pip, setuptools, wheel, ca-certificates, tzdata;
#       `python` and `pip` on PATH; no EXTERNALLY-MANAGED marker; no docs, man pages or apt lists)
#   localhost/inference-operator/operator:<version from pyproject.toml>
#       the project's Dockerfile, unchanged, built with PYTHON_IMAGE=<the base>@sha256:<digest>
#   localhost/inference-operator/<name>:<tag>
#       for every images/<name>/Containerfile: `go build` of images/<name> (one Go module,
#       images/go.mod) on the host, copied into the Containerfile's context. The tag is the
#       Containerfile's `# tag: X` comment line, `dev` when it has none.
#
# Cache: ${INFERENCE_OPERATOR_CACHE:-$HOME/.cache/inference-operator}/images/
#   <image>-<key>/   the OCI archive (image.oci.tar), its digest, ref and build log; <key> is
#                    a hash of every input (recipe, Dockerfile, context files, base digest, Go
#                    sources), so a changed input rebuilds and an unchanged tree is a no-op.
#   sets/<key>/      what one run produced: <image>.oci.tar symlinks and images.txt
#                    (ref, digest, archive per line; PYTHON_IMAGE=… for the base).
#   logs/            the logs of the last build of each image.
# The 5 most recently used builds of each image are kept, older ones deleted. The images also
# stay in the local containers-storage (podman/buildah), tagged and resolvable by the
# archives' digests (reloaded from the archive if storage lost them).
#
# Output: progress on stderr; the sets/<key> directory alone on stdout (last line), so
#   IMAGES_DIR=$(hack/build-images.sh)
# works. A cold build took ~2 minutes on 2 cores (base 1-3.5 min, depending on the Debian
# mirror; operator 40-70 s); a cached run ~0.3 s. Needs root (mmdebstrap, buildah); the
# Debian packages it uses are installed with apt-get if missing.
#
# Options: --rebuild-base   bootstrap the base again (takes Debian's latest security updates;
#                           everything built on it is rebuilt too).
set -Eeuo pipefail
# Any failure the script does not explain itself still says where it happened.
# shellcheck disable=SC2317,SC2329 # invoked by the ERR trap
on_error() {
  printf '[build-images] ERROR: unexpected failure (exit %s) at %s line %s: %s\n' "$1" "${BASH_SOURCE[0]}" "$2" "$3" >&2
  printf '[build-images] fix the cause above (or report it with this output), then re-run the script\n' >&2
}
trap 'on_error $? $LINENO "$BASH_COMMAND"' ERR

BASE_REF=localhost/inference-operator/python:3.11-slim-bookworm
SUITE=bookworm
IMAGE_PREFIX=localhost/inference-operator
DEFAULT_TAG=dev
# crun 1.8 (bookworm) refuses hybrid cgroup hierarchies ("cgroups in hybrid mode not
# supported"); runc runs everywhere.
OCI_RUNTIME=runc
PACKAGES=(buildah podman runc mmdebstrap skopeo)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE_DIR=${INFERENCE_OPERATOR_CACHE:-$HOME/.cache/inference-operator}/images
LOG_DIR=$CACHE_DIR/logs
PROGRESS_EVERY_SECONDS=30
REBUILD_BASE=false

log() { printf '[build-images] %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

usage() {
  sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
  exit "${1:-0}"
}

parse_args() {
  while (($#)); do
    case $1 in
    --rebuild-base) REBUILD_BASE=true ;;
    -h | --help) usage 0 ;;
    *)
      log "ERROR: unknown argument '$1'"
      usage 2
      ;;
    esac
    shift
  done
}

# Install the Debian packages this script needs, if a command is missing.
require_tools() {
  ((EUID == 0)) || die "run as root: mmdebstrap and buildah build images as root here (sudo $0)"
  local missing=() package
  for package in "${PACKAGES[@]}"; do
    command -v "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]} (apt-get)..."
    local apt=(apt-get -o DPkg::Lock::Timeout=600 -q)
    local install=("${apt[@]}" install -y --no-install-recommends "${missing[@]}")
    export DEBIAN_FRONTEND=noninteractive
    if ! "${install[@]}" >"$LOG_DIR/apt.log" 2>&1; then
      log "  apt-get install failed; running apt-get update first..."
      if ! { "${apt[@]}" update && "${install[@]}"; } >>"$LOG_DIR/apt.log" 2>&1; then
        tail -n 20 "$LOG_DIR/apt.log" >&2
        die "apt-get install ${missing[*]} failed (log: $LOG_DIR/apt.log); is deb.debian.org reachable?"
      fi
    fi
  fi
}

# Flags every container run needs here: limits at or below the hard limits (raising one is
# not permitted, and podman's defaults are above them), and the OCI runtime.
container_flags() {
  local nofile nproc
  nofile=$(ulimit -Hn)
  nproc=$(ulimit -Hu)
  [[ $nofile != unlimited ]] || nofile=1048576
  # Above 32768 (buildah's own default) setrlimit failed here even below the shell's hard limit.
  if [[ $nproc == unlimited ]] || ((nproc > 32768)); then
    nproc=32768
  fi
  RUN_FLAGS=(--runtime "$OCI_RUNTIME" --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
}

# shellcheck source=hack/buildkit.sh
source "$ROOT/hack/buildkit.sh"

is_cached() { [[ -f $1/.complete && -f $1/image.oci.tar && -s $1/digest ]]; }

# Keep the KEEP most recently used cache dirs of one image (PREFIX-*), delete older ones: each
# operator build is ~80 MB, and a day of edits makes many.
KEEP=5
prune_cache() {
  local prefix=$1 dir count=0
  while IFS= read -r dir; do
    [[ $dir == *.tmp.* ]] && continue
    count=$((count + 1))
    ((count > KEEP)) || continue
    log "  pruning the old build $dir"
    rm -rf "$dir"
  done < <(find "$CACHE_DIR" -mindepth 1 -maxdepth 1 -type d -name "$prefix-*" -printf '%T@ %p\n' |
    sort -rn | cut -d' ' -f2-)
}

# Sets that point at a deleted build are stale.
prune_sets() {
  [[ -d $CACHE_DIR/sets ]] || return 0
  find "$CACHE_DIR/sets" -mindepth 2 -maxdepth 2 -xtype l -printf '%h\n' | sort -u | xargs -r rm -rf
}

# The ID of the image REF names in containers-storage, empty if none.
image_id() { podman image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

# Remove image ID from containers-storage if a rebuild took its last tag (it would linger as
# <none>); an image still tagged or used by a container stays.
forget_image() {
  local id=$1 tags
  [[ -n $id ]] || return 0
  tags=$(podman image inspect --format '{{len .RepoTags}}' "$id" 2>/dev/null) || return 0
  [[ $tags == 0 ]] || return 0
  buildah rmi "$id" >/dev/null 2>&1 || true
}

# sha256 of stdin, first 16 hex digits.
short_hash() { sha256sum | cut -c1-16; }

# sha256 of the names and contents of FILES... (paths relative to the current directory).
hash_files() {
  (($#)) || {
    printf 'no files\n' | short_hash
    return
  }
  printf '%s\0' "$@" | sort -z | xargs -0 sha256sum | short_hash
}

# Push REF into DIR/image.oci.tar (the reference inside the archive is REF, which `ctr images
# import` uses as the image name), then copy the archive back into containers-storage, so
# that REF@<archive digest> resolves locally. Writes DIR/digest and DIR/ref.
export_archive() {
  local ref=$1 dir=$2 digest
  buildah push --quiet --digestfile "$dir/digest" "$ref" "oci-archive:$dir/image.oci.tar:$ref" >&2 ||
    die "buildah push of $ref to $dir/image.oci.tar failed"
  digest=$(<"$dir/digest")
  [[ $digest == sha256:* ]] || die "buildah push wrote no digest for $ref (got '$digest')"
  copy_to_storage "$dir/image.oci.tar" "$ref"
  printf '%s\n' "$ref" >"$dir/ref"
}

# Make sure containers-storage holds the cached image of DIR under its ref and digest (a
# cached run after `podman system reset`, or another checkout tagged the ref differently).
ensure_in_storage() {
  local dir=$1 ref digest
  ref=$(<"$dir/ref")
  digest=$(<"$dir/digest")
  if podman image inspect --format '{{range .RepoDigests}}{{.}} {{end}}' "$ref" 2>/dev/null |
    grep -q "@$digest"; then
    return
  fi
  log "  loading $ref from $dir/image.oci.tar into containers-storage"
  local old_id
  old_id=$(image_id "$ref")
  copy_to_storage "$dir/image.oci.tar" "$ref"
  forget_image "$old_id"
}

# skopeo copy ARCHIVE into containers-storage as REF (quiet unless it fails: containers-storage
# logs its choice of storage driver on every use).
copy_to_storage() {
  local archive=$1 ref=$2 output
  output=$(skopeo copy --quiet "oci-archive:$archive" "containers-storage:$ref" 2>&1) || {
    printf '%s\n' "$output" >&2
    die "could not copy $archive into containers-storage as $ref (disk full? try 'podman system reset', then re-run $0)"
  }
}

# The base recipe: everything that decides the base image's content (its text is hashed).
# The hooks' "$1" is mmdebstrap's, the chroot directory.
# shellcheck disable=SC2016,SC2317,SC2329 # run by run_logged; $1 expands in the hooks
base_rootfs() {
  local out=$1 packages=$2
  mmdebstrap --variant=minbase --mode=root --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/linda/*' \
    --include=ca-certificates,netbase,tzdata,python3,python3-pip,python-is-python3 \
    --customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED' \
    --customize-hook='rm -rf "$1"/var/cache/debconf/*-old "$1"/var/log/apt/* "$1"/var/log/*.log "$1"/var/cache/ldconfig/aux-cache' \
    --customize-hook="dpkg-query --admindir=\"\$1\"/var/lib/dpkg -W > '$packages'" \
    "$SUITE" "$out" \
    "deb http://deb.debian.org/debian $SUITE main" \
    "deb http://deb.debian.org/debian $SUITE-updates main" \
    "deb http://deb.debian.org/debian-security $SUITE-security main"
}

base_image() {
  local rootfs=$1 packages=$2 ctr python_version
  python_version=$(awk '$1 == "python3.11" {print $2}' "$packages")
  [[ -n $python_version ]] || die "the base has no python3.11 package (see $packages)"
  ctr=$(buildah from --quiet scratch)
  buildah add --quiet "$ctr" "$rootfs" / >/dev/null
  buildah config \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 \
    --env PYTHON_VERSION="${python_version%%-*}" \
    --cmd '["python3"]' \
    --label org.opencontainers.image.title=python \
    --label org.opencontainers.image.version="$python_version" \
    --label org.opencontainers.image.description="python:3.11-slim-bookworm equivalent: Debian $SUITE packages (mmdebstrap minbase), built by hack/build-images.sh" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$BASE_REF" >/dev/null
}

build_base() {
  local key final tmp old_id
  key=$({
    declare -f base_rootfs base_image
    printf '%s %s\n' "$BASE_REF" "$SUITE"
  } | short_hash)
  final=$CACHE_DIR/python-$key
  BASE_DIR=$final
  if is_cached "$final" && [[ $REBUILD_BASE == false ]]; then
    touch "$final"
    log "base $BASE_REF: cached in $final"
    ensure_in_storage "$final"
    return
  fi
  log "building the base $BASE_REF from Debian $SUITE packages (mmdebstrap; 2-5 min)..."
  new_tmp_dir "python-$key"
  tmp=$NEW_TMP_DIR
  old_id=$(image_id "$BASE_REF")
  run_logged "mmdebstrap $SUITE" "$LOG_DIR/python-mmdebstrap.log" - base_rootfs "$tmp/rootfs.tar" "$tmp/packages.txt"
  base_image "$tmp/rootfs.tar" "$tmp/packages.txt" >&2 || die "could not turn $tmp/rootfs.tar into $BASE_REF (buildah)"
  rm -f "$tmp/rootfs.tar"
  export_archive "$BASE_REF" "$tmp"
  publish "$tmp" "$final"
  forget_image "$old_id"
  prune_cache python
  log "base $BASE_REF@$(<"$final/digest"): built into $final"
}

# The paths of the Dockerfile's build context: .dockerignore excludes everything ("*") and
# lets back in what the Dockerfile copies ("!path"). Relative to the repository.
context_paths() {
  local line path first
  first=$(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$ROOT/.dockerignore" | head -n 1)
  [[ $first == '*' ]] ||
    die ".dockerignore must start with '*' and list what enters the context as '!path' (the cache key hashes those paths)"
  while IFS= read -r line; do
    [[ $line == '!'* ]] || continue
    path=${line#!}
    path=${path%/}
    [[ -e $ROOT/$path ]] || die ".dockerignore lets in '$path', which does not exist"
    printf '%s\n' "$path"
  done <"$ROOT/.dockerignore"
}

project_version() {
  local version
  version=$(sed -n '/^\[project\]/,/^\[/{s/^version *= *"\(.*\)"/\1/p}' "$ROOT/pyproject.toml" | head -n 1)
  [[ -n $version ]] || die "no [project] version in $ROOT/pyproject.toml"
  printf '%s\n' "$version"
}

# The commit the context was built from; "-dirty" when it differs from that commit.
revision() {
  local rev
  rev=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null) || {
    printf 'unknown\n'
    return
  }
  if [[ -n $(git -C "$ROOT" status --porcelain -- Dockerfile .dockerignore "$@" 2>/dev/null) ]]; then
    rev+=-dirty
  fi
  printf '%s\n' "$rev"
}

# Where the host's CA bundle is (pip's, then OpenSSL's): the build steps need it to reach
# PyPI through this network's proxy. It is mounted for RUN steps only, never copied.
host_ca_bundle() {
  local bundle
  for bundle in "${IMAGES_BUILD_CA:-}" "${PIP_CERT:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
    [[ -n $bundle && -f $bundle ]] && {
      printf '%s\n' "$bundle"
      return
    }
  done
}

# shellcheck disable=SC2317,SC2329 # run by run_logged
bud_operator() {
  local ref=$1 version=$2 revision=$3 ca=$4
  local volumes=()
  [[ -z $ca ]] || volumes=(--volume "$ca:/etc/ssl/certs/ca-certificates.crt:ro")
  buildah bud "${RUN_FLAGS[@]}" --network host --pull=never "${volumes[@]}" \
    --build-arg "PYTHON_IMAGE=${BASE_REF%:*}@$(<"$BASE_DIR/digest")" \
    --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
    -f "$ROOT/Dockerfile" -t "$ref" "$ROOT"
}

build_operator() {
  local version ref key final tmp paths=() files=() ca old_id
  version=$(project_version)
  ref=$IMAGE_PREFIX/operator:$version
  mapfile -t paths < <(context_paths)
  ((${#paths[@]})) || die "the build context is empty: check $ROOT/.dockerignore"
  mapfile -t files < <(cd "$ROOT" && find "${paths[@]}" -type f ! -path '*/__pycache__/*' ! -name '*.pyc')
  key=$({
    (cd "$ROOT" && hash_files Dockerfile .dockerignore "${files[@]}")
    declare -f bud_operator
    printf '%s %s\n' "$ref" "$(<"$BASE_DIR/digest")"
  } | short_hash)
  final=$CACHE_DIR/operator-$version-$key
  OPERATOR_DIR=$final
  if is_cached "$final"; then
    touch "$final"
    log "operator $ref: cached in $final"
    ensure_in_storage "$final"
    return
  fi
  ca=$(host_ca_bundle)
  [[ -n $ca ]] || log "WARNING: no CA bundle found on the host; the build reaches PyPI with the base's own CAs"
  log "building the operator image $ref from $ROOT/Dockerfile (1-3 min)..."
  new_tmp_dir "operator-$version-$key"
  tmp=$NEW_TMP_DIR
  old_id=$(image_id "$ref")
  run_logged "buildah bud operator" "$LOG_DIR/operator.log" - \
    bud_operator "$ref" "$version" "$(revision "${paths[@]}")" "$ca"
  cp "$LOG_DIR/operator.log" "$tmp/build.log"
  export_archive "$ref" "$tmp"
  publish "$tmp" "$final"
  forget_image "$old_id"
  prune_cache operator
  log "operator $ref@$(<"$final/digest"): built into $final"
}

# The tag of images/NAME: the Containerfile's "# tag: X" line, else DEFAULT_TAG.
containerfile_tag() {
  local tag
  tag=$(sed -n 's/^#[[:space:]]*tag:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$1" | head -n 1)
  printf '%s\n' "${tag:-$DEFAULT_TAG}"
}

# The Go sources NAME's binary is built from: go.mod/go.sum, NAME's own non-test .go files
# and those of shared packages (directories without a Containerfile). Relative to images/.
go_sources() {
  local name=$1 dir
  local sources=(go.mod)
  [[ ! -f go.sum ]] || sources+=(go.sum)
  for dir in */; do
    dir=${dir%/}
    [[ $dir == "$name" || ! -f $dir/Containerfile ]] || continue
    mapfile -t -O "${#sources[@]}" sources < <(find "$dir" -type f -name '*.go' ! -name '*_test.go')
  done
  printf '%s\n' "${sources[@]}"
}

build_small_image() {
  local name=$1 images_dir=$ROOT/images tag ref key final tmp sources=() old_id
  local containerfile=$images_dir/$name/Containerfile
  tag=$(containerfile_tag "$containerfile")
  ref=$IMAGE_PREFIX/$name:$tag
  mapfile -t sources < <(cd "$images_dir" && go_sources "$name")
  key=$({
    (cd "$images_dir" && hash_files "$name/Containerfile" "${sources[@]}")
    go env GOVERSION
    declare -f build_small_image
    printf '%s\n' "$ref"
  } | short_hash)
  final=$CACHE_DIR/$name-$tag-$key
  SMALL_DIR=$final
  if is_cached "$final"; then
    touch "$final"
    log "$name $ref: cached in $final"
    ensure_in_storage "$final"
    return
  fi
  log "building $ref from images/$name (go build, buildah bud)..."
  new_tmp_dir "$name-$tag-$key"
  tmp=$NEW_TMP_DIR
  old_id=$(image_id "$ref")
  mkdir "$tmp/context"
  run_logged "go build $name" "$LOG_DIR/$name-go.log" - \
    env -C "$images_dir" CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp/context/$name" "./$name"
  run_logged "buildah bud $name" "$LOG_DIR/$name.log" - \
    buildah bud "${RUN_FLAGS[@]}" --network none --pull=never -f "$containerfile" -t "$ref" "$tmp/context"
  export_archive "$ref" "$tmp"
  publish "$tmp" "$final"
  forget_image "$old_id"
  prune_cache "$name"
  log "$name $ref@$(<"$final/digest"): built into $final"
}

build_small_images() {
  SMALL_DIRS=()
  local containerfile name
  for containerfile in "$ROOT"/images/*/Containerfile; do
    [[ -f $containerfile ]] || continue
    [[ -f $ROOT/images/go.mod ]] || die "$containerfile found but no images/go.mod (images/ is one Go module)"
    command -v go >/dev/null 2>&1 || die "the Go toolchain is not on PATH; images/ needs it (install Go >= 1.26)"
    name=${containerfile%/Containerfile}
    name=${name##*/}
    build_small_image "$name"
    SMALL_DIRS+=("$SMALL_DIR")
  done
}

# One directory for this run's images, keyed by all their digests: <name>.oci.tar symlinks
# and images.txt ("ref digest archive" per line). Prints its path.
link_set() {
  local dirs=("$BASE_DIR" "$OPERATOR_DIR" "${SMALL_DIRS[@]}") dir key set name ref digest
  key=$(for dir in "${dirs[@]}"; do printf '%s %s\n' "$(<"$dir/ref")" "$(<"$dir/digest")"; done | short_hash)
  set=$CACHE_DIR/sets/$key
  mkdir -p "$set"
  {
    printf '# ref digest archive (ctr -n k8s.io images import <archive>)\n'
    for dir in "${dirs[@]}"; do
      ref=$(<"$dir/ref")
      digest=$(<"$dir/digest")
      name=${ref#"$IMAGE_PREFIX"/}
      name=${name%%:*}
      ln -sfn "$dir/image.oci.tar" "$set/$name.oci.tar"
      printf '%s %s %s\n' "$ref" "$digest" "$set/$name.oci.tar"
    done
    printf 'PYTHON_IMAGE=%s@%s\n' "${BASE_REF%:*}" "$(<"$BASE_DIR/digest")"
  } >"$set/images.txt.tmp"
  mv "$set/images.txt.tmp" "$set/images.txt"
  printf '%s\n' "$set"
}

main() {
  parse_args "$@"
  mkdir -p "$CACHE_DIR" "$LOG_DIR"
  # Serialise concurrent runs (e.g. parallel test sessions) on one cache.
  exec 9>"$CACHE_DIR/.build.lock"
  if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
    log "another build holds $CACHE_DIR/.build.lock; waiting for it..."
    flock 9
  fi
  require_tools
  container_flags
  local started=$SECONDS set
  build_base
  build_operator
  build_small_images
  prune_sets
  set=$(link_set)
  log "images ready in $((SECONDS - started))s: $set"
  grep -v '^#' "$set/images.txt" | sed 's/^/[build-images]   /' >&2
  printf '%s\n' "$set"
}

# `exit` on the same line: bash must not read past it if this file is edited mid-run.
main "$@"; exit
