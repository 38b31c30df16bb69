#!/usr/bin/env bash
# Sourced by build-images.sh, never run: the operator image, the project's Dockerfile
# unchanged (buildah bud), on the base by digest (PYTHON_IMAGE). Its cache key covers the
# build context (.dockerignore's list), the Dockerfile, bud_operator's text and the base.

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
  # shellcheck disable=SC2034 # read by link_set (build-images.sh)
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
