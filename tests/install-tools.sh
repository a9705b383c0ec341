#!/usr/bin/env bash
# The system tools the test suite runs, installed when missing (Debian/Ubuntu apt-get, as
# root): gcc and the Python headers (the engine's build), headless chromium (the stats
# page), haproxy (its CSV header, the differential cases), socat (the runtime API and master
# CLI), wrk (reload under load), curl (clients), openssl and libssl-dev (the engine's TLS and
# its tests' certificates). README.md's test command runs it first.
set -euo pipefail
need=""
command -v gcc >/dev/null || need="$need gcc python3-dev"
for t in chromium haproxy socat wrk curl openssl; do command -v "$t" >/dev/null || need="$need $t"; done
# OpenSSL's headers: the engine's TLS (native/src/tls.c) is built only where they are
echo '#include <openssl/ssl.h>' | ${CC:-cc} -E -x c - >/dev/null 2>&1 || need="$need libssl-dev"
if [ -n "$need" ]; then
    echo "installing:$need" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need
fi
for t in gcc chromium haproxy socat wrk curl openssl; do
    command -v "$t" >/dev/null || { echo "missing test tool: $t" >&2; exit 1; }
done
