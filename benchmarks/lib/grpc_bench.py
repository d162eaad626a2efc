#!/usr/bin/env python3
"""Helpers of benchmarks/grpc.sh (standard library only).

    grpc_bench.py ports                  -> "NAMESRV BROKER GRPC PROXY_REMOTING METRICS" (< 32768; the
                                            broker's p-2 VIP and p+1 HA ports free too)
    grpc_bench.py wait-port PORT SECONDS -> exit 0 once 127.0.0.1:PORT accepts, 1 on timeout
    grpc_bench.py ticks PID...           -> "MACHINE_BUSY PROC_TICKS..." (/proc/stat, /proc/PID/stat)
    grpc_bench.py record --results R.jsonl --server S --round N --json TURN.json --ticks-before "..."
                         --ticks-after "..." --seconds-turn T
    grpc_bench.py report --results R.jsonl [--markdown OUT.md --meta META.json]
"""

import argparse
import json
import random
import statistics
import sys

# /proc and port helpers are run.sh's (bench.py, beside this file).
from bench import CLK_TCK, cpu_ticks, machine_busy_ticks, port_free, wait_port


def pick_ports():
    for _ in range(1000):
        b = random.randrange(12000, 30000)
        ns, grpc, remoting, metrics = b + 10, b + 20, b + 30, b + 40
        if all(port_free(p) for p in (b - 2, b, b + 1, ns, ns + 1, grpc, remoting, metrics)):
            return ns, b, grpc, remoting, metrics
    sys.exit("no free ports")


def proc_ticks(pid):
    """utime + stime of `pid`; 0 once it has exited."""
    try:
        return cpu_ticks(pid)
    except (OSError, IndexError, ValueError):
        return 0


def record(a):
    turn = json.load(open(a.json))
    before = [int(x) for x in a.ticks_before.split()]
    after = [int(x) for x in a.ticks_after.split()]
    delta = [y - x for x, y in zip(before, after)]
    secs = float(a.seconds_turn)
    # delta[0]: the whole machine; delta[1:]: the servers of this turn; and the load generator's own CPU.
    ours = sum(delta[1:]) + turn.get("loadgen_cpu_s", 0) * CLK_TCK
    other = max(0, delta[0] - ours) / CLK_TCK / secs if secs > 0 else 0
    row = {"server": a.server, "round": int(a.round), "turn_s": secs,
           "server_cpu_s": delta[1] / CLK_TCK if len(delta) > 1 else None,
           "other_load_cores": round(other, 2), **turn}
    with open(a.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    t, p, d, r = row["tls"], row["plain"], row["drain"], row["redelivery"]
    print(f"{a.server}: TLS {t['per_s']:.0f}/s p50 {t['p50_ms']:.2f} p99 {t['p99_ms']:.2f} ms; "
          f"plaintext {p['per_s']:.0f}/s p50 {p['p50_ms']:.2f} p99 {p['p99_ms']:.2f} ms; "
          f"receive+ack {d['per_s']:.0f}/s; redelivered after {r.get('back_after_s', 'n/a')} s; "
          f"RSS {row['rss_kib_end'] / 1024:.0f} MiB (peak {row['rss_kib_peak'] / 1024:.0f}), "
          f"RssAnon {row.get('rss_anon_kib_end', -1024) / 1024:.0f} MiB (peak {row.get('rss_anon_kib_peak', -1024) / 1024:.0f}); "
          f"other load {row['other_load_cores']} cores")


METRICS = [
    ("TLS sends/s", lambda r: r["tls"]["per_s"], "{:.0f}", True),
    ("TLS p50 ms", lambda r: r["tls"]["p50_ms"], "{:.2f}", False),
    ("TLS p99 ms", lambda r: r["tls"]["p99_ms"], "{:.2f}", False),
    ("plaintext sends/s", lambda r: r["plain"]["per_s"], "{:.0f}", True),
    ("plaintext p50 ms", lambda r: r["plain"]["p50_ms"], "{:.2f}", False),
    ("plaintext p99 ms", lambda r: r["plain"]["p99_ms"], "{:.2f}", False),
    ("receive+ack/s", lambda r: r["drain"]["per_s"], "{:.0f}", True),
    ("10 s invisible: back after s", lambda r: r["redelivery"].get("back_after_s"), "{:.1f}", False),
    ("server VmRSS MiB (end)", lambda r: r["rss_kib_end"] / 1024, "{:.0f}", False),
    ("server VmRSS MiB (peak)", lambda r: r["rss_kib_peak"] / 1024, "{:.0f}", False),
    # RssAnon leaves out the mapped store pages VmRSS counts: the process's own memory.
    ("server RssAnon MiB (end)", lambda r: kib_mib(r, "rss_anon_kib_end"), "{:.0f}", False),
    ("server RssAnon MiB (peak)", lambda r: kib_mib(r, "rss_anon_kib_peak"), "{:.0f}", False),
    ("other load (cores)", lambda r: r["other_load_cores"], "{:.2f}", False),
]


def kib_mib(row, key):
    v = row.get(key)
    return v / 1024 if v is not None and v >= 0 else None


def median_of(rows, f):
    vals = [v for v in (f(r) for r in rows) if v is not None and v >= 0]
    return statistics.median(vals) if vals else None


def report(a):
    rows = [json.loads(line) for line in open(a.results) if line.strip()]
    java = [r for r in rows if r["server"] == "java"]
    ours = [r for r in rows if r["server"] == "ferrocket"]
    n = max(len(java), len(ours))
    lines = [f"| median of {n} round(s) | Java proxy 5.3.3 (local) | ferrocket | ferrocket ÷ Java |",
             "|---|---:|---:|---:|"]
    for name, f, fmt, _higher in METRICS:
        j, o = median_of(java, f), median_of(ours, f)
        ratio = f"{o / j:.2f}" if j and o is not None and name != "other load (cores)" else ""
        cell = lambda v: fmt.format(v) if v is not None else "n/a"  # noqa: E731
        lines.append(f"| {name} | {cell(j)} | {cell(o)} | {ratio} |")
    notes = []
    for r in rows:
        d, rd = r["drain"], r["redelivery"]
        if d["unique"] == 0:
            notes.append(f"round {r['round']} {r['server']}: the consumer received nothing")
        if d["duplicates"]:
            notes.append(f"round {r['round']} {r['server']}: {d['duplicates']} duplicate receipts while draining")
        if "error" in rd:
            notes.append(f"round {r['round']} {r['server']}: redelivery: {rd['error']}")
    table = "\n".join(lines)
    print(table)
    for x in notes:
        print("note: " + x)
    if a.markdown:
        anon = lambda r, k: f"{kib_mib(r, k):.0f}" if kib_mib(r, k) is not None else "n/a"  # noqa: E731
        meta = json.load(open(a.meta))
        every = ["| round | server | TLS /s | TLS p50/p99 ms | plain /s | plain p50/p99 ms | recv+ack /s "
                 "| acked/sent | back after s | RSS end/peak MiB | RssAnon end/peak MiB | other load |",
                 "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
        for r in rows:
            t, p, d, rd = r["tls"], r["plain"], r["drain"], r["redelivery"]
            every.append(f"| {r['round']} | {r['server']} | {t['per_s']:.0f} | {t['p50_ms']:.2f} / {t['p99_ms']:.2f} "
                         f"| {p['per_s']:.0f} | {p['p50_ms']:.2f} / {p['p99_ms']:.2f} | {d['per_s']:.0f} "
                         f"| {d['unique']}/{d['of']} | {rd.get('back_after_s', 'n/a')} "
                         f"| {r['rss_kib_end'] / 1024:.0f} / {r['rss_kib_peak'] / 1024:.0f} "
                         f"| {anon(r, 'rss_anon_kib_end')} / {anon(r, 'rss_anon_kib_peak')} | {r['other_load_cores']} |")
        md = [f"\n## gRPC (5.x SDK): Java proxy vs ferrocket, {meta['date']}\n",
              f"- machine: {meta['machine']}",
              f"- command: `{meta['command']}` ({meta['params']}); took {meta['duration']}",
              f"- ferrocket: `{meta['ferrocket']}` (git `{meta['git']}`); Java: `{meta['java']}`; SDK: rocketmq-client-java 5.1.0",
              f"- load average before / after: {meta['load_before']} / {meta['load_after']}",
              f"- run directory: `{meta['run']}`", "", table, ""]
        md += [f"- note: {x}" for x in notes] + ([""] if notes else [])
        md += ["<details><summary>Every round</summary>", "", *every, "", "</details>", ""]
        with open(a.markdown, "a") as f:
            f.write("\n".join(md))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "ports":
        print(*pick_ports())
    elif cmd == "wait-port":
        sys.exit(0 if wait_port(int(rest[0]), float(rest[1])) else 1)
    elif cmd == "ticks":
        print(machine_busy_ticks(), *[proc_ticks(p) for p in rest])
    elif cmd in ("record", "report"):
        p = argparse.ArgumentParser(prog=f"grpc_bench.py {cmd}")
        p.add_argument("--results", required=True)
        for k in ("server", "round", "json", "ticks-before", "ticks-after", "seconds-turn", "markdown", "meta"):
            p.add_argument("--" + k)
        a = p.parse_args(rest)
        record(a) if cmd == "record" else report(a)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
