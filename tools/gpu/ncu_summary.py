#!/usr/bin/env python3
"""Summarize tools/gpu/env.sh ncu_decode output (ncu --csv, metric gpu__time_duration.sum):
segments start at each embed_rows launch (segment 0 = prefill, then one per decoded token);
prints per-kernel totals of the last full decode token and its first layer's launches.
Usage: ncu_summary.py ncu.csv[.gz]"""
import csv, gzip, sys
from collections import OrderedDict

path = sys.argv[1]
f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
rows = [r for r in csv.reader(l for l in f if l.startswith('"'))]
hdr, rows = rows[0], rows[1:]
ix = {k: i for i, k in enumerate(hdr)}
launches = []
for r in rows:
    if r[ix["Metric Name"]] != "gpu__time_duration.sum":
        continue
    v = float(r[ix["Metric Value"]].replace(",", ""))
    unit = r[ix["Metric Unit"]]
    us = v / 1000 if unit == "nsecond" else v * 1000 if unit == "msecond" else v
    launches.append((r[ix["Kernel Name"]].split("(")[0], r[ix["Grid Size"]], r[ix["Block Size"]], us))
segs = []
for k in launches:
    if k[0] == "embed_rows":
        segs.append([])
    if segs:
        segs[-1].append(k)
tok = segs[-1] if len(segs) < 3 else segs[-2] if len(segs[-1]) < len(segs[-2]) else segs[-1]
tot = OrderedDict()
for name, g, b, us in tok:
    t = tot.setdefault(name, [0, 0.0])
    t[0] += 1
    t[1] += us
print(f"decode token: {len(tok)} launches, {sum(k[3] for k in tok):.1f} us")
for name, (n, us) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
    print(f"  {name:<18} {n:5d} {us:10.1f} us {us / n:8.2f} us/launch")
print("first layer (name, grid, block, us):")
for name, g, b, us in tok[:24]:
    print(f"  {name:<18} {g:<14} {b:<14} {us:7.1f}")
