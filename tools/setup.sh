#!/usr/bin/env bash
# Set up a fresh Debian machine with Node 20 for libos: redis-server (the embedded cluster and
# the tests start their own), the npm dependencies, and a build of every package.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server
fi
npm ci --no-audit --no-fund
NX_DAEMON=false npx nx run-many -t build
