#!/usr/bin/env python3
"""Helpers for benchmarks/kafka.sh (standard library only; /proc sampling and ports from bench.py).

    kafka.py ports                   -> "NAMESRV BROKER KAFKA_FERROCKET KAFKA_BROKER KAFKA_CONTROLLER"
                                        (all free, below 32768; BROKER-2 and BROKER+1 free too)
    kafka.py cluster-id              -> a random KRaft cluster id (Kafka's Uuid: 22 url-safe base64 chars)
    kafka.py run --pid P --log F --out J [--timeout S] [--prefix T] [--stdin IN] -- CMD...
        runs CMD (its standard input from IN, else none) with its stdout written to F and echoed
        with a timestamp (a "still running" line after 15 s of silence); samples P's CPU, the machine's busy CPU and CMD's own CPU around it;
        writes {"rc", "broker_cpu_s", "window_s", "machine_busy_s", "client_cpu_s", "timed_out"} to J;
        exits with CMD's exit code (124 after --timeout)
    kafka.py parse producer|consumer|e2e FILE   -> the tool's final figures as one JSON line
                                                   (exit 1 naming what is missing)
    kafka.py row --broker B --round N --dir D --records N --rss-kb K --txn-ms T
                 --compact-records R --compact-keys K >> rows.jsonl
        one round of one broker from D/{producer,consumer,e2e,txn}.{out,json} (txn: the transactional
        ProducerPerformance, a commit every T ms) and D/compaction.json (kafka_compaction.py wait)
    kafka.py brief R.jsonl           -> the last row in one line, for the progress log
    kafka.py report --rows R.jsonl --meta META.json [--markdown OUT.md]
"""

import argparse
import base64
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (same directory)

CLK_TCK = bench.CLK_TCK


# ------------------------------------------------------------------ ports, ids

def ports():
    ns, br = bench.pick_ports()
    taken = {ns, br - 2, br - 1, br, br + 1}
    rnd = __import__("random").Random()
    out = []
    while len(out) < 3:
        p = rnd.randrange(10_002, 32_000)
        if p not in taken and bench.port_free(p):
            taken.add(p)
            out.append(p)
    return [ns, br] + out


def cluster_id():
    # org.apache.kafka.common.Uuid.randomUuid(): never one whose string starts with '-'.
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


# ------------------------------------------------------------------ run a tool

def stamp():
    return time.strftime("%H:%M:%S")


def run(a, cmd):
    t = os.times()
    c0 = t.children_user + t.children_system
    b0, m0, t0 = bench.cpu_ticks(a.pid), bench.machine_busy_ticks(), time.monotonic()
    last = [time.monotonic()]
    with open(a.log, "w") as logf:
        stdin = open(a.stdin, "rb") if a.stdin else subprocess.DEVNULL
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=None, text=True, bufsize=1)

        def on_signal(signum, _frame):
            # kafka.sh's cleanup (or Ctrl-C): the tool goes with us.
            proc.kill()
            os._exit(128 + signum)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        done = threading.Event()

        def heartbeat():
            while not done.wait(1):
                if time.monotonic() - last[0] >= 15:
                    last[0] = time.monotonic()
                    print(f"[kafka {stamp()}] {a.prefix}... still running "
                          f"({time.monotonic() - t0:.0f} s)", flush=True)

        threading.Thread(target=heartbeat, daemon=True).start()
        killer = None
        timed_out = [False]
        if a.timeout:
            def kill():
                timed_out[0] = True
                proc.kill()
            killer = threading.Timer(a.timeout, kill)
            killer.daemon = True
            killer.start()
        for line in proc.stdout:
            logf.write(line)
            logf.flush()
            last[0] = time.monotonic()
            print(f"[kafka {stamp()}] {a.prefix}{line.rstrip()}", flush=True)
        rc = proc.wait()
        if a.stdin:
            stdin.close()
        done.set()
        if killer:
            killer.cancel()
    b1, m1, t1 = bench.cpu_ticks(a.pid), bench.machine_busy_ticks(), time.monotonic()
    t = os.times()
    c1 = t.children_user + t.children_system
    res = {"rc": 124 if timed_out[0] else rc, "timed_out": timed_out[0],
           "broker_cpu_s": round((b1 - b0) / CLK_TCK, 3), "window_s": round(t1 - t0, 3),
           "machine_busy_s": round((m1 - m0) / CLK_TCK, 3), "client_cpu_s": round(c1 - c0, 3)}
    with open(a.out, "w") as f:
        f.write(json.dumps(res) + "\n")
    return res["rc"]


# ------------------------------------------------------------------ parse the tools' output

# ProducerPerformance (4.x), last line:
# 1000000 records sent, 95238.1 records/sec (93.01 MB/sec), 312.45 ms avg latency, 800.00 ms max
# latency, 300 ms 50th, 500 ms 95th, 700 ms 99th, 790 ms 99.9th.
PRODUCER_RE = re.compile(
    r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.")
# EndToEndLatency: "Avg latency: 1.2345 ms" then "Percentiles: 50th = 1, 99th = 3, 99.9th = 9"
# ... and every 5 s: "415807 records sent, 83128.1 records/sec (81.18 MB/sec), 201.2 ms avg latency, 511.0 ms max latency."
WINDOW_RE = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                       r"([\d.]+) ms max latency\.$")
E2E_AVG_RE = re.compile(r"^Avg latency: ([\d.]+) ms")
E2E_PCT_RE = re.compile(r"^Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)")


def parse(kind, path):
    lines = open(path, errors="replace").read().splitlines()
    if kind == "producer":
        windows = [float(m.group(2)) for m in (WINDOW_RE.match(l.strip()) for l in lines) if m]
        for l in reversed(lines):
            m = PRODUCER_RE.match(l.strip())
            if m:
                g = m.groups()
                return {"best_window": max(windows) if windows else None,
                        "sent": int(g[0]), "msgs_per_sec": float(g[1]), "mb_per_sec": float(g[2]),
                        "avg_ms": float(g[3]), "max_ms": float(g[4]), "p50_ms": int(g[5]),
                        "p95_ms": int(g[6]), "p99_ms": int(g[7]), "p999_ms": int(g[8])}
        raise ValueError("no final 'N records sent, ... 99.9th.' line")
    if kind == "consumer":
        # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
        # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
        warn = any(l.startswith("WARNING: Exiting before consuming") for l in lines)
        for l in reversed(lines):
            f = [x.strip() for x in l.split(",")]
            if len(f) == 10 and re.match(r"^\d{4}-\d\d-\d\d ", f[0]):
                return {"mb": float(f[2]), "mb_per_sec": float(f[3]), "received": int(f[4]),
                        "msgs_per_sec": float(f[5]), "rebalance_ms": int(f[6]), "fetch_ms": int(f[7]),
                        "fetch_mb_per_sec": float(f[8]), "fetch_msgs_per_sec": float(f[9]),
                        "timed_out": warn}
        raise ValueError("no final 'start.time, end.time, ...' data line")
    if kind == "e2e":
        avg = pct = None
        samples = 0
        for l in lines:
            m = E2E_AVG_RE.match(l)
            if m:
                avg = float(m.group(1))
            m = E2E_PCT_RE.match(l)
            if m:
                pct = [int(x) for x in m.groups()]
            if re.match(r"^\d+\t[\d.]+$", l):
                samples += 1
        if avg is None or pct is None:
            raise ValueError("no 'Avg latency:' and 'Percentiles:' lines")
        return {"avg_ms": avg, "p50_ms": pct[0], "p99_ms": pct[1], "p999_ms": pct[2]}
    raise ValueError(f"unknown tool {kind}")


def load_json(path):
    with open(path) as f:
        return json.loads(f.read().strip().splitlines()[-1])


def other_cores(m):
    """CPU the machine spent on anything but the broker and the tool, in cores."""
    if not m.get("window_s"):
        return None
    others = m["machine_busy_s"] - m["broker_cpu_s"] - m["client_cpu_s"]
    return round(max(others, 0) / m["window_s"], 2)


def row(a):
    d = a.dir
    p, pm = parse("producer", f"{d}/producer.out"), load_json(f"{d}/producer.json")
    c, cm = parse("consumer", f"{d}/consumer.out"), load_json(f"{d}/consumer.json")
    e = parse("e2e", f"{d}/e2e.out")
    t, tm = parse("producer", f"{d}/txn.out"), load_json(f"{d}/txn.json")
    r = {"broker": a.broker, "round": a.round, "records": a.records,
         "produce_msgs_per_sec": p["msgs_per_sec"], "produce_mb_per_sec": p["mb_per_sec"],
         "produce_best_window": p["best_window"],
         "produce_avg_ms": p["avg_ms"], "produce_p50_ms": p["p50_ms"], "produce_p99_ms": p["p99_ms"],
         "produce_p999_ms": p["p999_ms"], "produce_max_ms": p["max_ms"], "sent": p["sent"],
         "produce_cpu_s": pm["broker_cpu_s"],
         "produce_cpu_us": round(pm["broker_cpu_s"] * 1e6 / max(p["sent"], 1), 2),
         "produce_window_s": pm["window_s"], "produce_other_cores": other_cores(pm),
         "consume_msgs_per_sec": c["msgs_per_sec"], "consume_mb_per_sec": c["mb_per_sec"],
         "consume_fetch_msgs_per_sec": c["fetch_msgs_per_sec"], "rebalance_ms": c["rebalance_ms"],
         "received": c["received"], "consume_cpu_s": cm["broker_cpu_s"],
         "consume_cpu_us": round(cm["broker_cpu_s"] * 1e6 / max(c["received"], 1), 2),
         "consume_other_cores": other_cores(cm),
         "e2e_avg_ms": e["avg_ms"], "e2e_p50_ms": e["p50_ms"], "e2e_p99_ms": e["p99_ms"],
         "e2e_p999_ms": e["p999_ms"], "rss_anon_mb": round(a.rss_kb / 1024, 1),
         "txn_ms": a.txn_ms, "txn_msgs_per_sec": t["msgs_per_sec"], "txn_sent": t["sent"],
         "txn_p99_ms": t["p99_ms"], "txn_cpu_s": tm["broker_cpu_s"],
         "txn_cpu_us": round(tm["broker_cpu_s"] * 1e6 / max(t["sent"], 1), 2),
         "txn_window_s": tm["window_s"], "txn_other_cores": other_cores(tm)}
    k = load_json(f"{d}/compaction.json")
    r.update({"compact_records": a.compact_records, "compact_keys": a.compact_keys, "compact_read": k["read"],
              "compact_kept": k["kept"], "compact_s": k["seconds"], "compact_read_per_s": k["read_per_s"],
              "compact_cleanings": k["cleanings"]})
    return r


# ------------------------------------------------------------------ report

# (key, label, digits, better): better = "high" or "low", for the ratio's reading.
METRICS = [
    ("produce_msgs_per_sec", "ProducerPerformance records/s", 0, "high"),
    ("produce_mb_per_sec", "ProducerPerformance MB/s", 1, "high"),
    ("produce_best_window", "ProducerPerformance best 5 s window records/s", 0, "high"),
    ("produce_avg_ms", "ProducerPerformance avg latency ms", 1, "low"),
    ("produce_p50_ms", "ProducerPerformance p50 ms", 0, "low"),
    ("produce_p99_ms", "ProducerPerformance p99 ms", 0, "low"),
    ("produce_p999_ms", "ProducerPerformance p99.9 ms", 0, "low"),
    ("produce_cpu_us", "broker CPU µs/record produced", 1, "low"),
    ("consume_msgs_per_sec", "ConsumerPerformance records/s (incl. group join)", 0, "high"),
    ("consume_mb_per_sec", "ConsumerPerformance MB/s (incl. group join)", 1, "high"),
    ("consume_fetch_msgs_per_sec", "ConsumerPerformance fetch records/s (excl. join)", 0, "high"),
    ("rebalance_ms", "ConsumerPerformance group join ms", 0, "low"),
    ("consume_cpu_us", "broker CPU µs/record consumed", 1, "low"),
    ("e2e_avg_ms", "EndToEndLatency avg ms", 3, "low"),
    ("e2e_p50_ms", "EndToEndLatency p50 ms", 0, "low"),
    ("e2e_p99_ms", "EndToEndLatency p99 ms", 0, "low"),
    ("e2e_p999_ms", "EndToEndLatency p99.9 ms", 0, "low"),
    ("rss_anon_mb", "broker RssAnon MB at the end", 0, "low"),
    ("txn_msgs_per_sec", "transactional ProducerPerformance records/s (a commit every {txn_ms} ms)", 0, "high"),
    ("txn_cpu_us", "broker CPU µs/record produced in transactions", 1, "low"),
    ("compact_read_per_s", "compaction: records/s read by the cleaner (its own report)", 0, "high"),
    ("compact_read", "compaction: records read by the cleaner (of {compact_records}; Kafka: closed segments)", 0, None),
    ("compact_kept", "compaction: records kept ({compact_keys} keys)", 0, None),
]
NAMES = {"kafka": "Kafka", "ferrocket": "ferrocket"}


def fmt(v, digits):
    if v is None:
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def med(rows, key):
    v = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return statistics.median(v) if v else None


def ratio(f, k):
    if f is None or k is None or k == 0:
        return "–"
    r = f / k
    return f"{r:.2f}×" if r >= 0.1 else f"{r:.3f}×"


def medians_table(rows):
    by = {b: [r for r in rows if r["broker"] == b] for b in ("kafka", "ferrocket")}
    n = {b: len(v) for b, v in by.items()}
    lines = [f"| metric (median of rounds) | Kafka 4.1.1 ({n['kafka']}) | ferrocket ({n['ferrocket']}) "
             "| ferrocket / Kafka |", "|---|---:|---:|---:|"]
    for key, label, digits, better in METRICS:
        for v in ("txn_ms", "compact_records", "compact_keys"):
            label = label.replace("{%s}" % v, "/".join(sorted({f"{r[v]:,}" for r in rows if v in r}) or ["?"]))
        k, f = med(by["kafka"], key), med(by["ferrocket"], key)
        arrow = {"high": " (↑ better)", "low": " (↓ better)"}.get(better, "")
        lines.append(f"| {label}{arrow} | {fmt(k, digits)} | {fmt(f, digits)} | **{ratio(f, k)}** |")
    return "\n".join(lines)


def per_round_table(rows):
    lines = ["| round | broker | produce rec/s | p99 ms | CPU µs/rec | consume rec/s | join ms | "
             "CPU µs/rec | e2e avg ms | e2e p99 ms | RssAnon MB | sent | received | other load (cores) | "
             "txn rec/s | txn CPU µs/rec | txn sent | txn other load | compaction read | kept | cleaner s | "
             "cleaner rec/s |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
             "---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['round']} | {NAMES.get(r['broker'], r['broker'])} | {fmt(r['produce_msgs_per_sec'], 0)} | "
            f"{r['produce_p99_ms']} | {fmt(r['produce_cpu_us'], 1)} | {fmt(r['consume_msgs_per_sec'], 0)} | "
            f"{r['rebalance_ms']} | {fmt(r['consume_cpu_us'], 1)} | {fmt(r['e2e_avg_ms'], 3)} | "
            f"{r['e2e_p99_ms']} | {fmt(r['rss_anon_mb'], 0)} | {r['sent']:,} | {r['received']:,} | "
            f"{fmt(r.get('produce_other_cores'), 2)} / {fmt(r.get('consume_other_cores'), 2)} | "
            f"{fmt(r.get('txn_msgs_per_sec'), 0)} | {fmt(r.get('txn_cpu_us'), 1)} | "
            f"{r['txn_sent']:,} | {fmt(r.get('txn_other_cores'), 2)} | {r['compact_read']:,} | "
            f"{r['compact_kept']:,} | {fmt(r['compact_s'], 3)} | {fmt(r['compact_read_per_s'], 0)} |")
    return "\n".join(lines)


def report(a):
    rows = [json.loads(l) for l in open(a.rows) if l.strip()]
    meta = json.load(open(a.meta))
    t = medians_table(rows)
    print(t)
    print()
    print(per_round_table(rows))
    if not a.markdown:
        return
    others = [x for r in rows for x in (r.get("produce_other_cores"), r.get("consume_other_cores"),
                                        r.get("txn_other_cores")) if x is not None]
    sec = [f"\n## Kafka protocol, {meta['date']}\n",
           f"Command: `{meta['command']}`  ",
           f"ferrocket: `{meta['ferrocket_version']}` (git `{meta['git']}`); Apache Kafka "
           f"{meta['kafka_version']} (Maven Central `kafka_2.13`, `kafka-server`, `kafka-storage`, "
           f"`kafka-tools`), KRaft single node (broker + controller in one JVM)  ",
           f"Machine: {meta['cpu_model']}, `nproc` = {meta['nproc']}, {meta['mem']}  ",
           f"`uname -a`: `{meta['uname']}`  ",
           f"Java: `{meta['java']}`  ",
           f"Load average before the run: {meta['load_before']}; after: {meta['load_after']}  ",
           f"Run time: {meta['duration']}; logs were in `{meta['run_dir']}`\n"]
    if others:
        busy = sum(1 for o in others if o >= 0.2)
        verdict = ("**Shared machine**: other processes competed for the CPU."
                   if statistics.median(others) >= 0.1 or busy > len(others) // 4 else
                   "The machine was quiet during the measured windows.")
        sec.append(f"{verdict} CPU used by processes other than the broker and the tool during the "
                   f"producer, consumer and transactional producer runs (`/proc/stat`): median {statistics.median(others):.2f} "
                   f"cores, max {max(others):.2f}; {busy} of {len(others)} windows at ≥ 0.2 cores.\n")
    sec.append(meta["plan"] + "\n")
    if meta.get("notes"):
        sec.append("Notes from the run:\n")
        sec.extend(f"- {n}" for n in meta["notes"])
        sec.append("")
    sec.append(t)
    sec.append("")
    sec.append("Ratios are ferrocket ÷ Kafka (↑: above 1 is better for ferrocket; ↓: below 1 is). "
               "Broker CPU = the broker process's utime+stime (`/proc/<pid>/stat`) over the tool's run ÷ "
               "records; RssAnon (`/proc/<pid>/status`) after the three tools. 'Best 5 s window' = the "
               "highest of ProducerPerformance's 5-second progress lines (once the JVMs are warm). "
               "ConsumerPerformance's "
               "records/s count from before `subscribe()` (group join included); 'fetch' excludes the "
               "join. EndToEndLatency reports whole milliseconds for its percentiles. The transactional "
               "producer (the same 1 KiB records, acks=all, linger.ms=5, on its own 4-partition topic, "
               "run last) commits a transaction whenever the last commit is at least the stated ms old; "
               "its CPU is per record acknowledged, over the tool's whole run as for the first producer. "
               "Compaction: records read ÷ seconds as the broker's cleaner reports them for one cleaning "
               "of the whole dirty range (Kafka: N of 'Start size: ... (N messages)' ÷ (MB processed ÷ "
               "MB/sec) of its LogCleaner stats, over the closed segments only, the active one is never "
               "cleaned; ferrocket: read= ÷ ms= of its 'compacted queue' line, over the whole queue); "
               "'kept' = the records left after it.")
    sec.append("\n<details><summary>Every round</summary>\n")
    sec.append(per_round_table(rows))
    sec.append("\n'other load' = cores used by other processes during the producer / consumer run; "
               "'txn other load' during the transactional producer's.")
    sec.append("\n</details>\n")
    with open(a.markdown, "a") as f:
        f.write("\n".join(sec) + "\n")


# ------------------------------------------------------------------ main

def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "ports":
        print(*ports())
    elif cmd == "cluster-id":
        print(cluster_id())
    elif cmd == "run":
        p = argparse.ArgumentParser(prog="kafka.py run")
        p.add_argument("--pid", type=int, required=True)
        p.add_argument("--log", required=True)
        p.add_argument("--out", required=True)
        p.add_argument("--timeout", type=float, default=0)
        p.add_argument("--prefix", default="    ")
        p.add_argument("--stdin")
        p.add_argument("cmd", nargs=argparse.REMAINDER)
        a = p.parse_args(args)
        c = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
        return run(a, c)
    elif cmd == "parse":
        try:
            print(json.dumps(parse(args[0], args[1])))
        except (OSError, ValueError) as e:
            print(f"{args[1]}: {e}", file=sys.stderr)
            return 1
    elif cmd == "row":
        p = argparse.ArgumentParser(prog="kafka.py row")
        p.add_argument("--broker", required=True)
        p.add_argument("--round", type=int, required=True)
        p.add_argument("--dir", required=True)
        p.add_argument("--records", type=int, required=True)
        p.add_argument("--rss-kb", type=int, required=True)
        p.add_argument("--txn-ms", type=int, required=True)
        p.add_argument("--compact-records", type=int, required=True)
        p.add_argument("--compact-keys", type=int, required=True)
        print(json.dumps(row(p.parse_args(args))))
    elif cmd == "brief":
        with open(args[0]) as f:
            r = json.loads(f.read().strip().splitlines()[-1])
        print(f"produce {r['produce_msgs_per_sec']:,.0f} rec/s, p99 {r['produce_p99_ms']} ms, "
              f"CPU {r['produce_cpu_us']} µs/rec; consume {r['consume_msgs_per_sec']:,.0f} rec/s "
              f"(join {r['rebalance_ms']} ms), CPU {r['consume_cpu_us']} µs/rec; e2e avg "
              f"{r['e2e_avg_ms']} ms, p99 {r['e2e_p99_ms']} ms; RssAnon {r['rss_anon_mb']:.0f} MB; "
              f"transactional produce {r['txn_msgs_per_sec']:,.0f} rec/s, CPU {r['txn_cpu_us']} µs/rec; "
              f"compaction {r['compact_read']:,} read, {r['compact_kept']:,} kept in {r['compact_s']:.3f} s")
    elif cmd == "report":
        p = argparse.ArgumentParser(prog="kafka.py report")
        p.add_argument("--rows", required=True)
        p.add_argument("--meta", required=True)
        p.add_argument("--markdown")
        report(p.parse_args(args))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
