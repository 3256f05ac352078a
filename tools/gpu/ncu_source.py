#!/usr/bin/env python3
"""Summarize env.sh ncu_source output (ncu --page source --csv --print-source sass): totals of
the warp stall reasons, the instructions with the most samples, and (with --from ADDR_INDEX)
only the instructions from that index on (e.g. a kernel's finishing-block code).
Usage: ncu_source.py ncu_src_MODE.csv.gz [--top N] [--from I]"""
import argparse, csv, gzip

ap = argparse.ArgumentParser()
ap.add_argument("path")
ap.add_argument("--top", type=int, default=40)
ap.add_argument("--from", dest="start", type=int, default=0)
a = ap.parse_args()
f = gzip.open(a.path, "rt") if a.path.endswith(".gz") else open(a.path)
rows = list(csv.reader(f))
# the first row names the kernel; the header row starts with "Address"
h = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
hdr, data = rows[h], rows[h + 1:]
ix = {k: i for i, k in enumerate(hdr)}
stalls = [k for k in hdr if k.startswith("stall_") and "Not Issued" not in k]
tot = dict.fromkeys(stalls, 0)
ins = []
for n, r in enumerate(data):
    if n < a.start or len(r) < len(hdr):
        continue
    st = {k: int(r[ix[k]] or 0) for k in stalls}
    for k, v in st.items():
        tot[k] += v
    smp = int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
    top = ", ".join(f"{k[6:]} {v}" for k, v in sorted(st.items(), key=lambda kv: -kv[1])[:2] if v)
    ins.append((smp, n, r[ix["Source"]].strip(), int(r[ix["Instructions Executed"]] or 0), top))
print(f"{sum(i[0] for i in ins)} samples over {len(ins)} instructions")
print("stall reasons:", ", ".join(f"{k[6:]} {v}" for k, v in sorted(tot.items(), key=lambda kv: -kv[1]) if v))
print(f"{'idx':>5} {'samples':>7} {'executed':>9}  instruction  (top stalls)")
for smp, n, src, ex, top in sorted(ins, key=lambda i: -i[0])[: a.top]:
    print(f"{n:5d} {smp:7d} {ex:9d}  {src[:60]}  ({top})")
