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

// Q8_0 weight blocks in the repacked layout (32 int8 codes per block in `pay`, the f16 scale in
// `hdr`) from an F16 matrix: one thread per block of 32 consecutive values. MODEL.md §5.6's
// rule, as ds4-gguf's quantize_q8_0: d = amax / 127 (f32), q = clamp(rne(x * (1 / d))), the
// header d rounded to f16 (ggml's Q8_0 weights). Decode's int8 matvec then reads the indexer's
// F16 q_b at half the bytes (session.rs attn_jobsq).
extern "C" __global__ void q8_from_f16(const u16* __restrict__ src, signed char* __restrict__ pay, u16* __restrict__ hdr, i64 nblocks) {
    PDL_ENTRY;
    const i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblocks) return;
    float v[32];
    float amax = 0.f;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        v[i] = h2f(src[b * 32 + i]);
        amax = fmaxf(amax, fabsf(v[i]));
    }
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
#pragma unroll
    for (int i = 0; i < 32; i++) pay[b * 32 + i] = (signed char)max(-128, min(127, __float2int_rn(v[i] * id)));
    hdr[b] = f2h(d);
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
    int rpw;                 // rows per warp R: 1, 2 or 4 (8: plain Q8_0 jobs in mvq_b2)
    int wk;                  // warps splitting one row group's columns: 1, 2, 4 or 8
    float clamp;             // paired: SwiGLU clamp
    signed char* yq;         // y also quantized (q8 layout) when set: 32 rows per block
    float2* yd;
    int x_div;               // > 1: slot s reads input s / x_div (a small prefill batch's experts:
                             // slot t * K + j reads token t's x); else input s
    int nt;                  // chunked jobs (mvqm / mvqs): pairs per chunk (session.rs MvJobQ::nt)
    const int* xmap;         // set: slot s reads input xmap[s] (the experts' pairs grouped by
                             // expert: a pair's token), before x_div
    i64 ldy;                 // chunked jobs: values between the y rows of consecutive pairs (0: rows)
};

// IQ2_XXS to signed int8 words by byte permutes. Each group of 8 weights is a grid entry of 8
// magnitudes in {8, 25, 43} (codes 0, 1, 2) and 8 signs (7 stored, the 8th makes the count
// even). A prmt picks byte v of {IQ2_POS, IQ2_NEG} per output byte: v = code + 4 * sign, so a
// selector word of 8 nibbles (code in bits 0-1, sign in bit 2) gives both int8 words of the 8
// weights in two prmts. The sign bits reach bit 2 of their nibbles by one multiply-add:
// s7 * 0x00810204 places four shifted copies of the 7 bits side by side (no carries) and the
// parity lands at bit 30; masking bit 2 of each nibble leaves the sign of weight PI[n] in
// nibble n, PI = {0, 4, 1, 5, 2, 6, 3, 7}. The grid's code nibbles are
// stored in that order (iq2_sel) and the x words are permuted the same way once per group and
// loop trip (iq2_xperm), shared by every row. About 13 instructions per 8 weights where the
// byte-mask arithmetic took ~28 (Nsight Compute on the IQ2_XXS gate: issue-bound, math and
// not_selected stalls on the mask LOP3s).
#define IQ2_POS 0x002B1908u  // bytes 8, 25, 43, 0
#define IQ2_NEG 0x00D5E7F8u  // bytes -8, -25, -43, 0
// prmt in its default mode: __byte_perm masks every selector nibble to 3 bits first (a LOP3 per
// call); the selectors here never set bit 3 (which would replicate the byte's sign).
__device__ __forceinline__ int iq2_prmt(u32 sel) {
    u32 r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(IQ2_POS), "r"(IQ2_NEG), "r"(sel));
    return (int)r;
}
__device__ __forceinline__ u32 iq2_sel(u64 g) {
    const int pi[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    u32 s = 0;
#pragma unroll
    for (int n = 0; n < 8; n++) {
        u32 b = (u32)(g >> (8 * pi[n])) & 255u;
        s |= ((u32)(b > 8) + (u32)(b > 25)) << (4 * n);
    }
    return s;
}
// x bytes of a group's 8-value chunk k in nibble order PI: {x0, x4, x1, x5}, {x2, x6, x3, x7}.
__device__ __forceinline__ void iq2_xperm(int* x) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
        u32 a = (u32)x[2 * k], b = (u32)x[2 * k + 1];
        x[2 * k] = (int)__byte_perm(a, b, 0x5140);
        x[2 * k + 1] = (int)__byte_perm(a, b, 0x7362);
    }
}

// One 32-value column group g of `row`, as loaded (mvq_ld) and as used (mvq_dot): the loads
// of a loop trip are all issued before any of them is used. (With load and use in one
// function behind the paired-job branch, the compiler issued each group's loads right before
// their use: every row and group of a trip waited a whole memory latency of its own; Nsight
// Compute on the IQ2_XXS gate: 15 % of DRAM bandwidth, long-scoreboard stalls at each use.)
template <int TY> struct MvqRaw;
template <> struct MvqRaw<T_Q8_0> { uint4 q0, q1; u32 d; };
template <> struct MvqRaw<T_IQ2_XXS> { uint2 q; u32 d; };
template <> struct MvqRaw<T_Q2_K> { uint4 q0, q1; u32 scp, dd; };
template <> struct MvqRaw<T_Q4_K> { uint4 q0, q1, hh; };

template <int TY>
__device__ __forceinline__ MvqRaw<TY> mvq_ld(const u8* __restrict__ pay, const u8* __restrict__ hdr, int cols, int row, int g) {
    MvqRaw<TY> w;
    if constexpr (TY == T_Q8_0) {
        i64 blk = (i64)row * (cols >> 5) + g;
        const uint4* p = (const uint4*)(pay + blk * 32);
        w.q0 = __ldg(p);
        w.q1 = __ldg(p + 1);
        w.d = __ldg((const u16*)(hdr + blk * 2));
    } else if constexpr (TY == T_IQ2_XXS) {
        i64 blk = (i64)row * (cols >> 8) + (g >> 3);
        w.q = __ldg((const uint2*)(pay + blk * 64 + (g & 7) * 8));
        w.d = __ldg((const u16*)(hdr + blk * 2));
    } else if constexpr (TY == T_Q2_K) {
        i64 blk = (i64)row * (cols >> 8) + (g >> 3);
        int sub = g & 7, h = sub >> 2;
        const u8* P = pay + blk * 80;
        w.q0 = __ldg((const uint4*)(P + 16 + 32 * h));
        w.q1 = __ldg((const uint4*)(P + 16 + 32 * h + 16));
        w.scp = __ldg((const u16*)(P + 8 * h + 2 * (sub & 3)));  // the two 16-value scale bytes
        w.dd = __ldg((const u32*)(hdr + blk * 4));
    } else {  // Q4_K
        i64 blk = (i64)row * (cols >> 8) + (g >> 3);
        const u8* P = pay + blk * 128 + 32 * ((g & 7) >> 1);
        w.q0 = __ldg((const uint4*)P);
        w.q1 = __ldg((const uint4*)(P + 16));
        w.hh = __ldg((const uint4*)(hdr + blk * 16));
    }
    return w;
}

// The dot of loaded group g with the quantized x group (xq: 8 words, dx scale, sx = dx * sum(q)).
template <int TY>
__device__ __forceinline__ float mvq_dot(const MvqRaw<TY>& w, int g, const int* xq, float dx, float sx, const u32* gsel) {
    if constexpr (TY == T_Q8_0) {
        int q[8] = {(int)w.q0.x, (int)w.q0.y, (int)w.q0.z, (int)w.q0.w, (int)w.q1.x, (int)w.q1.y, (int)w.q1.z, (int)w.q1.w};
        int s = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) s = __dp4a(q[k], xq[k], s);
        return h2f((u16)w.d) * dx * (float)s;
    } else if constexpr (TY == T_IQ2_XXS) {  // xq: permuted by iq2_xperm
        u32 A = w.q.x, B = w.q.y;
        int s = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            u32 s7 = (B >> (7 * k)) & 127u;
            u32 sel = ((s7 * 0x00810204u + ((u32)__popc(s7) << 30)) & 0x44444444u) | gsel[(A >> (8 * k)) & 255];
            s = __dp4a(iq2_prmt(sel), xq[2 * k], s);
            s = __dp4a(iq2_prmt(sel >> 16), xq[2 * k + 1], s);
        }
        return h2f((u16)w.d) * (0.5f + (float)(B >> 28)) * 0.25f * dx * (float)s;
    } else if constexpr (TY == T_Q2_K) {
        int sft = 2 * (g & 3);
        int sc0 = w.scp & 0xff, sc1 = w.scp >> 8;
        float d = h2f((u16)(w.dd & 0xffff)), dmin = h2f((u16)(w.dd >> 16));
        u32 q[8] = {w.q0.x, w.q0.y, w.q0.z, w.q0.w, w.q1.x, w.q1.y, w.q1.z, w.q1.w};
        int a0 = 0, a1 = 0, s0 = 0, s1 = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int ww = (int)((q[k] >> sft) & 0x03030303u);
            if (k < 4) { a0 = __dp4a(ww, xq[k], a0); s0 = __dp4a(0x01010101, xq[k], s0); }
            else { a1 = __dp4a(ww, xq[k], a1); s1 = __dp4a(0x01010101, xq[k], s1); }
        }
        // the min terms need x sums per 16 values: exact integer sums of the quantized x
        return dx * (d * (float)((sc0 & 15) * a0 + (sc1 & 15) * a1) - dmin * (float)((sc0 >> 4) * s0 + (sc1 >> 4) * s1));
    } else {  // Q4_K
        int j = g & 7, sft = (j & 1) * 4;
        float d = h2f((u16)(w.hh.x & 0xffff)), dmin = h2f((u16)(w.hh.x >> 16));
        int sc, m;
        q4k_scale_min_w(j, w.hh.y, w.hh.z, w.hh.w, sc, m);
        u32 q[8] = {w.q0.x, w.q0.y, w.q0.z, w.q0.w, w.q1.x, w.q1.y, w.q1.z, w.q1.w};
        int a = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) a = __dp4a((int)((q[k] >> sft) & 0x0F0F0F0Fu), xq[k], a);
        return d * (float)sc * dx * (float)a - dmin * (float)m * sx;
    }
}

// Column groups per lane and loop trip: about 48 registers of loaded weights per lane (raw
// registers per row and group: IQ2_XXS 3, Q8_0 9, Q2_K 10, Q4_K 12; paired jobs load two).
template <int TY, int R, bool P>
__device__ constexpr int mvq_unroll() {
    constexpr int per = (TY == T_IQ2_XXS ? 3 : TY == T_Q8_0 ? 9 : TY == T_Q2_K ? 10 : 12) * R * (P ? 2 : 1);
    return 48 / per < 1 ? 1 : (48 / per > 4 ? 4 : 48 / per);
}

template <int TY, int R, bool P>
__device__ __forceinline__ void mvq_body(const MvJobQ& j, int rowA, const signed char* __restrict__ xq,
                                         const float2* __restrict__ xd, const u8* pay, const u8* hdr, const u8* pay2,
                                         const u8* hdr2, int ks, float (*red)[16], const u32* gsel) {
    constexpr int U = mvq_unroll<TY, R, P>();
    int cols = j.w.cols, rows = j.w.rows;
    int ng = cols >> 5;
    int lwk = __ffs(j.wk) - 1;  // wk is a power of two (mv_place)
    int g0 = (ng * ks) >> lwk, g1 = (ng * (ks + 1)) >> lwk;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int rr[R];
#pragma unroll
    for (int r = 0; r < R; r++) rr[r] = min(rowA + r, rows - 1);  // tail rows recompute the last row, discarded
    float acc[R], acc2[R];
#pragma unroll
    for (int r = 0; r < R; r++) { acc[r] = 0.f; acc2[r] = 0.f; }
    for (int g = g0 + lane; g < g1; g += 32 * U) {
        // groups past the slice end load the last group again and add nothing
        int gu[U];
        bool ok[U];
#pragma unroll
        for (int u = 0; u < U; u++) { ok[u] = g + 32 * u < g1; gu[u] = ok[u] ? g + 32 * u : g1 - 1; }
        MvqRaw<TY> wa[U][R], wb[U][P ? R : 1];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                wa[u][r] = mvq_ld<TY>(pay, hdr, cols, rr[r], gu[u]);
                if constexpr (P) wb[u][r] = mvq_ld<TY>(pay2, hdr2, cols, rr[r], gu[u]);
            }
        uint4 v0[U], v1[U];
        float2 ds[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const uint4* xp = (const uint4*)(xq + (i64)gu[u] * 32);
            v0[u] = __ldg(xp);
            v1[u] = __ldg(xp + 1);
            ds[u] = __ldg(xd + gu[u]);
        }
        // per lane the groups are summed in column order, as a one-group loop would
#pragma unroll
        for (int u = 0; u < U; u++) {
            int xv[8] = {(int)v0[u].x, (int)v0[u].y, (int)v0[u].z, (int)v0[u].w, (int)v1[u].x, (int)v1[u].y, (int)v1[u].z, (int)v1[u].w};
            if constexpr (TY == T_IQ2_XXS) iq2_xperm(xv);
#pragma unroll
            for (int r = 0; r < R; r++) {
                float a = mvq_dot<TY>(wa[u][r], gu[u], xv, ds[u].x, ds[u].y, gsel);
                if (ok[u]) acc[r] += a;
                if constexpr (P) {
                    float b = mvq_dot<TY>(wb[u][r], gu[u], xv, ds[u].x, ds[u].y, gsel);
                    if (ok[u]) acc2[r] += b;
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        float a = warp_sum(acc[r]);
        float b = P ? warp_sum(acc2[r]) : 0.f;
        if (lane == 0) { red[warp][2 * r] = a; red[warp][2 * r + 1] = b; }
    }
}

// mvq_body at the job's rows per warp (8 only where instantiated: see mvq_main).
template <int TY, bool P, bool R8>
__device__ __forceinline__ void mvq_rows(const MvJobQ& j, int rowA, const signed char* __restrict__ xq, const float2* __restrict__ xd,
                                         const u8* pay, const u8* hdr, const u8* pay2, const u8* hdr2, int ks, float (*red)[16],
                                         const u32* gsel) {
    if constexpr (R8 && TY == T_Q8_0 && !P) {
        if (j.rpw == 8) {
            mvq_body<TY, 8, false>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsel);
            return;
        }
    }
    if (j.rpw == 4) mvq_body<TY, 4, P>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsel);
    else if (j.rpw == 2) mvq_body<TY, 2, P>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsel);
    else mvq_body<TY, 1, P>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsel);
}

// One block per 16-32 rows (a persistent variant that looped over logical blocks measured no
// faster in the decode graph: 92.6 vs 92.4 t/s, session 3), or 64 with 8 rows per warp: R8
// (mvq_b2 only, whose jobs are all Q8_0; the session gives it to plain jobs of short rows,
// q_b's 1024 columns, so that a block streams 70 KB instead of 35: q_b took 16-17 us in the
// decode graph against 11 for out_a / out_b of the same bytes).
// A grid smaller than the jobs' blocks (nlog) loops over them: the decode branch's q_b at one
// block per SM (DS4_QB_PERSIST) leaves SM slots to the branch's kernels.
template <bool R8>
__device__ __forceinline__ void mvq_block(const MvJobQ* __restrict__ jobs, const int* b0, int njobs, int b, u32* gsel,
                                          float (*red)[16]) {
    const int ji = job_of_block(b0, njobs, b);
    const MvJobQ j = jobs[ji];
    int slot, row0, rpb, ks, rowA;
    const u8 *pay, *hdr, *pay2, *hdr2;
    // an IQ2_XXS block's grid entry (one per thread: mvq runs 256 threads) is loaded before
    // mv_place's expert id and routing weight and converted after them: the round trips overlap
    const bool iq2 = j.w.type == T_IQ2_XXS;  // block-uniform
    u64 gr = iq2 ? ld_early(IQ2XXS_GRID + (threadIdx.x & 255)) : 0;
    float wsl;
    mv_place(j, b - b0[ji], slot, row0, rpb, ks, rowA, pay, hdr, pay2, hdr2, wsl);
    if (iq2) {
        gsel[threadIdx.x & 255] = iq2_sel(gr);
        __syncthreads();
    }
    const i64 xin = j.xmap ? (i64)j.xmap[slot] : j.x_div > 1 ? slot / j.x_div : slot;
    const signed char* xq = j.xq + xin * j.x_slot;
    const float2* xd = j.xd + xin * (j.x_slot >> 5);
#define MVQ_R(TY)                                                                     \
    if (pay2) mvq_rows<TY, true, R8>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsel); \
    else mvq_rows<TY, false, R8>(j, rowA, xq, xd, pay, hdr, pay2, hdr2, ks, red, gsel);
    switch (j.w.type) {
        case T_Q8_0: MVQ_R(T_Q8_0) break;
        case T_IQ2_XXS: MVQ_R(T_IQ2_XXS) break;
        case T_Q2_K: MVQ_R(T_Q2_K) break;
        default: MVQ_R(T_Q4_K) break;  // the session only builds jobs of these four types
    }
#undef MVQ_R
    __syncthreads();
    mv_split_combine(red, row0, rpb, j.rpw, j.wk, j.w.rows, j.w2.pay != nullptr, j.clamp, wsl, slot, j.y, j.yq, j.yd);
}
template <bool R8>
__device__ __forceinline__ void mvq_main(const JobSet<MvJobQ>& js, int njobs) {
    __shared__ u32 gsel[256];
    __shared__ float red[8][16];
    if (gridDim.x >= js.nlog) {  // one logical block per block (every launch but DS4_QB_PERSIST's)
        mvq_block<R8>(js.j, js.b0, njobs, blockIdx.x, gsel, red);
        return;
    }
    for (int b = blockIdx.x; b < js.nlog; b += gridDim.x) {
        mvq_block<R8>(js.j, js.b0, njobs, b, gsel, red);
        __syncthreads();  // red and gsel are the next block's
    }
}

// Same kernel under two register caps (minimum resident blocks per SM).
extern "C" __global__ void __launch_bounds__(256, 2) mvq_b2(const __grid_constant__ JobSet<MvJobQ> js, int njobs) {
    PDL_ENTRY;
    mvq_main<true>(js, njobs);
}
extern "C" __global__ void __launch_bounds__(256, 3) mvq_b3(const __grid_constant__ JobSet<MvJobQ> js, int njobs) {
    PDL_ENTRY;
    mvq_main<false>(js, njobs);
}

// ---- the chunked int8 matvecs (mvqm, mvqs): chunks of up to MVQM_NT (token, expert) pairs of
// one expert ------------------------------------------------------------------------------------
// A prefill batch of ~16-256 tokens puts a few tokens on each routed expert: the grouped GEMM
// dequantizes an expert's whole 128-row slice per tile however few tokens it holds, and
// moe_small's token-major matvec (one slot per pair) decodes the expert's weights once per
// pair. Here a slot is a chunk of one expert's pairs (moe_group's order, pair_chunks' table), so
// the expert's weights are read and decoded once per chunk.
// Job fields (session.rs MvJobQ::chunked_mma): nt = MVQM_NT; sel = the chunk table (int4
// {expert, first pair, pairs, 0}; pairs 0: an unused chunk, its blocks return); wts = per-pair
// routing weights (paired jobs); xmap = each pair's input row (null: the pair's own row); y =
// rows by pair. IQ2_XXS jobs read inputs quantized by quant_q8p (each group's bytes already in
// iq2_xperm's order).
// (Session 51's mvqn, lanes over column groups with __dp4a per pair, measured latency-bound and
// slower than token-major mvq (session 52) and is gone.)

// The chunk table of moe_group's pairs (off[E + 1]: per-expert offsets): expert e's pairs in
// runs of nt, chunks in expert order, entries past the last up to `bound` with n = 0. One
// block; each thread walks a contiguous range of experts.
extern "C" __global__ void __launch_bounds__(256) pair_chunks(const int* __restrict__ off, int E, int nt, int bound, int4* __restrict__ ch) {
    PDL_ENTRY;
    __shared__ int part[256];
    const int per = (E + blockDim.x - 1) / blockDim.x;
    const int e0 = min(E, (int)threadIdx.x * per), e1 = min(E, e0 + per);
    int c = 0;
    for (int e = e0; e < e1; e++) c += (off[e + 1] - off[e] + nt - 1) / nt;
    part[threadIdx.x] = c;
    __syncthreads();
    // inclusive scan of the per-thread counts (Hillis-Steele; blockDim.x <= 256)
    for (int o = 1; o < (int)blockDim.x; o <<= 1) {
        int v = threadIdx.x >= (unsigned)o ? part[threadIdx.x - o] : 0;
        __syncthreads();
        part[threadIdx.x] += v;
        __syncthreads();
    }
    int base = part[threadIdx.x] - c;
    const int total = part[blockDim.x - 1];
    for (int e = e0; e < e1; e++) {
        const int a = off[e], n = off[e + 1] - a;
        for (int q = 0; q < n; q += nt) ch[base++] = make_int4(e, a + q, min(nt, n - q), 0);
    }
    for (int i = total + threadIdx.x; i < bound; i += blockDim.x) ch[i] = make_int4(0, 0, 0, 0);
}

// quant_q8 with each 8-value chunk's bytes in iq2_xperm's order {x0, x4, x1, x5, x2, x6, x3,
// x7} (the IQ2_XXS jobs of mvqm / mvqs take their inputs so: grid entry tq is words 2 tq, 2 tq + 1).
extern "C" __global__ void __launch_bounds__(256) quant_q8p(const float* __restrict__ x, int n, signed char* __restrict__ qs,
                                                            float2* __restrict__ xd) {
    PDL_ENTRY;
    int lane = threadIdx.x & 31;
    int nblk = n >> 5;
    // value j of a chunk goes to byte 2j (j < 4) or 2(j - 4) + 1
    const int j = lane & 7, pos = (lane & ~7) + (j < 4 ? 2 * j : 2 * (j - 4) + 1);
    // (q8_block's lane argument is only the byte it stores: pos here)
    for (int b = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; b < nblk; b += (gridDim.x * blockDim.x) >> 5)
        q8_block(x[b * 32 + lane], pos, b, qs, xd);
}

// The chunked kernels' block prologue (mvqm / mvqs): chunk `slot`'s table entry {expert,
// first pair, pairs, 0} and, unless it is unused (pairs 0: the caller returns, block-uniform,
// before its barrier), its NT pair slots' input offsets xo (slots past the chunk repeat its
// last pair: computed, never stored).
template <int NT>
__device__ __forceinline__ int4 mvq_chunk_begin(const MvJobQ& j, int slot, i64* xo) {
    const int4 c = ((const int4*)j.sel)[slot];
    if (c.z != 0 && threadIdx.x < NT) {
        const int p = c.y + min((int)threadIdx.x, c.z - 1);
        xo[threadIdx.x] = (i64)(j.xmap ? j.xmap[p] : p) * j.x_slot;
    }
    return c;
}

// ---- mvqm: the chunks on the int8 tensor cores --------------------------------------------------
// Lanes over column groups with __dp4a per pair (session 51's mvqn) measured latency-bound: at
// 1024 tokens an IQ2_XXS gate ran 5.3 ms against a ~0.6 ms weight read (H100, kernel bench,
// session 52): each lane's x words were loaded per pair and per row. Here a warp owns 16 rows
// (and the paired matrix's same 16) and walks all of K: per 32-value group one mma.sync
// m16n8k32 per 8 pairs multiplies the 16 rows' int8 weights with the 8 pairs' int8 inputs, the
// B fragment loaded once per warp. Thread (gid = lane / 4, tq = lane % 4) holds rows gid and gid + 8 and words
// 2 tq, 2 tq + 1 of each group (A k slots 4 tq.. and 16 + 4 tq..; B the same words of pair gid:
// quant_q8p's order for IQ2_XXS, whose grid entry tq is those two words, natural order else).
// Each group's int32 sums are scaled in f32 (the weight group's and the pair's factors, mvq_dot's
// arithmetic) and summed per (row, pair) in group order: deterministic. Q2_K folds its 4-bit
// scales into the 2-bit weights (at most 45 per byte) and its mins into a second mma against the
// same x, so both 16-value halves of a group share one k32 product.
// Job fields: the section's, with rpw = 16 (rows per warp) and wk = 1, or for unpaired jobs wk
// = 2, 4 or 8 (dense_small's matrices of few rows or long ones: q_a, kv, out_b): the block's
// 8 warps are 8 / wk row tiles of wk K slices (whole 256-value blocks), each tile's partial
// sums added in slice order through shared memory (deterministic).
#define MVQM_NT 16
// Groups per loop trip (aligned): 4 (Q2_K: one 128-value quarter's shared bit planes), Q4_K 2
// (one 32-byte nibble pair; 4 spilled at 128 registers)
template <int TY>
__device__ constexpr int mvqm_u() { return TY == T_Q4_K ? 2 : 4; }

template <bool UA>
__device__ __forceinline__ void mma_i8(int (&c)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
    if constexpr (UA)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
                     : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0));
    else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
                     : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0));
}

// One row's loads for a trip of mvqm_u groups from g0 (a multiple of it): the thread's two
// words of each group and the factors they need.
template <int TY> struct MvqmRow;
template <> struct MvqmRow<T_Q8_0> { uint2 q[4]; u32 d[4]; };
template <> struct MvqmRow<T_IQ2_XXS> { uint2 q[4]; u32 d; };
template <> struct MvqmRow<T_Q2_K> { uint2 q; uint2 sc; u32 dd; };
template <> struct MvqmRow<T_Q4_K> { uint2 q; uint4 hh; };

template <int TY>
__device__ __forceinline__ MvqmRow<TY> mvqm_ld(const u8* __restrict__ pay, const u8* __restrict__ hdr, int cols, int row, int g0, int tq) {
    MvqmRow<TY> w;
    if constexpr (TY == T_Q8_0) {
        const i64 blk = (i64)row * (cols >> 5) + g0;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            w.q[u] = __ldg((const uint2*)(pay + (blk + u) * 32 + 8 * tq));
            w.d[u] = __ldg((const u16*)(hdr + (blk + u) * 2));
        }
    } else if constexpr (TY == T_IQ2_XXS) {  // the group's 8 bytes (grid indices, signs + scale)
        const i64 blk = (i64)row * (cols >> 8) + (g0 >> 3);
#pragma unroll
        for (int u = 0; u < 4; u++) w.q[u] = __ldg((const uint2*)(pay + blk * 64 + ((g0 + u) & 7) * 8));
        w.d = __ldg((const u16*)(hdr + blk * 2));
    } else if constexpr (TY == T_Q2_K) {  // the trip's 4 groups share 32 bytes (2-bit planes)
        const i64 blk = (i64)row * (cols >> 8) + (g0 >> 3);
        const int h = (g0 & 7) >> 2;
        const u8* P = pay + blk * 80;
        w.q = __ldg((const uint2*)(P + 16 + 32 * h + 8 * tq));
        w.sc = __ldg((const uint2*)(P + 8 * h));  // the 4 groups' two scale bytes each
        w.dd = __ldg((const u32*)(hdr + blk * 4));
    } else {  // Q4_K: groups g0, g0 + 1 share 32 bytes (nibbles)
        const i64 blk = (i64)row * (cols >> 8) + (g0 >> 3);
        w.q = __ldg((const uint2*)(pay + blk * 128 + 32 * ((g0 & 7) >> 1) + 8 * tq));
        w.hh = __ldg((const uint4*)(hdr + blk * 16));
    }
    return w;
}

// Group u of a loaded trip as A words (lo: k slots 4 tq.., hi: 16 + 4 tq..) and f32 factors:
// the int32 product C becomes fa * dx * C (IQ2_XXS, Q8_0), fa * dx * C - fb * sx (Q4_K), or
// dx * (fa * C - fb * Cmin) with the min words (Q2_K).
struct MvqmA { u32 lo, hi, mlo; float fa, fb; };
template <int TY>
__device__ __forceinline__ MvqmA mvqm_a(const MvqmRow<TY>& w, int g0, int u, int tq, const u32* gsel) {
    MvqmA a;
    if constexpr (TY == T_Q8_0) {
        a.lo = w.q[u].x;
        a.hi = w.q[u].y;
        a.fa = h2f((u16)w.d[u]);
    } else if constexpr (TY == T_IQ2_XXS) {
        const u32 A = w.q[u].x, B = w.q[u].y;
        const u32 s7 = (B >> (7 * tq)) & 127u;
        const u32 sel = ((s7 * 0x00810204u + ((u32)__popc(s7) << 30)) & 0x44444444u) | gsel[(A >> (8 * tq)) & 255];
        a.lo = (u32)iq2_prmt(sel);
        a.hi = (u32)iq2_prmt(sel >> 16);
        a.fa = h2f((u16)w.d) * (0.5f + (float)(B >> 28)) * 0.25f;
    } else if constexpr (TY == T_Q2_K) {
        // group g0 + u: bit plane u; words 2 tq, 2 tq + 1 lie in half tq / 2 (16 values each)
        const int sft = 2 * u;
        const u32 scb = (u < 2 ? w.sc.x : w.sc.y) >> (16 * (u & 1) + 8 * (tq >> 1));
        const u32 sc = scb & 15u, m = (scb >> 4) & 15u;
        a.lo = ((w.q.x >> sft) & 0x03030303u) * sc;
        a.hi = ((w.q.y >> sft) & 0x03030303u) * sc;
        a.mlo = m * 0x01010101u;
        a.fa = h2f((u16)(w.dd & 0xffff));
        a.fb = h2f((u16)(w.dd >> 16));
    } else {  // Q4_K
        const int j = (g0 + u) & 7, sft = (j & 1) * 4;
        int sc, m;
        q4k_scale_min_w(j, w.hh.y, w.hh.z, w.hh.w, sc, m);
        a.lo = (w.q.x >> sft) & 0x0F0F0F0Fu;
        a.hi = (w.q.y >> sft) & 0x0F0F0F0Fu;
        a.fa = h2f((u16)(w.hh.x & 0xffff)) * (float)sc;
        a.fb = h2f((u16)(w.hh.x >> 16)) * (float)m;
    }
    return a;
}

// A warp's outputs from its accumulators (acc[m][n][e]: see mvqm_body): y rows by pair
// (ldy apart), through the clamped SwiGLU and the pair's routing weight for paired jobs.
template <bool P>
__device__ __forceinline__ void mvqm_store(const MvJobQ& j, int4 c, int rowW, const float (&acc)[P ? 2 : 1][MVQM_NT / 8][4]) {
    const int lane = threadIdx.x & 31, gid = lane >> 2, tq = lane & 3, rows = j.w.rows;
#pragma unroll
    for (int n = 0; n < MVQM_NT / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int t = n * 8 + 2 * tq + (e & 1), row = rowW + gid + 8 * (e >> 1);
            if (t >= c.z || row >= rows) continue;
            const int p = c.y + t;
            const float wsl = P && j.wts ? j.wts[p] : 1.f;
            j.y[(i64)p * (j.ldy ? j.ldy : rows) + row] = mv_out(acc[0][n][e], P ? acc[P ? 1 : 0][n][e] : 0.f, P, j.clamp, wsl);
        }
}

// One warp: rows r0 = rowW + gid and r1 = r0 + 8 of the job's matrix (and of w2 for paired
// jobs) for chunk c's pairs (nb = ceil(pairs / 8) n tiles), all of K, and their outputs.
// acc[m][n][e]: matrix m (0 w, 1 w2), n tile n, C element e (rows r0, r0, r1, r1; pairs 2 tq,
// 2 tq + 1, 2 tq, 2 tq + 1).
// K slice [gb, ge) of the groups (all of K unless the job splits it). part (split jobs, P
// false): this warp's partial sums, [NB * 4][32] floats, for mvqm's combine instead of y.
template <int TY, bool P>
__device__ __forceinline__ void mvqm_body(const MvJobQ& j, int4 c, int rowW, int gb, int ge, const i64* xo, const u8* pay, const u8* hdr,
                                          const u8* pay2, const u8* hdr2, const u32* gsel, float* part) {
    constexpr int NB = MVQM_NT / 8, M = P ? 2 : 1, U = mvqm_u<TY>();
    const int nb = (c.z + 7) >> 3;
    float acc[M][NB][4] = {};
    constexpr bool UA = TY == T_Q2_K || TY == T_Q4_K;
    const int cols = j.w.cols, rows = j.w.rows;
    const int lane = threadIdx.x & 31, gid = lane >> 2, tq = lane & 3;
    const int r0 = min(rowW + gid, rows - 1), r1 = min(rowW + gid + 8, rows - 1);
    // this thread's B rows: pair gid of each n tile (x values); its C pairs 2 tq, 2 tq + 1 (factors)
    // (offsets below 2^31: at most MOE_SMALL_MAX x K pairs of x_slot values, checked by the host)
    int xb[NB], xf[NB][2];
#pragma unroll
    for (int n = 0; n < NB; n++) {
        xb[n] = (int)xo[n * 8 + gid];
        xf[n][0] = (int)(xo[n * 8 + 2 * tq] >> 5);
        xf[n][1] = (int)(xo[n * 8 + 2 * tq + 1] >> 5);
    }
    for (int g0 = gb; g0 < ge; g0 += U) {
        MvqmRow<TY> wr[M][2];
#pragma unroll
        for (int m = 0; m < M; m++) {
            wr[m][0] = mvqm_ld<TY>(m ? pay2 : pay, m ? hdr2 : hdr, cols, r0, g0, tq);
            wr[m][1] = mvqm_ld<TY>(m ? pay2 : pay, m ? hdr2 : hdr, cols, r1, g0, tq);
        }
        uint2 xw[NB][U];
        // pairs 2 tq, 2 tq + 1: dx of each group (Q4_K: {dx, sx})
        float2 xd[NB][2][U];
#pragma unroll
        for (int n = 0; n < NB; n++) {
            if (n >= nb) break;
#pragma unroll
            for (int u = 0; u < U; u++) xw[n][u] = __ldg((const uint2*)(j.xq + xb[n] + (g0 + u) * 32 + 8 * tq));
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int u = 0; u < U; u++) {
                    if constexpr (TY == T_Q4_K) xd[n][h][u] = __ldg(j.xd + xf[n][h] + g0 + u);
                    else xd[n][h][u].x = __ldg((const float*)(j.xd + xf[n][h] + g0 + u));
                }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            MvqmA a[M][2];
#pragma unroll
            for (int m = 0; m < M; m++) {
                a[m][0] = mvqm_a<TY>(wr[m][0], g0, u, tq, gsel);
                a[m][1] = mvqm_a<TY>(wr[m][1], g0, u, tq, gsel);
            }
#pragma unroll
            for (int n = 0; n < NB; n++) {
                if (n >= nb) break;
                const u32 b0 = xw[n][u].x, b1 = xw[n][u].y;
                float dx[2], sx[2];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    dx[h] = xd[n][h][u].x;
                    sx[h] = TY == T_Q4_K ? xd[n][h][u].y : 0.f;
                }
#pragma unroll
                for (int m = 0; m < M; m++) {
                    int cc[4];
                    mma_i8<UA>(cc, a[m][0].lo, a[m][1].lo, a[m][0].hi, a[m][1].hi, b0, b1);
                    if constexpr (TY == T_Q2_K) {
                        int cm[4];
                        mma_i8<true>(cm, a[m][0].mlo, a[m][1].mlo, a[m][0].mlo, a[m][1].mlo, b0, b1);
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const MvqmA& ar = a[m][e >> 1];
                            acc[m][n][e] += dx[e & 1] * (ar.fa * (float)cc[e] - ar.fb * (float)cm[e]);
                        }
                    } else if constexpr (TY == T_Q4_K) {
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const MvqmA& ar = a[m][e >> 1];
                            acc[m][n][e] += ar.fa * dx[e & 1] * (float)cc[e] - ar.fb * sx[e & 1];
                        }
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; e++) acc[m][n][e] += a[m][e >> 1].fa * dx[e & 1] * (float)cc[e];
                    }
                }
            }
        }
    }
    if (part) {
#pragma unroll
        for (int n = 0; n < NB; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) part[(n * 4 + e) * 32 + lane] = acc[0][n][e];
        return;
    }
    mvqm_store<P>(j, c, rowW, acc);
}

// One block: 8 warps of 16 rows (128 rows) of one chunk, the outputs straight from the
// accumulators (mvqm); or 8 / wk tiles of 16 rows, each over wk K slices combined in shared
// memory (mvqm_k: unpaired jobs, wk 2, 4 or 8). Two entry points so that mvqm's registers hold
// no split state (one kernel for both spilled).
template <bool SPLIT>
__device__ __forceinline__ void mvqm_main(const JobSet<MvJobQ>& js, int njobs) {
    __shared__ u32 gsel[256];
    __shared__ i64 xo[MVQM_NT];
    __shared__ float part[SPLIT ? 8 : 1][MVQM_NT / 2][32];  // each warp's partial sums
    const int b = blockIdx.x;
    const int ji = job_of_block(js.b0, njobs, b);
    const MvJobQ& j = js.j[ji];
    const int lb = b - js.b0[ji];
    const int lwk = SPLIT ? __ffs(j.wk) - 1 : 0, warp = threadIdx.x >> 5;
    const int lrpb = 7 - lwk;  // log2 of the rows per block
    const int bps = (j.w.rows + (1 << lrpb) - 1) >> lrpb;
    const int slot = div_small(lb, bps);
    const int rowW = ((lb - slot * bps) << lrpb) + (warp >> lwk) * 16;
    const bool iq2 = j.w.type == T_IQ2_XXS;
    u64 gr = iq2 ? ld_early(IQ2XXS_GRID + (threadIdx.x & 255)) : 0;
    const int4 c = mvq_chunk_begin<MVQM_NT>(j, slot, xo);
    if (c.z == 0) return;  // an unused chunk (block-uniform)
    if (iq2) gsel[threadIdx.x & 255] = iq2_sel(gr);
    __syncthreads();
    // (mvqm: a warp past the last row, after the barrier; mvqm_k keeps every warp for its own)
    if (!SPLIT && rowW >= j.w.rows) return;
    const i64 e = c.x;
    const u8 *pay = j.w.pay + e * j.w.e_pay, *hdr = j.w.hdr + e * j.w.e_hdr;
    // mvqm_k: this warp's K slice of whole 256-value blocks and its partial sums' place
    int ks = 0, gb = 0, ge = j.w.cols >> 5;
    float* pw = nullptr;
    if constexpr (SPLIT) {
        const int nblk = j.w.cols >> 8;
        ks = warp & (j.wk - 1);
        gb = ((nblk * ks) >> lwk) * 8;
        ge = ((nblk * (ks + 1)) >> lwk) * 8;
        pw = &part[warp][0][0];
    }
    const bool paired = !SPLIT && j.w2.pay != nullptr;
    const u8 *pay2 = paired ? j.w2.pay + e * j.w2.e_pay : nullptr, *hdr2 = paired ? j.w2.hdr + e * j.w2.e_hdr : nullptr;
#define MVQM_R(TY)                                                                                \
    if (paired) mvqm_body<TY, true>(j, c, rowW, gb, ge, xo, pay, hdr, pay2, hdr2, gsel, nullptr); \
    else mvqm_body<TY, false>(j, c, rowW, gb, ge, xo, pay, hdr, pay2, hdr2, gsel, pw);
    switch (j.w.type) {
        case T_Q8_0: MVQM_R(T_Q8_0) break;
        case T_IQ2_XXS: MVQM_R(T_IQ2_XXS) break;
        case T_Q2_K: MVQM_R(T_Q2_K) break;
        default: MVQM_R(T_Q4_K) break;
    }
#undef MVQM_R
    if constexpr (SPLIT) {
        __syncthreads();
        // the tile's first warp adds its slices' partial sums in slice order and stores them
        if (ks != 0) return;
        const int lane = threadIdx.x & 31;
        float acc[1][MVQM_NT / 8][4];
#pragma unroll
        for (int n = 0; n < MVQM_NT / 8; n++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float v = 0.f;
                for (int k = 0; k < j.wk; k++) v += part[warp + k][n * 4 + q][lane];
                acc[0][n][q] = v;
            }
        mvqm_store<false>(j, c, rowW, acc);
    }
}
extern "C" __global__ void __launch_bounds__(256, 2) mvqm(const __grid_constant__ JobSet<MvJobQ> js, int njobs) {
    PDL_ENTRY;
    mvqm_main<false>(js, njobs);
}
extern "C" __global__ void __launch_bounds__(256, 2) mvqm_k(const __grid_constant__ JobSet<MvJobQ> js, int njobs) {
    PDL_ENTRY;
    mvqm_main<true>(js, njobs);
}

// ---- mvqs: mvqm with its operands staged in shared memory by cp.async -------------------------
// mvqm's weight loads sit in registers until used: 16 warps per SM with one trip each in flight
// kept ~8 KB per SM in flight, ~0.75 TB/s (kernel bench, H100, session 52). Here the block walks K
// in stages of 256 values (one quant block per row) through a ring of MVQS_ST shared-memory
// stages filled by cp.async: the stage's weight rows (128 rows: paired jobs 64 of gate and the
// same 64 of up), their headers, and the chunk's 16 pairs' int8 inputs and factors, copied once
// per block for all its warps. Warps then decode from shared memory as mvqm does from registers
// (same words, same factors, same order: the same bits as mvqm). IQ2_XXS, Q2_K, Q4_K (the
// routed experts' types). Paired jobs: warp 2i gate, 2i + 1 up of the same 16 rows.
#define MVQS_ST 3
// bytes per row and stage: payload, its stride in shared memory, and header (a 4-byte word for
// IQ2_XXS's 2-byte scale)
__host__ __device__ constexpr int mvqs_pb(int ty) { return ty == T_IQ2_XXS ? 64 : ty == T_Q2_K ? 80 : 128; }
// (row strides multiples of 16 for cp.async; 80 bytes = 20 banks apart: rows gid 0-7 of a
// fragment load hit distinct bank pairs)
__host__ __device__ constexpr int mvqs_pbs(int ty) { return ty == T_Q4_K ? 144 : 80; }
__host__ __device__ constexpr int mvqs_hb(int ty) { return ty == T_IQ2_XXS ? 4 : ty == T_Q2_K ? 4 : 16; }
#define MVQS_XS 288  // bytes per pair and stage of x (256 + pad: four pairs' words hit distinct banks)
__host__ __device__ constexpr int mvqs_stage_bytes(int ty) { return 128 * (mvqs_pbs(ty) + mvqs_hb(ty)) + MVQM_NT * MVQS_XS + MVQM_NT * 64; }

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((u32)__cvta_generic_to_shared(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((u32)__cvta_generic_to_shared(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

// Stage st of the block's operands: weight rows (row i of the block: matrix i / 64 of a paired
// job, else the single matrix; rows past the matrix repeat its last), headers, x and factors.
template <int TY>
__device__ __forceinline__ void mvqs_issue(u8* sm, int st, const MvJobQ& j, const u8* const* pay, const u8* const* hdr, int row0,
                                           bool paired, const i64* xo) {
    constexpr int PB = mvqs_pb(TY), PBS = mvqs_pbs(TY), HB = mvqs_hb(TY);
    const int nblk = j.w.cols >> 8, rows = j.w.rows;
    u8* W = sm;
    u8* H = sm + 128 * PBS;
    u8* X = H + 128 * HB;
    u8* XD = X + MVQM_NT * MVQS_XS;
    // payload: 128 rows x PB bytes in 16-byte pieces
    constexpr int PPR = PB / 16;
    for (int i = threadIdx.x; i < 128 * PPR; i += blockDim.x) {
        const int r = i / PPR, k = i - r * PPR;
        const int m = paired ? r >> 6 : 0, rr = min(row0 + (paired ? r & 63 : r), rows - 1);
        cp_async16(W + r * PBS + 16 * k, (m ? pay[1] : pay[0]) + ((i64)rr * nblk + st) * PB + 16 * k);
    }
    // headers
    if (threadIdx.x < 128) {
        const int r = threadIdx.x;
        const int m = paired ? r >> 6 : 0, rr = min(row0 + (paired ? r & 63 : r), rows - 1);
        const i64 bi = (i64)rr * nblk + st;
        const u8* h = m ? hdr[1] : hdr[0];
        if constexpr (TY == T_IQ2_XXS) cp_async4(H + r * HB, h + ((bi * 2) & ~(i64)3));
        else if constexpr (TY == T_Q2_K) cp_async4(H + r * HB, h + bi * 4);
        else cp_async16(H + r * HB, h + bi * 16);
    } else {
        // x: MVQM_NT pairs x 256 bytes (16 pieces each), factors: MVQM_NT x 8 float2 (4 pieces)
        for (int i = threadIdx.x - 128; i < MVQM_NT * 20; i += blockDim.x - 128) {
            if (i < MVQM_NT * 16) {
                const int p = i >> 4, k = i & 15;
                cp_async16(X + p * MVQS_XS + 16 * k, j.xq + xo[p] + st * 256 + 16 * k);
            } else {
                const int q = i - MVQM_NT * 16, p = q >> 2, k = q & 3;
                cp_async16(XD + p * 64 + 16 * k, (const u8*)(j.xd + (xo[p] >> 5) + st * 8) + 16 * k);
            }
        }
    }
}

// A words and factors of group u (0-7) of a staged row (mvqm_a's arithmetic on shared memory).
template <int TY>
__device__ __forceinline__ MvqmA mvqs_a(const u8* W, const u8* H, int row, int u, int tq, int hsel, const u32* gsel) {
    constexpr int PBS = mvqs_pbs(TY), HB = mvqs_hb(TY);
    const u8* P = W + row * PBS;
    MvqmA a;
    if constexpr (TY == T_IQ2_XXS) {
        const uint2 q = *(const uint2*)(P + 8 * u);
        const u32 hw = *(const u32*)(H + row * HB);
        const u32 s7 = (q.y >> (7 * tq)) & 127u;
        const u32 sel = ((s7 * 0x00810204u + ((u32)__popc(s7) << 30)) & 0x44444444u) | gsel[(q.x >> (8 * tq)) & 255];
        a.lo = (u32)iq2_prmt(sel);
        a.hi = (u32)iq2_prmt(sel >> 16);
        a.fa = h2f((u16)(hw >> (16 * hsel))) * (0.5f + (float)(q.y >> 28)) * 0.25f;
    } else if constexpr (TY == T_Q2_K) {
        const int h = u >> 2, sft = 2 * (u & 3);
        const uint2 q = *(const uint2*)(P + 16 + 32 * h + 8 * tq);
        const u32 scb = (u32)P[8 * h + 2 * (u & 3) + (tq >> 1)];
        const u32 sc = scb & 15u, m = (scb >> 4) & 15u;
        const u32 dd = *(const u32*)(H + row * HB);
        a.lo = ((q.x >> sft) & 0x03030303u) * sc;
        a.hi = ((q.y >> sft) & 0x03030303u) * sc;
        a.mlo = m * 0x01010101u;
        a.fa = h2f((u16)(dd & 0xffff));
        a.fb = h2f((u16)(dd >> 16));
    } else {  // Q4_K
        const int sft = (u & 1) * 4;
        const uint2 q = *(const uint2*)(P + 32 * (u >> 1) + 8 * tq);
        const uint4 hh = *(const uint4*)(H + row * HB);
        int sc, m;
        q4k_scale_min_w(u, hh.y, hh.z, hh.w, sc, m);
        a.lo = (q.x >> sft) & 0x0F0F0F0Fu;
        a.hi = (q.y >> sft) & 0x0F0F0F0Fu;
        a.fa = h2f((u16)(hh.x & 0xffff)) * (float)sc;
        a.fb = h2f((u16)(hh.x >> 16)) * (float)m;
    }
    return a;
}

template <int TY>
__device__ __forceinline__ void mvqs_run(const MvJobQ& j, int4 c, int row0, bool paired, const i64* xo, const u8* const* pay,
                                         const u8* const* hdr, const u32* gsel, u8* smem, float (&acc)[MVQM_NT / 8][4]) {
    constexpr int NB = MVQM_NT / 8, SB = mvqs_stage_bytes(TY), PBS = mvqs_pbs(TY), HB = mvqs_hb(TY);
    constexpr bool UA = TY != T_IQ2_XXS;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tq = lane & 3;
    const int nst = j.w.cols >> 8;
    const int nb = (c.z + 7) >> 3;
    // this warp's rows in the stage: tile rows (paired: warp 2i / 2i + 1 -> gate / up rows 16 i..)
    const int rb = paired ? (warp & 1) * 64 + (warp >> 1) * 16 : warp * 16;
    // IQ2_XXS: which half of the staged header word holds the row's scale (fixed per row: the
    // block index advances by one per stage, the row's parity by nblk)
    const int nblk = j.w.cols >> 8;
    int hs[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int r = rb + gid + 8 * i;
        const int rr = min(row0 + (paired ? r & 63 : r), j.w.rows - 1);
        hs[i] = (int)(((i64)rr * nblk) & 1);
    }
#pragma unroll
    for (int s = 0; s < MVQS_ST - 1; s++) {
        if (s < nst) mvqs_issue<TY>(smem + s * SB, s, j, pay, hdr, row0, paired, xo);
        cp_async_commit();
    }
    for (int s = 0; s < nst; s++) {
        const int sn = s + MVQS_ST - 1;
        if (sn < nst) mvqs_issue<TY>(smem + (sn % MVQS_ST) * SB, sn, j, pay, hdr, row0, paired, xo);
        cp_async_commit();
        cp_async_wait<MVQS_ST - 1>();
        __syncthreads();
        const u8* S = smem + (s % MVQS_ST) * SB;
        const u8 *W = S, *H = S + 128 * PBS, *X = H + 128 * HB, *XD = X + MVQM_NT * MVQS_XS;
#pragma unroll
        for (int u = 0; u < 8; u++) {
            // the block index's parity advances each stage: IQ2_XXS's header half
            const MvqmA a0 = mvqs_a<TY>(W, H, rb + gid, u, tq, hs[0] ^ (s & 1), gsel);
            const MvqmA a1 = mvqs_a<TY>(W, H, rb + gid + 8, u, tq, hs[1] ^ (s & 1), gsel);
#pragma unroll
            for (int n = 0; n < NB; n++) {
                if (n >= nb) break;
                const uint2 xw = *(const uint2*)(X + (n * 8 + gid) * MVQS_XS + 32 * u + 8 * tq);
                float2 xd[2];
#pragma unroll
                for (int h = 0; h < 2; h++) xd[h] = *(const float2*)(XD + (n * 8 + 2 * tq + h) * 64 + 8 * u);
                int cc[4];
                mma_i8<UA>(cc, a0.lo, a1.lo, a0.hi, a1.hi, xw.x, xw.y);
                if constexpr (TY == T_Q2_K) {
                    int cm[4];
                    mma_i8<true>(cm, a0.mlo, a1.mlo, a0.mlo, a1.mlo, xw.x, xw.y);
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const MvqmA& ar = (e >> 1) ? a1 : a0;
                        acc[n][e] += xd[e & 1].x * (ar.fa * (float)cc[e] - ar.fb * (float)cm[e]);
                    }
                } else if constexpr (TY == T_Q4_K) {
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const MvqmA& ar = (e >> 1) ? a1 : a0;
                        acc[n][e] += ar.fa * xd[e & 1].x * (float)cc[e] - ar.fb * xd[e & 1].y;
                    }
                } else {
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[n][e] += ((e >> 1) ? a1 : a0).fa * xd[e & 1].x * (float)cc[e];
                }
            }
        }
        __syncthreads();  // the stage is refilled next
    }
}

extern "C" __global__ void __launch_bounds__(256, 2) mvqs(const __grid_constant__ JobSet<MvJobQ> js, int njobs) {
    PDL_ENTRY;
    extern __shared__ __align__(16) u8 mvqs_sm[];
    __shared__ u32 gsel[256];
    __shared__ i64 xo[MVQM_NT];
    __shared__ float upx[4][MVQM_NT / 8][4][32];  // the up warps' sums, read by the gate warps
    const int b = blockIdx.x;
    const int ji = job_of_block(js.b0, njobs, b);
    const MvJobQ& j = js.j[ji];
    const int lb = b - js.b0[ji];
    const bool paired = j.w2.pay != nullptr;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int lrpb = paired ? 6 : 7;  // rows per block 64 / 128
    const int bps = (j.w.rows + (1 << lrpb) - 1) >> lrpb;
    const int slot = div_small(lb, bps);
    const int row0 = (lb - slot * bps) << lrpb;
    const int rowW = row0 + (paired ? warp >> 1 : warp) * 16;
    const bool up = paired && (warp & 1);
    const bool iq2 = j.w.type == T_IQ2_XXS;
    u64 gr = iq2 ? ld_early(IQ2XXS_GRID + (threadIdx.x & 255)) : 0;
    const int4 c = mvq_chunk_begin<MVQM_NT>(j, slot, xo);
    if (c.z == 0) return;  // an unused chunk (block-uniform)
    if (iq2) gsel[threadIdx.x & 255] = iq2_sel(gr);
    __syncthreads();
    const i64 e = c.x;
    const u8* pay[2] = {j.w.pay + e * j.w.e_pay, paired ? j.w2.pay + e * j.w2.e_pay : nullptr};
    const u8* hdr[2] = {j.w.hdr + e * j.w.e_hdr, paired ? j.w2.hdr + e * j.w2.e_hdr : nullptr};
    float acc[MVQM_NT / 8][4] = {};
    switch (j.w.type) {  // (every warp runs the stages: they share the copies and barriers)
        case T_IQ2_XXS: mvqs_run<T_IQ2_XXS>(j, c, row0, paired, xo, pay, hdr, gsel, mvqs_sm, acc); break;
        case T_Q2_K: mvqs_run<T_Q2_K>(j, c, row0, paired, xo, pay, hdr, gsel, mvqs_sm, acc); break;
        default: mvqs_run<T_Q4_K>(j, c, row0, paired, xo, pay, hdr, gsel, mvqs_sm, acc); break;
    }
    if (paired) {
        if (up) {
#pragma unroll
            for (int n = 0; n < MVQM_NT / 8; n++)
#pragma unroll
                for (int q = 0; q < 4; q++) upx[warp >> 1][n][q][lane] = acc[n][q];
        }
        __syncthreads();
        if (up) return;
    }
    const int gid = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int n = 0; n < MVQM_NT / 8; n++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int t = n * 8 + 2 * tq + (q & 1), row = rowW + gid + 8 * (q >> 1);
            if (t >= c.z || row >= j.w.rows) continue;
            const int p = c.y + t;
            const float wsl = paired && j.wts ? j.wts[p] : 1.f;
            j.y[(i64)p * (j.ldy ? j.ldy : j.w.rows) + row] = mv_out(acc[n][q], paired ? upx[warp >> 1][n][q][lane] : 0.f, paired, j.clamp, wsl);
        }
}
