#!/usr/bin/env python3
"""Helpers for benchmarks/run.sh (standard library only).

    bench.py ports                         -> "NAMESRV_PORT BROKER_PORT" (both < 32768; the broker's
                                              p-2 VIP and p+1 HA ports free too)
    bench.py wait-port PORT SECONDS        -> exit 0 once 127.0.0.1:PORT accepts, 1 on timeout
    bench.py wait-idle MAX_S CORES         -> waits (at most MAX_S) until the machine uses < CORES cores
    bench.py rss-kb PID                    -> RssAnon of PID in kB
    bench.py cpu-ticks PID                 -> utime+stime of PID in clock ticks
    bench.py measure --pid P --out F -- CMD...
        runs CMD, samples P's CPU, the machine's busy CPU (/proc/stat) and CMD's own CPU around it,
        merges them into CMD's one-line JSON output and writes that to F (exit code of CMD)
    bench.py field FILE KEY                -> a top-level value of a one-line JSON file
    bench.py record --results R.jsonl --scenario S --broker B --driver D --round N --phase P
                    --json FILE [--rss-kb K]
    bench.py report --results R.jsonl [--markdown OUT.md] [--meta META.json]
        prints the medians table; with --markdown appends a dated section to OUT.md
"""

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ /proc

def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read().decode("ascii", "replace")
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)


def rss_anon_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return None


def machine_busy_ticks():
    """Busy clock ticks of all CPUs together (user+nice+system+irq+softirq+steal)."""
    with open("/proc/stat") as f:
        parts = f.readline().split()
    v = [int(x) for x in parts[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    return user + nice + system + irq + softirq + steal


# ------------------------------------------------------------------ ports

def port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
            return True
        except OSError:
            return False


def pick_ports():
    """Below Linux's ephemeral range (32768..60999), so no outgoing connection takes them."""
    rnd = random.Random()
    for _ in range(1000):
        b = rnd.randrange(10_002, 32_000)
        n = rnd.randrange(10_002, 32_000)
        # n + 1: the NameServer's metrics endpoint (the broker keeps the default, 5557).
        if n in (b - 3, b - 2, b - 1, b, b + 1):
            continue
        if all(port_free(p) for p in (b - 2, b, b + 1, n, n + 1)):
            return n, b
    raise SystemExit("no free ports found in 10002..32000")


def wait_port(port, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def wait_idle(max_s, threshold):
    """Waits until the machine's busy CPU over 2 s is below `threshold` cores, at most max_s s.
    Prints the seconds waited and the last reading."""
    start = time.monotonic()
    while True:
        m0 = machine_busy_ticks()
        time.sleep(2)
        cores = (machine_busy_ticks() - m0) / CLK_TCK / 2
        waited = time.monotonic() - start
        if cores < threshold or waited >= max_s:
            print(f"{waited:.0f} {cores:.2f}")
            return


# ------------------------------------------------------------------ measure

def measure(pid, out, cmd):
    b0, m0, t0 = cpu_ticks(pid), machine_busy_ticks(), time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    stdout, _ = proc.communicate()
    b1, m1, t1 = cpu_ticks(pid), machine_busy_ticks(), time.monotonic()
    lines = [l for l in stdout.decode("utf-8", "replace").splitlines() if l.strip().startswith("{")]
    result = {}
    if lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            result = {"unparsed": lines[-1]}
    usage = os_children_cpu()  # communicate() reaped CMD, so its CPU is in the children's times
    result["broker_cpu_s"] = round((b1 - b0) / CLK_TCK, 3)
    result["window_s"] = round(t1 - t0, 3)
    result["machine_busy_s"] = round((m1 - m0) / CLK_TCK, 3)
    result["client_cpu_s"] = round(usage - measure.children_before, 3)
    with open(out, "w") as f:
        f.write(json.dumps(result) + "\n")
    return proc.returncode


def os_children_cpu():
    t = os.times()
    return t.children_user + t.children_system


measure.children_before = 0.0


# ------------------------------------------------------------------ results

def load_json_file(path):
    with open(path) as f:
        for line in reversed(f.read().splitlines()):
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
    raise ValueError(f"{path}: no JSON line")


def record(a):
    row = {"scenario": a.scenario, "broker": a.broker, "driver": a.driver, "round": a.round,
           "phase": a.phase}
    row.update(load_json_file(a.json))
    if a.rss_kb:
        row["rss_anon_kb"] = int(a.rss_kb)
    msgs = row.get("sent") if a.phase == "produce" else row.get("received")
    cpu = row.get("broker_cpu_s")
    if msgs and cpu is not None:
        row["cpu_us_per_msg"] = round(cpu * 1e6 / msgs, 2)
    window = row.get("window_s") or row.get("seconds")
    if window and row.get("machine_busy_s") is not None:
        others = row["machine_busy_s"] - (cpu or 0) - row.get("client_cpu_s", 0)
        row["other_cores"] = round(max(others, 0) / window, 2)
    with open(a.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    return row


def med(values):
    v = [x for x in values if isinstance(x, (int, float))]
    return statistics.median(v) if v else None


def fmt(v, digits=1):
    if v is None:
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def ratio(f, j):
    if f is None or j is None or j == 0:
        return "–"
    r = f / j
    return f"{r:.2f}×" if r >= 0.1 else f"{r:.4f}×"


DRIVERS = [("java-loadgen", "the official Java client 5.3.3 (`java-loadgen`): one DefaultMQProducer, "
                            "synchronous 1 KiB sends from many threads, after a warm-up; consume = a "
                            "DefaultMQPushConsumer draining what was produced"),
           ("ferrocket-bench", "`ferrocket bench produce`: 1 KiB sync sends, 256 in flight over 4 "
                               "connections, CPU over the whole process; consume = `ferrocket bench "
                               "consume` (pulls)"),
           ("ferrocket-bench-batch", "`ferrocket bench produce --send batch --batch 32`: SEND_BATCH_MESSAGE "
                                     "requests of 32 × 1 KiB, 64 requests in flight over 4 connections, "
                                     "msgs/s and CPU per message (not per request); produce only")]


def summarize(rows):
    """{(scenario, driver, broker): {metric: median}} and the per-round rows."""
    keys = {}
    for r in rows:
        keys.setdefault((r["scenario"], r["driver"], r["broker"]), []).append(r)
    out = {}
    for k, rs in keys.items():
        prod = [r for r in rs if r["phase"] == "produce"]
        cons = [r for r in rs if r["phase"] == "consume"]
        out[k] = {
            "rounds": len(prod),
            "msgs_per_sec": med([r.get("msgs_per_sec") for r in prod]),
            "p50_ms": med([r.get("p50_ms") for r in prod]),
            "p99_ms": med([r.get("p99_ms") for r in prod]),
            "p999_ms": med([r.get("p999_ms") for r in prod]),
            "cpu_us_per_msg": med([r.get("cpu_us_per_msg") for r in prod]),
            "rss_mb": med([r["rss_anon_kb"] / 1024 for r in prod if r.get("rss_anon_kb")]),
            "failed": sum(r.get("failed", 0) or 0 for r in prod),
            "drain": med([r.get("msgs_per_sec") for r in cons]),
            "first_ms": med([r.get("first_message_ms") for r in cons]),
            "consume_cpu": med([r.get("cpu_us_per_msg") for r in cons]),
            "incomplete": sum(1 for r in cons if r.get("complete") is False
                              or (r.get("expected") and (r.get("received") or 0) < r["expected"])),
            "other_cores": med([r.get("other_cores") for r in prod]),
        }
    return out


def table(rows, bench_note):
    s = summarize(rows)
    scenarios = sorted({k[0] for k in s}, key=lambda x: (x != "ASYNC_FLUSH", x))
    lines = ["| flush | load generator | broker | produce msgs/s | p50 ms | p99 ms | p99.9 ms | "
             "broker CPU µs/msg | RssAnon MB | consume msgs/s | first msg ms | rounds | failed sends |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for sc in scenarios:
        for drv, _desc in DRIVERS:
            j = s.get((sc, drv, "java"))
            f = s.get((sc, drv, "ferrocket"))
            if not j and not f:
                lines.append(f"| {sc} | {drv} | – | {bench_note} | | | | | | | | | |")
                continue
            for name, m in (("Java 5.3.3", j), ("ferrocket", f)):
                if not m:
                    continue
                inc = f" ({m['incomplete']} incomplete)" if m["incomplete"] else ""
                lines.append(
                    f"| {sc} | {drv} | {name} | {fmt(m['msgs_per_sec'])} | {fmt(m['p50_ms'], 2)} | "
                    f"{fmt(m['p99_ms'], 2)} | {fmt(m['p999_ms'], 2)} | {fmt(m['cpu_us_per_msg'])} | "
                    f"{fmt(m['rss_mb'], 0)} | {fmt(m['drain'])}{inc} | {fmt(m['first_ms'], 0)} | "
                    f"{m['rounds']} | {m['failed']} |")
            if j and f:
                lines.append(
                    f"| {sc} | {drv} | **ferrocket / Java** | **{ratio(f['msgs_per_sec'], j['msgs_per_sec'])}** | "
                    f"{ratio(f['p50_ms'], j['p50_ms'])} | **{ratio(f['p99_ms'], j['p99_ms'])}** | "
                    f"{ratio(f['p999_ms'], j['p999_ms'])} | **{ratio(f['cpu_us_per_msg'], j['cpu_us_per_msg'])}** | "
                    f"**{ratio(f['rss_mb'], j['rss_mb'])}** | {ratio(f['drain'], j['drain'])} | "
                    f"{ratio(f['first_ms'], j['first_ms'])} | | |")
    return "\n".join(lines)


def per_round(rows):
    lines = ["| flush | load generator | round | broker | phase | msgs/s | p99 ms | broker CPU s | "
             "CPU µs/msg | msgs | RssAnon MB | other load (cores) |",
             "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        msgs = r.get("sent") if r["phase"] == "produce" else r.get("received")
        rss = r.get("rss_anon_kb")
        lines.append(
            f"| {r['scenario']} | {r['driver']} | {r['round']} | {r['broker']} | {r['phase']} | "
            f"{fmt(r.get('msgs_per_sec'))} | "
            f"{fmt(r.get('p99_ms') if r['phase'] == 'produce' else None, 2)} | {fmt(r.get('broker_cpu_s'), 2)} | "
            f"{fmt(r.get('cpu_us_per_msg'))} | {fmt(msgs)} | {fmt(rss / 1024 if rss else None, 0)} | "
            f"{fmt(r.get('other_cores'), 2)} |")
    return "\n".join(lines)


def report(a):
    rows = []
    if os.path.exists(a.results):
        with open(a.results) as f:
            rows = [json.loads(l) for l in f if l.strip()]
    meta = {}
    if a.meta:
        with open(a.meta) as f:
            meta = json.load(f)
    bench_note = meta.get("bench_note") or "not measured (see the notes)"
    t = table(rows, bench_note)
    print(t)
    if not a.markdown:
        return
    others = [r.get("other_cores") for r in rows if r.get("other_cores") is not None]
    sec = [f"\n## {meta.get('date', time.strftime('%Y-%m-%d %H:%M %Z'))}\n",
           f"Command: `{meta.get('command', '?')}`  ",
           f"ferrocket: `{meta.get('ferrocket_version', '?')}` (git `{meta.get('git', '?')}`)  ",
           f"Machine: {meta.get('cpu_model', '?')}, `nproc` = {meta.get('nproc', '?')}, "
           f"{meta.get('mem', '?')}  ",
           f"`uname -a`: `{meta.get('uname', '?')}`  ",
           f"Java: `{meta.get('java', '?')}`  ",
           f"Load average before the run: {meta.get('load_before', '?')}; after: "
           f"{meta.get('load_after', '?')}  ",
           f"Run time: {meta.get('duration', '?')}; logs were in `{meta.get('run_dir', '?')}`\n"]
    if others:
        busy = sum(1 for o in others if o >= 0.2)
        verdict = ("**Shared machine**: other processes competed for the CPU; throughput and "
                   "latency are perturbed by it, CPU per message much less so."
                   if statistics.median(others) >= 0.1 or busy > len(others) // 4 else
                   "The machine was quiet during the measured windows.")
        sec.append(f"{verdict} CPU used by processes other than the broker and the load generator "
                   f"during a measured window (from `/proc/stat`): median "
                   f"{statistics.median(others):.2f} cores, max {max(others):.2f}; "
                   f"{busy} of {len(others)} windows at ≥ 0.2 cores (column 'other load' under "
                   f"'Every round').\n")
    if meta.get("broker_conf"):
        conf = (meta["broker_conf"].replace("${BROKER_PORT}", "<free port below 32768>")
                .replace("${ROUND_DIR}", "<run dir>/<flush>-r<round>-<broker>")
                .replace("${FLUSH}", "ASYNC_FLUSH | SYNC_FLUSH"))
        sec.append("broker.conf, the same file for both brokers (ports and store directory fresh "
                   "for every turn):\n\n```properties\n" + conf + "\n```\n")
    notes = meta.get("notes", [])
    if notes:
        sec.append("Notes from the run:\n")
        sec.extend(f"- {n}" for n in notes)
    sec.append(f"\nMedians over rounds ({meta.get('params', '')}):\n")
    sec.append(t)
    sec.append("")
    sec.extend(f"- **{d}**: {desc}" for d, desc in DRIVERS)
    sec.append("- broker CPU µs/msg = the broker process's utime+stime in the window ÷ messages "
               "acknowledged (produce) or received (consume); RssAnon after the produce window; "
               "consume msgs/s from the first message to the last; ratios are ferrocket ÷ Java.")
    sec.append("\n<details><summary>Every round</summary>\n")
    sec.append(per_round(rows))
    sec.append("\n</details>\n")
    header = ""
    if not os.path.exists(a.markdown):
        header = ("# Benchmark results\n\nProduced by `benchmarks/run.sh` (see `benchmarks/README.md`); "
                  "each run appends a dated section, newest last.\n")
    with open(a.markdown, "a") as f:
        f.write(header + "\n".join(sec) + "\n")


# ------------------------------------------------------------------ main

def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = sys.argv[1]
    args = sys.argv[2:]
    if cmd == "ports":
        print(*pick_ports())
    elif cmd == "wait-port":
        return 0 if wait_port(int(args[0]), float(args[1])) else 1
    elif cmd == "wait-idle":
        wait_idle(float(args[0]), float(args[1]))
    elif cmd == "rss-kb":
        print(rss_anon_kb(int(args[0])))
    elif cmd == "cpu-ticks":
        print(cpu_ticks(int(args[0])))
    elif cmd == "measure":
        p = argparse.ArgumentParser(prog="bench.py measure")
        p.add_argument("--pid", type=int, required=True)
        p.add_argument("--out", required=True)
        p.add_argument("cmd", nargs=argparse.REMAINDER)
        a = p.parse_args(args)
        c = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
        measure.children_before = os_children_cpu()
        return measure(a.pid, a.out, c)
    elif cmd == "field":
        v = load_json_file(args[0]).get(args[1])
        print("" if v is None else v)
    elif cmd == "record":
        p = argparse.ArgumentParser(prog="bench.py record")
        for k in ("results", "scenario", "broker", "driver", "phase", "json"):
            p.add_argument("--" + k, required=True)
        p.add_argument("--round", type=int, required=True)
        p.add_argument("--rss-kb")
        r = record(p.parse_args(args))
        keys = ("msgs_per_sec", "p99_ms", "cpu_us_per_msg", "first_message_ms", "received",
                "sent", "failed", "other_cores")
        print(", ".join(f"{k}={r[k]}" for k in keys if r.get(k) is not None))
    elif cmd == "report":
        p = argparse.ArgumentParser(prog="bench.py report")
        p.add_argument("--results", required=True)
        p.add_argument("--markdown")
        p.add_argument("--meta")
        report(p.parse_args(args))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
