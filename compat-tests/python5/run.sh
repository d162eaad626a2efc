#!/usr/bin/env bash
# The official 5.x Python SDK's compat tests (gRPC door), in their own virtualenv (the SDK's
# package is named `rocketmq`, as the C++ client's binding in compat-tests/python is): that
# directory's runner, on this directory's requirements.txt and tests.
set -euo pipefail
SUITE_DIR=$(cd "$(dirname "$0")" && pwd) exec "$(dirname "$0")/../python/run.sh" "$@"
