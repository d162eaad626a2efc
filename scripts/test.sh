#!/usr/bin/env bash
# The full test suite: formatting, lints, Rust tests, then the compatibility suites (official
# RocketMQ Java clients 5.x and 4.9.x with the Kafka Java clients 4.x and 3.9, the official Go
# client, the official C++ client and librdkafka, kafkajs, franz-go's own tests, the official
# 5.x gRPC SDKs for Java, Go, Python and Node.js, against a ferrocket started by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --check
echo "== cargo clippy"
cargo clippy --all-targets -- -D warnings
echo "== cargo test"
cargo test
echo "== cargo build --release"
cargo build --release
echo "== compat-tests (official Java clients)"
# No rerun of failing tests: a flaky test fails the suite and gets fixed at its root (#26.7).
mvn -f compat-tests -B -ntp test -Dferrocket.bin="$PWD/target/release/ferrocket"
echo "== compat-tests/go (official Go client)"
(export FERROCKET_BIN="$PWD/target/release/ferrocket"; cd compat-tests/go && go test -count=1 -timeout 10m -v ./...)
echo "== compat-tests/python (official C++ client through its Python binding; librdkafka through confluent-kafka)"
FERROCKET_BIN="$PWD/target/release/ferrocket" compat-tests/python/run.sh
echo "== compat-tests/node (kafkajs 2.2.4 on the Kafka listener)"
FERROCKET_BIN="$PWD/target/release/ferrocket" compat-tests/node/run.sh
echo "== compat-tests/python5 and node5 (the official 5.x gRPC SDKs on the gRPC listener; Go's is in compat-tests/go)"
FERROCKET_BIN="$PWD/target/release/ferrocket" compat-tests/python5/run.sh
FERROCKET_BIN="$PWD/target/release/ferrocket" compat-tests/node5/run.sh
echo "== compat-tests/franz-go (franz-go's own group tests on the Kafka listener)"
FERROCKET_BIN="$PWD/target/release/ferrocket" compat-tests/franz-go/run.sh
echo "== no ERROR line in any ferrocket log of the compat suites"
# The Go suite checks its own log; this covers every ferrocket process the Maven suite started.
errors=$(find compat-tests -path '*/target/compat-work/*' -name 'ferrocket*.log' -print0 \
  | xargs -0 -r grep -HE '^[0-9T:.-]+Z +ERROR ' || true)
if [ -n "$errors" ]; then
  echo "$errors" | head -50
  echo "ferrocket logged ERROR lines during the compat suites (above)" >&2
  exit 1
fi
echo "== benchmarks, briefly (they must run; their numbers are not judged in a test)"
benchmarks/run.sh --quick --check
