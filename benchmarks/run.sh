#!/usr/bin/env bash
# Side-by-side benchmark: the Java RocketMQ 5.3.3 NameServer + broker (Maven Central jars) against
# ferrocket, same broker.conf, same official Java client load generator, alternating rounds with
# fresh stores, broker CPU sampled from /proc. See benchmarks/README.md.
#
#   benchmarks/run.sh [--rounds N] [--seconds S] [--quick] [--threads T] [--warmup S]
#                     [--scenarios "ASYNC_FLUSH SYNC_FLUSH"] [--results FILE|none] [--keep-stores]
#                     [--wait-idle SECONDS] [--check]
#   --check: exit 1 when anything failed (a load generator, a broker's shutdown, an ERROR line);
#            CI runs `--quick --check`.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PY="$HERE/lib/bench.py"
COMMAND="benchmarks/run.sh${*:+ $*}"

ROUNDS=5
SECS=20
WARMUP=5
THREADS=32
SCENARIOS="ASYNC_FLUSH SYNC_FLUSH"
RESULTS=""
QUICK=0
KEEP_STORES=0
WAIT_IDLE=0
CHECK=0
FAILED=0
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS=${2:?--rounds needs a value}; shift 2 ;;
    --seconds) SECS=${2:?--seconds needs a value}; shift 2 ;;
    --warmup) WARMUP=${2:?--warmup needs a value}; shift 2 ;;
    --threads) THREADS=${2:?--threads needs a value}; shift 2 ;;
    --scenarios) SCENARIOS=${2:?--scenarios needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --check) CHECK=1; shift ;;
    --keep-stores) KEEP_STORES=1; shift ;;
    --wait-idle) WAIT_IDLE=${2:?--wait-idle needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
for n in "$ROUNDS" "$SECS" "$WARMUP" "$THREADS" "$WAIT_IDLE"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "not a whole number: $n" >&2; exit 2; }
done
if [[ $QUICK == 1 ]]; then
  ROUNDS=1 SECS=5 WARMUP=1
  # Five-second numbers prove the machinery works; they are not results worth keeping.
  RESULTS=${RESULTS:-none}
fi
RESULTS=${RESULTS:-$HERE/RESULTS.md}
CONSUME_TIMEOUT=$(( QUICK == 1 ? 60 : 180 ))
STOP_GRACE=20
JAVA_STOP_GRACE=$(( QUICK == 1 ? 2 : 10 ))

FERROCKET="$ROOT/target/release/ferrocket"
LOADGEN_JAR="$HERE/java-loadgen/target/loadgen.jar"
JAVA_CP_FILE="$HERE/java-broker/target/classpath.txt"
TCK=$(getconf CLK_TCK)

RUN=$(mktemp -d "${TMPDIR:-/tmp}/ferrocket-bench.XXXXXX")
RESULTS_JSONL="$RUN/results.jsonl"
NOTES="$RUN/notes.txt"
: > "$NOTES"
STARTED_AT=$(date +%s)

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
note() { log "note: $*"; printf '%s\n' "$*" >> "$NOTES"; }
# A note that something did not work (not an observation): fails the run under --check.
fail() { FAILED=1; note "$@"; }
die() {
  log "FAILED: $*"
  log "logs are in $RUN"
  exit 1
}

# ---------------------------------------------------------------- processes

declare -A PROC_NAME=()   # pid -> what it is, for every process this script started
LAST_PID=""

# start NAME LOG CMD... : runs CMD in the background with its output in LOG; sets LAST_PID.
start() {
  local name=$1 logf=$2
  shift 2
  "$@" > "$logf" 2>&1 &
  LAST_PID=$!
  PROC_NAME[$LAST_PID]=$name
}

# stop PID GRACE_S : SIGTERM, SIGKILL after GRACE_S; sets STOP_RC to the exit status.
# (Not called in $(...): a subshell can neither wait for nor forget the parent's children.)
STOP_RC=0
stop() {
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
      # The Java broker's shutdown hook often takes longer; its store is thrown away anyway.
      [[ ${PROC_NAME[$pid]} == Java* ]] || note "${PROC_NAME[$pid]} (pid $pid) ignored SIGTERM for ${grace} s; sent SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || STOP_RC=$?
  unset "PROC_NAME[$pid]"
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local pid i
  # Everything still running gets SIGTERM at once, SIGKILL after 5 s.
  for pid in "${!PROC_NAME[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for ((i = 0; i < 50; i++)); do
    local alive=0
    for pid in "${!PROC_NAME[@]}"; do
      kill -0 "$pid" 2>/dev/null && alive=1
    done
    [[ $alive == 1 ]] || break
    sleep 0.1
  done
  for pid in "${!PROC_NAME[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ $KEEP_STORES == 0 ]]; then
    rm -rf "$RUN"/*/store 2>/dev/null || true
  fi
  # The binary's copy (~100 MB with debug info) only had to stay the same during the run.
  rm -f "$RUN/ferrocket"
  if [[ $rc != 0 ]]; then
    log "exit $rc; logs are in $RUN"
  elif [[ $QUICK == 1 && $RESULTS == none ]]; then
    rm -rf "$RUN" # a check run (CI): nothing in it is kept
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# await_port NAME PID PORT SECONDS LOG...: until PORT accepts, or fail naming NAME and its logs.
await_port() {
  local name=$1 pid=$2 port=$3 secs=$4 i
  shift 4
  for ((i = 0; i < secs; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$1" 2>/dev/null | sed 's/^/    /'
      die "$name exited before opening port $port; log: $*"
    fi
    python3 "$PY" wait-port "$port" 1 && return 0
  done
  tail -n 30 "$1" 2>/dev/null | sed 's/^/    /'
  die "$name did not open port $port within $secs s; log: $*"
}

# ---------------------------------------------------------------- 1. build

log "run directory: $RUN"
log "load average before start: $(cut -d' ' -f1-3 /proc/loadavg)"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

log "building ferrocket (cargo build --release)"
( cd "$ROOT" && flock /tmp/ferrocket-cargo.lock cargo build --release ) > "$RUN/cargo-build.log" 2>&1 \
  || { tail -n 40 "$RUN/cargo-build.log"; die "cargo build --release failed; log: $RUN/cargo-build.log"; }
[[ -x "$FERROCKET" ]] || die "no binary at $FERROCKET after cargo build"
# A private copy: someone else's `cargo build` must not swap the binary between rounds.
cp "$FERROCKET" "$RUN/ferrocket"
FERROCKET="$RUN/ferrocket"

# up_to_date TARGET SOURCES...: TARGET exists and is newer than every file under SOURCES.
up_to_date() {
  local target=$1
  shift
  [[ -s "$target" ]] && [[ -z "$(find "$@" -newer "$target" -type f -print -quit)" ]]
}

if up_to_date "$LOADGEN_JAR" "$HERE/java-loadgen/pom.xml" "$HERE/java-loadgen/src"; then
  log "Java load generator is up to date ($LOADGEN_JAR)"
else
  log "building the Java load generator (mvn package in benchmarks/java-loadgen)"
  mvn -B -q -f "$HERE/java-loadgen/pom.xml" package > "$RUN/mvn-loadgen.log" 2>&1 \
    || { tail -n 40 "$RUN/mvn-loadgen.log"; die "mvn package of java-loadgen failed; log: $RUN/mvn-loadgen.log"; }
fi

if up_to_date "$JAVA_CP_FILE" "$HERE/java-broker/pom.xml"; then
  log "Java NameServer and broker 5.3.3 already resolved ($JAVA_CP_FILE)"
else
  log "resolving the Java NameServer and broker 5.3.3 from Maven Central (benchmarks/java-broker)"
  mvn -B -q -f "$HERE/java-broker/pom.xml" dependency:build-classpath -Dmdep.outputFile="$JAVA_CP_FILE" \
    > "$RUN/mvn-java-broker.log" 2>&1 \
    || { tail -n 40 "$RUN/mvn-java-broker.log"; die "resolving rocketmq-namesrv/broker 5.3.3 failed; log: $RUN/mvn-java-broker.log"; }
fi
JAVA_CP=$(cat "$JAVA_CP_FILE")
for jar in $(tr ':' ' ' <<< "$JAVA_CP"); do
  [[ -f "$jar" ]] || die "$jar (on the Java broker's classpath) is missing; delete $JAVA_CP_FILE and rerun"
done

HAVE_BENCH=""
if "$FERROCKET" bench produce --help > "$RUN/ferrocket-bench-help.txt" 2>&1 \
   && "$FERROCKET" bench consume --help >> "$RUN/ferrocket-bench-help.txt" 2>&1; then
  HAVE_BENCH=1
  BENCH_NOTE=""
  log "ferrocket bench: present, its rows will be measured"
else
  BENCH_NOTE="not measured: this ferrocket build has no \`bench\` subcommand yet"
  fail "ferrocket bench rows skipped: \`$FERROCKET bench --help\` fails (the subcommand is not in this build)"
fi

# ---------------------------------------------------------------- 2./3. brokers

JAVA_OPENS=(--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED)
# Shaped like distribution/bin/runserver.sh and runbroker.sh of 5.3.3 (G1 with their flags,
# AlwaysPreTouch for the broker), heaps scaled down from 4g/8g to fit a 2-core machine.
JAVA_GC=(-XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25
  -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow
  -XX:-UseLargePages)
JAVA_NAMESRV_OPTS=(-server -Xms256m -Xmx256m -Xmn128m -XX:MetaspaceSize=128m -XX:MaxMetaspaceSize=320m)
JAVA_BROKER_OPTS=(-server -Xms1g -Xmx1g -XX:+AlwaysPreTouch -XX:MaxDirectMemorySize=2g)
LOADGEN_OPTS=(-Xms1g -Xmx1g -XX:+UseG1GC)

BROKER_CONF_TEMPLATE='brokerClusterName=BenchCluster
brokerName=bench-broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=${BROKER_PORT}
storePathRootDir=${ROUND_DIR}/store
mappedFileSizeCommitLog=1073741824
flushDiskType=${FLUSH}
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
defaultTopicQueueNums=8'

write_confs() { # dir flush namesrv_port broker_port
  local dir=$1
  ROUND_DIR=$dir FLUSH=$2 NAMESRV_PORT=$3 BROKER_PORT=$4 python3 -c '
import os, string, sys
print(string.Template(sys.argv[1]).substitute(os.environ))' "$BROKER_CONF_TEMPLATE" > "$dir/broker.conf"
  # metricsPromExporterPort: ferrocket's NameServer serves metrics too, and on the default port
  # it kept the broker from serving its own (Java's NameServer ignores the key).
  printf 'listenPort=%s\nkvConfigPath=%s\nconfigStorePath=%s\nmetricsPromExporterPort=%s\n' "$3" \
    "$dir/home/namesrv/kvConfig.json" "$dir/home/namesrv/namesrv.properties" "$(( $3 + 1 ))" > "$dir/namesrv.conf"
}

NS_PID="" BROKER_PID="" NS_PORT="" BR_PORT=""
start_java() { # dir
  local dir=$1
  mkdir -p "$dir/home"
  start "Java NameServer" "$dir/java-namesrv.out" env ROCKETMQ_HOME="$dir/home" java \
    "${JAVA_NAMESRV_OPTS[@]}" "${JAVA_GC[@]}" "${JAVA_OPENS[@]}" -Duser.home="$dir/home" \
    -Drocketmq.home.dir="$dir/home" -cp "$JAVA_CP" org.apache.rocketmq.namesrv.NamesrvStartup \
    -c "$dir/namesrv.conf"
  NS_PID=$LAST_PID
  await_port "Java NameServer" "$NS_PID" "$NS_PORT" 60 "$dir/java-namesrv.out" "$dir/home/logs/rocketmqlogs/namesrv.log"
  start "Java broker" "$dir/java-broker.out" env ROCKETMQ_HOME="$dir/home" java \
    "${JAVA_BROKER_OPTS[@]}" "${JAVA_GC[@]}" "${JAVA_OPENS[@]}" \
    -Xlog:gc*:file="$dir/java-broker-gc.log":time,uptime -Duser.home="$dir/home" \
    -Drocketmq.home.dir="$dir/home" -cp "$JAVA_CP" org.apache.rocketmq.broker.BrokerStartup \
    -c "$dir/broker.conf" -n "127.0.0.1:$NS_PORT"
  BROKER_PID=$LAST_PID
  await_port "Java broker" "$BROKER_PID" "$BR_PORT" 60 "$dir/java-broker.out" "$dir/home/logs/rocketmqlogs/broker.log"
}

start_ferrocket() { # dir
  local dir=$1
  mkdir -p "$dir/home"
  start "ferrocket namesrv" "$dir/ferrocket-namesrv.log" env HOME="$dir/home" "$FERROCKET" namesrv \
    -c "$dir/namesrv.conf"
  NS_PID=$LAST_PID
  await_port "ferrocket namesrv" "$NS_PID" "$NS_PORT" 60 "$dir/ferrocket-namesrv.log"
  start "ferrocket broker" "$dir/ferrocket-broker.log" env HOME="$dir/home" "$FERROCKET" broker \
    -c "$dir/broker.conf" -n "127.0.0.1:$NS_PORT"
  BROKER_PID=$LAST_PID
  await_port "ferrocket broker" "$BROKER_PID" "$BR_PORT" 60 "$dir/ferrocket-broker.log"
}

loadgen() { # dir mode args... (stdout: JSON line)
  local dir=$1
  shift
  java "${LOADGEN_OPTS[@]}" -Duser.home="$dir/client-home" -jar "$LOADGEN_JAR" "$@"
}

create_topics() { # dir topic[,topic...]
  loadgen "$1" create-topic --namesrv "127.0.0.1:$NS_PORT" --topic "$2" --queues 8 --timeout-s 90 \
    > "$1/create-topic.json" 2> "$1/create-topic.log" \
    || die "creating topic(s) $2 (8 queues) on the $CUR_BROKER broker failed (not registered with its NameServer?); log: $1/create-topic.log"
}

record() { # dir phase driver jsonfile [rss]
  python3 "$PY" record --results "$RESULTS_JSONL" --scenario "$CUR_SCENARIO" --broker "$CUR_BROKER" \
    --driver "$3" --round "$CUR_ROUND" --phase "$2" --json "$4" ${5:+--rss-kb "$5"}
}

# ---------------------------------------------------------------- 4./5. one round

slow_start() { # json what: a note when the first message took more than 5 s
  local first
  first=$(python3 "$PY" field "$1" first_message_ms 2>/dev/null || true)
  if [[ -n "$first" ]] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 5000 else 1)" "$first"; then
    note "$CUR_SCENARIO round $CUR_ROUND $CUR_BROKER: $2 got its first message only after $first ms"
  fi
}

run_round() { # scenario round broker
  CUR_SCENARIO=$1 CUR_ROUND=$2 CUR_BROKER=$3
  local dir="$RUN/$1-r$2-$3" rc rss
  mkdir -p "$dir/client-home"
  read -r NS_PORT BR_PORT < <(python3 "$PY" ports)
  write_confs "$dir" "$1" "$NS_PORT" "$BR_PORT"
  if (( WAIT_IDLE > 0 )); then
    local waited cores
    read -r waited cores < <(python3 "$PY" wait-idle "$WAIT_IDLE" 0.3)
    if (( waited > 2 )); then
      log "$1 round $2/$ROUNDS: waited $waited s for the machine to calm down (now $cores cores busy)"
    fi
  fi
  log "$1 round $2/$ROUNDS: starting $3 (NameServer :$NS_PORT, broker :$BR_PORT, store $dir/store)"
  if [[ $3 == java ]]; then start_java "$dir"; else start_ferrocket "$dir"; fi

  # Java client load generator: produce, then drain the same topic with a push consumer.
  local t1="BenchJava_$1_r$2" t2="BenchNative_$1_r$2" t3="BenchBatch_$1_r$2"
  create_topics "$dir" "$t1${HAVE_BENCH:+,$t2,$t3}"
  log "  java-loadgen produce: $THREADS threads, 1 KiB sync sends, ${WARMUP} s warm-up + ${SECS} s"
  loadgen "$dir" produce --namesrv "127.0.0.1:$NS_PORT" --topic "$t1" --threads "$THREADS" --size 1024 \
    --seconds "$SECS" --warmup-s "$WARMUP" --cpu-pid "$BROKER_PID" --clk-tck "$TCK" \
    > "$dir/loadgen-produce.json" 2> "$dir/loadgen-produce.log" \
    || die "java-loadgen produce against the $3 broker failed; log: $dir/loadgen-produce.log"
  rss=$(python3 "$PY" rss-kb "$BROKER_PID")
  log "  -> $(record "$dir" produce java-loadgen "$dir/loadgen-produce.json" "$rss")"
  local total
  total=$(python3 "$PY" field "$dir/loadgen-produce.json" total_sent)
  log "  java-loadgen consume: push consumer draining $total messages"
  rc=0
  loadgen "$dir" consume --namesrv "127.0.0.1:$NS_PORT" --topic "$t1" --group "bench_java_consumer" \
    --count "$total" --timeout-s "$CONSUME_TIMEOUT" --cpu-pid "$BROKER_PID" --clk-tck "$TCK" \
    > "$dir/loadgen-consume.json" 2> "$dir/loadgen-consume.log" || rc=$?
  if [[ -s "$dir/loadgen-consume.json" ]]; then
    log "  -> $(record "$dir" consume java-loadgen "$dir/loadgen-consume.json")"
  fi
  slow_start "$dir/loadgen-consume.json" "java-loadgen consume"
  [[ $rc == 0 ]] || fail "$1 round $2 $3: the push consumer did not receive all $total messages within ${CONSUME_TIMEOUT} s (exit $rc); log: $dir/loadgen-consume.log"

  # ferrocket's own load generator against the same broker, on a topic of its own.
  if [[ -n $HAVE_BENCH ]]; then
    log "  ferrocket bench produce: 1 KiB, 256 in flight, 4 connections, ${SECS} s"
    rc=0
    python3 "$PY" measure --pid "$BROKER_PID" --out "$dir/bench-produce.json" -- \
      "$FERROCKET" bench produce --namesrv "127.0.0.1:$NS_PORT" --topic "$t2" --size 1024 \
      --seconds "$SECS" --in-flight 256 --connections 4 --json 2> "$dir/bench-produce.log" || rc=$?
    if [[ $rc == 0 ]]; then
      rss=$(python3 "$PY" rss-kb "$BROKER_PID")
      log "  -> $(record "$dir" produce ferrocket-bench "$dir/bench-produce.json" "$rss")"
      local sent
      sent=$(python3 "$PY" field "$dir/bench-produce.json" sent)
      log "  ferrocket bench consume: $sent messages"
      rc=0
      python3 "$PY" measure --pid "$BROKER_PID" --out "$dir/bench-consume.json" -- \
        timeout "$CONSUME_TIMEOUT" "$FERROCKET" bench consume --namesrv "127.0.0.1:$NS_PORT" \
        --topic "$t2" --group "bench_native_consumer" --count "$sent" --json \
        2> "$dir/bench-consume.log" || rc=$?
      if [[ $rc == 0 ]]; then
        log "  -> $(record "$dir" consume ferrocket-bench "$dir/bench-consume.json")"
        slow_start "$dir/bench-consume.json" "ferrocket bench consume"
      else
        fail "$1 round $2 $3: ferrocket bench consume failed (exit $rc); log: $dir/bench-consume.log"
      fi
    else
      fail "$1 round $2 $3: ferrocket bench produce failed (exit $rc); log: $dir/bench-produce.log"
    fi
    # Batches (SEND_BATCH_MESSAGE): what the broker does when the client is not the bottleneck.
    log "  ferrocket bench produce --send batch: 32 x 1 KiB per request, 64 requests in flight, 4 connections, ${SECS} s"
    rc=0
    python3 "$PY" measure --pid "$BROKER_PID" --out "$dir/bench-batch.json" -- \
      "$FERROCKET" bench produce --namesrv "127.0.0.1:$NS_PORT" --topic "$t3" --size 1024 \
      --seconds "$SECS" --in-flight 64 --connections 4 --send batch --batch 32 --json \
      2> "$dir/bench-batch.log" || rc=$?
    if [[ $rc == 0 ]]; then
      rss=$(python3 "$PY" rss-kb "$BROKER_PID")
      log "  -> $(record "$dir" produce ferrocket-bench-batch "$dir/bench-batch.json" "$rss")"
    else
      fail "$1 round $2 $3: ferrocket bench produce --send batch failed (exit $rc); log: $dir/bench-batch.log"
    fi
  fi

  stop "$BROKER_PID" "$([[ $3 == java ]] && echo "$JAVA_STOP_GRACE" || echo "$STOP_GRACE")"
  rc=$STOP_RC
  local nrc
  stop "$NS_PID" "$([[ $3 == java ]] && echo "$JAVA_STOP_GRACE" || echo "$STOP_GRACE")"
  nrc=$STOP_RC
  if [[ $3 == ferrocket ]]; then
    [[ $rc == 0 && $nrc == 0 ]] || fail "$1 round $2: ferrocket broker exited $rc, namesrv $nrc on SIGTERM"
    local f n
    for f in "$dir"/ferrocket-*.log; do
      n=$(grep -cE '^[^ ]+ +ERROR ' "$f" || true)
      [[ $n == 0 ]] || fail "$1 round $2: $n ERROR lines in $f, first: $(grep -m1 -E '^[^ ]+ +ERROR ' "$f")"
      n=$(grep -cE '^[^ ]+ +WARN ' "$f" || true)
      [[ $n == 0 ]] || note "$1 round $2: $n WARN lines in $f, first: $(grep -m1 -E '^[^ ]+ +WARN ' "$f")"
    done
  fi
  [[ $KEEP_STORES == 1 ]] || rm -rf "$dir/store"
}

# ---------------------------------------------------------------- the rounds

log "plan: scenarios [$SCENARIOS], $ROUNDS round(s) each, ${SECS} s measured (+${WARMUP} s warm-up), $THREADS client threads"
PAIR=0
for sc in $SCENARIOS; do
  case $sc in ASYNC_FLUSH|SYNC_FLUSH) ;; *) die "unknown scenario $sc (ASYNC_FLUSH or SYNC_FLUSH)" ;; esac
  for ((r = 1; r <= ROUNDS; r++)); do
    if (( PAIR % 2 == 0 )); then order="java ferrocket"; else order="ferrocket java"; fi
    PAIR=$((PAIR + 1))
    for b in $order; do
      run_round "$sc" "$r" "$b"
    done
  done
done

# ---------------------------------------------------------------- 6. report

ELAPSED=$(( $(date +%s) - STARTED_AT ))
export META_DATE META_CMD META_UNAME META_NPROC META_CPU META_MEM META_JAVA META_FERROCKET META_GIT
export META_PARAMS META_LOAD_BEFORE META_LOAD_AFTER META_DURATION META_RUN META_BENCH_NOTE META_NOTES META_CONF
META_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
META_CMD=$COMMAND
META_UNAME=$(uname -a)
META_NPROC=$(nproc)
META_CPU=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
META_MEM=$(awk '/^MemTotal/ {printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo)
META_JAVA=$(java -version 2>&1 | head -n 1)
META_FERROCKET=$("$FERROCKET" --version 2>/dev/null || echo '?')
META_GIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')
if [[ -n "$(cd "$ROOT" && git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]]; then
  META_GIT="$META_GIT + uncommitted changes in src/"
fi
META_LOAD_BEFORE=$LOAD_BEFORE
META_PARAMS="$ROUNDS round(s), ${SECS} s windows, ${WARMUP} s Java warm-up, $THREADS Java client threads"
META_LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
META_DURATION="$((ELAPSED / 60)) min $((ELAPSED % 60)) s"
META_RUN=$RUN
META_BENCH_NOTE=${BENCH_NOTE:-}
META_NOTES=$(cat "$NOTES")
META_CONF=$BROKER_CONF_TEMPLATE
python3 - "$RUN/meta.json" <<'EOF'
import json, os, sys
e = os.environ
meta = {k: e.get("META_" + v, "") for k, v in {
    "date": "DATE", "command": "CMD", "uname": "UNAME", "nproc": "NPROC", "cpu_model": "CPU",
    "mem": "MEM", "java": "JAVA", "ferrocket_version": "FERROCKET", "git": "GIT",
    "load_before": "LOAD_BEFORE", "load_after": "LOAD_AFTER", "duration": "DURATION",
    "run_dir": "RUN", "params": "PARAMS", "bench_note": "BENCH_NOTE", "broker_conf": "CONF"}.items()}
meta["notes"] = [l for l in e.get("META_NOTES", "").splitlines() if l.strip()]
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF

log "done in $META_DURATION; medians over $ROUNDS round(s):"
echo
if [[ $RESULTS == none ]]; then
  python3 "$PY" report --results "$RESULTS_JSONL" --meta "$RUN/meta.json" | tee "$RUN/summary.md"
else
  python3 "$PY" report --results "$RESULTS_JSONL" --meta "$RUN/meta.json" --markdown "$RESULTS" \
    | tee "$RUN/summary.md"
fi
echo
if [[ -s "$NOTES" ]]; then
  log "notes:"
  sed 's/^/  - /' "$NOTES"
fi
[[ $RESULTS == none ]] || log "appended to $RESULTS"
if [[ $QUICK == 1 && $RESULTS == none && ! ($CHECK == 1 && $FAILED == 1) ]]; then
  log "a check run: its directory $RUN is removed on exit (logs stay when it fails)"
else
  log "per-round JSON: $RESULTS_JSONL; logs: $RUN"
fi
if [[ $CHECK == 1 && $FAILED == 1 ]]; then
  log "FAILED (--check): see the notes above"
  exit 1
fi
