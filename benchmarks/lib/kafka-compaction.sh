# The compaction phase of benchmarks/kafka.sh (sourced by it; uses its TOOL_JAVA, BOOTSTRAP,
# BROKER_PID, run_tool, fail_tool, tool_errors, warn_lines, log, note, die).
#
# Per round and broker, last: a 1-partition topic `compacted` (min.cleanable.dirty.ratio=0.01,
# segment.bytes=1048576, delete.retention.ms=0) written with ConsoleProducer from a file of
# COMPACT_RECORDS lines "key-(i % COMPACT_KEYS)<TAB><100-byte value>" while its cleanup.policy is
# still `delete`, then switched to `compact` (kafka-configs.sh --alter), so that each broker cleans
# the whole dirty range in one go, alone on the machine, instead of in slices while the producer runs;
# then the broker's own report of that cleaning is waited for (log polled against a deadline):
#   Kafka      log-cleaner.log (LogCleaner$CleanerThread's stats block), every closed segment cleaned
#              (the active segment never is)
#   ferrocket  its INFO line "compacted queue topic=compacted ... read=N kept=M end=E ms=T", E = the
#              queue's end
# The cleaner intervals are set alike in kafka.sh: log.cleaner.backoff.ms / compactionScheduleInternal
# = COMPACT_INTERVAL_MS.

COMPACT_KEYS=1000
COMPACT_INTERVAL_MS=1000
COMPACT_TOPIC=compacted
CPY="$HERE/lib/kafka_compaction.py"

# compaction_setup: COMPACT_RECORDS (N/4, at least 12,500: ~1.4 MB, so that Kafka has a closed
# 1 MiB segment to clean) and the input file, once per run.
compaction_setup() {
  COMPACT_RECORDS=$(( RECORDS / 4 > 12500 ? RECORDS / 4 : 12500 ))
  COMPACT_INPUT="$RUN/compacted-input.txt"
  python3 "$CPY" gen "$COMPACT_INPUT" "$COMPACT_RECORDS" "$COMPACT_KEYS" \
    || die "could not write the compaction input $COMPACT_INPUT"
}

# compaction_phase ROUND BROKER DIR: writes DIR/compaction.json, or fails the run.
compaction_phase() {
  local round=$1 broker=$2 dir=$3 rc end errs parsed
  timeout 120 "${TOOL_JAVA[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOTSTRAP" --create \
    --topic "$COMPACT_TOPIC" --partitions 1 --replication-factor 1 --config cleanup.policy=delete \
    --config min.cleanable.dirty.ratio=0.01 --config segment.bytes=1048576 --config delete.retention.ms=0 \
    > "$dir/create-$COMPACT_TOPIC.log" 2>&1 \
    || fail_tool "$broker" "TopicCommand --create --topic $COMPACT_TOPIC --partitions 1 (compaction configs)" \
      "$dir" "$dir/create-$COMPACT_TOPIC.log"

  log "  compaction: ConsoleProducer, $COMPACT_RECORDS keyed records ($COMPACT_KEYS keys, ~100-byte values)" \
    "to $COMPACT_TOPIC (1 partition, cleanup.policy=delete for now)"
  run_tool ConsoleProducer --pid "$BROKER_PID" --log "$dir/compact-produce.out" --out "$dir/compact-produce.json" \
    --stdin "$COMPACT_INPUT" --timeout "$(( 120 + COMPACT_RECORDS / 500 ))" -- \
    "${TOOL_JAVA[@]}" org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$BOOTSTRAP" --topic "$COMPACT_TOPIC" \
    --property parse.key=true --request-required-acks all --timeout 5 --max-partition-memory-bytes 262144 \
    --request-timeout-ms 30000 2> "$dir/compact-produce.err"
  rc=$TOOL_RC
  [[ $rc == 0 ]] || fail_tool "$broker" "ConsoleProducer (exit $rc$([[ $rc == 124 ]] && echo ', timed out'))" \
    "$dir" "$dir/compact-produce.out" "$dir/compact-produce.err"
  errs=$(tool_errors "$dir/compact-produce.err")
  [[ -z $errs ]] || fail_tool "$broker" "ConsoleProducer (sends failed: $(head -n 1 <<< "$errs"))" \
    "$dir" "$dir/compact-produce.err"
  warn_lines "$round" "$broker" ConsoleProducer "$dir/compact-produce.err"
  # Every record arrived: the partition's end offset (GetOffsetShell prints "compacted:0:END").
  timeout 120 "${TOOL_JAVA[@]}" org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$BOOTSTRAP" \
    --topic "$COMPACT_TOPIC" --time -1 > "$dir/compact-end.log" 2> "$dir/compact-end.err" \
    || fail_tool "$broker" "GetOffsetShell --topic $COMPACT_TOPIC --time -1" "$dir" "$dir/compact-end.log" "$dir/compact-end.err"
  end=$(sed -n "s/^$COMPACT_TOPIC:0:\([0-9]*\)\$/\1/p" "$dir/compact-end.log")
  [[ $end == "$COMPACT_RECORDS" ]] || fail_tool "$broker" \
    "ConsoleProducer (end offset of $COMPACT_TOPIC-0 is '${end:-?}', not $COMPACT_RECORDS)" "$dir" "$dir/compact-end.log"

  log "  compaction: kafka-configs.sh --alter --add-config cleanup.policy=compact; waiting for the broker's report of the cleaning"
  timeout 120 "${TOOL_JAVA[@]}" kafka.admin.ConfigCommand --bootstrap-server "$BOOTSTRAP" --alter \
    --entity-type topics --entity-name "$COMPACT_TOPIC" --add-config cleanup.policy=compact \
    > "$dir/compact-alter.log" 2>&1 \
    || fail_tool "$broker" "ConfigCommand --alter --add-config cleanup.policy=compact" "$dir" "$dir/compact-alter.log"

  local deadline=$(( 60 + COMPACT_RECORDS / 2000 )) args
  if [[ $broker == kafka ]]; then
    args=(--log "$dir/log-cleaner.log" --segments "$dir/data/$COMPACT_TOPIC-0")
  else
    args=(--log "$dir/ferrocket.log" --queue-end "$COMPACT_RECORDS")
  fi
  parsed=$(python3 "$CPY" wait --broker "$broker" --topic "$COMPACT_TOPIC" --deadline "$deadline" \
    --out "$dir/compaction.json" "${args[@]}" 2>&1) \
    || fail_tool "$broker" "compaction ($parsed)" "$dir" "${args[1]}"
  log "  compaction: $parsed"
}

# The plan's sentence for the report.
compaction_plan() {
  printf '%s' "Last, compaction: a topic \`$COMPACT_TOPIC\` of 1 partition (\`min.cleanable.dirty.ratio=0.01 \
segment.bytes=1048576 delete.retention.ms=0\`) is written with \`ConsoleProducer --property parse.key=true \
--request-required-acks all --timeout 5\` from a file of $COMPACT_RECORDS lines \`key-<i mod $COMPACT_KEYS>\\t<100-byte value>\` \
while its \`cleanup.policy\` is still \`delete\`, its end offset checked (\`GetOffsetShell\`), then switched to \
\`compact\` (\`kafka-configs.sh --alter\`), so each broker cleans the whole range at once with nothing else running; \
the broker's own report of that cleaning is read: Kafka's \`LogCleaner\` stats (log-cleaner.log: 'Start size ... \
(N messages)', 'End size', time = MB ÷ MB/sec as printed; every closed segment, the active one is never cleaned), \
ferrocket's \`compacted queue ... read= kept= ms=\` line (the whole queue). Cleaner intervals: \
\`log.cleaner.backoff.ms\` = \`compactionScheduleInternal\` = $COMPACT_INTERVAL_MS ms."
}
