#!/usr/bin/env bash
# Headless Chromium for the trace viewer's browser tests (tests/integration/test_viewer_browser.py,
# tests/e2e/test_trace.py) and bench/viewer.py: the Debian package `chromium`, installed with apt-get
# when missing (apt-get update once if the install fails). Prints the browser's path on stdout.
# Fails loudly when it cannot: those tests never skip.
set -euo pipefail

find_chromium() {
  local name
  for name in chromium chromium-browser; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}

if find_chromium; then
  exit 0
fi
if ((EUID != 0)) || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no chromium on PATH and cannot apt-get install it (needs root and apt-get): apt-get install -y chromium" >&2
  exit 1
fi
logfile=${TMPDIR:-/tmp}/inference-operator-chromium-apt.log
echo "install-chromium: installing the Debian package chromium (log: $logfile)..." >&2
apt=(apt-get -o DPkg::Lock::Timeout=600 -q)
export DEBIAN_FRONTEND=noninteractive
if ! "${apt[@]}" install -y --no-install-recommends chromium >"$logfile" 2>&1; then
  echo "install-chromium: apt-get install failed; running apt-get update once and retrying..." >&2
  if ! { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends chromium; } >>"$logfile" 2>&1; then
    tail -n 20 "$logfile" >&2
    echo "install-chromium: apt-get install chromium failed (log: $logfile); is deb.debian.org reachable?" >&2
    exit 1
  fi
fi
find_chromium || { echo "install-chromium: chromium installed but not on PATH" >&2; exit 1; }
