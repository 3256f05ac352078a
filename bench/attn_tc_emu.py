# Lane-level emulation (no GPU; numpy) of attn_tc_body (kernels/attn.cuh): swizzled smem, ldmatrix, mma
# Run: python bench/attn_tc_emu.py [small|big]; prints ||emulated-ref||/||ref|| per token (f16 inputs: ~5e-4).
# fragment layouts (PTX ISA), the warp-pair S exchange, online softmax, output mapping.
# Compared with a float64 reference written from MODEL.md 2.5.7 (not from the kernel).
import numpy as np, sys

L = np.arange(32)
G, TQ = L >> 2, L & 3

def off(row, col, DHP):
    return row * DHP * 2 + (((col >> 3) ^ (row & 7)) << 4) + ((col & 7) << 1)

# index maps of the m16n8k16 fragments
A_r = np.zeros((32, 4, 2), int); A_c = np.zeros((32, 4, 2), int)
for l in range(32):
    g, t = l >> 2, l & 3
    for j in range(2):
        A_r[l, 0, j], A_c[l, 0, j] = g, 2 * t + j
        A_r[l, 1, j], A_c[l, 1, j] = g + 8, 2 * t + j
        A_r[l, 2, j], A_c[l, 2, j] = g, 2 * t + 8 + j
        A_r[l, 3, j], A_c[l, 3, j] = g + 8, 2 * t + 8 + j
B_k = np.zeros((32, 2, 2), int); B_n = np.zeros((32, 2, 2), int)
for l in range(32):
    g, t = l >> 2, l & 3
    for j in range(2):
        B_k[l, 0, j], B_n[l, 0, j] = 2 * t + j, g
        B_k[l, 1, j], B_n[l, 1, j] = 2 * t + 8 + j, g
C_r = np.stack([G, G, G + 8, G + 8], 1); C_c = np.stack([2 * TQ, 2 * TQ + 1, 2 * TQ, 2 * TQ + 1], 1)

def mma(c, a, b0, b1):
    A = np.zeros((16, 16)); A[A_r, A_c] = a
    B = np.zeros((16, 8)); b = np.stack([b0, b1], 1); B[B_k, B_n] = b
    D = A @ B
    return c + D[C_r, C_c]

class Smem:
    def __init__(s, nbytes): s.h = np.zeros(nbytes // 2, np.float16)
    def st(s, byte, vals): s.h[byte // 2: byte // 2 + len(vals)] = vals
    def ldm4(s, addrs, trans=False):
        rows = np.stack([s.h[a // 2: a // 2 + 8] for a in addrs])  # [32][8]
        M = rows.reshape(4, 8, 8)  # matrix i, row r (lane 8i+r)
        out = np.zeros((32, 4, 2), np.float64)
        for i in range(4):
            if not trans:
                out[:, i, 0] = M[i][G, 2 * TQ]; out[:, i, 1] = M[i][G, 2 * TQ + 1]
            else:
                out[:, i, 0] = M[i][2 * TQ, G]; out[:, i, 1] = M[i][2 * TQ + 1, G]
        return out

f16 = lambda x: np.float64(np.float16(x))

def kernel_token(t, a, DHP):
    NCH, HALF = DHP // 8, DHP // 2
    KS, NO = HALF // 16, HALF // 8
    TILE_B = 64 * DHP * 2
    sm = Smem(64 * DHP * 2 + 2 * TILE_B)
    sQ, sK = 0, 64 * DHP * 2
    Dh, H, p = a['Dh'], a['H'], a['pos'][t]
    nraw = min(p + 1, a['W'])
    ncv = (p + 1) // a['ratio'] if a['ratio'] else 0
    use_sel = a['ratio'] == 4 and ncv > a['topk']
    ncomp = a['topk'] if use_sel else ncv
    n = nraw + ncomp
    ntiles = (n + 63) // 64
    ring0 = (p - nraw + 1) % a['cap']
    dch = Dh >> 3
    def load_tile(it, buf):
        dst = sK + buf * TILE_B
        for f in range(64 * NCH):
            rr, c = f // NCH, f % NCH
            r = it * 64 + rr
            vals = np.zeros(8, np.float16)
            if r < n and c < dch:
                if r < nraw:
                    row = ring0 + r
                    if row >= a['cap']: row -= a['cap']
                else:
                    ci = r - nraw
                    row = a['cap'] + (a['sel'][t, ci] if use_sel else ci)
                vals = a['kv16'][row, c * 8: c * 8 + 8]
            sm.st(dst + off(rr, c * 8, DHP), vals)
    load_tile(0, 0)
    Dn = Dh - a['R']
    for h in range(64):
        v = np.zeros(DHP, np.float32)
        if h < H: v[:Dh] = a['q'][t, h]
        ss = float(np.sum(v.astype(np.float64) ** 2))
        rs = np.float32(1) / np.sqrt(np.float32(ss / Dh) + np.float32(a['eps']))
        v = v * rs
        for k in range(a['R'] // 2):
            th = np.float32(p) * a['omega'][k]
            c, s = np.cos(th), np.sin(th)
            x0, x1 = v[Dn + 2 * k], v[Dn + 2 * k + 1]
            v[Dn + 2 * k], v[Dn + 2 * k + 1] = x0 * c - x1 * s, x0 * s + x1 * c
        for d in range(0, DHP, 4):
            sm.st(sQ + off(h, d, DHP), v[d:d + 4].astype(np.float16))
    sl2 = (1 / np.sqrt(Dh)) * 1.4426950408889634
    o = np.zeros((8, 32, NO, 4)); mrow = np.full((8, 32, 2), -1e30); lrow = np.zeros((8, 32, 2))
    for it in range(ntiles):
        if it + 1 < ntiles: load_tile(it + 1, (it + 1) & 1)
        kt = sK + (it & 1) * TILE_B
        spart = np.zeros((8, 32, 8, 4))
        for w in range(8):
            mt, hf = w & 3, w >> 2
            a_row = mt * 16 + (L & 7) + ((L >> 3) & 1) * 8; a_col = (L >> 4) * 8
            b_row = (L & 7) + ((L >> 4) & 1) * 8; b_col = ((L >> 3) & 1) * 8
            for ks in range(KS):
                k0 = hf * HALF + ks * 16
                af = sm.ldm4([sQ + off(r, c, DHP) for r, c in zip(a_row, k0 + a_col)])
                for np_ in range(4):
                    bf = sm.ldm4([kt + off(r, c, DHP) for r, c in zip(np_ * 16 + b_row, k0 + b_col)])
                    spart[w, :, 2 * np_] = mma(spart[w, :, 2 * np_], af, bf[:, 0], bf[:, 1])
                    spart[w, :, 2 * np_ + 1] = mma(spart[w, :, 2 * np_ + 1], af, bf[:, 2], bf[:, 3])
        for w in range(8):
            mt, hf = w & 3, w >> 2
            s = spart[w] + spart[w ^ 4]
            cbase = it * 64 + 2 * TQ
            mx = np.full((32, 2), -1e30)
            for j in range(8):
                for e in range(4):
                    col = cbase + j * 8 + (e & 1)
                    x = np.where(col < n, s[:, j, e] * sl2, -1e30)
                    s[:, j, e] = x
                    mx[:, e >> 1] = np.maximum(mx[:, e >> 1], x)
            mx = mx.reshape(8, 4, 2).max(1).repeat(4, 0)  # quad reduce
            mnew = np.maximum(mrow[w], mx)
            fac = np.exp2(mrow[w] - mnew); mrow[w] = mnew
            pv = np.exp2(s - mnew[:, None, [0, 0, 1, 1]])
            rsum = np.stack([pv[:, :, :2].sum((1, 2)), pv[:, :, 2:].sum((1, 2))], 1)
            rsum = rsum.reshape(8, 4, 2).sum(1).repeat(4, 0)
            lrow[w] = lrow[w] * fac + rsum
            o[w] *= fac[:, None, [0, 0, 1, 1]]
            v_row = (L & 7) + ((L >> 3) & 1) * 8; v_col = ((L >> 4) & 1) * 8
            for kk in range(4):
                pa = np.zeros((32, 4, 2))
                pa[:, 0] = f16(pv[:, 2 * kk, 0:2]); pa[:, 1] = f16(pv[:, 2 * kk, 2:4])
                pa[:, 2] = f16(pv[:, 2 * kk + 1, 0:2]); pa[:, 3] = f16(pv[:, 2 * kk + 1, 2:4])
                for np_ in range(NO // 2):
                    bf = sm.ldm4([kt + off(r, c, DHP) for r, c in zip(kk * 16 + v_row, hf * HALF + np_ * 16 + v_col)], True)
                    o[w, :, 2 * np_] = mma(o[w, :, 2 * np_], pa, bf[:, 0], bf[:, 1])
                    o[w, :, 2 * np_ + 1] = mma(o[w, :, 2 * np_ + 1], pa, bf[:, 2], bf[:, 3])
    out = np.full((H, Dh), np.nan)
    L2E = 1.4426950408889634
    for w in range(8):
        mt, hf = w & 3, w >> 2
        for r in range(2):
            h = mt * 16 + G + 8 * r
            sk = np.where(h < H, a['sinks'][np.minimum(h, H - 1)] * L2E, 0.0)
            M = np.maximum(mrow[w][:, r], sk)
            em = np.exp2(mrow[w][:, r] - M)
            f = em / (np.exp2(sk - M) + lrow[w][:, r] * em)
            for j in range(NO):
                d = hf * HALF + j * 8 + 2 * TQ
                for l in range(32):
                    if d[l] >= Dh or h[l] >= H: continue
                    x0, x1 = o[w, l, j, 2 * r] * f[l], o[w, l, j, 2 * r + 1] * f[l]
                    c, sn = 1.0, 0.0
                    if d[l] >= Dn:
                        th = np.float32(p) * a['omega'][(d[l] - Dn) // 2]
                        c, sn = np.cos(th), -np.sin(th)
                    out[h[l], d[l]] = x0 * c - x1 * sn
                    out[h[l], d[l] + 1] = x0 * sn + x1 * c
    return out

def reference_token(t, a):
    Dh, H, R, p = a['Dh'], a['H'], a['R'], a['pos'][t]
    Dn = Dh - R
    nraw = min(p + 1, a['W'])
    rows = [a['raw'][(q) % a['cap']] for q in range(p - nraw + 1, p + 1)]
    if a['ratio']:
        ncv = (p + 1) // a['ratio']
        idx = sorted(a['sel'][t]) if (a['ratio'] == 4 and ncv > a['topk']) else range(ncv)
        rows += [a['comp'][c] for c in idx]
    K = np.array(rows, np.float64)
    th = p * a['omega'].astype(np.float64)
    out = np.zeros((H, Dh))
    for h in range(H):
        q = a['q'][t, h].astype(np.float64)
        q = q / np.sqrt(np.mean(q * q) + a['eps'])
        x0, x1 = q[Dn::2].copy(), q[Dn + 1::2].copy()
        q[Dn::2], q[Dn + 1::2] = x0 * np.cos(th) - x1 * np.sin(th), x0 * np.sin(th) + x1 * np.cos(th)
        s = K @ q / np.sqrt(Dh)
        m = max(a['sinks'][h], s.max())
        e = np.exp(s - m)
        o = e @ K / (np.exp(a['sinks'][h] - m) + e.sum())
        x0, x1 = o[Dn::2].copy(), o[Dn + 1::2].copy()
        o[Dn::2], o[Dn + 1::2] = x0 * np.cos(th) + x1 * np.sin(th), -x0 * np.sin(th) + x1 * np.cos(th)
        out[h] = o
    return out

def run(H, Dh, R, topk, ratio, positions, DHP, seed=1):
    rng = np.random.default_rng(seed)
    W = 128
    T = len(positions)
    pend = max(positions) + 1
    cap = 256 * ((W + T + 255) // 256)
    if max(positions) - min(positions) + W > cap: cap = 256 * ((pend + 255) // 256)
    a = dict(H=H, Dh=Dh, R=R, topk=topk, ratio=ratio, W=W, cap=cap, eps=1e-6)
    a['pos'] = positions
    a['q'] = rng.uniform(-1, 1, (T, H, Dh)).astype(np.float32)
    a['raw'] = rng.uniform(-3, 3, (cap, Dh)).astype(np.float32)
    ncomp = pend // ratio if ratio else 0
    a['comp'] = rng.uniform(-3, 3, (max(ncomp, 1), Dh)).astype(np.float32)
    a['sinks'] = rng.uniform(-1, 3, H).astype(np.float32)
    a['omega'] = np.array([1.0 / 10000 ** (2 * k / R) for k in range(R // 2)], np.float32)
    sel = np.zeros((T, topk), int)
    for i, p in enumerate(positions):
        ncv = (p + 1) // 4
        if ratio == 4 and ncv > topk: sel[i] = rng.permutation(ncv)[:topk]
    a['sel'] = sel
    a['kv16'] = np.concatenate([a['raw'], a['comp'][:ncomp]]).astype(np.float16)
    worst = 0
    for t in range(T):
        y = kernel_token(t, a, DHP); r = reference_token(t, a)
        rel = np.linalg.norm(y - r) / np.linalg.norm(r)
        worst = max(worst, rel)
        print(f"H{H} Dh{Dh} ratio{ratio} p={positions[t]} n-rows ok rel={rel:.2e} nan={np.isnan(y).sum()}", flush=True)
    return worst

if __name__ == '__main__':
    which = sys.argv[1] if len(sys.argv) > 1 else 'small'
    if which == 'small':
        for ratio in [0, 4, 128]:
            run(4, 80, 16, 8, ratio, [0, 5, 63, 64, 130, 200, 299], 128)
    else:
        run(64, 512, 64, 512, 4, [2050], 512)
