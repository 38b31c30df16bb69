#!/usr/bin/env bash
# Sourced by build-images.sh, never run: every images/<name>/Containerfile, a static Go
# binary (images/ is one Go module) built on the host and copied into a FROM scratch image.

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
