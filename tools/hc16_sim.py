#!/usr/bin/env python3
"""What the 16-bit prefill switches cost in accuracy, estimated on the CPU before a GPU run.

    python3 tools/hc16_sim.py [MODEL_DIR ...]      (default: the t256-q2 / t256-q4 fixtures)

Runs the fixtures' independent float64 reference (../shared/tools/fixtures/ds4_ref.py, exact
mode) on each case's tokens as it is, and again with one rounding added where the CUDA fast
path's switch adds it:
  * `DS4_HC_S16=1` / `=2`: the hyper-connection state rounded to f16 (saturating) / bf16 after
    the embedding and after every hc_post (hc_post_mma8_h / _b store it so, and every later use
    reads the stored value);
  * `DS4_EXP_Y16=1`: the routed experts' gate and up outputs and each expert's down output
    rounded to f16 (GQ_FLAG_Y16).
and prints per case and setting the max |logit difference| against the unrounded run, the
mean KL(unrounded || rounded) of the next-token distributions, and the top-1 agreement.
This isolates the switch's own cost from the fast path's other roundings (f16 activations,
int8 decode, FP8 KV), which the GPU fixture check measures as a whole.
Needs numpy and gguf (pip); torch is only imported by the reference for its "official" mode,
so a stub stands in for it here.
"""
import os
import sys
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "..", "shared")
sys.path.insert(0, os.path.join(FIX, "tools", "fixtures"))
_torch = types.ModuleType("torch")  # exact mode never calls it (numerics.py names dtypes at import)
_torch.float32, _torch.float64 = "float32", "float64"
sys.modules.setdefault("torch", _torch)
import ds4_ref  # noqa: E402


def r_f16(x):
    return np.clip(x, -65504.0, 65504.0).astype(np.float16).astype(np.float64)


def r_bf16(x):
    # round to nearest even on the f32 bits (the kernels' hcs_pack), back to float64
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


class Rounded(ds4_ref.DS4Reference):
    def __init__(self, path, state=None, exp16=False):
        super().__init__(path, mode="exact")
        self.rs, self.exp16 = state, exp16

    def hc_post(self, block, state, post, c):
        out = super().hc_post(block, state, post, c)
        return self.rs(out) if self.rs else out

    def T(self, name):
        t = super().T(name)
        if self.rs and name == "token_embd.weight":
            return _RoundRows(t, self.rs)
        if self.exp16 and name.endswith(("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight")):
            return _RoundedExperts(t)
        return t


class _RoundRows:
    """token_embd with its rows rounded as the state stores them."""

    def __init__(self, emb, rs):
        self.emb, self.rs = emb, rs

    def __getitem__(self, i):
        return self.rs(self.emb[i])


class _RoundedExperts:
    """An expert tensor whose per-expert products come out rounded to f16 (GQ_FLAG_Y16)."""

    def __init__(self, t):
        self.t = t

    def __getitem__(self, e):
        return _RoundedMat(self.t[e])


class _RoundedMat:
    def __init__(self, m):
        self.m = m

    def __matmul__(self, x):
        return r_f16(self.m @ x)


def compare(ref, other):
    d = np.abs(ref - other).max()
    p = np.exp(ref - ref.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    lq = other - other.max(axis=1, keepdims=True)
    lq -= np.log(np.exp(lq).sum(axis=1, keepdims=True))
    lp = np.log(np.maximum(p, 1e-300))
    kl = (p * (lp - lq)).sum(axis=1).mean()
    top = (ref.argmax(axis=1) == other.argmax(axis=1)).mean()
    return d, kl, top


def main():
    dirs = sys.argv[1:] or [os.path.join(FIX, "fixtures", "model", m) for m in ("t256-q2", "t256-q4")]
    settings = [("DS4_HC_S16=1 (f16 state)", dict(state=r_f16)), ("DS4_HC_S16=2 (bf16 state)", dict(state=r_bf16)),
                ("DS4_EXP_Y16=1 (f16 expert outputs)", dict(exp16=True)),
                ("DS4_HC_S16=1 DS4_EXP_Y16=1 (both)", dict(state=r_f16, exp16=True))]
    for d in dirs:
        path = os.path.join(d, "model.gguf")
        for case in ("short", "medium"):
            toks = np.fromfile(os.path.join(d, case, "tokens.i32.bin"), dtype=np.int32)
            base = ds4_ref.DS4Reference(path, mode="exact").run(toks)
            for name, kw in settings:
                got = Rounded(path, **kw).run(toks)
                dmax, kl, top = compare(base, got)
                print(f"{os.path.basename(d)} {case} ({len(toks)} tokens) {name}: max |dlogit| {dmax:.3e}, "
                      f"mean KL {kl:.3e}, top-1 agreement {top:.4f}", flush=True)


if __name__ == "__main__":
    main()
