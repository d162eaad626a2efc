#!/usr/bin/env bash
# The 5.x gRPC protocol side by side: the Java NameServer + proxy 5.3.3 in local mode (the broker in
# the proxy's JVM; Maven Central jars) against ferrocket's NameServer + broker serving gRPC on
# grpcListenPort, same broker.conf, same SDK (rocketmq-client-java 5.1.0), alternating who goes
# first. Not part of CI. See benchmarks/README.md.
#
#   benchmarks/grpc.sh [--rounds N] [--seconds S] [--warmup S] [--quick] [--results FILE|none]
#                      [--keep-stores]
#   --quick: 1 round, 5 s windows, 2 s warm-up, no RESULTS.md unless --results is given (~2-3 min)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PY="$HERE/lib/grpc_bench.py"
COMMAND="benchmarks/grpc.sh${*:+ $*}"

ROUNDS=3 SECS=20 WARMUP=5 RESULTS="" QUICK=0 KEEP_STORES=0
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS=${2:?--rounds needs a value}; shift 2 ;;
    --seconds) SECS=${2:?--seconds needs a value}; shift 2 ;;
    --warmup) WARMUP=${2:?--warmup needs a value}; shift 2 ;;
    --results) RESULTS=${2:?--results needs a value}; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --keep-stores) KEEP_STORES=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
for n in "$ROUNDS" "$SECS" "$WARMUP"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "not a whole number: $n" >&2; exit 2; }
done
if [[ $QUICK == 1 ]]; then
  ROUNDS=1 SECS=5 WARMUP=2
  RESULTS=${RESULTS:-none}
fi
RESULTS=${RESULTS:-$HERE/RESULTS.md}
INVISIBLE_S=10

JAVA_CP_FILE="$HERE/java-broker/target/classpath.txt"
LOADGEN_CP_FILE="$HERE/grpc-loadgen/target/classpath.txt"
RUN=$(mktemp -d "${TMPDIR:-/tmp}/ferrocket-grpcbench.XXXXXX")
RESULTS_JSONL="$RUN/results.jsonl"
STARTED_AT=$(date +%s)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

log() { printf '[grpcbench %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { log "FAILED: $*"; log "logs are in $RUN"; exit 1; }

# ---------------------------------------------------------------- processes

declare -A PROC_NAME=()
LAST_PID=""
start() { # NAME LOG CMD...
  local name=$1 logf=$2
  shift 2
  "$@" > "$logf" 2>&1 &
  LAST_PID=$!
  PROC_NAME[$LAST_PID]=$name
}
STOP_RC=0
stop() { # PID GRACE_S (SIGTERM, then SIGKILL)
  local pid=$1 grace=$2 i
  STOP_RC=0
  [[ -n "${PROC_NAME[$pid]:-}" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || STOP_RC=$?
  unset "PROC_NAME[$pid]"
}
cleanup() {
  trap - EXIT INT TERM
  local pid
  for pid in "${!PROC_NAME[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  sleep 1
  for pid in "${!PROC_NAME[@]}"; do kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  [[ $KEEP_STORES == 1 ]] || rm -rf "$RUN"/*/store "$RUN"/*/home/store 2>/dev/null || true
  rm -f "$RUN/ferrocket"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

await_port() { # NAME PID PORT SECONDS LOG
  local i
  for ((i = 0; i < $4 * 5; i++)); do
    kill -0 "$2" 2>/dev/null || { tail -n 30 "$5"; die "$1 exited before listening on :$3; log: $5"; }
    python3 "$PY" wait-port "$3" 0.2 && return 0
  done
  tail -n 30 "$5"
  die "$1 did not listen on :$3 within $4 s; log: $5"
}

# ---------------------------------------------------------------- 1. what runs

log "run directory: $RUN"
FERROCKET_SRC=${FERROCKET_BIN:-$ROOT/target/release/ferrocket}
if [[ ! -x "$FERROCKET_SRC" ]]; then
  log "building ferrocket (release)"
  (cd "$ROOT" && flock /tmp/ferrocket-cargo.lock cargo build --release --quiet) || die "cargo build --release failed"
fi
cp "$FERROCKET_SRC" "$RUN/ferrocket"
FERROCKET="$RUN/ferrocket"

resolve() { # what pom goals... (the classpath file is target/classpath.txt beside the pom)
  local what=$1 pom=$2
  shift 2
  log "resolving $what (first run: downloads from Maven Central)"
  mkdir -p "$(dirname "$pom")/target"
  flock /tmp/ferrocket-cargo.lock mvn -B -q -f "$pom" "$@" dependency:build-classpath \
    -Dmdep.outputFile=target/classpath.txt > "$RUN/mvn-$(basename "$(dirname "$pom")").log" 2>&1 \
    || { tail -n 30 "$RUN/mvn-$(basename "$(dirname "$pom")").log"; die "resolving $what failed"; }
  touch "$(dirname "$pom")/target/classpath.txt" # the plugin keeps an unchanged file's mtime
}
[[ -s $JAVA_CP_FILE ]] || resolve "the Java NameServer/proxy 5.3.3" "$HERE/java-broker/pom.xml"
[[ -s $LOADGEN_CP_FILE && -d $HERE/grpc-loadgen/target/classes/dev
   && -z $(find "$HERE/grpc-loadgen/src" "$HERE/grpc-loadgen/pom.xml" -newer "$LOADGEN_CP_FILE") ]] \
  || resolve "the gRPC load generator (rocketmq-client-java 5.1.0)" "$HERE/grpc-loadgen/pom.xml" compile
JAVA_CP=$(cat "$JAVA_CP_FILE")
LOADGEN_CP="$HERE/grpc-loadgen/target/classes:$(cat "$LOADGEN_CP_FILE")"

JAVA_OPENS=(--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED)
JAVA_GC=(-XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25
  -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow)
JAVA_NAMESRV_OPTS=(-server -Xms256m -Xmx256m -Xmn128m -XX:MetaspaceSize=128m -XX:MaxMetaspaceSize=320m)
# As benchmarks/run.sh's broker (mqbroker --enable-proxy runs ProxyStartup through runbroker.sh),
# without AlwaysPreTouch: VmRSS then shows what the proxy+broker touched, not the heap size.
JAVA_PROXY_OPTS=(-server -Xms1g -Xmx1g -XX:MaxDirectMemorySize=2g)

# ---------------------------------------------------------------- 2. one turn

write_confs() { # dir
  local d=$1
  cat > "$d/broker.conf" <<EOF
brokerClusterName=BenchCluster
brokerName=bench-broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$BR_PORT
storePathRootDir=$d/store
mappedFileSizeCommitLog=1073741824
flushDiskType=ASYNC_FLUSH
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
defaultTopicQueueNums=8
metricsPromExporterPort=$METRICS_PORT
EOF
  printf 'listenPort=%s\nkvConfigPath=%s\nconfigStorePath=%s\nmetricsPromExporterPort=%s\n' "$NS_PORT" \
    "$d/home/namesrv/kvConfig.json" "$d/home/namesrv/namesrv.properties" "$((NS_PORT + 1))" > "$d/namesrv.conf"
}

create_topic() { # server dir topic
  local i out
  for ((i = 0; i < 30; i++)); do
    if [[ $1 == java ]]; then
      out=$(java -Duser.home="$2/home" -Drocketmq.home.dir="$2/home" -cp "$JAVA_CP" \
        org.apache.rocketmq.tools.command.MQAdminStartup updateTopic -n "127.0.0.1:$NS_PORT" \
        -c BenchCluster -t "$3" -r 8 -w 8 -a +message.type=NORMAL 2>&1 || true)
      grep -q 'success' <<< "$out" && return 0
    else
      out=$("$FERROCKET" admin -n "127.0.0.1:$NS_PORT" update-topic -c BenchCluster -t "$3" -r 8 -w 8 \
        -a +message.type=NORMAL 2>&1 || true)
      grep -q 'OK' <<< "$out" && return 0
    fi
    sleep 1 # the broker may not have registered with the NameServer yet
  done
  printf '%s\n' "$out" > "$2/create-topic-$3.log"
  die "creating topic $3 on $1 failed; last output: $2/create-topic-$3.log"
}

run_turn() { # round server
  local r=$1 s=$2 dir="$RUN/r$1-$2"
  mkdir -p "$dir/home"
  read -r NS_PORT BR_PORT GRPC_PORT REMOTING_PORT METRICS_PORT < <(python3 "$PY" ports)
  write_confs "$dir"
  log "round $r/$ROUNDS: $s (NameServer :$NS_PORT, broker :$BR_PORT, gRPC :$GRPC_PORT)"
  local ns_pid server_pid
  if [[ $s == java ]]; then
    start "Java NameServer" "$dir/namesrv.out" env ROCKETMQ_HOME="$dir/home" java "${JAVA_NAMESRV_OPTS[@]}" \
      "${JAVA_GC[@]}" "${JAVA_OPENS[@]}" -Duser.home="$dir/home" -Drocketmq.home.dir="$dir/home" \
      -cp "$JAVA_CP" org.apache.rocketmq.namesrv.NamesrvStartup -c "$dir/namesrv.conf"
    ns_pid=$LAST_PID
    await_port "Java NameServer" "$ns_pid" "$NS_PORT" 60 "$dir/namesrv.out"
    printf '{"rocketMQClusterName":"BenchCluster","namesrvAddr":"127.0.0.1:%s","grpcServerPort":%s,"remotingListenPort":%s,"brokerConfigPath":"%s"}\n' \
      "$NS_PORT" "$GRPC_PORT" "$REMOTING_PORT" "$dir/broker.conf" > "$dir/rmq-proxy.json"
    start "Java proxy" "$dir/proxy.out" env ROCKETMQ_HOME="$dir/home" java "${JAVA_PROXY_OPTS[@]}" \
      "${JAVA_GC[@]}" "${JAVA_OPENS[@]}" -Xlog:gc*:file="$dir/proxy-gc.log":time,uptime \
      -Duser.home="$dir/home" -Drocketmq.home.dir="$dir/home" -cp "$JAVA_CP" \
      org.apache.rocketmq.proxy.ProxyStartup -pm local -pc "$dir/rmq-proxy.json" -bc "$dir/broker.conf"
    server_pid=$LAST_PID
    await_port "Java proxy (broker port)" "$server_pid" "$BR_PORT" 120 "$dir/proxy.out"
    await_port "Java proxy (gRPC port)" "$server_pid" "$GRPC_PORT" 120 "$dir/proxy.out"
  else
    printf 'grpcListenPort=%s\n' "$GRPC_PORT" >> "$dir/broker.conf"
    start "ferrocket namesrv" "$dir/ferrocket-namesrv.log" env HOME="$dir/home" "$FERROCKET" namesrv -c "$dir/namesrv.conf"
    ns_pid=$LAST_PID
    await_port "ferrocket namesrv" "$ns_pid" "$NS_PORT" 60 "$dir/ferrocket-namesrv.log"
    start "ferrocket broker" "$dir/ferrocket-broker.log" env HOME="$dir/home" "$FERROCKET" broker \
      -c "$dir/broker.conf" -n "127.0.0.1:$NS_PORT"
    server_pid=$LAST_PID
    await_port "ferrocket broker" "$server_pid" "$BR_PORT" 60 "$dir/ferrocket-broker.log"
    await_port "ferrocket broker (gRPC port)" "$server_pid" "$GRPC_PORT" 60 "$dir/ferrocket-broker.log"
  fi
  create_topic "$s" "$dir" GrpcBench
  create_topic "$s" "$dir" GrpcBenchRedeliver

  log "  1 thread of 1 KiB sync sends, TLS then plaintext (${WARMUP} s warm-up + ${SECS} s each); drain; redelivery"
  local before after t0 rc=0
  before=$(python3 "$PY" ticks "$server_pid" "$ns_pid")
  t0=$(date +%s.%N)
  java -Xms256m -Xmx512m -XX:+UseG1GC -Duser.home="$dir/client-home" -cp "$LOADGEN_CP" \
    dev.ferrocket.bench.grpc.GrpcLoadGen --endpoint "127.0.0.1:$GRPC_PORT" --topic GrpcBench \
    --redeliver-topic GrpcBenchRedeliver --size 1024 --warmup-s "$WARMUP" --seconds "$SECS" \
    --invisible-s "$INVISIBLE_S" --rss-pid "$server_pid" > "$dir/loadgen.json" 2> "$dir/loadgen.log" || rc=$?
  after=$(python3 "$PY" ticks "$server_pid" "$ns_pid")
  [[ $rc == 0 && -s "$dir/loadgen.json" ]] || { tail -n 30 "$dir/loadgen.log"; die "the load generator failed against $s (exit $rc); log: $dir/loadgen.log"; }
  log "  -> $(python3 "$PY" record --results "$RESULTS_JSONL" --server "$s" --round "$r" --json "$dir/loadgen.json" \
    --ticks-before "$before" --ticks-after "$after" --seconds-turn "$(python3 -c "import sys,time; print(time.time()-float(sys.argv[1]))" "$t0")")"

  if [[ $s == java ]]; then stop "$server_pid" 10; stop "$ns_pid" 5; else
    stop "$server_pid" 20
    [[ $STOP_RC == 0 ]] || log "  note: ferrocket broker exited $STOP_RC on SIGTERM"
    stop "$ns_pid" 20
    grep -hE '^[^ ]+ +(ERROR|WARN) ' "$dir"/ferrocket-*.log | head -n 5 | sed 's/^/  ferrocket log: /' || true
  fi
  [[ $KEEP_STORES == 1 ]] || rm -rf "$dir/store" "$dir/home/store"
}

# ---------------------------------------------------------------- 3. the rounds

log "plan: $ROUNDS round(s), ${WARMUP} s warm-up + ${SECS} s per send window, ${INVISIBLE_S} s invisible duration"
for ((r = 1; r <= ROUNDS; r++)); do
  if (( r % 2 == 1 )); then order="java ferrocket"; else order="ferrocket java"; fi
  for s in $order; do run_turn "$r" "$s"; done
done

# ---------------------------------------------------------------- 4. report

ELAPSED=$(( $(date +%s) - STARTED_AT ))
MACHINE="$(nproc) cores ($(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/^MemTotal/ {printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo), $(uname -sr)"
python3 - "$RUN/meta.json" <<EOF
import json, sys
json.dump({"date": "$(date -u '+%Y-%m-%d %H:%M UTC')", "machine": """$MACHINE""", "command": """$COMMAND""",
  "params": "$ROUNDS round(s), ${WARMUP} s warm-up + ${SECS} s windows",
  "duration": "$((ELAPSED / 60)) min $((ELAPSED % 60)) s",
  "ferrocket": """$("$FERROCKET" --version 2>/dev/null || echo '?')""",
  "git": "$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')",
  "java": """$(java -version 2>&1 | head -n 1 | tr -d '"')""", "load_before": "$LOAD_BEFORE",
  "load_after": "$(cut -d' ' -f1-3 /proc/loadavg)", "run": "$RUN"}, open(sys.argv[1], "w"), indent=1)
EOF
log "done in $((ELAPSED / 60)) min $((ELAPSED % 60)) s; medians:"
echo
if [[ $RESULTS == none ]]; then
  python3 "$PY" report --results "$RESULTS_JSONL" | tee "$RUN/summary.md"
else
  python3 "$PY" report --results "$RESULTS_JSONL" --markdown "$RESULTS" --meta "$RUN/meta.json" | tee "$RUN/summary.md"
  log "appended to $RESULTS"
fi
log "run directory (kept): $RUN"
