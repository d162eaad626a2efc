#!/usr/bin/env bash
# Turns the hex seeds (and the golden frames) into a raw corpus for cargo-fuzz:
#   fuzz/seed.sh && cargo +nightly fuzz run frame_decode fuzz/corpus/frame_decode
#   fuzz/seed.sh && cargo +nightly fuzz run record_scan fuzz/corpus/record_scan
# (likewise header_json, header_binary, register_body, batch_body, ha_wire, sql92; see README.md)
set -euo pipefail
cd "$(dirname "$0")"
seed() {
  local target=$1; shift
  mkdir -p "corpus/$target"
  for f in "$@"; do
    [ -e "$f" ] || continue
    tr -cd '0-9a-fA-F' < "$f" | xxd -r -p > "corpus/$target/$(basename "$f" .hex)"
  done
  echo "$target: $(ls "corpus/$target" | wc -l) seed files"
}
seed frame_decode seeds/frame_decode/*.hex ../testdata/frames/*.hex
seed record_scan seeds/record_scan/*.hex
seed header_json seeds/header_json/*.hex
seed kafka_request seeds/kafka_request/*.hex
seed header_binary seeds/header_binary/*.hex
seed register_body seeds/register_body/*.hex
seed batch_body seeds/batch_body/*.hex
seed ha_wire seeds/ha_wire/*.hex
seed sql92 seeds/sql92/*.hex
seed broker_requests seeds/broker_requests/*.hex
