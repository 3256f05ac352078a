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
    rounded to f16 (GQ_FLAG_Y16);
  * `DS4_DENSE_FP8=1`: the prefill products whose checkpoint weights are FP8 (MODEL.md 4.4: q_a,
    q_b, kv, out_b, the shared expert, the indexer's q_b) in E4M3 on both sides, as the official
    inference runs them: each weight rounded to E4M3 under a power-of-two scale per 128 x 128
    block, each activation vector to E4M3 under a power-of-two scale per 128 values (scale
    2^ceil(log2(amax / 448)), amax floored at 1e-4, as the fixtures' FP8 KV step), f32 sums.
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


def e4m3(v):
    """Round to the nearest E4M3FN value (saturating at 448), ties to even: MODEL.md 5.7's grid."""
    a = np.minimum(np.abs(v), 448.0)
    e = np.floor(np.log2(np.maximum(a, 2.0 ** -6)))  # normals: 3 mantissa bits; below 2^-6: step 2^-9
    step = 2.0 ** (e - 3)
    return np.sign(v) * np.minimum(np.rint(a / step) * step, 448.0)


def pow2_scale(amax):
    return 2.0 ** np.ceil(np.log2(np.maximum(amax, 1e-4) / 448.0))


def fp8_rows(w):
    """W rounded to E4M3 under one power-of-two scale per 128 x 128 block."""
    w = np.asarray(w, dtype=np.float64)
    out = np.empty_like(w)
    for r in range(0, w.shape[0], 128):
        for c in range(0, w.shape[1], 128):
            b = w[r:r + 128, c:c + 128]
            s = pow2_scale(np.abs(b).max())
            out[r:r + 128, c:c + 128] = e4m3(b / s) * s
    return out


def fp8_vec(x):
    """An activation vector rounded to E4M3 under one power-of-two scale per 128 values."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    for c in range(0, x.shape[0], 128):
        s = pow2_scale(np.abs(x[c:c + 128]).max())
        out[c:c + 128] = e4m3(x[c:c + 128] / s) * s
    return out


# The dense matrices whose checkpoint dtype is FP8 (MODEL.md 4.4); out_a, the compressors, the
# indexer's weights_proj and the router are BF16 there and keep f16 on the GPU.
FP8_WEIGHTS = ("attn_q_a.weight", "attn_q_b.weight", "attn_kv.weight", "attn_output_b.weight",
               "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight",
               "indexer.attn_q_b.weight")


class _Fp8Mat:
    """W @ x with both operands in E4M3 (block scales as above)."""

    def __init__(self, w):
        self.w = fp8_rows(w)

    def __matmul__(self, x):
        return self.w @ fp8_vec(x)


def r_bf16(x):
    # round to nearest even on the f32 bits (the kernels' hcs_pack), back to float64
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


class Rounded(ds4_ref.DS4Reference):
    def __init__(self, path, state=None, exp16=False, fp8=False):
        super().__init__(path, mode="exact")
        self.rs, self.exp16, self.fp8w = state, exp16, fp8
        self._fp8 = {}

    def hc_post(self, block, state, post, c):
        out = super().hc_post(block, state, post, c)
        return self.rs(out) if self.rs else out

    def T(self, name):
        t = super().T(name)
        if self.rs and name == "token_embd.weight":
            return _RoundRows(t, self.rs)
        if self.exp16 and name.endswith(("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight")):
            return _RoundedExperts(t)
        if self.fp8w and name.endswith(FP8_WEIGHTS):
            if name not in self._fp8:
                self._fp8[name] = _Fp8Mat(t)
            return self._fp8[name]
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
                ("DS4_HC_S16=1 DS4_EXP_Y16=1 (both)", dict(state=r_f16, exp16=True)),
                ("DS4_DENSE_FP8=1 (FP8-checkpoint projections in E4M3)", dict(fp8=True)),
                ("all three", dict(state=r_f16, exp16=True, fp8=True))]
    only = os.environ.get("SIM_ONLY")  # a substring of the settings to run, e.g. FP8
    settings = [st for st in settings if not only or only in st[0]]
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
