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

#define ITC_T 64     // query tokens per CTA
#define ITC_R 128    // indexer rows per CTA
#define ITC_DP 128   // padded vector length (Di <= 128)

// One warp per Di-vector (Di % 4 == 0, Di <= 128): dst16[v][0..128) = f16(src[v] / 2^e) (zeros
// past Di), and sc[v] = 2^e, or, when wt is given (queries), sc[v] = (wt[v]*wscale) * 2^e.
extern "C" __global__ void idx_to_f16(const float* __restrict__ src, int nvec, int Di, const float* __restrict__ wt,
                                      float wscale, u16* dst16, float* sc) {
    PDL_ENTRY;
    int v = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (v >= nvec) return;
    int d = 4 * lane;
    float x[4] = {0.f, 0.f, 0.f, 0.f};
    if (d < Di) {
        float4 f = *(const float4*)(src + (i64)v * Di + d);
        x[0] = f.x; x[1] = f.y; x[2] = f.z; x[3] = f.w;
    }
    float am = fmaxf(fmaxf(fabsf(x[0]), fabsf(x[1])), fmaxf(fabsf(x[2]), fabsf(x[3])));
    am = warp_max(am);
    // unbiased exponent of the max, clamped so that 2^e and 2^-e are normal f32
    int be = (int)((__float_as_uint(am) >> 23) & 255u);
    int e = (am > 0.f && be < 255) ? max(be, 1) - 127 : 0;
    e = min(e, 126);
    float inv = __uint_as_float((u32)(127 - e) << 23);
    float s = __uint_as_float((u32)(127 + e) << 23);
    uint2 h;
    h.x = pack_h2(x[0] * inv, x[1] * inv);
    h.y = pack_h2(x[2] * inv, x[3] * inv);
    *(uint2*)(dst16 + (i64)v * ITC_DP + d) = h;
    if (lane == 0) sc[v] = wt ? (wt[v] * wscale) * s : s;
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

// grid (ceil(nrows/128), ceil(T/64)), block 256, dynamic smem 64 KiB + 64*Hi*4.
// Warp w computes tokens 32*(w&1)..+31 x rows 32*(w>>1)..+31 of the CTA tile; per head the
// K tile (resident for all heads) and the head's Q tile (double-buffered across heads) feed
// m16n8k16 mma; relu(S)*cq is accumulated over heads in f32 registers in order h = 0, 1, ...
extern "C" __global__ void __launch_bounds__(256, 2) idx_score_tc(IdxTcArgs a) {
    PDL_ENTRY;
    constexpr int NCH = ITC_DP / 8;
    constexpr int QTILE = ITC_T * ITC_DP * 2;
    extern __shared__ float4 itc_sm4[];
    u8* sm = (u8*)itc_sm4;
    const u32 sK = atc_smem_u32(sm);
    const u32 sQ = sK + ITC_R * ITC_DP * 2;
    float* cqs = (float*)(sm + ITC_R * ITC_DP * 2 + 2 * QTILE);  // [Hi][64]

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int c0 = blockIdx.x * ITC_R, t0 = blockIdx.y * ITC_T;
    // does any token of the tile need scores of a row of this tile?
    int my_n = 0;
    if (tid < ITC_T && t0 + tid < a.T) {
        int n = (a.pos[t0 + tid] + 1) / 4;
        my_n = n > a.topk ? n : 0;
    }
    if (!__syncthreads_or(c0 < my_n)) return;
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

    const int wm = warp & 1, wn = warp >> 1;
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
            int t = t0 + wm * 32 + mi * 16 + g + 8 * r;
            if (t >= a.T) continue;
            int n = (a.pos[t] + 1) / 4;
            if (n <= a.topk) continue;
            float* row = a.scores + (i64)t * a.ldsc;
#pragma unroll
            for (int ni = 0; ni < 4; ni++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    int c = c0 + wn * 32 + ni * 8 + 2 * tq + e;
                    if (c < n) row[c] = acc[mi][ni][2 * r + e] * ksc[ni][e];
                }
        }
}
