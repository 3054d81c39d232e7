#!/usr/bin/env bash
# Set up a fresh Debian machine with Node 20 for libos: redis-server (the embedded cluster and
# the tests start their own), bubblewrap (every child runs in a sandbox of its own), Chromium
# (the journal viewer's tests drive it), docker-compose (a test checks deploy/compose.yaml with it;
# no Docker daemon is needed), Debian's python3-celery and python3-redis (bench/peers.ts's Celery
# peer, benchmarks only) and the npm dependencies. `npm run demo`, `npm test` and
# `npm run build` build what they need (once: Nx caches builds).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
/usr/bin/python3 -c 'import celery, redis' >/dev/null 2>&1 || need+=(python3-celery python3-redis)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
npm ci --no-audit --no-fund
