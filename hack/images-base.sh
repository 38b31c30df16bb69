#!/usr/bin/env bash
# Sourced by build-images.sh, never run: the base image, a python:3.11-slim-bookworm
# equivalent bootstrapped from Debian packages with mmdebstrap, committed with buildah. Its
# cache key is the text of base_rootfs and base_image (declare -f), so only a change of the
# recipe rebuilds it (or --rebuild-base).

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
  # shellcheck disable=SC2034 # read by link_set (build-images.sh)
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
