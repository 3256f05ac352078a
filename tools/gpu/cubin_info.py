#!/usr/bin/env python3
"""Registers and stack frame of the kernels in a kernel-cache cubin, without a GPU.

Reads the ELF .nv.info attributes NVRTC writes (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE,
EIATTR_MIN_STACK_SIZE). A nonzero frame on a hot kernel means local memory: register spills or
a runtime-indexed local array (nvdisasm -c on the same cubin shows which: spills carry a
"SpillRefill" comment). nvdisasm comes with the PyPI wheel nvidia-cuda-nvdisasm.
Usage: cubin_info.py DIR_OR_CUBIN [NAME_SUBSTRING ...]   (no names: every kernel)"""
import glob
import os
import struct
import sys

ATTRS = {0x2F: "regs", 0x11: "frame", 0x12: "min_stack"}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    if os.path.isdir(path):
        found = sorted(glob.glob(os.path.join(path, "*.cubin")))
        if not found:
            sys.exit(f"no .cubin in {path}")
        path = found[0]
    want = sys.argv[2:]
    f = open(path, "rb").read()
    if f[:4] != b"\x7fELF":
        sys.exit(f"{path}: not an ELF cubin")
    shoff = struct.unpack_from("<Q", f, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", f, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", f, shoff + i * shentsize) for i in range(shnum)]

    def cstr(o):
        return f[o : f.index(b"\0", o)].decode()

    names = {cstr(secs[shstrndx][4] + s[0]): s for s in secs}
    sym, nvinfo = names.get(".symtab"), names.get(".nv.info")
    if sym is None or nvinfo is None:
        sys.exit("no .symtab / .nv.info section")
    strtab = secs[sym[6]]
    syms = [cstr(strtab[4] + struct.unpack_from("<I", f, sym[4] + i * 24)[0]) for i in range(sym[5] // 24)]
    info = {}
    p, end = nvinfo[4], nvinfo[4] + nvinfo[5]
    while p < end:
        fmt, attr = f[p], f[p + 1]
        if fmt == 4:  # EIFMT_SVAL: u16 size, then (symbol index, value) for these attributes
            size = struct.unpack_from("<H", f, p + 2)[0]
            if attr in ATTRS and size >= 8:
                si, v = struct.unpack_from("<II", f, p + 4)
                info.setdefault(syms[si], {})[ATTRS[attr]] = v
            p += 4 + size
        else:
            p += 4
    for k in sorted(info):
        if k.startswith("$") or (want and not any(w in k for w in want)):
            continue
        a = info[k]
        print(f"{k:<28} regs {a.get('regs', '?'):>4}  frame {a.get('frame', 0):>4}")


if __name__ == "__main__":
    main()
