#!/usr/bin/env python3
"""Summarize a kernel trace of decode: env.sh cupti_decode's CSV (start_ns,end_ns,name: the
CUPTI tracer tools/gpu/cupti_trace.c) or nsys_decode's (nsys stats -r cuda_gpu_trace --csv,
graph nodes traced one by one). For the last N decoded tokens' kernels, each kernel name's in-graph time per token
(sum of durations), its call count, and the idle gap before each of its launches (start minus
the previous kernel's end), i.e. what the graph spends between dependent kernels.
A token is cut at each `embed_rows` / `embed_rows_h` launch (the first kernel of every forward
pass; `_h` where the hc state is f16, i.e. every prefill batch by default).
Usage: nsys_gaps.py TRACE.csv[.gz] [--tokens N] [--seq K] [--longest]"""
import argparse, csv, gzip, re
from collections import defaultdict

ap = argparse.ArgumentParser()
ap.add_argument("path")
ap.add_argument("--tokens", type=int, default=8)
ap.add_argument("--seq", type=int, default=0, help="also list the first SEQ kernels of the last token in order")
ap.add_argument("--longest", action="store_true", help="summarize only the forward pass with the most kernel time (a prompt's prefill)")
a = ap.parse_args()
f = gzip.open(a.path, "rt") if a.path.endswith(".gz") else open(a.path)
rows = list(csv.DictReader(f))
col = lambda *names: next(k for k in rows[0] if any(n in k for n in names))
cupti = "end_ns" in rows[0]
cs, cn = col("start_ns", "Start"), col("name", "Name")
ce = col("end_ns", "Duration")
ev = []
for r in rows:
    name = r[cn]
    if name.startswith("[CUDA mem"):
        continue
    s0, e = int(float(r[cs])), int(float(r[ce]))
    ev.append((s0, e - s0 if cupti else e, re.sub(r"\(.*", "", name).strip()))
ev.sort()
starts = [i for i, e in enumerate(ev) if e[2] in ("embed_rows", "embed_rows_h")]
if len(starts) < a.tokens + 1:
    raise SystemExit(f"only {len(starts)} forward passes in the trace")
# the last N complete forward passes (the final one may be cut by the process exit)
seg = starts[-a.tokens - 1:]
if a.longest:
    # one pass: the complete one whose kernels take longest (a prefill of many chunks is
    # several passes only if each chunk begins with embed_rows; then this is its longest chunk)
    spans = list(zip(starts, starts[1:]))
    t0, t1 = max(spans, key=lambda p: sum(d for _, d, _ in ev[p[0]:p[1]]))
    seg, a.tokens = [t0, t1], 1
busy = defaultdict(int); gap = defaultdict(int); cnt = defaultdict(int)
wall = 0
for t0, t1 in zip(seg, seg[1:]):
    toks = ev[t0:t1]
    # the head's tail (sampling copy) ends the token; the wall is first start .. last end
    wall += max(s + d for s, d, _ in toks) - toks[0][0]
    prev_end = None
    for s, d, n in toks:
        busy[n] += d; cnt[n] += 1
        if prev_end is not None:
            gap[n] += max(0, s - prev_end)
        prev_end = max(prev_end or 0, s + d)
n = a.tokens
tb, tg = sum(busy.values()) / n / 1e3, sum(gap.values()) / n / 1e3
print(f"{n} tokens: wall {wall / n / 1e3:.1f} us per token, kernels {tb:.1f} us, gaps before kernels {tg:.1f} us")
print(f"{'kernel':<28} {'calls':>6} {'us/token':>9} {'us/call':>8} {'gap us/tok':>10} {'gap/call':>8}")
for k in sorted(busy, key=lambda k: -busy[k]):
    c = cnt[k] / n
    print(f"{k:<28} {c:6.0f} {busy[k] / n / 1e3:9.1f} {busy[k] / cnt[k] / 1e3:8.2f} {gap[k] / n / 1e3:10.1f} {gap[k] / cnt[k] / 1e3:8.2f}")
if a.seq:
    toks = ev[seg[-2]:seg[-1]]
    t0, prev_end = toks[0][0], None
    print(f"\nthe last token's first {a.seq} kernels: start (us from embed_rows), duration, gap before")
    for s0, d, nm in toks[: a.seq]:
        g = 0 if prev_end is None else s0 - prev_end
        print(f"{(s0 - t0) / 1e3:9.2f} {d / 1e3:8.2f} {g / 1e3:7.2f}  {nm}")
        prev_end = max(prev_end or 0, s0 + d)
