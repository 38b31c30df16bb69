#!/usr/bin/env bash
# Helpers shared by the build scripts (build-controlplane.sh with build-node.sh, and
# build-images.sh), sourced, never run: a long command with its output in a log and a progress
# line on stderr, scratch directories in the cache that vanish unless published, and an atomic
# publish. The sourcing script defines log and die (its own prefix), CACHE_DIR and
# PROGRESS_EVERY_SECONDS first.

# Run COMMAND... with its output in LOGFILE and a progress line every PROGRESS_EVERY_SECONDS
# on stderr. TOTAL: how many packages the command (`go build -v`, one line per package) is
# expected to compile, empty if unknown, or - for a command whose lines count nothing. On
# failure, show the log's tail and exit.
run_logged() {
  local label=$1 logfile=$2 total=$3
  shift 3
  local started=$SECONDS last_report=$SECONDS lines=0 line='' status err_trap counted
  log "  full log: $logfile"
  err_trap=$(trap -p ERR)
  set +e
  trap - ERR # a failure here is reported below, with the log's tail
  "$@" 2>&1 | tee "$logfile" | {
    while true; do
      if IFS= read -r -t 5 line; then
        lines=$((lines + 1))
      elif (($? <= 128)); then
        break # end of output
      fi
      if ((SECONDS - last_report >= PROGRESS_EVERY_SECONDS)); then
        counted=""
        [[ $total == - ]] || counted="~$lines${total:+/$total} packages compiled, "
        log "  $label: $counted$((SECONDS - started))s elapsed${line:+ (last: ${line:0:120})}"
        last_report=$SECONDS
      fi
    done
  }
  status=${PIPESTATUS[0]}
  set -e
  [[ -z $err_trap ]] || eval "$err_trap"
  if ((status != 0)); then
    log "ERROR: $label failed (exit $status) after $((SECONDS - started))s. Last lines of $logfile:"
    tail -n 40 "$logfile" >&2
    die "$label failed; fix the error above, then re-run $0"
  fi
  log "  $label: done in $((SECONDS - started))s"
}

# A scratch dir in the cache for one build; removed on exit unless published.
TMP_DIRS=()
# shellcheck disable=SC2317,SC2329 # invoked by the EXIT trap
cleanup() { ((${#TMP_DIRS[@]} == 0)) || rm -rf "${TMP_DIRS[@]}"; }
trap cleanup EXIT
new_tmp_dir() {
  NEW_TMP_DIR=$(mktemp -d "$CACHE_DIR/$1.tmp.XXXXXX")
  TMP_DIRS+=("$NEW_TMP_DIR")
}

# Move a freshly built TMP dir into place as FINAL, atomically.
publish() {
  local tmp=$1 final=$2
  chmod 755 "$tmp" # mktemp's 0700 would hide the cache from a node's non-root tools
  touch "$tmp/.complete"
  rm -rf "$final"
  mv "$tmp" "$final"
}
