#!/usr/bin/env bash
# franz-go's own integration tests (github.com/twmb/franz-go/pkg/kgo, the release go.mod pins)
# against a ferrocket standalone with its Kafka listener, as franz-go runs them against a Kafka
# broker: KGO_SEEDS names the broker, KGO_TEST_RF=1 a single replica. The allowlist (`allow`
# below):
# - TestGroupETL: 500,000 records through a chain of three consumer groups (range,
#   cooperative-sticky, cooperative-sticky with static members), each level re-producing.
# - TestTxnEtl (#27): the same chain transactional: a transactional producer committing every
#   10,000 records, then per level GroupTransactSessions (read_committed, control records kept,
#   TxnOffsetCommit, members joining, leaving and aborting their last transaction), every record
#   exactly once per level.
# - TestIssue865.
# The KIP-848 subtests of both ETL tests skip themselves (ConsumerGroupHeartbeat is not
# advertised; KIP-848 groups are not served). The package's other txn tests
# (TestAuditWriteTxnMarkersPreservesCoordinatorEpoch, TestAuditTxnRecheckRewindUnmarksAddedToTxn,
# TestOptValuesTxnIDAndShare) exercise franz-go's own code without a broker, so are not run.
# The kgo part takes about 50-60 s on 2 cores (TestGroupETL alone about 25 s).
# Then sasl/ (our own small test, franz-go's pkg/sasl/plain and pkg/sasl/scram) against a second
# broker with aclEnable=true and tls.server.mode=permissive: see sasl_section below.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="${FERROCKET_BIN:-$here/../../target/release/ferrocket}"
work=$(mktemp -d /tmp/ferrocket-franz.XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# The broker needs its port, port-2 (VIP) and port+1 (HA) free: take one from a quiet range.
broker=$((20000 + RANDOM % 8000)); ns=$(port); kafka=$(port)
# cleanFileForciblyEnable=false: the machine's disk must not decide; above 85 % used
# (diskSpaceCleanForciblyRatio) a broker deletes CommitLog segments not yet consumed, and the
# ETL tests, whose store grows to ~4 GB, then wait for records that are gone.
cat > "$work/broker.conf" <<CONF
brokerClusterName=FranzCluster
brokerName=franz-a
brokerIP1=127.0.0.1
listenPort=$broker
storePathRootDir=$work/store
mappedFileSizeCommitLog=67108864
cleanFileForciblyEnable=false
kafkaListenPort=$kafka
kafkaAdvertisedAddress=127.0.0.1:$kafka
CONF
echo "listenPort=$ns" > "$work/namesrv.conf"
"$bin" standalone -c "$work/broker.conf" --namesrv-config "$work/namesrv.conf" > "$work/ferrocket.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$kafka") 2>/dev/null && break
  sleep 0.1
done
cd "$here"
# SASL_ONLY=1: only the SASL test below (the ETL tests fill ~4 GB of store and take a minute).
# FRANZ_RUN=<go test -run pattern>: only those kgo tests, and no SASL section (for iterating).
if [ "${SASL_ONLY:-}" != 1 ]; then
allow='TestGroupETL$|TestIssue865|TestTxnEtl$'
KGO_SEEDS="127.0.0.1:$kafka" KGO_TEST_RF=1 go test -count=1 -timeout 10m -v \
  -run "${FRANZ_RUN:-$allow}" github.com/twmb/franz-go/pkg/kgo 2>&1 | tee "$work/go-test.log" \
  | grep -E '^(=== RUN|\s*--- (PASS|FAIL|SKIP)|PASS|FAIL|ok)'
status=${PIPESTATUS[0]}
kill -TERM $pid
wait $pid || { echo "ferrocket exited non-zero on SIGTERM; log $work/ferrocket.log" >&2; exit 1; }
trap - EXIT
if grep -E '^[0-9T:.-]+Z +ERROR ' "$work/ferrocket.log"; then
  echo "ferrocket logged ERROR lines under franz-go's tests (above); log $work/ferrocket.log" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  grep -E '^\s*--- FAIL|^panic:' "$work/go-test.log" | head -20 >&2 || true
  grep -E '^[0-9T:.-]+Z +WARN ' "$work/ferrocket.log" | tail -20 >&2 || true
  echo "franz-go's tests failed (failures and ferrocket's last WARN lines above); logs in $work" >&2
  exit "$status"
fi
fi
kill -TERM $pid 2>/dev/null && wait $pid || true
trap - EXIT
rm -rf "$work"

# SASL against the ACL accounts: a second broker with aclEnable=true (accounts as in
# sasl/sasl_test.go) and tls.server.mode=permissive for SASL_SSL once the Kafka port speaks TLS.
sasl_section() {
  local w; w=$(mktemp -d /tmp/ferrocket-franz-sasl.XXXXXX)
  mkdir -p "$w/conf"
  cat > "$w/conf/plain_acl.yml" <<ACL
accounts:
  - accessKey: franzUser01
    secretKey: franzSecret01
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ['franz-sasl=PUB|SUB']
    groupPerms: ['franz-sasl-g=SUB']
  - accessKey: franzOther01
    secretKey: otherSecret01
    defaultTopicPerm: DENY
  - accessKey: franzAdmin01
    secretKey: adminSecret01
    admin: true
ACL
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$w/key.pem" -out "$w/cert.pem" -days 2 -subj /CN=localhost \
    > "$w/openssl.log" 2>&1
  local b=$((20000 + RANDOM % 8000)) n k
  n=$(port); k=$(port)
  cat > "$w/broker.conf" <<CONF
brokerClusterName=FranzSaslCluster
brokerName=franz-sasl-a
brokerIP1=127.0.0.1
listenPort=$b
storePathRootDir=$w/store
cleanFileForciblyEnable=false
aclEnable=true
rocketmqHome=$w
kafkaListenPort=$k
kafkaAdvertisedAddress=127.0.0.1:$k
tls.server.mode=permissive
tls.server.certPath=$w/cert.pem
tls.server.keyPath=$w/key.pem
CONF
  echo "listenPort=$n" > "$w/namesrv.conf"
  "$bin" standalone -c "$w/broker.conf" --namesrv-config "$w/namesrv.conf" > "$w/ferrocket.log" 2>&1 &
  local spid=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$k") 2>/dev/null && break
    sleep 0.1
  done
  local st=0
  set +e
  KGO_SASL_SEEDS="127.0.0.1:$k" go test -count=1 -timeout 5m -v ./sasl > "$w/go-test.log" 2>&1
  st=$?
  set -e
  grep -E '^(=== RUN|\s*--- (PASS|FAIL|SKIP)|\s+sasl_test.go|PASS|FAIL|ok)' "$w/go-test.log" || true
  kill -TERM $spid
  wait $spid || { echo "ferrocket (SASL) exited non-zero on SIGTERM; log $w/ferrocket.log" >&2; return 1; }
  if grep -E '^[0-9T:.-]+Z +ERROR ' "$w/ferrocket.log"; then
    echo "ferrocket (SASL) logged ERROR lines (above); log $w/ferrocket.log" >&2
    return 1
  fi
  if grep -qE 'franzSecret01|otherSecret01|adminSecret01|wrongPassword' "$w/ferrocket.log"; then
    echo "a secret reached the broker log $w/ferrocket.log" >&2
    return 1
  fi
  if [ "$st" -ne 0 ]; then
    echo "the franz-go SASL test failed; logs in $w" >&2
    return "$st"
  fi
  rm -rf "$w"
}
[ -n "${FRANZ_RUN:-}" ] || sasl_section
