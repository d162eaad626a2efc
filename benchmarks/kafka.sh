#!/usr/bin/env bash
# Kafka protocol side by side: a real Apache Kafka 4.1.1 broker (Maven Central jars, KRaft single
# node) and ferrocket's Kafka listener, driven by Kafka's own tools: ProducerPerformance (1 KiB,
# acks=all, linger.ms=5; then again with transactions, a commit every 100 ms), ConsumerPerformance and
# EndToEndLatency, on 4-partition topics (= 4 queues in ferrocket), then the compaction of N/4
# (>= 12,500) keyed records (1,000 keys) as the broker reports it (lib/kafka-compaction.sh);
# alternating rounds with fresh data directories, broker CPU and RssAnon from /proc.
#
#   benchmarks/kafka.sh [--rounds R] [--records N] [--e2e-messages M] [--quick]
#                       [--brokers "kafka ferrocket"] [--results FILE|none] [--keep-data]
#
# Defaults: 3 rounds of 1,000,000 records, 10,000 EndToEndLatency round trips; medians and ratios
# appended to benchmarks/RESULTS.md. --quick: 50,000 records, 1,000 round trips, 1 round, prints
# only. Needs JDK 17, Maven, python3 (and cargo when target/release/ferrocket is missing).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PY="$HERE/lib/kafka.py"
BPY="$HERE/lib/bench.py"
COMMAND="benchmarks/kafka.sh${*:+ $*}"
KAFKA_VERSION=4.1.1
KAFKA_CP_FILE="$HERE/kafka-broker/target/classpath.txt"
TXN_MS=100 # the transactional producer's --transaction-duration-ms: a commit every TXN_MS ms
# shellcheck source=lib/kafka-compaction.sh
source "$HERE/lib/kafka-compaction.sh"

ROUNDS="" RECORDS="" E2E=""
BROKERS="kafka ferrocket"
RESULTS=""
QUICK=0
KEEP_DATA=0
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS=${2:?--rounds needs a value}; shift 2 ;;
    --records) RECORDS=${2:?--records needs a value}; shift 2 ;;
    --e2e-messages) E2E=${2:?--e2e-messages needs a value}; shift 2 ;;
    --brokers) BROKERS=${2:?--brokers needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --keep-data) KEEP_DATA=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ $QUICK == 1 ]]; then
  # Proves the machinery works; a cold JVM and 50,000 records are not results worth keeping.
  ROUNDS=${ROUNDS:-1} RECORDS=${RECORDS:-50000} E2E=${E2E:-1000} RESULTS=${RESULTS:-none}
fi
ROUNDS=${ROUNDS:-3} RECORDS=${RECORDS:-1000000} E2E=${E2E:-10000}
RESULTS=${RESULTS:-$HERE/RESULTS.md}
RECORDS=${RECORDS//,/} E2E=${E2E//,/}
for n in "$ROUNDS" "$RECORDS" "$E2E"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "not a positive whole number: $n" >&2; exit 2; }
done
for b in $BROKERS; do
  [[ $b == kafka || $b == ferrocket ]] || { echo "unknown broker $b (kafka or ferrocket)" >&2; exit 2; }
done

RUN=$(mktemp -d "${TMPDIR:-/tmp}/ferrocket-kafka.XXXXXX")
NOTES="$RUN/notes.txt"
ROWS="$RUN/rows.jsonl"
: > "$NOTES"
: > "$ROWS"
STARTED_AT=$(date +%s)

log() { printf '[kafka %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
note() { log "note: $*"; printf '%s\n' "$*" >> "$NOTES"; }
die() {
  log "FAILED: $*"
  log "logs are in $RUN"
  exit 1
}

# ---------------------------------------------------------------- processes

declare -A PROC_NAME=()   # pid -> what it is, for every long-running process this script started
LAST_PID=""

start() { # NAME LOG CMD...: CMD in the background, output in LOG; sets LAST_PID
  local name=$1 logf=$2
  shift 2
  "$@" > "$logf" 2>&1 &
  LAST_PID=$!
  PROC_NAME[$LAST_PID]=$name
}

STOP_RC=0
stop() { # PID GRACE_S: SIGTERM, SIGKILL after GRACE_S; STOP_RC = exit status
  local pid=$1 grace=$2 i
  STOP_RC=0
  [[ -n "${PROC_NAME[$pid]:-}" ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      note "${PROC_NAME[$pid]} (pid $pid) ignored SIGTERM for ${grace} s; sent SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || STOP_RC=$?
  unset "PROC_NAME[$pid]"
}

cleanup() {
  local rc=$? pid i alive
  trap - EXIT INT TERM
  for pid in "${!PROC_NAME[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 100; i++)); do
    alive=0
    for pid in "${!PROC_NAME[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 1 ]] || break
    sleep 0.1
  done
  for pid in "${!PROC_NAME[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  [[ $KEEP_DATA == 1 ]] || rm -rf "$RUN"/*/data 2>/dev/null || true
  [[ $rc == 0 ]] || log "exit $rc; logs are in $RUN"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

await_port() { # NAME PID PORT SECONDS LOG: until PORT accepts, or fail naming NAME and its log
  local name=$1 pid=$2 port=$3 secs=$4 logf=$5 i
  for ((i = 0; i < secs; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$logf" 2>/dev/null | sed 's/^/    /'
      die "$name exited before opening port $port; log: $logf"
    fi
    python3 "$BPY" wait-port "$port" 1 && return 0
  done
  tail -n 30 "$logf" 2>/dev/null | sed 's/^/    /'
  die "$name did not open port $port within $secs s; log: $logf"
}

# ---------------------------------------------------------------- 1. binaries and jars

log "run directory: $RUN"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before start: $LOAD_BEFORE"
if pgrep -f ci-clone > /dev/null 2>&1; then
  note "a CI run (ci-clone) was running on this machine when the benchmark started"
fi

FERROCKET="$ROOT/target/release/ferrocket"
# The tree as the run starts (the binary is copied now, so this is what it was built next to).
GIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')
if [[ -n "$(cd "$ROOT" && git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]]; then
  GIT="$GIT + uncommitted changes in src/"
fi
if [[ $BROKERS == *ferrocket* ]]; then
  if [[ ! -x "$FERROCKET" ]]; then
    log "building ferrocket (cargo build --release under flock /tmp/ferrocket-cargo.lock)"
    ( cd "$ROOT" && flock /tmp/ferrocket-cargo.lock cargo build --release ) > "$RUN/cargo-build.log" 2>&1 \
      || { tail -n 40 "$RUN/cargo-build.log"; die "cargo build --release failed; log: $RUN/cargo-build.log"; }
  fi
  [[ -x "$FERROCKET" ]] || die "no binary at $FERROCKET"
  # A private copy: someone else's `cargo build` must not swap the binary between rounds.
  FERROCKET_BUILT=$(date -u -r "$FERROCKET" '+%Y-%m-%d %H:%M UTC')
  cp "$FERROCKET" "$RUN/ferrocket"
  FERROCKET="$RUN/ferrocket"
  log "ferrocket: $("$FERROCKET" --version) (binary built $FERROCKET_BUILT)"
fi

if [[ -s "$KAFKA_CP_FILE" && -z "$(find "$HERE/kafka-broker/pom.xml" -newer "$KAFKA_CP_FILE" -print -quit)" ]]; then
  log "Kafka $KAFKA_VERSION broker and tools already resolved ($KAFKA_CP_FILE)"
else
  log "resolving the Kafka $KAFKA_VERSION broker and tools from Maven Central (benchmarks/kafka-broker)"
  mvn -B -q -f "$HERE/kafka-broker/pom.xml" dependency:build-classpath -Dmdep.outputFile="$KAFKA_CP_FILE" \
    > "$RUN/mvn-kafka-broker.log" 2>&1 \
    || { tail -n 40 "$RUN/mvn-kafka-broker.log"; die "resolving kafka_2.13/kafka-tools $KAFKA_VERSION failed; log: $RUN/mvn-kafka-broker.log"; }
fi
KAFKA_CP=$(cat "$KAFKA_CP_FILE")
for jar in $(tr ':' ' ' <<< "$KAFKA_CP"); do
  [[ -f "$jar" ]] || die "$jar (on the Kafka classpath) is missing; delete $KAFKA_CP_FILE and rerun"
done

# As bin/kafka-run-class.sh and kafka-server-start.sh of 4.1 start them: G1 with Kafka's flags,
# a 1 GiB broker heap, 512 MiB for the perf tools (kafka-producer-perf-test.sh & co).
KAFKA_JVM_PERF=(-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true)
KAFKA_BROKER_HEAP=(-Xms1G -Xmx1G)
TOOL_HEAP=(-Xmx512M)
# Tools log WARN and above to stderr (the distribution's tools-log4j2.yaml).
cat > "$RUN/tools-log4j2.properties" <<'EOF'
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
EOF

# A Kafka tool: "${TOOL_JAVA[@]}" CLASS ARGS...
TOOL_JAVA=(java "${TOOL_HEAP[@]}" "${KAFKA_JVM_PERF[@]}" -Dlog4j2.configurationFile="$RUN/tools-log4j2.properties"
  -cp "$KAFKA_CP")

# ---------------------------------------------------------------- 2. brokers

BROKER_PID="" BOOTSTRAP=""

start_kafka() { # dir
  local dir=$1 cid
  read -r _ _ _ KPORT CPORT < <(python3 "$PY" ports)
  BOOTSTRAP="127.0.0.1:$KPORT"
  cat > "$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$KPORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KPORT,CONTROLLER://127.0.0.1:$CPORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=4
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.cleaner.backoff.ms=$COMPACT_INTERVAL_MS
EOF
  cat > "$dir/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $dir/kafka-server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
appender.cleaner.type = File
appender.cleaner.name = CLEANER
appender.cleaner.fileName = $dir/log-cleaner.log
appender.cleaner.layout.type = PatternLayout
appender.cleaner.layout.pattern = [%d] %p %m (%c)%n
logger.cleaner.name = org.apache.kafka.storage.internals.log.LogCleaner\$CleanerThread
logger.cleaner.level = INFO
logger.cleaner.appenderRef.file.ref = CLEANER
logger.cleaning.name = org.apache.kafka.storage.internals.log.Cleaner
logger.cleaning.level = INFO
logger.cleaning.appenderRef.file.ref = CLEANER
EOF
  cid=$(python3 "$PY" cluster-id)
  "${TOOL_JAVA[@]}" kafka.tools.StorageTool format --standalone -t "$cid" -c "$dir/server.properties" \
    > "$dir/kafka-format.log" 2>&1 \
    || { tail -n 20 "$dir/kafka-format.log"; die "kafka.tools.StorageTool format failed; log: $dir/kafka-format.log"; }
  start "Kafka broker" "$dir/kafka.out" java "${KAFKA_BROKER_HEAP[@]}" "${KAFKA_JVM_PERF[@]}" \
    -Xlog:gc*:file="$dir/kafka-gc.log":time,tags -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -Dkafka.logs.dir="$dir" -cp "$KAFKA_CP" kafka.Kafka "$dir/server.properties"
  BROKER_PID=$LAST_PID
  await_port "Kafka broker" "$BROKER_PID" "$KPORT" 90 "$dir/kafka-server.log"
  log "  Kafka $KAFKA_VERSION up: pid $BROKER_PID, bootstrap $BOOTSTRAP, controller :$CPORT, data $dir/data"
}

start_ferrocket() { # dir
  local dir=$1 ns br kp
  read -r ns br kp _ _ < <(python3 "$PY" ports)
  BOOTSTRAP="127.0.0.1:$kp"
  mkdir -p "$dir/home"
  cat > "$dir/broker.conf" <<EOF
brokerClusterName=BenchCluster
brokerName=bench-broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$br
storePathRootDir=$dir/data
flushDiskType=ASYNC_FLUSH
kafkaListenPort=$kp
kafkaAdvertisedAddress=127.0.0.1:$kp
kafkaNumPartitions=4
kafkaGroupInitialRebalanceDelayMs=0
compactionScheduleInternal=$COMPACT_INTERVAL_MS
EOF
  printf 'listenPort=%s\nkvConfigPath=%s\nconfigStorePath=%s\n' "$ns" "$dir/home/kvConfig.json" \
    "$dir/home/namesrv.properties" > "$dir/namesrv.conf"
  start "ferrocket" "$dir/ferrocket.log" env HOME="$dir/home" "$FERROCKET" standalone \
    -c "$dir/broker.conf" --namesrv-config "$dir/namesrv.conf"
  BROKER_PID=$LAST_PID
  await_port "ferrocket" "$BROKER_PID" "$kp" 60 "$dir/ferrocket.log"
  log "  ferrocket up: pid $BROKER_PID, Kafka listener $BOOTSTRAP (RocketMQ :$br, NameServer :$ns), data $dir/data"
}

# ---------------------------------------------------------------- 3. one round of one broker

# fail_tool BROKER WHAT DIR FILE...: the tool's output and the broker's last log lines, then die.
fail_tool() {
  local broker=$1 what=$2 dir=$3 f
  shift 3
  for f in "$@"; do
    [[ -s $f ]] || continue
    log "  last lines of $f:"
    tail -n 25 "$f" | sed 's/^/    /'
  done
  if [[ $broker == ferrocket ]]; then
    log "  ferrocket's WARN/ERROR lines ($dir/ferrocket.log):"
    { grep -E '^[^ ]+ +(WARN|ERROR) ' "$dir/ferrocket.log" || echo "(none)"; } | tail -n 25 | sed 's/^/    /'
  else
    log "  Kafka's WARN/ERROR lines ($dir/kafka-server.log):"
    { grep -E '\] (WARN|ERROR) ' "$dir/kafka-server.log" || echo "(none)"; } | tail -n 25 | sed 's/^/    /'
  fi
  die "$what against $broker failed (round $CUR_ROUND); logs: $dir"
}

# stderr lines of a tool that report a failed request (stack traces, client errors).
tool_errors() { # FILE
  grep -E 'Exception|ERROR|org\.apache\.kafka\.common\.errors' "$1" 2>/dev/null | head -n 5 || true
}

# warn_lines ROUND BROKER TOOL FILE: a note when a tool's client logged warnings (retries, errors it
# recovered from), with the first one.
warn_lines() {
  local n
  n=$(grep -cE '\] (WARN|ERROR) ' "$4" 2>/dev/null || true)
  [[ $n == 0 ]] || note "round $1 $2: $3 logged $n WARN/ERROR lines, first: $(grep -m1 -E '\] (WARN|ERROR) ' "$4" | cut -c1-300) ($4)"
}

# run_tool NAME kafka.py-run-args...: `kafka.py run` in the background, waited for, so that a
# SIGTERM/SIGINT to this script is handled at once (cleanup stops the tool too); sets TOOL_RC.
TOOL_RC=0
run_tool() {
  local name=$1 pid
  shift
  python3 "$PY" run "$@" &
  pid=$!
  PROC_NAME[$pid]=$name
  TOOL_RC=0
  wait "$pid" || TOOL_RC=$?
  unset "PROC_NAME[$pid]"
}

# produce ROUND BROKER DIR NAME WHAT TOPIC [TOOL-ARGS...]: ProducerPerformance of $RECORDS records of
# 1024 bytes (acks=all, linger.ms=5, unthrottled) to TOPIC, output in DIR/NAME.{out,err,json}; fails
# the run unless it exits 0, logs no failed send and reports all $RECORDS records acknowledged.
produce() {
  local round=$1 broker=$2 dir=$3 name=$4 what=$5 topic=$6 rc errs parsed sent
  shift 6
  run_tool "$what" --pid "$BROKER_PID" --log "$dir/$name.out" --out "$dir/$name.json" \
    --timeout "$(( 300 + RECORDS / 1000 ))" -- \
    "${TOOL_JAVA[@]}" org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$RECORDS" \
    --record-size 1024 --throughput -1 "$@" --producer-props bootstrap.servers="$BOOTSTRAP" acks=all linger.ms=5 \
    2> "$dir/$name.err"
  rc=$TOOL_RC
  [[ $rc == 0 ]] || fail_tool "$broker" "$what (exit $rc$([[ $rc == 124 ]] && echo ', timed out'))" \
    "$dir" "$dir/$name.out" "$dir/$name.err"
  errs=$(tool_errors "$dir/$name.err")
  [[ -z $errs ]] || fail_tool "$broker" "$what (sends failed: $(head -n 1 <<< "$errs"))" \
    "$dir" "$dir/$name.err"
  parsed=$(python3 "$PY" parse producer "$dir/$name.out" 2>&1) \
    || fail_tool "$broker" "$what (output not understood: $parsed)" "$dir" "$dir/$name.out"
  sent=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["sent"])' "$parsed")
  [[ $sent == "$RECORDS" ]] || fail_tool "$broker" "$what (acknowledged $sent of $RECORDS records)" \
    "$dir" "$dir/$name.out" "$dir/$name.err"
  warn_lines "$round" "$broker" "$what" "$dir/$name.err"
}

run_one() { # round broker
  CUR_ROUND=$1
  local broker=$2 dir="$RUN/r$1-$2" rc rss parsed
  mkdir -p "$dir"
  log "round $1/$ROUNDS: $broker"
  if [[ $broker == kafka ]]; then start_kafka "$dir"; else start_ferrocket "$dir"; fi

  local topic="perf" e2e_topic="e2e" txn_topic="txn" t
  for t in "$topic" "$e2e_topic" "$txn_topic"; do
    timeout 120 "${TOOL_JAVA[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOTSTRAP" --create --topic "$t" \
      --partitions 4 --replication-factor 1 > "$dir/create-$t.log" 2>&1 \
      || fail_tool "$broker" "TopicCommand --create --topic $t --partitions 4" "$dir" "$dir/create-$t.log"
  done
  log "  topics $topic, $e2e_topic and $txn_topic created (4 partitions, replication factor 1)"

  # ProducerPerformance: the broker's CPU over the whole run, per record acknowledged.
  log "  ProducerPerformance: $RECORDS records of 1024 bytes, acks=all, linger.ms=5, unthrottled"
  produce "$1" "$broker" "$dir" producer ProducerPerformance "$topic"

  log "  ConsumerPerformance: $RECORDS records from $topic (new group, from the earliest offset)"
  run_tool ConsumerPerformance --pid "$BROKER_PID" --log "$dir/consumer.out" --out "$dir/consumer.json" \
    --timeout "$(( 300 + RECORDS / 1000 ))" -- \
    "${TOOL_JAVA[@]}" org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$BOOTSTRAP" \
    --topic "$topic" --messages "$RECORDS" --group "perf-consumer-r$1" 2> "$dir/consumer.err"
  rc=$TOOL_RC
  [[ $rc == 0 ]] || fail_tool "$broker" "ConsumerPerformance (exit $rc$([[ $rc == 124 ]] && echo ', timed out'))" \
    "$dir" "$dir/consumer.out" "$dir/consumer.err"
  parsed=$(python3 "$PY" parse consumer "$dir/consumer.out" 2>&1) \
    || fail_tool "$broker" "ConsumerPerformance (output not understood: $parsed)" "$dir" "$dir/consumer.out" "$dir/consumer.err"
  local received
  received=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["received"])' "$parsed")
  [[ $received == "$RECORDS" ]] || fail_tool "$broker" "ConsumerPerformance (received $received of $RECORDS records)" \
    "$dir" "$dir/consumer.out" "$dir/consumer.err"
  warn_lines "$1" "$broker" ConsumerPerformance "$dir/consumer.err"

  log "  EndToEndLatency: $E2E round trips of 1024 bytes on $e2e_topic (acks=all, send then poll)"
  run_tool EndToEndLatency --pid "$BROKER_PID" --log "$dir/e2e.out" --out "$dir/e2e.json" \
    --timeout "$(( 300 + E2E / 20 ))" -- \
    "${TOOL_JAVA[@]}" org.apache.kafka.tools.EndToEndLatency "$BOOTSTRAP" "$e2e_topic" "$E2E" all 1024 \
    2> "$dir/e2e.err"
  rc=$TOOL_RC
  [[ $rc == 0 ]] || fail_tool "$broker" "EndToEndLatency (exit $rc$([[ $rc == 124 ]] && echo ', timed out'))" \
    "$dir" "$dir/e2e.out" "$dir/e2e.err"
  parsed=$(python3 "$PY" parse e2e "$dir/e2e.out" 2>&1) \
    || fail_tool "$broker" "EndToEndLatency (output not understood: $parsed)" "$dir" "$dir/e2e.out" "$dir/e2e.err"
  warn_lines "$1" "$broker" EndToEndLatency "$dir/e2e.err"

  rss=$(python3 "$BPY" rss-kb "$BROKER_PID")

  # Last, so that the runs above (and RssAnon) are measured as they always were.
  log "  ProducerPerformance, transactional: $RECORDS records of 1024 bytes to $txn_topic, a commit every ${TXN_MS} ms"
  produce "$1" "$broker" "$dir" txn "transactional ProducerPerformance" "$txn_topic" \
    --transactional-id "perf-txn-r$1" --transaction-duration-ms "$TXN_MS"
  compaction_phase "$1" "$broker" "$dir" # last of all: its own topic, cleaned with nothing else running
  python3 "$PY" row --broker "$broker" --round "$1" --dir "$dir" --records "$RECORDS" --rss-kb "$rss" \
    --txn-ms "$TXN_MS" --compact-records "$COMPACT_RECORDS" --compact-keys "$COMPACT_KEYS" >> "$ROWS"
  log "  -> $(python3 "$PY" brief "$ROWS")"

  stop "$BROKER_PID" 20
  if [[ $broker == ferrocket ]]; then
    [[ $STOP_RC == 0 ]] || note "round $1: ferrocket exited $STOP_RC on SIGTERM ($dir/ferrocket.log)"
    local n
    n=$(grep -cE '^[^ ]+ +ERROR ' "$dir/ferrocket.log" || true)
    [[ $n == 0 ]] || note "round $1: $n ERROR lines in ferrocket's log, first: $(grep -m1 -E '^[^ ]+ +ERROR ' "$dir/ferrocket.log")"
    n=$(grep -cE '^[^ ]+ +WARN ' "$dir/ferrocket.log" || true)
    [[ $n == 0 ]] || note "round $1: $n WARN lines in ferrocket's log, first: $(grep -m1 -E '^[^ ]+ +WARN ' "$dir/ferrocket.log")"
  fi
  [[ $KEEP_DATA == 1 ]] || rm -rf "$dir/data"
}

# ---------------------------------------------------------------- 4. the rounds

compaction_setup
log "plan: $ROUNDS round(s) of [$BROKERS], alternating; $RECORDS records produced and consumed, $E2E EndToEndLatency round trips, $RECORDS records produced in transactions (a commit every $TXN_MS ms), $COMPACT_RECORDS keyed records ($COMPACT_KEYS keys) compacted"
for ((r = 1; r <= ROUNDS; r++)); do
  order=$BROKERS
  (( r % 2 == 0 )) && order=$(tr ' ' '\n' <<< "$BROKERS" | tac | tr '\n' ' ')
  for b in $order; do
    run_one "$r" "$b"
  done
done

# ---------------------------------------------------------------- 5. report

ELAPSED=$(( $(date +%s) - STARTED_AT ))
PLAN="Each round starts every broker afresh (new data directory), alternating which goes first, creates \
three topics of 4 partitions with \`TopicCommand\` (Kafka's \`kafka-topics.sh\`), then runs Kafka $KAFKA_VERSION's \
tools from the same classpath: \`ProducerPerformance --topic perf --num-records $RECORDS --record-size 1024 \
--throughput -1 --producer-props bootstrap.servers=... acks=all linger.ms=5\` (idempotent by default), \
\`ConsumerPerformance --topic perf --messages $RECORDS\` (a new group, classic protocol), \
\`EndToEndLatency <bootstrap> e2e $E2E all 1024\` (send, wait for the ack, poll it back, one at a time), \
then on a third topic \`ProducerPerformance --topic txn\` as the first, plus \`--transactional-id perf-txn-r<round> \
--transaction-duration-ms $TXN_MS\` (a transaction committed every $TXN_MS ms; RssAnon is read before it). \
Kafka: KRaft single node (\`StorageTool format --standalone\`, \`kafka.Kafka server.properties\`: \
process.roles=broker,controller, num.partitions=4, replication factors 1, \
group.initial.rebalance.delay.ms=0, no per-message fsync as by default), JVM as \`kafka-server-start.sh\` \
(-Xms1G -Xmx1G, G1 MaxGCPauseMillis=20). ferrocket: \`ferrocket standalone\` (NameServer and broker in one \
process) with kafkaListenPort, kafkaNumPartitions=4, kafkaGroupInitialRebalanceDelayMs=0, flushDiskType=ASYNC_FLUSH. Tools: -Xmx512M, as the \
distribution's scripts. $(compaction_plan) $ROUNDS round(s)."
export META_DATE META_CMD META_UNAME META_NPROC META_CPU META_MEM META_JAVA META_FERROCKET META_GIT
export META_LOAD_BEFORE META_LOAD_AFTER META_DURATION META_RUN META_PLAN META_NOTES META_KAFKA
META_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
META_CMD=$COMMAND
META_UNAME=$(uname -a)
META_NPROC=$(nproc)
META_CPU=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
META_MEM=$(awk '/^MemTotal/ {printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo)
META_JAVA=$(java -version 2>&1 | head -n 1)
META_FERROCKET=$([[ -x "$RUN/ferrocket" ]] && echo "$("$RUN/ferrocket" --version), binary built $FERROCKET_BUILT" || echo 'not run')
META_GIT=$GIT
META_KAFKA=$KAFKA_VERSION
META_LOAD_BEFORE=$LOAD_BEFORE
META_LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
META_DURATION="$((ELAPSED / 60)) min $((ELAPSED % 60)) s"
META_RUN=$RUN
META_PLAN=$PLAN
META_NOTES=$(cat "$NOTES")
python3 - "$RUN/meta.json" <<'EOF'
import json, os, sys
e = os.environ
keys = {"date": "DATE", "command": "CMD", "uname": "UNAME", "nproc": "NPROC", "cpu_model": "CPU",
        "mem": "MEM", "java": "JAVA", "ferrocket_version": "FERROCKET", "git": "GIT", "kafka_version": "KAFKA",
        "load_before": "LOAD_BEFORE", "load_after": "LOAD_AFTER", "duration": "DURATION", "run_dir": "RUN",
        "plan": "PLAN"}
meta = {k: e.get("META_" + v, "") for k, v in keys.items()}
meta["notes"] = [l for l in e.get("META_NOTES", "").splitlines() if l.strip()]
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF

log "done in $META_DURATION; medians over $ROUNDS round(s):"
echo
if [[ $RESULTS == none ]]; then
  python3 "$PY" report --rows "$ROWS" --meta "$RUN/meta.json" | tee "$RUN/summary.md"
else
  python3 "$PY" report --rows "$ROWS" --meta "$RUN/meta.json" --markdown "$RESULTS" | tee "$RUN/summary.md"
fi
echo
if [[ -s "$NOTES" ]]; then
  log "notes:"
  sed 's/^/  - /' "$NOTES"
fi
[[ $RESULTS == none ]] || log "appended to $RESULTS"
log "per-round JSON: $ROWS; logs: $RUN"
