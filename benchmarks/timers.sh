#!/usr/bin/env bash
# Timer messages side by side: the Java RocketMQ 5.3.3 broker (Maven Central jars) and ferrocket,
# same broker.conf, driven by `ferrocket bench` (it speaks the remoting protocol to both):
# N timer messages (TIMER_DELAY_MS) are sent, the broker's memory is read while all of them are
# pending, then they are drained as they come due and their lateness is reported.
#
#   benchmarks/timers.sh [--timers N] [--delay-s S] [--brokers "ferrocket java"] [--results FILE|none]
#
# Defaults: 1,000,000 timers of 128 bytes due 150 s after their send; results appended to
# benchmarks/RESULTS.md. Needs the release binary (cargo build --release), JDK 17, Maven, python3.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PY="$HERE/lib/bench.py"
FERROCKET="$ROOT/target/release/ferrocket"
JAVA_CP_FILE="$HERE/java-broker/target/classpath.txt"
TIMERS=1000000 DELAY_S=150 BROKERS="ferrocket java" RESULTS="$HERE/RESULTS.md"
COMMAND="benchmarks/timers.sh${*:+ $*}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --timers) TIMERS=${2:?}; shift 2 ;;
    --delay-s) DELAY_S=${2:?}; shift 2 ;;
    --brokers) BROKERS=${2:?}; shift 2 ;;
    --results) RESULTS=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
RUN=$(mktemp -d "${TMPDIR:-/tmp}/ferrocket-timers.XXXXXX")
log() { printf '[timers %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { log "FAILED: $*"; log "logs are in $RUN"; exit 1; }
log "run directory $RUN"
[[ -x "$FERROCKET" ]] || die "$FERROCKET missing: cargo build --release first"

if [[ $BROKERS == *java* && ! -s "$JAVA_CP_FILE" ]]; then
  log "resolving the Java NameServer and broker 5.3.3 from Maven Central"
  mvn -B -q -f "$HERE/java-broker/pom.xml" dependency:build-classpath -Dmdep.outputFile="$JAVA_CP_FILE" \
    > "$RUN/mvn.log" 2>&1 || die "mvn failed; log: $RUN/mvn.log"
fi
JAVA_OPENS=(--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED)
# As benchmarks/run.sh: runbroker.sh's G1 flags, heaps scaled to a 2-core machine.
JAVA_GC=(-XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25 -XX:InitiatingHeapOccupancyPercent=30
  -XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow -XX:-UseLargePages)

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# status_kb PID FIELD: a field of /proc/PID/status in kB.
status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }

ROWS="$RUN/rows.jsonl"
: > "$ROWS"
for broker in $BROKERS; do
  dir="$RUN/$broker"
  mkdir -p "$dir/home"
  read -r ns_port br_port < <(python3 "$PY" ports)
  cat > "$dir/broker.conf" <<CONF
brokerClusterName=BenchCluster
brokerName=bench-broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$br_port
storePathRootDir=$dir/store
mappedFileSizeCommitLog=1073741824
flushDiskType=ASYNC_FLUSH
autoCreateTopicEnable=true
defaultTopicQueueNums=8
CONF
  printf 'listenPort=%s\nkvConfigPath=%s\nconfigStorePath=%s\n' "$ns_port" "$dir/home/kv.json" "$dir/home/ns.properties" \
    > "$dir/namesrv.conf"
  log "$broker: starting (NameServer :$ns_port, broker :$br_port)"
  if [[ $broker == java ]]; then
    cp=$(cat "$JAVA_CP_FILE")
    env ROCKETMQ_HOME="$dir/home" java -Xms256m -Xmx256m "${JAVA_GC[@]}" "${JAVA_OPENS[@]}" -Duser.home="$dir/home" \
      -cp "$cp" org.apache.rocketmq.namesrv.NamesrvStartup -c "$dir/namesrv.conf" > "$dir/namesrv.out" 2>&1 &
    PIDS+=($!)
    python3 -c "import sys; sys.path.insert(0, '$HERE/lib'); import bench; sys.exit(0 if bench.wait_port($ns_port, 60) else 1)" \
      || die "Java NameServer did not start"
    env ROCKETMQ_HOME="$dir/home" java -server -Xms1g -Xmx1g -XX:+AlwaysPreTouch -XX:MaxDirectMemorySize=2g \
      "${JAVA_GC[@]}" "${JAVA_OPENS[@]}" -Duser.home="$dir/home" -cp "$cp" org.apache.rocketmq.broker.BrokerStartup \
      -c "$dir/broker.conf" -n "127.0.0.1:$ns_port" > "$dir/broker.out" 2>&1 &
  else
    env HOME="$dir/home" "$FERROCKET" namesrv -c "$dir/namesrv.conf" > "$dir/namesrv.log" 2>&1 &
    PIDS+=($!)
    python3 -c "import sys; sys.path.insert(0, '$HERE/lib'); import bench; sys.exit(0 if bench.wait_port($ns_port, 60) else 1)" \
      || die "ferrocket NameServer did not start"
    env HOME="$dir/home" "$FERROCKET" broker -c "$dir/broker.conf" -n "127.0.0.1:$ns_port" > "$dir/broker.log" 2>&1 &
  fi
  bpid=$!
  PIDS+=("$bpid")
  python3 -c "import sys; sys.path.insert(0, '$HERE/lib'); import bench; sys.exit(0 if bench.wait_port($br_port, 90) else 1)" \
    || die "$broker broker did not start; see $dir"
  # Registered with the NameServer: bench produce finds the route (it creates the topic).
  sleep 3
  idle_rss=$(status_kb "$bpid" VmRSS) idle_anon=$(status_kb "$bpid" RssAnon)
  cpu0=$(cpu_s "$bpid")
  log "$broker: sending $TIMERS timers due in $DELAY_S s"
  sent_at=$(date +%s)
  "$FERROCKET" bench produce -n "127.0.0.1:$ns_port" -t Timers --size 128 --count "$TIMERS" \
    --timer-delay-ms "$((DELAY_S * 1000))" --json > "$dir/produce.json" 2> "$dir/produce.log" \
    || die "bench produce against $broker failed; log: $dir/produce.log"
  produced_at=$(date +%s)
  (( produced_at - sent_at < DELAY_S )) || log "note: sending took $((produced_at - sent_at)) s, longer than the delay"
  cpu1=$(cpu_s "$bpid")
  sleep 5
  pend_rss=$(status_kb "$bpid" VmRSS) pend_anon=$(status_kb "$bpid" RssAnon) pend_file=$(status_kb "$bpid" RssFile)
  timer_disk=$(du -sk "$dir/store/timerlog" "$dir/store/timerwheel" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  log "$broker: $TIMERS pending: VmRSS $((pend_rss / 1024)) MB (idle $((idle_rss / 1024)) MB), RssAnon $((pend_anon / 1024)) MB, timer files $((timer_disk / 1024)) MB on disk"
  wait_s=$(( sent_at + DELAY_S - $(date +%s) - 5 ))
  (( wait_s > 0 )) && { log "$broker: waiting $wait_s s for the first timers to come due"; sleep "$wait_s"; }
  peak="$dir/peak_rss"
  ( m=0; while kill -0 "$bpid" 2>/dev/null; do v=$(status_kb "$bpid" VmRSS || echo 0); (( v > m )) && m=$v && echo "$m" > "$peak"; sleep 1; done ) &
  sampler=$!
  cpu2=$(cpu_s "$bpid")
  "$FERROCKET" bench consume -n "127.0.0.1:$ns_port" -t Timers -g timer_bench --count "$TIMERS" --json \
    > "$dir/consume.json" 2> "$dir/consume.log" || die "bench consume against $broker failed; log: $dir/consume.log"
  cpu3=$(cpu_s "$bpid")
  kill "$sampler" 2>/dev/null || true
  python3 - "$broker" "$dir" "$idle_rss" "$idle_anon" "$pend_rss" "$pend_anon" "$pend_file" "$timer_disk" \
    "$cpu0" "$cpu1" "$cpu2" "$cpu3" "$(cat "$peak" 2>/dev/null || echo 0)" >> "$ROWS" <<'PYEOF'
import json, sys
b, d = sys.argv[1], sys.argv[2]
idle, idle_anon, rss, anon, rfile, disk = map(int, sys.argv[3:9])
c0, c1, c2, c3 = map(float, sys.argv[9:13])
peak = int(sys.argv[13])
p, c = json.load(open(f"{d}/produce.json")), json.load(open(f"{d}/consume.json"))
print(json.dumps({"broker": b, "sent": p["sent"], "failed": p["failed"], "send_rate": p["msgs_per_sec"],
    "idle_rss_mb": idle / 1024, "pending_rss_mb": rss / 1024, "pending_anon_mb": anon / 1024,
    "pending_file_mb": rfile / 1024, "growth_mb": (rss - idle) / 1024, "peak_rss_mb": peak / 1024,
    "timer_disk_mb": disk / 1024, "send_cpu_us": (c1 - c0) * 1e6 / max(p["sent"], 1),
    "deliver_cpu_us": (c3 - c2) * 1e6 / max(c["received"], 1), "received": c["received"],
    "late_p50": c.get("timer_late_p50_ms"), "late_p99": c.get("timer_late_p99_ms"),
    "late_max": c.get("timer_late_max_ms"), "early": c.get("timer_early"), "timer_msgs": c.get("timer_messages")}))
PYEOF
  log "$broker: $(tail -n 1 "$ROWS")"
  kill -TERM "$bpid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; kill -KILL "$p" 2>/dev/null || true; done
  PIDS=()
  rm -rf "$dir/store"
done

python3 - "$ROWS" "$RESULTS" "$COMMAND" "$TIMERS" "$DELAY_S" <<'PYEOF'
import json, sys, datetime, subprocess
rows = [json.loads(l) for l in open(sys.argv[1])]
res, cmd, n, delay = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
cols = [("sent", "timers sent", "{:,}"), ("send_rate", "sent/s", "{:,.0f}"), ("idle_rss_mb", "idle RSS MB", "{:,.0f}"),
        ("pending_rss_mb", "RSS with all pending MB", "{:,.0f}"), ("growth_mb", "RSS growth MB", "{:,.0f}"),
        ("pending_anon_mb", "RssAnon MB", "{:,.0f}"), ("timer_disk_mb", "timer files on disk MB", "{:,.0f}"),
        ("peak_rss_mb", "peak RSS delivering MB", "{:,.0f}"), ("send_cpu_us", "CPU µs/timer sent", "{:.1f}"),
        ("deliver_cpu_us", "CPU µs/timer delivered", "{:.1f}"), ("received", "delivered", "{:,}"),
        ("late_p50", "late p50 ms", "{}"), ("late_p99", "late p99 ms", "{}"), ("late_max", "late max ms", "{}"),
        ("early", "early", "{}")]
fmt = lambda f, v: "–" if v is None else f.format(v)
lines = ["| broker | " + " | ".join(c[1] for c in cols) + " |", "|---|" + "---:|" * len(cols)]
for r in rows:
    lines.append(f"| {r['broker']} | " + " | ".join(fmt(c[2], r.get(c[0])) for c in cols) + " |")
by = {r["broker"]: r for r in rows}
if "java" in by and "ferrocket" in by:
    j, f = by["java"], by["ferrocket"]
    ratio = lambda k: "–" if not j.get(k) else f"**{f[k] / j[k]:.2f}×**"
    lines.append("| **ferrocket / Java** | " + " | ".join(ratio(c[0]) if c[0] in (
        "send_rate", "pending_rss_mb", "growth_mb", "pending_anon_mb", "timer_disk_mb", "peak_rss_mb",
        "send_cpu_us", "deliver_cpu_us") else "" for c in cols) + " |")
table = "\n".join(lines)
print(table)
if res != "none":
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    git = subprocess.run(["git", "-C", sys.path[0] or ".", "log", "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
    with open(res, "a") as out:
        out.write(f"\n## Timer messages, {now}\n\nCommand: `{cmd}` (git `{git}`): {n:,} timers of 128 bytes "
                  f"(`TIMER_DELAY_MS` = {delay} s) sent by `ferrocket bench produce` (256 in flight), memory read 5 s after "
                  "the last send while all are pending, then drained by `bench consume` as they come due. "
                  "Lateness = store time on the topic − (born time + delay). Same broker.conf (ASYNC_FLUSH, "
                  "Java's timer defaults: 1 s precision); Java broker heap 1 GiB pre-touched as in run.sh.\n\n"
                  + table + "\n")
    print(f"appended to {res}")
PYEOF
