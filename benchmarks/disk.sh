#!/bin/bash
# CommitLog block allocation (#28.6): send throughput and disk footprint of ferrocket builds and
# `commitLogAllocateAheadSize` values side by side, with `ferrocket bench produce` (1 KiB, 256 in
# flight over 4 connections). Each turn: a fresh NameServer + broker + store, SECONDS of sends,
# broker CPU (utime+stime) over them, `du` of the store after 10 messages and after the run.
#
#   benchmarks/disk.sh ROUNDS SECONDS LABEL=BINARY[:key=value,...] ...
#   benchmarks/disk.sh 3 10 main=/tmp/ferrocket-main new=target/release/ferrocket \
#       sparse=target/release/ferrocket:commitLogAllocateAheadSize=0
#
# Run it under the shared cargo lock on a shared machine (load1: the 1-minute load average after
# the turn; 2 cores, one turn uses about 2); turns reverse their order every other round.
set -u
ROUNDS=${1:?rounds}; SECS=${2:?seconds}; shift 2
turn() { # label binary flush extra-keys
  local label=$1 bin=$2 flush=$3 extra=$4 d np bp ns br c0 c1 out du10
  d=$(mktemp -d /tmp/ferrocket-disk.XXXXXX)
  np=$((20000 + RANDOM % 5000)); bp=$((np + 100))
  echo "listenPort=$np" > "$d/ns.conf"
  printf '%s\n' brokerClusterName=B brokerName=b brokerId=0 brokerIP1=127.0.0.1 "listenPort=$bp" \
    "namesrvAddr=127.0.0.1:$np" "storePathRootDir=$d/store" autoCreateTopicEnable=true \
    defaultTopicQueueNums=8 "flushDiskType=$flush" ${extra//,/ } > "$d/broker.conf"
  HOME=$d "$bin" namesrv -c "$d/ns.conf" > "$d/ns.log" 2>&1 & ns=$!
  HOME=$d "$bin" broker -c "$d/broker.conf" > "$d/broker.log" 2>&1 & br=$!
  for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$bp") 2>/dev/null && break; sleep 0.1; done
  sleep 2
  "$bin" bench produce -n "127.0.0.1:$np" -t Few --count 10 --json > /dev/null 2>&1
  sleep 1; du10=$(du -sk "$d/store" | cut -f1)
  c0=$(awk '{print $14+$15}' "/proc/$br/stat")
  out=$("$bin" bench produce -n "127.0.0.1:$np" -t Load --seconds "$SECS" --json 2>/dev/null | tail -1)
  c1=$(awk '{print $14+$15}' "/proc/$br/stat")
  echo "$flush $label du_after_10_kB=$du10 du_after_kB=$(du -sk "$d/store" | cut -f1) cpu_ticks=$((c1 - c0)) errors=$(grep -c ERROR "$d/broker.log") load1=$(cut -d' ' -f1 /proc/loadavg) $out"
  kill "$br"; wait "$br"; kill "$ns"; wait "$ns" 2>/dev/null
  rm -rf "$d"
}
for r in $(seq "$ROUNDS"); do
  for flush in ASYNC_FLUSH SYNC_FLUSH; do
    specs=("$@"); [ $((r % 2)) = 0 ] && specs=($(printf '%s\n' "$@" | tac))
    for spec in "${specs[@]}"; do
      label=${spec%%=*}; rest=${spec#*=}; bin=${rest%%:*}; extra=""
      [ "$rest" != "$bin" ] && extra=${rest#*:}
      echo -n "r$r "; turn "$label" "$bin" "$flush" "$extra"
    done
  done
done
