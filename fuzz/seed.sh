#!/usr/bin/env bash
# Turns the hex seeds (and the golden frames) into a raw corpus for cargo-fuzz:
#   fuzz/seed.sh && cargo +nightly fuzz run frame_decode fuzz/corpus/frame_decode
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/frame_decode
for f in seeds/frame_decode/*.hex ../testdata/frames/*.hex; do
  [ -e "$f" ] || continue
  tr -cd '0-9a-fA-F' < "$f" | xxd -r -p > "corpus/frame_decode/$(basename "$f" .hex)"
done
echo "corpus: $(ls corpus/frame_decode | wc -l) files"
