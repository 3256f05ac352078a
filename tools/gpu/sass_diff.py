#!/usr/bin/env python3
"""Which kernels' machine code differs between two revisions (no GPU needed).

    python3 tools/gpu/sass_diff.py BASE [--head REV] [--show N] [KERNEL...]

Compiles the kernels (default: every kernel present in both) of git revision BASE and of the
work tree (or REV) with NVRTC for sm_90a, as nvrtc_only.py does, disassembles both with nvdisasm
and compares each kernel's SASS after renaming its branch labels in order of appearance (the
only part that shifts when another kernel of the module changes). Prints per kernel: `same`, or
the instruction counts, registers and spills of both and how many instructions differ; --show N
prints the first N differing lines of each.

Why: a change prepared without a device must not move the kernels its switches leave alone.
A kernel whose SASS is the same as the last measured build's runs as it ran then, so only the
listed ones need a new measurement (bench/NOTES.md session 41). Needs .venv's nvidia-cuda-nvrtc
and nvdisasm (PyPI nvidia-cuda-nvdisasm); the whole module takes a few minutes per side.
"""
import argparse
import difflib
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvrtc_only as nv  # noqa: E402


def nvdisasm():
    c = sorted(glob.glob(os.path.join(nv.ROOT, ".venv/lib/python3*/site-packages/nvidia/cu13/bin/nvdisasm")))
    if not c:
        sys.exit("nvdisasm not found: .venv/bin/pip install nvidia-cuda-nvdisasm==13.0.*")
    return c[0]


def functions(cubin):
    """{kernel: [normalized instruction lines]} of a cubin."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([nvdisasm(), "-c", f.name], check=True, capture_output=True, text=True).stdout
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*\.text\.(\w+):", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        if cur is None:
            continue
        line = re.sub(r"/\*[0-9a-f]{4,}\*/", "", line)  # addresses
        line = re.sub(r"/\* 0x[0-9a-f]+ \*/", "", line)  # encodings
        line = line.strip()
        if line and not line.startswith("."):
            cur.append(line)
        elif re.match(r"\.L_x_\d+:", line):
            cur.append(line)
    for k, lines in out.items():
        names = {}

        def ren(m):
            return names.setdefault(m.group(0), f".L{len(names)}")

        out[k] = [re.sub(r"\.L_x_\d+", ren, ln) for ln in lines]
    return out


def report(log, k):
    r = nv.ptxas_report(log, k)
    return f"regs {r[0]} spills {r[2]}/{r[3]}" if r else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("--head")
    ap.add_argument("--show", type=int, default=0)
    ap.add_argument("kernels", nargs="*")
    a = ap.parse_args()
    src_b, src_h = nv.engine_source(a.base), nv.engine_source(a.head)
    names_b, names_h = set(nv.kernel_names(src_b)), set(nv.kernel_names(src_h))
    ks = a.kernels or sorted(names_b & names_h)
    for k in sorted(set(ks) - names_b):
        print(f"{k:<28} new (not in {a.base})")
    for k in sorted(set(ks) - names_h):
        print(f"{k:<28} gone")
    ks = [k for k in ks if k in names_b and k in names_h]
    if not ks:
        return
    log_b, cub_b = nv.compile_kernels(src_b, ks, nv.engine_options("sm_90a", a.base))
    log_h, cub_h = nv.compile_kernels(src_h, ks, nv.engine_options("sm_90a", a.head))
    fb, fh = functions(cub_b), functions(cub_h)
    same = 0
    for k in ks:
        b, h = fb.get(k, []), fh.get(k, [])
        if b == h:
            same += 1
            print(f"{k:<28} same ({sum(1 for x in b if not x.startswith('.L'))} instructions)")
            continue
        d = [x for x in difflib.unified_diff(b, h, lineterm="", n=0) if x[:1] in "+-" and x[:3] not in ("+++", "---")]
        nb = sum(1 for x in b if not x.startswith(".L"))
        nh = sum(1 for x in h if not x.startswith(".L"))
        print(f"{k:<28} DIFFERS: {nb} -> {nh} instructions, {len(d)} lines changed; "
              f"{report(log_b, k)} -> {report(log_h, k)}")
        for x in d[: a.show]:
            print("    " + x)
    print(f"{same} of {len(ks)} kernels the same")


if __name__ == "__main__":
    main()
