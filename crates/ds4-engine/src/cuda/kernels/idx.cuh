// ------------------------------------------------------------------------------------------
// Lightning-indexer scores in prefill on tensor cores (Precision::Fast with the FP4 step on).
// Same function as idx_score (MODEL.md §2.5.6):
//   scores[t][c] = sum_h (w[t,h]*wscale) * relu(q[t,h,:] . k[c,:]),  c < n(t) = (pos[t]+1)/4,
// written only for tokens with n(t) > topk (topk_select reads nothing else).
//
// Why f16 loses nothing here: after the Hadamard+FP4 step every q/k element is an E2M1 code
// (at most 2 significant bits) times a power-of-two block scale. idx_to_f16 divides each
// 128-vector by a power of two 2^e (e = exponent of its max |x|), so the largest element lands
// in [1, 2) and every element of a block whose scale is within 2^23 of the row max is an exact
// f16; mma products of f16 are exact in f32 and the sum is accumulated in f32. The powers of
// two are put back in f32 (exact barring f32 under/overflow): the q scale is folded into the
// head weight (cq = (w*wscale) * 2^eq, one exact product), and the k scale multiplies the
// finished sum over heads (every term carries it, so factoring it out changes no rounding).
// The result differs from idx_score only by f32 summation order. Without the FP4 step (exact
// mode) the f16 rounding of q and k would move scores by ~1e-4 relative, more than the 3e-5
// indexer margins the exact fixtures guarantee, so the session uses idx_score there.
// ------------------------------------------------------------------------------------------

// (ITC_DP, the padded vector length, is in common.cuh: idx_q_prep writes this form too)

// A Di-vector (Di % 4 == 0, Di <= 128) held 4 values per lane (lane l: 4l..4l+3, zeros past
// Di) as f16 of x / 2^e, e the exponent of the vector's max |x| (the whole warp calls it);
// returns 2^e.
__device__ __forceinline__ float f16_pow2_scaled(const float (&x)[4], uint2& h) {
    float am = fmaxf(fmaxf(fabsf(x[0]), fabsf(x[1])), fmaxf(fabsf(x[2]), fabsf(x[3])));
    am = warp_max(am);
    float inv;
    const float s = pow2_of_max(am, inv);
    h.x = pack_h2(x[0] * inv, x[1] * inv);
    h.y = pack_h2(x[2] * inv, x[3] * inv);
    return s;
}
// Lane l's 4 values of the Di-vector at v (zeros past Di).
__device__ __forceinline__ void ld_vec4(const float* __restrict__ v, int Di, int lane, float (&x)[4]) {
    x[0] = x[1] = x[2] = x[3] = 0.f;
    if (4 * lane < Di) {
        float4 f = *(const float4*)(v + 4 * lane);
        x[0] = f.x; x[1] = f.y; x[2] = f.z; x[3] = f.w;
    }
}

// One warp per Di-vector (Di % 4 == 0, Di <= 128): dst16[v][0..128) = f16(src[v] / 2^e) (zeros
// past Di), and sc[v] = 2^e, or, when wt is given (queries), sc[v] = (wt[v]*wscale) * 2^e.
extern "C" __global__ void idx_to_f16(const float* __restrict__ src, int nvec, int Di, const float* __restrict__ wt,
                                      float wscale, u16* dst16, float* sc) {
    PDL_ENTRY;
    int v = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (v >= nvec) return;
    float x[4];
    ld_vec4(src + (i64)v * Di, Di, lane, x);
    uint2 h;
    float s = f16_pow2_scaled(x, h);
    *(uint2*)(dst16 + (i64)v * ITC_DP + 4 * lane) = h;
    if (lane == 0) sc[v] = wt ? (wt[v] * wscale) * s : s;
}

// Decode (one token) indexer scores on tensor cores, the same arithmetic as idx_score_tc
// (exact f16 products of the FP4-simulated values, f32 sums; see the top of this file):
// S[Hi heads x IDT_R rows] = Q . K^T per block, with the heads, not the tokens, as the MMA's
// M (idx_score_tc with one token would waste 63 of its 64 token rows). grid ceil(rows /
// IDT_R), Hi / 16 warps: warp w converts and multiplies heads 16w..16w+15 over all the
// block's rows, sums relu(S) * cq over its heads by shuffles, and the warps' sums are added
// in warp order (deterministic). Why: idx_score_w ran 21 us per call at 64K context (16K
// rows), its per-row shuffle chains latency bound, on the indexer branch that decides when
// a ratio-4 layer's attention can start.
#define IDT_R 64
extern "C" __global__ void __launch_bounds__(128) idx_score_dtc(const float* __restrict__ q, const float* __restrict__ wt,
                                                                const float* __restrict__ krows, const int* __restrict__ pos,
                                                                float* scores, int Hi, int Di, float wscale, int topk) {
    PDL_ENTRY;
    __shared__ __align__(128) u16 sQ[64 * ITC_DP];
    __shared__ __align__(128) u16 sK[IDT_R * ITC_DP];
    __shared__ float cqs[64], kss[IDT_R], part[4][IDT_R];
    const int n = (pos[0] + 1) / 4;
    if (n <= topk) return;
    const int c0 = blockIdx.x * IDT_R;
    if (c0 >= n) return;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    u8* qb = (u8*)sQ;
    u8* kb = (u8*)sK;
    // this warp's 16 heads and its IDT_R / nw rows, 16 at a time (each batch's loads issued
    // before any is converted; the heads' loads with the first batch)
    {
        float xq[16][4];
#pragma unroll
        for (int i = 0; i < 16; i++) ld_vec4(q + (i64)(16 * warp + i) * Di, Di, lane, xq[i]);
        const int rpw = IDT_R / nw;
        for (int r0 = warp * rpw; r0 < (warp + 1) * rpw; r0 += 16) {
            float x[16][4];
#pragma unroll
            for (int i = 0; i < 16; i++) {
                const int c = c0 + r0 + i;
                if (c < n) ld_vec4(krows + (i64)c * Di, Di, lane, x[i]);
                else x[i][0] = x[i][1] = x[i][2] = x[i][3] = 0.f;
            }
            if (r0 == warp * rpw) {
#pragma unroll
                for (int i = 0; i < 16; i++) {
                    const int h = 16 * warp + i;
                    uint2 hv;
                    float sc = f16_pow2_scaled(xq[i], hv);
                    *(uint2*)(qb + atc_off<ITC_DP>(h, 4 * lane)) = hv;
                    if (lane == 0) cqs[h] = (wt[h] * wscale) * sc;
                }
            }
#pragma unroll
            for (int i = 0; i < 16; i++) {
                uint2 h;
                float sc = f16_pow2_scaled(x[i], h);
                *(uint2*)(kb + atc_off<ITC_DP>(r0 + i, 4 * lane)) = h;
                if (lane == 0) kss[r0 + i] = sc;
            }
        }
    }
    __syncthreads();
    const u32 aQ = atc_smem_u32(sQ), aK = atc_smem_u32(sK);
    const int g = lane >> 2, tq = lane & 3;
    const int a_row = 16 * warp + (lane & 7) + ((lane >> 3) & 1) * 8;
    const int a_col = (lane >> 4) * 8;
    const int b_row = (lane & 7) + ((lane >> 4) & 1) * 8;
    const int b_col = ((lane >> 3) & 1) * 8;
    float s[IDT_R / 8][4];
#pragma unroll
    for (int j = 0; j < IDT_R / 8; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
    const int nks = (Di + 15) / 16;
#pragma unroll
    for (int ks = 0; ks < ITC_DP / 16; ks++) {
        if (ks < nks) {
            const int k0 = ks * 16;
            u32 af[4];
            atc_ldm4(af, aQ + atc_off<ITC_DP>(a_row, k0 + a_col));
#pragma unroll
            for (int np = 0; np < IDT_R / 16; np++) {
                u32 bf[4];
                atc_ldm4(bf, aK + atc_off<ITC_DP>(np * 16 + b_row, k0 + b_col));
                atc_mma(s[2 * np], af, bf[0], bf[1]);
                atc_mma(s[2 * np + 1], af, bf[2], bf[3]);
            }
        }
    }
    // relu(S) * cq over the warp's heads: rows g and g + 8 of the fragment, then lanes of the
    // same tq (lane bits 2-4)
    const float w0 = cqs[16 * warp + g], w1 = cqs[16 * warp + g + 8];
    float v[IDT_R / 8][2];
#pragma unroll
    for (int j = 0; j < IDT_R / 8; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) v[j][e] = fmaxf(s[j][e], 0.f) * w0 + fmaxf(s[j][2 + e], 0.f) * w1;
#pragma unroll
    for (int off = 4; off <= 16; off <<= 1)
#pragma unroll
        for (int j = 0; j < IDT_R / 8; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) v[j][e] += __shfl_xor_sync(0xffffffffu, v[j][e], off);
    if (g == 0) {
#pragma unroll
        for (int j = 0; j < IDT_R / 8; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) part[warp][j * 8 + 2 * tq + e] = v[j][e];
    }
    __syncthreads();
    for (int r = threadIdx.x; r < IDT_R; r += blockDim.x) {
        float a = part[0][r];
        for (int w = 1; w < nw; w++) a += part[w][r];
        if (c0 + r < n) scores[c0 + r] = a * kss[r];
    }
}

struct IdxTcArgs {
    const u16* q16;    // [T][Hi][128] f16, scaled per vector
    const float* cq;   // [T][Hi] head weight * wscale * q scale
    const u16* k16;    // [nrows][128] f16, scaled per row
    const float* ks;   // [nrows] k scale
    const int* pos;    // [T]
    float* scores;     // [T][ldsc]
    int ldsc;
    int T;
    int nrows;         // rows converted (upper bound of any token's n)
    int Hi;
    int topk;
};

// A CTA tile of ITC_T tokens x ITC_R rows (ITC_T * ITC_R = 8192: 8 warps of 32 x 32), grid
// (ceil(nrows / ITC_R), ceil(T / ITC_T)), block 256, dynamic smem (session.rs idx_tc_smem)
// ITC_R * 256 + 2 * ITC_T * 256 + ITC_T * Hi * 4 bytes. Warp w computes tokens
// 32 * (w % (ITC_T / 32)) ..+31 x rows 32 * (w / (ITC_T / 32)) ..+31; per head the K tile
// (resident for all heads) and the head's Q tile (double-buffered across heads) feed m16n8k16
// mma; relu(S)*cq is accumulated over heads in f32 registers in order h = 0, 1, ...
// idx_score_tc: 64 x 128; idx_score_tc2: 32 x 256. Every row tile reads the whole of Q (Hi
// heads of 256 bytes per token) from L2: at 64K context (16K rows) the 64 x 128 tiles read
// ~17 GB of Q per 8K-token chunk, which bounds the kernel; 256-row tiles read half that (and
// twice the K, ~1 GB).
// The rows token t scores: its visible compressed rows (pos + 1) / 4 where they exceed topk,
// else 0 (t past the batch, or every row selected: nothing to score)
__device__ __forceinline__ int idx_scored_rows(const IdxTcArgs& a, int t) {
    if (t >= a.T) return 0;
    const int n = (a.pos[t] + 1) / 4;
    return n > a.topk ? n : 0;
}
// Whether any token of the tile's tt tokens from t0 scores a row of the tile's rows from c0
// (threads tid < tt look at one token each; a block barrier: every thread calls it)
__device__ __forceinline__ bool idx_tile_live(const IdxTcArgs& a, int t0, int c0, int tt, int tid) {
    const int my_n = tid < tt ? idx_scored_rows(a, t0 + tid) : 0;
    return __syncthreads_or(c0 < my_n);
}
// Token t's score row and the rows n it scores; nullptr where it scores none
__device__ __forceinline__ float* idx_score_row(const IdxTcArgs& a, int t, int& n) {
    n = idx_scored_rows(a, t);
    return n > 0 ? a.scores + (i64)t * a.ldsc : nullptr;
}
template <int ITC_T, int ITC_R>
__device__ __forceinline__ void idx_tc_body(const IdxTcArgs& a) {
    static_assert(ITC_T * ITC_R == 8 * 32 * 32 && ITC_T % 32 == 0, "idx_score_tc: 8 warps of 32 tokens x 32 rows");
    constexpr int NCH = ITC_DP / 8;
    constexpr int QTILE = ITC_T * ITC_DP * 2;
    extern __shared__ float4 itc_sm4[];
    u8* sm = (u8*)itc_sm4;
    const u32 sK = atc_smem_u32(sm);
    const u32 sQ = sK + ITC_R * ITC_DP * 2;
    float* cqs = (float*)(sm + ITC_R * ITC_DP * 2 + 2 * QTILE);  // [Hi][64]

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int c0 = blockIdx.x * ITC_R, t0 = blockIdx.y * ITC_T;
    if (!idx_tile_live(a, t0, c0, ITC_T, tid)) return;
    const int Hi = a.Hi;

    // K tile (rows past nrows zero-filled) and the first Q tile
#pragma unroll 4
    for (int f = tid; f < ITC_R * NCH; f += 256) {
        int rr = f / NCH, c = f % NCH, r = c0 + rr;
        const u16* src = a.k16;
        int bytes = 0;
        if (r < a.nrows) {
            src = a.k16 + (i64)r * ITC_DP + c * 8;
            bytes = 16;
        }
        atc_cp16(sK + atc_off<ITC_DP>(rr, c * 8), src, bytes);
    }
    auto load_q = [&](int h, int buf) {
        const u32 dst = sQ + buf * QTILE;
#pragma unroll 4
        for (int f = tid; f < ITC_T * NCH; f += 256) {
            int rr = f / NCH, c = f % NCH, t = t0 + rr;
            const u16* src = a.q16;
            int bytes = 0;
            if (t < a.T) {
                src = a.q16 + ((i64)t * Hi + h) * ITC_DP + c * 8;
                bytes = 16;
            }
            atc_cp16(dst + atc_off<ITC_DP>(rr, c * 8), src, bytes);
        }
        atc_commit();
    };
    load_q(0, 0);
    for (int i = tid; i < Hi * ITC_T; i += 256) {
        int h = i / ITC_T, rr = i % ITC_T, t = t0 + rr;
        cqs[i] = t < a.T ? a.cq[(i64)t * Hi + h] : 0.f;
    }

    const int wm = warp % (ITC_T / 32), wn = warp / (ITC_T / 32);
    const int g = lane >> 2, tq = lane & 3;
    const int a_row = wm * 32 + (lane & 7) + ((lane >> 3) & 1) * 8;
    const int a_col = (lane >> 4) * 8;
    const int b_row = wn * 32 + (lane & 7) + ((lane >> 4) & 1) * 8;
    const int b_col = ((lane >> 3) & 1) * 8;
    float acc[2][4][4];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++) acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = acc[mi][ni][3] = 0.f;

    for (int h = 0; h < Hi; h++) {
        atc_wait0();
        __syncthreads();  // Q tile h (and K, cq) visible; every warp is done with tile h-1
        if (h + 1 < Hi) load_q(h + 1, (h + 1) & 1);
        const u32 qt = sQ + (h & 1) * QTILE;
        float s[2][4][4];
#pragma unroll
        for (int mi = 0; mi < 2; mi++)
#pragma unroll
            for (int ni = 0; ni < 4; ni++) s[mi][ni][0] = s[mi][ni][1] = s[mi][ni][2] = s[mi][ni][3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < ITC_DP / 16; ks++) {
            const int k0 = ks * 16;
            u32 af[2][4];
            atc_ldm4(af[0], qt + atc_off<ITC_DP>(a_row, k0 + a_col));
            atc_ldm4(af[1], qt + atc_off<ITC_DP>(a_row + 16, k0 + a_col));
#pragma unroll
            for (int np = 0; np < 2; np++) {
                u32 bf[4];
                atc_ldm4(bf, sK + atc_off<ITC_DP>(b_row + np * 16, k0 + b_col));
#pragma unroll
                for (int mi = 0; mi < 2; mi++) {
                    atc_mma(s[mi][2 * np], af[mi], bf[0], bf[1]);
                    atc_mma(s[mi][2 * np + 1], af[mi], bf[2], bf[3]);
                }
            }
        }
        const float* cqh = cqs + h * ITC_T + wm * 32 + g;
#pragma unroll
        for (int mi = 0; mi < 2; mi++) {
            float w0 = cqh[mi * 16], w1 = cqh[mi * 16 + 8];
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                acc[mi][ni][0] += fmaxf(s[mi][ni][0], 0.f) * w0;
                acc[mi][ni][1] += fmaxf(s[mi][ni][1], 0.f) * w0;
                acc[mi][ni][2] += fmaxf(s[mi][ni][2], 0.f) * w1;
                acc[mi][ni][3] += fmaxf(s[mi][ni][3], 0.f) * w1;
            }
        }
    }

    // k scale, visibility mask, store
    float ksc[4][2];
#pragma unroll
    for (int ni = 0; ni < 4; ni++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            int c = c0 + wn * 32 + ni * 8 + 2 * tq + e;
            ksc[ni][e] = c < a.nrows ? a.ks[c] : 0.f;
        }
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            int n;
            float* row = idx_score_row(a, t0 + wm * 32 + mi * 16 + g + 8 * r, n);
            if (!row) continue;
#pragma unroll
            for (int ni = 0; ni < 4; ni++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    int c = c0 + wn * 32 + ni * 8 + 2 * tq + e;
                    if (c < n) row[c] = acc[mi][ni][2 * r + e] * ksc[ni][e];
                }
        }
}
extern "C" __global__ void __launch_bounds__(256, 2) idx_score_tc(IdxTcArgs a) {
    PDL_ENTRY;
    idx_tc_body<64, 128>(a);
}
extern "C" __global__ void __launch_bounds__(256, 2) idx_score_tc2(IdxTcArgs a) {
    PDL_ENTRY;
    idx_tc_body<32, 256>(a);
}

// ---- idx_score_wg: the prefill indexer scores on wgmma ----
// Why: idx_score_tc2's mma.sync warps each ldmatrix their own fragments of the Q and K tiles,
// and it ran at ~275 TFLOP/s on the H200 (an 8K prefill: 498 us per ratio-4 layer, session
// 34), while the scores grow with the context (~15x that per 8K chunk at 64K). Here a CTA of
// two warpgroups takes IWG_T tokens x IWG_R rows: the K tile (two 64-dim slabs of IWG_R rows,
// 128-byte swizzled, atw's layout) stays resident, the heads' Q tiles (IWG_T tokens x 128 dims,
// the same layout) stream through IWG_QB buffers, and warpgroup g computes S_h = Q_h .
// K[128g .. 128g + 127]^T (m64n128k16, both operands from shared memory), then folds relu(S_h)
// * cq into its accumulators. The warpgroups meet only at per-buffer mbarriers (full: every
// thread's copies of the buffer landed, cp.async.mbarrier.arrive; empty: both warpgroups'
// products of it retired), not at a block barrier per head, so one warpgroup's fold runs
// beside the other's products. Same per-head sums (16-dim steps in order from zero) and the
// heads added in the same order with one FMA each as idx_score_tc / tc2: the same bits.
// Kernel bench (H200, session 36, 2048 tokens): 0.107 / 0.387 / 1.148 ms at 1K / 4.6K / 16.9K
// rows (486 TFLOP/s) against tc2's 0.149 / 0.547 / 1.811, 0 differing scores; session 35's form
// with a block barrier per head (ptxas serialized its two-S overlap: C7514 / C7517) 0.118 /
// 0.447 / 1.337.
// Dynamic shared memory (session.rs idx_wg_smem): K IWG_R x 256 bytes, IWG_QB Q tiles of
// IWG_T x 256, cq [Hi][IWG_T] f32, the rows' scales [IWG_R] f32, 2 x IWG_QB mbarriers. Grid
// (ceil(nrows / IWG_R), ceil(T / IWG_T)), 256 threads, one CTA per SM.
#define IWG_T 64
#define IWG_R 256
#define IWG_QB 4
extern "C" __global__ void __launch_bounds__(256, 1) idx_score_wg(IdxTcArgs a) {
    PDL_ENTRY;
#if WG_OK
    extern __shared__ __align__(1024) u8 iwg_sm[];
    const u32 sK = atc_smem_u32(iwg_sm), sQ = sK + IWG_R * 256;
    if (sK & 1023) __trap();
    float* cqs = (float*)(iwg_sm + IWG_R * 256 + IWG_QB * IWG_T * 256);  // [Hi][IWG_T]
    const int Hi = a.Hi;
    float* kss = cqs + Hi * IWG_T;  // [IWG_R]
    const u32 full = atc_smem_u32(kss + IWG_R), empty = full + 8 * IWG_QB;  // IWG_QB mbarriers each
    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const int c0 = blockIdx.x * IWG_R, t0 = blockIdx.y * IWG_T;
    if (!idx_tile_live(a, t0, c0, IWG_T, tid)) return;
    if (tid == 0) {
        for (int b = 0; b < IWG_QB; b++) {
            mbar_init(full + 8 * b, 256);
            mbar_init(empty + 8 * b, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // the K tile (rows past nrows zero-filled): covered by Q_0's full barrier
    for (int f = tid; f < IWG_R * 16; f += 256) {
        const int rr = f >> 4, c = f & 15, r = c0 + rr;
        const bool ok = r < a.nrows;
        atc_cp16(sK + sw128_off<IWG_R>(rr, c * 8), ok ? (const void*)(a.k16 + (i64)r * ITC_DP + c * 8) : (const void*)a.k16, ok ? 16 : 0);
    }
    // head h's Q tile into buffer h % IWG_QB, this thread's arrival on its full barrier once
    // the thread's copies so far have landed
    auto load_q = [&](int h) {
        const u32 dst = sQ + (h % IWG_QB) * (IWG_T * 256);
        for (int f = tid; f < IWG_T * 16; f += 256) {
            const int rr = f >> 4, c = f & 15, t = t0 + rr;
            const bool ok = t < a.T;
            atc_cp16(dst + sw128_off<IWG_T>(rr, c * 8), ok ? (const void*)(a.q16 + ((i64)t * Hi + h) * ITC_DP + c * 8) : (const void*)a.q16,
                     ok ? 16 : 0);
        }
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full + 8 * (h % IWG_QB)) : "memory");
    };
    for (int h = 0; h < IWG_QB - 1 && h < Hi; h++) load_q(h);
    for (int i = tid; i < Hi * IWG_T; i += 256) {
        const int h = i / IWG_T, rr = i % IWG_T, t = t0 + rr;
        cqs[i] = t < a.T ? a.cq[(i64)t * Hi + h] : 0.f;
    }
    for (int i = tid; i < IWG_R; i += 256) kss[i] = c0 + i < a.nrows ? a.ks[c0 + i] : 0.f;
    __syncthreads();  // cq and the row scales

    // this thread's tokens: m0 and m0 + 8 of the tile; rows 8j + 2 (lane % 4) (+1) of its 128
    const int m0 = 16 * warp + (lane >> 2);
    float acc[16][4], S[16][4];
#pragma unroll
    for (int j = 0; j < 16; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
    const u32 kb = sK + wg * (128 * 128);
    for (int h = 0; h < Hi; h++) {
        const int b = h % IWG_QB;
        mbar_wait(full + 8 * b, (h / IWG_QB) & 1);
        fence_proxy_async();  // the copies (generic proxy) before the products' reads
        // S_h: 8 k16 steps, the first overwriting
        const u32 qb = sQ + b * (IWG_T * 256);
        wg_pin<128>(S);
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < 8; ks++) {
            const u32 so = ks >> 2, ko = (ks & 3) * 32;
            const u64 da = wg_desc_sw128(qb + so * (IWG_T * 128) + ko, 16, 1024);
            const u64 db = wg_desc_sw128(kb + so * (IWG_R * 128) + ko, 16, 1024);
            wg_mma_ss<128, 0>(S, da, (u32)db, (u32)(db >> 32), ks);
        }
        wg_commit();
        // meanwhile: head h + IWG_QB - 1 into the buffer of head h - 1, once both warpgroups'
        // products of head h - 1 retired
        const int hn = h + IWG_QB - 1;
        if (hn < Hi) {
            if (h >= 1) mbar_wait(empty + 8 * (hn % IWG_QB), ((h - 1) / IWG_QB) & 1);
            load_q(hn);
        }
        wg_wait0();
        wg_pin<128>(S);
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + 8 * b);
        const float w0 = cqs[h * IWG_T + m0], w1 = cqs[h * IWG_T + m0 + 8];
#pragma unroll
        for (int j = 0; j < 16; j++) {
            acc[j][0] += fmaxf(S[j][0], 0.f) * w0;
            acc[j][1] += fmaxf(S[j][1], 0.f) * w0;
            acc[j][2] += fmaxf(S[j][2], 0.f) * w1;
            acc[j][3] += fmaxf(S[j][3], 0.f) * w1;
        }
    }
    // k scale, visibility mask, store
#pragma unroll
    for (int r = 0; r < 2; r++) {
        int n;
        float* row = idx_score_row(a, t0 + m0 + 8 * r, n);
        if (!row) continue;
#pragma unroll
        for (int j = 0; j < 16; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int cl = 128 * wg + 8 * j + 2 * (lane & 3) + e, c = c0 + cl;
                if (c < n) row[c] = acc[j][2 * r + e] * kss[cl];
            }
    }
#else
    __trap();
#endif
}
