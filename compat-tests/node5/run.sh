#!/usr/bin/env bash
# The official 5.x Node.js SDK, rocketmq-client-nodejs 1.0.8 (npm, package-lock.json), against
# ferrocket's gRPC listener (grpc5.test.mjs, grpc5_crash_acl.test.mjs): compat-tests/node's runner on this directory.
set -euo pipefail
SUITE_DIR=$(cd "$(dirname "$0")" && pwd) exec "$(dirname "$0")/../node/run.sh"
