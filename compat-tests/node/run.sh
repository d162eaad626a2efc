#!/usr/bin/env bash
# kafkajs 2.2.4 (npm, package-lock.json) against ferrocket's Kafka listener (kafkajs.test.mjs; with SASL and
# the ACL accounts in kafkajs_sasl.test.mjs), with Node's own test
# runner. FERROCKET_BIN names the binary (default: target/release/ferrocket).
set -euo pipefail
# SUITE_DIR: another directory laid out the same way (compat-tests/node5).
here=${SUITE_DIR:-$(cd "$(dirname "$0")" && pwd)}
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
export FERROCKET_BIN="${FERROCKET_BIN:-$here/../../target/release/ferrocket}"
exec npm test --silent
