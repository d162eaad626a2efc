#!/usr/bin/env bash
# The official C++ client's compat tests: a virtualenv with requirements.txt (PyPI), then pytest
# against the ferrocket binary in $FERROCKET_BIN (default: target/release/ferrocket).
set -euo pipefail
# SUITE_DIR: another directory laid out the same way (compat-tests/python5).
here=${SUITE_DIR:-$(cd "$(dirname "$0")" && pwd)}
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
export FERROCKET_BIN="${FERROCKET_BIN:-$here/../../target/release/ferrocket}"
cd "$here"
exec "$venv/bin/python" -m pytest -v -p no:cacheprovider "$@"
