#!/usr/bin/env python3
"""The compaction phase of benchmarks/kafka.sh (standard library only): its input, and reading the
broker's own report of the compaction it did.

    kafka_compaction.py gen OUT R K      -> OUT: R lines "key-(i % K)<TAB><100-byte value>", for
                                            ConsoleProducer --property parse.key=true
    kafka_compaction.py wait --broker kafka|ferrocket --log F --topic T --deadline S --out J
                             [--segments DIR] [--queue-end N]
        polls F (Kafka: the log-cleaner.log that kafka.sh's log4j2 config writes; ferrocket: its
        log) every 0.2 s until the broker reports having compacted T's whole dirty range:
          Kafka      "Log cleaner thread N cleaned log T-0 (dirty section = [from, to])" blocks until
                     `to` reaches the active segment's base offset (the largest NNN.log in
                     --segments; the active segment is never cleaned)
          ferrocket  "compacted queue topic=T queue=0 passes=P read=N kept=M ... end=E ms=T" lines
                     until E reaches --queue-end
        then writes {"read", "kept", "seconds", "read_per_s", "cleanings", "dirty_end", ...} to J;
        exit 1 naming what is missing when S seconds pass first.
"""

import argparse
import datetime
import json
import math
import os
import re
import sys
import time

VALUE_BYTES = 100


def gen(out, records, keys):
    pad = "abcdefghijklmnopqrstuvwxyz0123456789" * 3
    with open(out, "w") as f:
        for i in range(records):
            head = f"value-{i:010d}-"
            f.write(f"key-{i % keys}\t{head}{pad[:VALUE_BYTES - len(head)]}\n")


# ------------------------------------------------------------------ Kafka's LogCleaner report

# The stats block LogCleaner$CleanerThread.recordStats logs at INFO (Kafka 4.1, a message that opens
# with a line break, so the "[date] INFO [prefix]" line comes first and the figures follow, one a line):
#   [2026-12-04 17:30:01,123] INFO [kafka-log-cleaner-thread-0]:
#   	Log cleaner thread 0 cleaned log compacted-0 (dirty section = [0, 9473])
#   	1.1 MB of log processed in 0.1 seconds (11.0 MB/sec).
#   	...
#   	Start size: 1.1 MB (9,473 messages)
#   	End size: 0.1 MB (1,000 messages)
TS_RE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] ")
CLEANED_RE = re.compile(r"Log cleaner thread (\d+) cleaned log (\S+) \(dirty section = \[(\d+), (\d+)\]\)")
PROCESSED_RE = re.compile(r"([\d,.]+) MB of log processed in ([\d,.]+) seconds \(([\d,.]+|Infinity|NaN) MB/sec\)")
START_RE = re.compile(r"Start size: [\d,.]+ MB \(([\d,]+) messages\)")
END_RE = re.compile(r"End size: [\d,.]+ MB \(([\d,]+) messages\)")
BEGIN_RE = re.compile(r"Beginning cleaning of log (\S+)")


def num(s):
    return float(s.replace(",", ""))


def ts(line):
    m = TS_RE.match(line)
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f") if m else None


def kafka_cleanings(text, log_name):
    """Every cleaning of log_name the file reports, oldest first."""
    lines = text.splitlines()
    out, last_ts, begun = [], None, {}
    for i, line in enumerate(lines):
        t = ts(line)
        if t:
            last_ts = t
        b = BEGIN_RE.search(line)
        if b and t:
            begun[b.group(1)] = t
        m = CLEANED_RE.search(line)
        if not m or m.group(2) != log_name:
            continue
        c = {"from": int(m.group(3)), "to": int(m.group(4))}
        for l in lines[i + 1:i + 12]:
            if TS_RE.match(l):
                break
            if (p := PROCESSED_RE.search(l)):
                c["mb"], c["reported_s"], c["mb_per_s"] = num(p.group(1)), num(p.group(2)), p.group(3)
            if (s := START_RE.search(l)):
                c["read"] = int(s.group(1).replace(",", ""))
            if (e := END_RE.search(l)):
                c["kept"] = int(e.group(1).replace(",", ""))
        if not all(k in c for k in ("mb", "read", "kept")):
            continue  # the block is still being written
        # The cleaner's elapsed time: MB / (MB/sec) as it prints them (better than the seconds it
        # prints to 0.1); the log lines' timestamps when the rate is not finite.
        rate = num(c["mb_per_s"]) if c["mb_per_s"][0].isdigit() else math.nan
        started = begun.pop(log_name, None)
        # A cross-check: from "Beginning cleaning of log" to the stats block, by the lines' timestamps.
        c["log_s"] = (last_ts - started).total_seconds() if started and last_ts else None
        if rate > 0 and c["mb"] > 0:
            c["seconds"] = c["mb"] / rate
        elif c["log_s"] is not None:
            c["seconds"] = c["log_s"]
        else:
            c["seconds"] = c["reported_s"]
        out.append(c)
    return out


def active_segment_base(segments_dir):
    bases = [int(n[:-4]) for n in os.listdir(segments_dir) if re.fullmatch(r"\d{20}\.log", n)]
    if not bases:
        raise ValueError(f"no NNN.log segment in {segments_dir}")
    return max(bases)


# ------------------------------------------------------------------ ferrocket's report

ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
FIELD_RE = re.compile(r"(\w+)=(\"[^\"]*\"|\S+)")


def ferrocket_passes(text, topic):
    out = []
    for line in text.splitlines():
        line = ANSI_RE.sub("", line)
        if " INFO " not in line or "compacted queue" not in line:
            continue
        f = {k: v.strip('"') for k, v in FIELD_RE.findall(line)}
        if f.get("topic") != topic:
            continue
        try:
            out.append({"queue": int(f["queue"]), "passes": int(f["passes"]), "read": int(f["read"]),
                        "kept": int(f["kept"]), "end": int(f["end"]), "seconds": int(f["ms"]) / 1000})
        except (KeyError, ValueError):
            continue
    return out


# ------------------------------------------------------------------ wait

def wait(a):
    deadline = time.monotonic() + a.deadline
    target = active_segment_base(a.segments) if a.broker == "kafka" else a.queue_end
    if a.broker == "kafka" and target == 0:
        raise ValueError(f"{a.segments} has no closed segment (only the active one): nothing to clean")
    done, got = None, []
    while True:
        try:
            text = open(a.log, errors="replace").read()
        except FileNotFoundError:
            text = ""
        if a.broker == "kafka":
            got = kafka_cleanings(text, f"{a.topic}-0")
            done = bool(got) and max(c["to"] for c in got) >= target
        else:
            got = ferrocket_passes(text, a.topic)
            done = bool(got) and max(c["end"] for c in got) >= target
        if done or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    if not done:
        last = got[-1] if got else "none"
        what = "cleaned log" if a.broker == "kafka" else "compacted queue"
        raise TimeoutError(f"no '{what}' report for {a.topic} reaching offset {target} within "
                           f"{a.deadline:.0f} s in {a.log} (last report: {last})")
    read = sum(c["read"] for c in got)
    seconds = sum(c["seconds"] for c in got)
    res = {"broker": a.broker, "topic": a.topic, "read": read, "kept": got[-1]["kept"],
           "seconds": round(seconds, 4), "read_per_s": round(read / seconds, 1) if seconds > 0 else None,
           "cleanings": len(got), "dirty_end": target, "reports": got}
    if a.broker == "kafka":
        res["reported_s"] = round(sum(c["reported_s"] for c in got), 1)
    with open(a.out, "w") as f:
        f.write(json.dumps(res) + "\n")
    rate = f"{res['read_per_s']:,.0f}" if res["read_per_s"] else "–"
    print(f"{read:,} records read, {res['kept']:,} kept in {seconds:.3f} s by the cleaner "
          f"({len(got)} cleaning(s), dirty range up to offset {target:,}) -> {rate} records/s")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "gen":
        gen(args[0], int(args[1]), int(args[2]))
    elif cmd == "wait":
        p = argparse.ArgumentParser(prog="kafka_compaction.py wait")
        p.add_argument("--broker", choices=("kafka", "ferrocket"), required=True)
        p.add_argument("--log", required=True)
        p.add_argument("--topic", required=True)
        p.add_argument("--deadline", type=float, required=True)
        p.add_argument("--out", required=True)
        p.add_argument("--segments")
        p.add_argument("--queue-end", type=int)
        a = p.parse_args(args)
        try:
            wait(a)
        except (OSError, ValueError, TimeoutError) as e:
            print(f"kafka_compaction.py wait: {e}", file=sys.stderr)
            return 1
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
