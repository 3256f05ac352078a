#!/usr/bin/env python3
"""Compile some of the CUDA kernels here (no GPU) with NVRTC and print ptxas's report for them.

    python3 tools/gpu/nvrtc_only.py [--src FILE | --rev REV] [--cubin OUT] KERNEL...

The source is the engine's kernel files concatenated as driver.rs kernel_source() does (without
its Rust-side layout asserts), or FILE (e.g. a variant written by a script), or the kernel files
and options of git revision REV (tools/gpu/sass_diff.py compares two revisions' machine code). Every extern "C"
kernel not named becomes an unused static device function, so ptxas compiles only the named
ones: seconds instead of the ~3-9 minutes of the whole module. Prints, per named kernel, the
registers, spills and stack frame, and every C75xx line ("wgmma serialized"). Needs the PyPI
wheel nvidia-cuda-nvrtc (13.0.*, in .venv: scripts/requirements-test.txt); --cubin also writes
the CUBIN, for nvdisasm -c (PyPI nvidia-cuda-nvdisasm).
Why: sessions 35-37 needed ptxas's verdict on many variants of one kernel (bench/NOTES.md
session 37: which product-width sets serialize gemm_qs).
"""
import argparse
import ctypes
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUDA = os.path.join(ROOT, "crates/ds4-engine/src/cuda")


def read(rel, rev=None):
    """A file under the engine's cuda directory, from the work tree or from git revision rev."""
    if rev is None:
        return open(os.path.join(CUDA, rel)).read()
    path = os.path.relpath(os.path.join(CUDA, rel), ROOT)
    return subprocess.run(["git", "-C", ROOT, "show", f"{rev}:{path}"], check=True, capture_output=True, text=True).stdout


def engine_source(rev=None):
    # the kernel files in the order driver.rs kernel_source() includes them (read from there:
    # it owns the list)
    driver = read("driver.rs", rev)
    body = driver[driver.index("pub fn kernel_source()"):]
    body = body[: body.index("\n}\n")]
    # the format! arguments: included files, and `matmul` (matmul.cuh with the grid spliced in)
    args = body[body.index("format!(\n"):]
    files = [f"kernels/{f}" if f else "kernels/matmul.cuh" for f, _ in re.findall(r'include_str!\("kernels/([\w.]+)"\)|\b(matmul)\b', args)]
    if not files:
        sys.exit("no kernel files found in driver.rs kernel_source()")
    grid = read("kernels/iq2xxs_grid.inc", rev)
    parts = [read(f, rev) for f in files]
    return "\n".join(p.replace('#include "iq2xxs_grid.inc"', grid) for p in parts)


def engine_options(arch, rev=None):
    # compile_cubin's NVRTC options, read from driver.rs (it owns them), {arch} filled in
    driver = read("driver.rs", rev)
    body = driver[driver.index("pub fn compile_cubin("):]
    body = body[body.index("let mut opts = vec!["):]
    body = body[: body.index("];")]
    opts = [o.replace("{arch}", arch) for o in re.findall(r'"([^"]*)"', body)]
    if not any(o.startswith("--gpu-architecture=") for o in opts):
        sys.exit("no NVRTC options found in driver.rs compile_cubin()")
    return opts


KERNEL = r'extern "C" __global__ void\s+((?:(?:__launch_bounds__|__cluster_dims__)\([^)]*\)\s+)*)(\w+)\s*\('


def only(src, keep):
    def sub(m):
        return m.group(0) if m.group(2) in keep else f"static __device__ void {m.group(2)}("

    found = set(m.group(2) for m in re.finditer(KERNEL, src))
    missing = [k for k in keep if k not in found]
    if missing:
        sys.exit(f"no such kernel: {', '.join(missing)}")
    src = re.sub(KERNEL, sub, src)
    # (a __grid_constant__ parameter is only allowed on a kernel)
    return src.replace("const __grid_constant__", "const")


def nvrtc():
    libs = sorted(glob.glob(os.path.join(ROOT, ".venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13")))
    if not libs:
        sys.exit("libnvrtc not found: python3 -m venv .venv && .venv/bin/pip install -r scripts/requirements-test.txt")
    # libnvrtc-builtins beside it is dlopen'ed by name
    ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(libs[0]), "libnvrtc-builtins.so.13*"))[0], mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(libs[0])


def ptxas_report(log, k):
    """Kernel k's (registers, stack frame, spill store, spill load bytes) from ptxas's -v log."""
    m = re.search(r"Function properties for " + k + r"\n.*?(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads\n.*?Used (\d+) registers", log, re.S)
    return (int(m.group(4)), int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def kernel_names(src):
    return [m.group(2) for m in re.finditer(KERNEL, src)]


def compile_kernels(src, kernels, opts):
    """NVRTC on src with only `kernels` kept as entry points: (ptxas log, cubin bytes)."""
    src = only(src, set(kernels)).encode()
    lib = nvrtc()
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"kernels.cu", 0, None, None) != 0:
        sys.exit("nvrtcCreateProgram failed")
    opts = [o.encode() for o in opts] + [b"--ptxas-options=-v"]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    log = log.value.decode(errors="replace")
    if rc != 0:
        print(log)
        sys.exit(f"compile failed (nvrtc {rc})")
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetCUBIN(prog, buf)
    return log, buf.raw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src")
    ap.add_argument("--rev")
    ap.add_argument("--cubin")
    ap.add_argument("kernels", nargs="+")
    a = ap.parse_args()
    src = open(a.src).read() if a.src else engine_source(a.rev)
    log, cubin = compile_kernels(src, a.kernels, engine_options("sm_90a", a.rev))
    for line in log.splitlines():
        if "C75" in line:
            print(line.strip())
    for k in a.kernels:
        r = ptxas_report(log, k)
        print(f"{k:<24} " + (f"regs {r[0]:>3}  frame {r[1]:>4}  spill stores {r[2]:>4}  loads {r[3]:>4}" if r else "(no report)"))
    if a.cubin:
        open(a.cubin, "wb").write(cubin)


if __name__ == "__main__":
    main()
