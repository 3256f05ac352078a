// 8-bit-activation decode matvec (`mvq`, Precision::Fast only; DS4_DECODE_Q8=0 turns it off).
//
// The f32-activation matvecs of the 2-bit expert formats are instruction bound (~7
// instructions per weight: byte extract, convert, sign select, FMA). Here the input vector is
// first quantized to int8 in blocks of 32 with one f32 scale per block (`quant_q8`), so a
// weight sub-block of 32 values costs 8 __dp4a (4 int8 MACs each) plus the work to build
// signed int8 weight words, and one f32 FMA per 32 values for the scales.
//
// Quantized x layout: qs[n] (int8, row-major like x) and xd[n / 32] = {d, d * sum(q)} where
// x ~= d * q, d = max|x| / 127. The block sum serves the Q4_K min term.
// Job semantics mirror MvJob2 (matvec.cuh): expert selection per slot, paired gate/up jobs
// writing the SwiGLU mid vector, x_slot in values. Column groups are 32 values for every type.
// Deterministic: integer dot products are exact, per-lane order fixed, butterfly warp sums,
// fixed-order split-K combine.

// Quantize n0 values of x0 followed by n1 values of x1 (both multiples of 32) into one
// quantized vector. One warp per 32-value block.
extern "C" __global__ void __launch_bounds__(256) quant_q8(const float* __restrict__ x0, int n0, const float* __restrict__ x1,
                                                           int n1, signed char* __restrict__ qs, float2* __restrict__ xd) {
    PDL_ENTRY;
    int lane = threadIdx.x & 31;
    int nblk = (n0 + n1) >> 5;
    for (int b = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; b < nblk; b += (gridDim.x * blockDim.x) >> 5) {
        int i = b * 32 + lane;
        float v = i < n0 ? x0[i] : x1[i - n0];
        q8_block(v, lane, b, qs, xd);
    }
}

struct MvJobQ {
    WMat w;
    WMat w2;                 // paired jobs: the "up" matrix (same type and shape); w2.pay == 0 otherwise
    const signed char* xq;   // quantized input values
    const float2* xd;        // per-32-value {scale, scale * sum}
    float* y;
    const int* sel;          // per-slot expert ids (nullptr: plain matrix)
    const float* wts;        // paired jobs: per-slot routing weight (nullptr: 1)
    i64 x_slot;              // values between slot inputs (multiple of 32; 0: every slot reads the same x)
    int nslots;
    int block0;              // first block of this job in the launch
    int rpw;                 // rows per warp R: 1, 2 or 4
    int wk;                  // warps splitting one row group's columns: 1, 2, 4 or 8
    float clamp;             // paired: SwiGLU clamp
    int pad;
};

// Byte mask 0xFF at byte i where bit i of s (0..15) is set: the four bits are spread to bits
// 0, 8, 16, 24 by one multiply (the shifted copies do not overlap, so no carries).
__device__ __forceinline__ u32 sign_mask4(u32 s) { return ((s * 0x00204081u) & 0x01010101u) * 0xFFu; }

// IQ2_XXS sign table for the block prologue: entry s (the 7 stored sign bits; the 8th makes
// the count even) holds the byte masks of the 8 weights' signs, low and high word.
__device__ __forceinline__ void iq2_signs_init(uint2* ssm) {
    for (int i = threadIdx.x; i < 128; i += blockDim.x) {
        u32 sg = (u32)i | ((u32)(__popc(i) & 1) << 7);
        ssm[i] = make_uint2(sign_mask4(sg & 15), sign_mask4(sg >> 4));
    }
}

// Four grid magnitudes (bytes, all in 1..127) with the bytes under mask m negated:
// (g ^ 0xFF) + 1 = 256 - g per byte, and no byte carries into the next (256 - g <= 255).
__device__ __forceinline__ int iq2_signed(u32 g, u32 m) { return (int)((g ^ m) + (m & 0x01010101u)); }

// IQ2_XXS grid entries as 16-bit codes (2 bits per weight: magnitudes 8, 25, 43 -> 0, 1, 2),
// a 512-byte table whose lookups touch fewer shared-memory banks than the 8-byte entries.
__device__ __forceinline__ void iq2_codes_init(u16* csm) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        u64 e = IQ2XXS_GRID[i];
        u32 c = 0;
        for (int k = 0; k < 8; k++) {
            u32 b = (u32)(e >> (8 * k)) & 255u;
            c |= (b == 8u ? 0u : b == 25u ? 1u : 2u) << (2 * k);
        }
        csm[i] = (u16)c;
    }
}
// Four 2-bit codes (8 bits) -> four magnitude bytes: spread code k to byte k, then
// 8 + 17 c + (c >> 1) maps 0, 1, 2 to 8, 25, 43 (no byte carries: every byte stays <= 43).
__device__ __forceinline__ u32 iq2_mags4(u32 x) {
    u32 t = x | (x << 6);
    t = (t | (t << 12)) & 0x03030303u;
    return 0x08080808u + t * 17u + ((t >> 1) & 0x01010101u);
}
// The 8 sign bits of an IQ2_XXS group (7 stored, the 8th makes the count even) as byte masks.
__device__ __forceinline__ uint2 iq2_signs_alu(u32 s7) {
    u32 sg = s7 | ((u32)(__popc(s7) & 1) << 7);
    return make_uint2(sign_mask4(sg & 15u), sign_mask4(sg >> 4));
}

// A weight load: through the read-only data path from global memory, or a plain load from a
// shared-memory tile (mvs).
template <bool SM, typename T>
__device__ __forceinline__ T ldw(const T* p) {
    if (SM) return *p;
    return __ldg(p);
}

// Dot of 32-value column group g of `row` with the quantized x group (xq: 8 words, dx scale,
// sx = dx * sum(q)). SM: the weights are a shared-memory tile (rows relative to it).
// IQV (IQ2_XXS only): 0 grid and sign tables in shared memory; 1 grid table, signs computed;
// 2 16-bit code table (gsm reinterpreted), magnitudes and signs computed.
template <int TY, bool SM = false, int IQV = 0>
__device__ __forceinline__ float mvq_gdot(const u8* __restrict__ pay, const u8* __restrict__ hdr, int cols, int row,
                                          int g, const int* xq, float dx, float sx, const u64* gsm, const uint2* ssm) {
    if (TY == T_Q8_0) {
        int nb = cols >> 5;
        i64 blk = (i64)row * nb + g;
        const uint4* p = (const uint4*)(pay + blk * 32);
        uint4 q0 = ldw<SM>(p), q1 = ldw<SM>(p + 1);
        float d = h2f(ldw<SM>((const u16*)(hdr + blk * 2)));
        int w[8] = {(int)q0.x, (int)q0.y, (int)q0.z, (int)q0.w, (int)q1.x, (int)q1.y, (int)q1.z, (int)q1.w};
        int s = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) s = __dp4a(w[k], xq[k], s);
        return d * dx * (float)s;
    } else if (TY == T_IQ2_XXS) {
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (g >> 3);
        uint2 q = ldw<SM>((const uint2*)(pay + blk * 64 + (g & 7) * 8));
        float d = h2f(ldw<SM>((const u16*)(hdr + blk * 2)));
        u32 A = q.x, B = q.y;
        int s = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            u32 g0, g1;
            if (IQV == 2) {
                u32 c = ((const u16*)gsm)[(A >> (8 * k)) & 255];
                g0 = iq2_mags4(c & 255u);
                g1 = iq2_mags4(c >> 8);
            } else {
                u64 gr = gsm[(A >> (8 * k)) & 255];
                g0 = (u32)gr;
                g1 = (u32)(gr >> 32);
            }
            uint2 m = IQV == 0 ? ssm[(B >> (7 * k)) & 127] : iq2_signs_alu((B >> (7 * k)) & 127);
            s = __dp4a(iq2_signed(g0, m.x), xq[2 * k], s);
            s = __dp4a(iq2_signed(g1, m.y), xq[2 * k + 1], s);
        }
        return d * (0.5f + (float)(B >> 28)) * 0.25f * dx * (float)s;
    } else if (TY == T_Q2_K) {
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (g >> 3);
        int sub = g & 7, h = sub >> 2, sft = 2 * (sub & 3);
        const u8* P = pay + blk * 80;
        uint4 q0 = ldw<SM>((const uint4*)(P + 16 + 32 * h)), q1 = ldw<SM>((const uint4*)(P + 16 + 32 * h + 16));
        int j0 = 8 * h + 2 * (sub & 3);
        u32 scp = ldw<SM>((const u16*)(P + j0));  // the two 16-value scale bytes as one load
        int sc0 = scp & 0xff, sc1 = scp >> 8;
        u32 dd = ldw<SM>((const u32*)(hdr + blk * 4));
        float d = h2f((u16)(dd & 0xffff)), dmin = h2f((u16)(dd >> 16));
        u32 w[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        int a0 = 0, a1 = 0, s0 = 0, s1 = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int ww = (int)((w[k] >> sft) & 0x03030303u);
            if (k < 4) { a0 = __dp4a(ww, xq[k], a0); s0 = __dp4a(0x01010101, xq[k], s0); }
            else { a1 = __dp4a(ww, xq[k], a1); s1 = __dp4a(0x01010101, xq[k], s1); }
        }
        // the min terms need x sums per 16 values: exact integer sums of the quantized x
        return dx * (d * (float)((sc0 & 15) * a0 + (sc1 & 15) * a1) - dmin * (float)((sc0 >> 4) * s0 + (sc1 >> 4) * s1));
    } else {  // Q4_K
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (g >> 3);
        int j = g & 7, sft = (j & 1) * 4;
        const u8* H = hdr + blk * 16;
        const u8* P = pay + blk * 128 + 32 * (j >> 1);
        uint4 q0 = ldw<SM>((const uint4*)P), q1 = ldw<SM>((const uint4*)(P + 16));
        uint4 hh = ldw<SM>((const uint4*)H);
        u8 hb[16];
        *(uint4*)hb = hh;
        float d = h2f((u16)(hh.x & 0xffff)), dmin = h2f((u16)(hh.x >> 16));
        int sc, m;
        q4k_scale_min(j, hb + 4, sc, m);
        u32 w[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        int a = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) a = __dp4a((int)((w[k] >> sft) & 0x0F0F0F0Fu), xq[k], a);
        return d * (float)sc * dx * (float)a - dmin * (float)m * sx;
    }
}

template <int TY, int R, int IQV>
__device__ __forceinline__ void mvq_body(const MvJobQ& j, int rowA, const signed char* __restrict__ xq,
                                         const float2* __restrict__ xd, const u8* pay, const u8* hdr, const u8* pay2,
                                         const u8* hdr2, int ks, float (*red)[8], const u64* gsm, const uint2* ssm) {
    int cols = j.w.cols, rows = j.w.rows;
    int ng = cols >> 5;
    int g0 = (int)((i64)ng * ks / j.wk), g1 = (int)((i64)ng * (ks + 1) / j.wk);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    bool paired = pay2 != nullptr;
    int rr[R];
#pragma unroll
    for (int r = 0; r < R; r++) rr[r] = min(rowA + r, rows - 1);  // tail rows recompute the last row, discarded
    float acc[R], acc2[R];
#pragma unroll
    for (int r = 0; r < R; r++) { acc[r] = 0.f; acc2[r] = 0.f; }
#pragma unroll 2
    for (int g = g0 + lane; g < g1; g += 32) {
        const uint4* xp = (const uint4*)(xq + (i64)g * 32);
        uint4 v0 = __ldg(xp), v1 = __ldg(xp + 1);
        float2 ds = __ldg(xd + g);
        int xv[8] = {(int)v0.x, (int)v0.y, (int)v0.z, (int)v0.w, (int)v1.x, (int)v1.y, (int)v1.z, (int)v1.w};
#pragma unroll
        for (int r = 0; r < R; r++) {
            acc[r] += mvq_gdot<TY, false, IQV>(pay, hdr, cols, rr[r], g, xv, ds.x, ds.y, gsm, ssm);
            if (paired) acc2[r] += mvq_gdot<TY, false, IQV>(pay2, hdr2, cols, rr[r], g, xv, ds.x, ds.y, gsm, ssm);
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        float a = warp_sum(acc[r]);
        float b = paired ? warp_sum(acc2[r]) : 0.f;
        if (lane == 0) { red[warp][2 * r] = a; red[warp][2 * r + 1] = b; }
    }
}

// One block per 16-32 rows (a persistent variant that looped over logical blocks measured no
// faster in the decode graph: 92.6 vs 92.4 t/s, session 3).
template <int IQV>
__device__ __forceinline__ void mvq_main(const MvJobQ* __restrict__ jobs, int njobs) {
    __shared__ u64 gsm[256];
    __shared__ uint2 ssm[128];
    __shared__ float red[8][8];
    int ji = 0;
    int b = blockIdx.x;
    while (ji + 1 < njobs && jobs[ji + 1].block0 <= b) ji++;
    if (jobs[ji].w.type == T_IQ2_XXS) {  // block-uniform branch
        if (IQV == 2) iq2_codes_init((u16*)gsm);
        else for (int i = threadIdx.x; i < 256; i += blockDim.x) gsm[i] = IQ2XXS_GRID[i];
        if (IQV == 0) iq2_signs_init(ssm);
        __syncthreads();
    }
    {
        const MvJobQ j = jobs[ji];
        int lb = b - j.block0;
        int wpr = 8 / j.wk;  // row groups per block
        int rpb = j.rpw * wpr;
        int bps = (j.w.rows + rpb - 1) / rpb;
        int slot = lb / bps;
        int row0 = (lb % bps) * rpb;
        int warp = threadIdx.x >> 5;
        int rg = warp / j.wk, ks = warp % j.wk;
        int rowA = row0 + rg * j.rpw;
        const u8* pay = j.w.pay;
        const u8* hdr = j.w.hdr;
        const u8* pay2 = j.w2.pay;
        const u8* hdr2 = j.w2.hdr;
        if (j.sel) {
            i64 e = j.sel[slot];
            pay += e * j.w.e_pay;
            hdr += e * j.w.e_hdr;
            if (pay2) { pay2 += e * j.w2.e_pay; hdr2 += e * j.w2.e_hdr; }
        }
        const signed char* xq = j.xq + (i64)slot * j.x_slot;
        const float2* xd = j.xd + (i64)slot * (j.x_slot >> 5);
#define MVQ_R(TY)                                                                              \
        if (j.rpw == 4) mvq_body<TY, 4, IQV>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsm, ssm);      \
        else if (j.rpw == 2) mvq_body<TY, 2, IQV>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsm, ssm); \
        else mvq_body<TY, 1, IQV>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsm, ssm);
        switch (j.w.type) {
            case T_Q8_0: MVQ_R(T_Q8_0) break;
            case T_IQ2_XXS: MVQ_R(T_IQ2_XXS) break;
            case T_Q2_K: MVQ_R(T_Q2_K) break;
            default: MVQ_R(T_Q4_K) break;  // the session only builds jobs of these four types
        }
#undef MVQ_R
        __syncthreads();
        int t = threadIdx.x;
        if (t < rpb) {
            int g = t / j.rpw, r = t % j.rpw;
            int row = row0 + t;
            if (row < j.w.rows) {
                float a = 0.f, c = 0.f;
                for (int k = 0; k < j.wk; k++) {
                    a += red[g * j.wk + k][2 * r];
                    c += red[g * j.wk + k][2 * r + 1];
                }
                float v = a;
                if (j.w2.pay) {
                    float cl = j.clamp;
                    float gg = fminf(a, cl);
                    float uu = fminf(fmaxf(c, -cl), cl);
                    v = siluf_(gg) * uu;
                    if (j.wts) v *= j.wts[slot];
                }
                j.y[(i64)slot * j.w.rows + row] = v;
            }
        }
    }
}

// Same kernel under two register caps (minimum resident blocks per SM), and with the IQ2_XXS
// decode variants (IQV 1, 2; see mvq_gdot).
extern "C" __global__ void __launch_bounds__(256, 2) mvq_b2(const MvJobQ* __restrict__ jobs, int njobs) {
    PDL_ENTRY;
    mvq_main<0>(jobs, njobs);
}
extern "C" __global__ void __launch_bounds__(256, 3) mvq_b3(const MvJobQ* __restrict__ jobs, int njobs) {
    PDL_ENTRY;
    mvq_main<0>(jobs, njobs);
}
extern "C" __global__ void __launch_bounds__(256, 3) mvq_b3_v1(const MvJobQ* __restrict__ jobs, int njobs) {
    PDL_ENTRY;
    mvq_main<1>(jobs, njobs);
}
extern "C" __global__ void __launch_bounds__(256, 3) mvq_b3_v2(const MvJobQ* __restrict__ jobs, int njobs) {
    PDL_ENTRY;
    mvq_main<2>(jobs, njobs);
}

// ---- mvs: the int8-activation decode matvec, weights streamed through shared memory ----
//
// mvq keeps its weight loads in registers: a warp has a few 8-32 byte loads in flight, the
// kernel is latency bound (Nsight Compute, IQ2_XXS gate: long-scoreboard stalls 53%, occupancy
// capped at 37% by registers, 0.7 TB/s). Here the bulk-copy engine (cp.async.bulk, completion
// on an mbarrier) moves whole tiles of `trows` rows into shared memory, `nst` tiles in flight
// per block, so every SM keeps ~100 KB of loads outstanding without registers holding them,
// and the warps compute from shared memory. Persistent grid: block b takes tiles b, b + grid,
// ... of the launch (all jobs' tiles numbered one after another).
//
// A tile is split into units of R rows x 1/wk of the columns, one warp per unit (units per
// tile <= MVS_UNITS); partial sums meet in `red` (two buffers, alternating per tile). Tile
// layout in shared memory: w payload [trows][rp], w headers [trows][rh], then the same for w2
// (paired gate/up). The host (`MvJobS::plan`) keeps every piece 16-byte aligned.

#define MVS_UNITS 64
#define MVS_MAX_ST 4
#define MVS_MAX_JOBS 4

struct MvJobS {
    WMat w;
    WMat w2;                 // paired jobs: the "up" matrix (same type and shape); w2.pay == 0 otherwise
    const signed char* xq;   // quantized input values
    const float2* xd;        // per-32-value {scale, scale * sum}
    float* y;
    const int* sel;          // per-slot expert ids (nullptr: plain matrix)
    const float* wts;        // paired jobs: per-slot routing weight (nullptr: 1)
    i64 x_slot;              // values between slot inputs (multiple of 32; 0: every slot reads the same x)
    int nslots;
    int tile0;               // first tile of this job in the launch
    int trows;               // rows per tile
    int rpw;                 // rows per unit R: 1, 2 or 4
    int wk;                  // units splitting one row group's columns: 1, 2, 4 or 8
    int x_grp_rows;          // rows reading one x slice of `cols` values (block-diagonal weights)
    float clamp;             // paired: SwiGLU clamp
    int pad;
};

__device__ __forceinline__ u32 smem_addr(const void* p) {
    u32 r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void mbar_init(u64* b, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u64* b, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(u64* b, u32 parity) {
    u32 ok;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(smem_addr(b)), "r"(parity) : "memory");
    return ok != 0;
}
// Global -> shared bulk copy (bytes % 16 == 0, both addresses 16-byte aligned), completing
// `bytes` transactions on mbarrier b.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, u32 bytes, u64* b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(b)) : "memory");
}

// Payload and header bytes of one row of `cols` values of weight type ty.
__device__ __forceinline__ void mvs_row_bytes(int ty, int cols, int& rp, int& rh) {
    switch (ty) {
        case T_Q8_0: rp = cols; rh = cols / 16; break;
        case T_IQ2_XXS: rp = cols / 4; rh = cols / 128; break;
        case T_Q2_K: rp = cols / 256 * 80; rh = cols / 64; break;
        default: rp = cols / 2; rh = cols / 16; break;  // Q4_K
    }
}

// Where tile t of the launch lies: its job, slot, first row and row count.
__device__ __forceinline__ int mvs_locate(const MvJobS* js, int njobs, int t, int& slot, int& row0, int& nr) {
    int ji = 0;
    while (ji + 1 < njobs && js[ji + 1].tile0 <= t) ji++;
    const MvJobS& j = js[ji];
    int tps = (j.w.rows + j.trows - 1) / j.trows;
    int lt = t - j.tile0;
    slot = lt / tps;
    row0 = (lt % tps) * j.trows;
    nr = min(j.trows, j.w.rows - row0);
    return ji;
}

// Thread 0: start the bulk copies of tile t into stage `dst` (completion on b).
__device__ __forceinline__ void mvs_issue(const MvJobS* js, int njobs, int t, u8* dst, u64* b) {
    int slot, row0, nr;
    const MvJobS& j = js[mvs_locate(js, njobs, t, slot, row0, nr)];
    int rp, rh;
    mvs_row_bytes(j.w.type, j.w.cols, rp, rh);
    i64 e = j.sel ? (i64)j.sel[slot] : 0;
    bool paired = j.w2.pay != nullptr;
    mbar_expect_tx(b, (u32)(nr * (rp + rh) * (paired ? 2 : 1)));
    bulk_g2s(dst, j.w.pay + e * j.w.e_pay + (i64)row0 * rp, (u32)(nr * rp), b);
    bulk_g2s(dst + j.trows * rp, j.w.hdr + e * j.w.e_hdr + (i64)row0 * rh, (u32)(nr * rh), b);
    if (paired) {
        u8* d2 = dst + j.trows * (rp + rh);
        bulk_g2s(d2, j.w2.pay + e * j.w2.e_pay + (i64)row0 * rp, (u32)(nr * rp), b);
        bulk_g2s(d2 + j.trows * rp, j.w2.hdr + e * j.w2.e_hdr + (i64)row0 * rh, (u32)(nr * rh), b);
    }
}

// One unit: rows [R*rg, R*rg + R) of the tile (clamped to nr; the extra rows are discarded),
// column groups of split ks; partial sums (w, w2 per row) to out[2r], out[2r + 1].
template <int TY, int R>
__device__ __forceinline__ void mvs_unit(const MvJobS& j, const u8* st, int nr, int rg, int ks, const signed char* __restrict__ xq,
                                         const float2* __restrict__ xd, float* out, const u64* gsm, const uint2* ssm) {
    int cols = j.w.cols;
    int ng = cols >> 5;
    int g0 = ng * ks / j.wk, g1 = ng * (ks + 1) / j.wk;
    int lane = threadIdx.x & 31;
    const int nb = cols / QT<TY>::BL;
    const int rp = nb * QT<TY>::PB, rh = nb * QT<TY>::HB;
    const u8* pay = st;
    const u8* hdr = st + j.trows * rp;
    bool paired = j.w2.pay != nullptr;
    const u8* pay2 = hdr + j.trows * rh;
    const u8* hdr2 = pay2 + j.trows * rp;
    int rr[R];
#pragma unroll
    for (int r = 0; r < R; r++) rr[r] = min(rg * R + r, nr - 1);
    float acc[R], acc2[R];
#pragma unroll
    for (int r = 0; r < R; r++) { acc[r] = 0.f; acc2[r] = 0.f; }
#pragma unroll 2
    for (int g = g0 + lane; g < g1; g += 32) {
        const uint4* xp = (const uint4*)(xq + (i64)g * 32);
        uint4 v0 = __ldg(xp), v1 = __ldg(xp + 1);
        float2 ds = __ldg(xd + g);
        int xv[8] = {(int)v0.x, (int)v0.y, (int)v0.z, (int)v0.w, (int)v1.x, (int)v1.y, (int)v1.z, (int)v1.w};
#pragma unroll
        for (int r = 0; r < R; r++) {
            acc[r] += mvq_gdot<TY, true>(pay, hdr, cols, rr[r], g, xv, ds.x, ds.y, gsm, ssm);
            if (paired) acc2[r] += mvq_gdot<TY, true>(pay2, hdr2, cols, rr[r], g, xv, ds.x, ds.y, gsm, ssm);
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        float a = warp_sum(acc[r]);
        float b = paired ? warp_sum(acc2[r]) : 0.f;
        if (lane == 0) { out[2 * r] = a; out[2 * r + 1] = b; }
    }
}

template <int TY>
__device__ __forceinline__ void mvs_unit_r(const MvJobS& j, const u8* st, int nr, int rg, int ks, const signed char* xq,
                                           const float2* xd, float* out, const u64* gsm, const uint2* ssm) {
    if (j.rpw == 4) mvs_unit<TY, 4>(j, st, nr, rg, ks, xq, xd, out, gsm, ssm);
    else if (j.rpw == 2) mvs_unit<TY, 2>(j, st, nr, rg, ks, xq, xd, out, gsm, ssm);
    else mvs_unit<TY, 1>(j, st, nr, rg, ks, xq, xd, out, gsm, ssm);
}

__device__ __forceinline__ void mvs_main(const MvJobS* __restrict__ jobs, int njobs, int ntiles, int stage_bytes, int nst) {
    extern __shared__ __align__(128) u8 mvs_sm[];
    __shared__ u64 gsm[256];
    __shared__ uint2 ssm[128];
    __shared__ float red[2][MVS_UNITS][8];
    __shared__ __align__(8) u64 bar[MVS_MAX_ST];
    __shared__ MvJobS js[MVS_MAX_JOBS];
    int tid = threadIdx.x, warp = tid >> 5;
    for (int i = tid; i < njobs * (int)sizeof(MvJobS) / 4; i += blockDim.x) ((int*)js)[i] = ((const int*)jobs)[i];
    if (tid == 0) {
        for (int s = 0; s < nst; s++) mbar_init(&bar[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    bool iq2 = false;
    for (int i = 0; i < njobs; i++) iq2 |= js[i].w.type == T_IQ2_XXS;
    if (tid == 0)
        for (int k = 0; k < nst; k++) {
            int t = blockIdx.x + k * gridDim.x;
            if (t < ntiles) mvs_issue(js, njobs, t, mvs_sm + k * stage_bytes, &bar[k]);
        }
    if (iq2) {  // block-uniform; published by the barrier below
        for (int i = tid; i < 256; i += blockDim.x) gsm[i] = IQ2XXS_GRID[i];
        iq2_signs_init(ssm);
    }
    __syncthreads();
    for (int k = 0;; k++) {
        int t = blockIdx.x + k * gridDim.x;
        if (t >= ntiles) break;
        int s = k % nst;
        int slot, row0, nr;
        const MvJobS& j = js[mvs_locate(js, njobs, t, slot, row0, nr)];
        const u8* st = mvs_sm + s * stage_bytes;
        const signed char* xq = j.xq + (i64)slot * j.x_slot + (i64)(row0 / j.x_grp_rows) * j.w.cols;
        const float2* xd = j.xd + (((i64)slot * j.x_slot + (i64)(row0 / j.x_grp_rows) * j.w.cols) >> 5);
        float(*rb)[8] = red[k & 1];
        int units = (j.trows / j.rpw) * j.wk;
        while (!mbar_try_wait(&bar[s], (u32)((k / nst) & 1))) {}
        for (int u = warp; u < units; u += 8) {
            int rg = u / j.wk, ks = u % j.wk;
            if (rg * j.rpw >= nr) continue;
            switch (j.w.type) {
                case T_Q8_0: mvs_unit_r<T_Q8_0>(j, st, nr, rg, ks, xq, xd, rb[u], gsm, ssm); break;
                case T_IQ2_XXS: mvs_unit_r<T_IQ2_XXS>(j, st, nr, rg, ks, xq, xd, rb[u], gsm, ssm); break;
                case T_Q2_K: mvs_unit_r<T_Q2_K>(j, st, nr, rg, ks, xq, xd, rb[u], gsm, ssm); break;
                default: mvs_unit_r<T_Q4_K>(j, st, nr, rg, ks, xq, xd, rb[u], gsm, ssm); break;
            }
        }
        __syncthreads();  // stage s is read, the partial sums are in rb
        if (tid == 0) {
            int tn = t + nst * gridDim.x;
            if (tn < ntiles) {
                // the generic-proxy reads of stage s are ordered before the bulk copy's writes
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                mvs_issue(js, njobs, tn, mvs_sm + s * stage_bytes, &bar[s]);
            }
        }
        for (int i = tid; i < nr; i += blockDim.x) {
            int rg = i / j.rpw, r = i % j.rpw;
            float a = 0.f, c = 0.f;
            for (int q = 0; q < j.wk; q++) {
                a += rb[rg * j.wk + q][2 * r];
                c += rb[rg * j.wk + q][2 * r + 1];
            }
            float v = a;
            if (j.w2.pay) {
                float cl = j.clamp;
                float gg = fminf(a, cl);
                float uu = fminf(fmaxf(c, -cl), cl);
                v = siluf_(gg) * uu;
                if (j.wts) v *= j.wts[slot];
            }
            j.y[(i64)slot * j.w.rows + row0 + i] = v;
        }
    }
}

// Same kernel under four register caps (minimum resident blocks per SM).
extern "C" __global__ void __launch_bounds__(256, 1) mvs_b1(const MvJobS* __restrict__ jobs, int njobs, int ntiles, int stage_bytes, int nst) {
    PDL_ENTRY;
    mvs_main(jobs, njobs, ntiles, stage_bytes, nst);
}
extern "C" __global__ void __launch_bounds__(256, 2) mvs_b2(const MvJobS* __restrict__ jobs, int njobs, int ntiles, int stage_bytes, int nst) {
    PDL_ENTRY;
    mvs_main(jobs, njobs, ntiles, stage_bytes, nst);
}
extern "C" __global__ void __launch_bounds__(256, 3) mvs_b3(const MvJobS* __restrict__ jobs, int njobs, int ntiles, int stage_bytes, int nst) {
    PDL_ENTRY;
    mvs_main(jobs, njobs, ntiles, stage_bytes, nst);
}
extern "C" __global__ void __launch_bounds__(256, 4) mvs_b4(const MvJobS* __restrict__ jobs, int njobs, int ntiles, int stage_bytes, int nst) {
    PDL_ENTRY;
    mvs_main(jobs, njobs, ntiles, stage_bytes, nst);
}
