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
  printf '[build-images] ERROR: unexpected failure (exit %s) at %s line %s: %s\n' "$1" "$2" "$3" "$4" >&2
  printf '[build-images] fix the cause above (or report it with this output), then re-run the script\n' >&2
}
trap 'on_error $? "${BASH_SOURCE[0]}" $LINENO "$BASH_COMMAND"' ERR

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

# One concern a file, all sourced, never run on their own: shared build helpers (buildkit.sh),
# tools and the image cache (images-cache.sh), then one file per kind of image.
# shellcheck source=hack/buildkit.sh
source "$ROOT/hack/buildkit.sh"
# shellcheck source=hack/images-cache.sh
source "$ROOT/hack/images-cache.sh"
# shellcheck source=hack/images-base.sh
source "$ROOT/hack/images-base.sh"
# shellcheck source=hack/images-operator.sh
source "$ROOT/hack/images-operator.sh"
# shellcheck source=hack/images-small.sh
source "$ROOT/hack/images-small.sh"

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
