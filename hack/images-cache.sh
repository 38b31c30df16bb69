#!/usr/bin/env bash
# Sourced by build-images.sh, never run: the Debian tools it needs, the flags every container
# run needs here, and the image cache (keys, pruning, OCI archives) with its mirror in the local
# containers-storage. Uses what build-images.sh defines first (log, die, CACHE_DIR, LOG_DIR,
# PACKAGES, OCI_RUNTIME) and buildkit.sh.

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
  # shellcheck disable=SC2034 # read by the image builders
  RUN_FLAGS=(--runtime "$OCI_RUNTIME" --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
}

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
