// Model-level kernels: embedding, hyper-connections, norms, RoPE, FP8/FP4 simulation,
// compressors, indexer, attention, MoE routing/grouping. Every kernel takes a batch of T
// tokens whose absolute positions are read from device memory (pos[t]), so the same kernels
// serve prefill chunks and graph-captured decode steps.

#define MAXN 4
#define MAXM 24

// Prefill's hyper-connection state may be kept in 16 bits (session.rs `DS4_HC_S16`, Fast
// precision): SK 0 f32, 1 f16 (a bf16 state was ruled out by tools/hc16_sim.py: ~100x f16's
// KL on the fixtures, bench/NOTES.md session 40). Why: prefill's hc glue moves the N x D state three times
// per step (hc_post reads and writes it, hc_finish reads it again): ~64 KB per token in f32,
// most of the hc kernels' traffic. The state's value is what is stored: hc_post rounds the new
// state before its sum of squares and partial mixes, so the next finish sees exactly the
// values the mixes were formed from. f16 saturates at its largest finite value (no inf).
#define HC_S_F32 0
#define HC_S_F16 1
// The value a state entry keeps once stored.
template <int SK>
__device__ __forceinline__ float hcs_round(float v) {
    return SK == HC_S_F32 ? v : h2f(f2h_sat(v));
}
// Four consecutive state values (element offset i, a multiple of 4) as floats, and back.
template <int SK>
__device__ __forceinline__ float4 hcs_ld4(const void* S, i64 i) {
    if (SK == HC_S_F32) return *(const float4*)((const float*)S + i);
    const uint2 u = *(const uint2*)((const u16*)S + i);
    return make_float4(h2f((u16)u.x), h2f((u16)(u.x >> 16)), h2f((u16)u.y), h2f((u16)(u.y >> 16)));
}
template <int SK>
__device__ __forceinline__ void hcs_st4(void* S, i64 i, float4 v) {
    if (SK == HC_S_F32) {
        *(float4*)((float*)S + i) = v;
        return;
    }
    *(uint2*)((u16*)S + i) = make_uint2((u32)f2h_sat(v.x) | (u32)f2h_sat(v.y) << 16, (u32)f2h_sat(v.z) | (u32)f2h_sat(v.w) << 16);
}
// Token t's state (N x D values) in storage SK.
template <int SK>
__device__ __forceinline__ void* hcs_tok(void* S, int t, int N, int D) {
    return SK == HC_S_F32 ? (void*)((float*)S + (i64)t * N * D) : (void*)((u16*)S + (i64)t * N * D);
}

// Four consecutive values (float4 index f) of an f32 array, or of an f16 one (GH: the expert
// GEMMs' GQ_FLAG_Y16 outputs, read by moe_mid_h), widened exactly.
template <bool GH>
__device__ __forceinline__ float4 mid_ld4(const void* p, i64 f) {
    if (!GH) return ((const float4*)p)[f];
    const uint2 v = ((const uint2*)p)[f];
    return make_float4(h2f((u16)v.x), h2f((u16)(v.x >> 16)), h2f((u16)v.y), h2f((u16)(v.y >> 16)));
}

extern "C" __global__ void embed_rows(const u16* __restrict__ emb, const int* __restrict__ tok, float* __restrict__ S,
                                      int D, int N) {
    PDL_ENTRY;
    int t = blockIdx.x;
    const u16* row = emb + (i64)tok[t] * D;
#pragma unroll 4
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float v = h2f(row[d]);
        for (int s = 0; s < N; s++) S[((i64)t * N + s) * D + d] = v;
    }
}
// embed_rows for an f16 state (DS4_HC_S16): the f16 embedding copied as it is.
extern "C" __global__ void embed_rows_h(const u16* __restrict__ emb, const int* __restrict__ tok, u16* __restrict__ S, int D,
                                        int N) {
    PDL_ENTRY;
    int t = blockIdx.x;
    const u16* row = emb + (i64)tok[t] * D;
#pragma unroll 4
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        const u16 h = row[d];
        for (int s = 0; s < N; s++) S[((i64)t * N + s) * D + d] = h;
    }
}

__device__ float block_sum_f(float v, float* sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    float t = 0.f;
    for (int i = 0; i < nw; i++) t += sh[i];
    __syncthreads();
    return t;
}

// hc_post (optional, when y != 0) followed by the partial sums of the next hc_pre: per
// (token, 32-column slice) the sum of squares of the flattened state and the M partial dot
// products with fn. grid (D/32, ceil(T/tt)), HCP_WARPS warps per block, one column per lane;
// warp w takes the block's tokens w, w + HCP_WARPS, ... The slice's fn values are staged once
// per block in shared memory as one float4 (the N <= 4 stream weights) per (mix, column), so
// a token costs M vector loads of fn. The M = 24 partial dots leave the warp by a shuffle
// reduce-scatter (halve the set at lane bits 4, 3, 2, then a butterfly over bits 1, 0): 27
// shuffles per token instead of 120, in a fixed pattern (deterministic), and are stored
// [t][split][m]: 96 contiguous bytes per (token, block). Why: prefill runs this on T = chunk
// tokens, and with [t][m][split] (what hc_step keeps) every partial was its own L2 write
// (Nsight Compute at 8K: L2 92% busy, DRAM 8%, 1.8 ms per call).
#define HCP_WARPS 8
// One reduce-scatter step over lane bit OFF: lanes with the bit set keep v[H..2H), the others
// v[0..H); each adds its partner's copy of the half it keeps, into v[0..H).
template <int H, int OFF>
__device__ __forceinline__ void rs_half(float (&v)[MAXM], int lane) {
    bool hi = lane & OFF;
#pragma unroll
    for (int i = 0; i < H; i++) {
        float keep = hi ? v[i + H] : v[i], send = hi ? v[i] : v[i + H];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
    }
}
static_assert(MAXM == 24, "hc_post_mix's reduce-scatter halves 24 mixes three times");
// The warp's partial dots of one (token, slice) and its sum of squares, reduced over the lanes
// and stored (hc_post_mix, hc_post_mix4): the reduce-scatter leaves lane l with mixes
// 3 * (l >> 2) + 0..2 after three halvings (template steps: with a loop the compiler kept v in
// local memory), a butterfly over lane bits 1, 0 finishes them; pdot [t][split][m].
__device__ __forceinline__ void hcp_store(float (&v)[MAXM], double ss, int lane, int t, int sp, int nsplit, int M, float* pdot,
                                          double* pss) {
    rs_half<12, 16>(v, lane);
    rs_half<6, 8>(v, lane);
    rs_half<3, 4>(v, lane);
#pragma unroll
    for (int off = 2; off >= 1; off >>= 1)
#pragma unroll
        for (int i = 0; i < 3; i++) v[i] += __shfl_xor_sync(0xffffffffu, v[i], off);
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    int j = lane & 3, m = 3 * (lane >> 2) + j;
    float r = j == 0 ? v[0] : (j == 1 ? v[1] : v[2]);
    if (j < 3 && m < M) pdot[((i64)t * nsplit + sp) * M + m] = r;
    if (lane == 3) pss[(i64)t * nsplit + sp] = ss;
}
// hc_post's terms (new[b] = post[b] * y + sum_a comb[a][b] * old[a]) rounded as the CPU
// reference rounds them (ops::hc_post: each product rounded, then added): left to itself the
// compiler contracts a product and a sum into an FMA, and which pair differs between kernels
// (hc_post_mix, hc_post_mix4 and hc_step wrote different bits from the same inputs). Pinned,
// every kernel that updates the state writes the reference's bits.
__device__ __forceinline__ float hc_term(float acc, float a, float b) { return __fadd_rn(acc, __fmul_rn(a, b)); }
// moe_combine's value at (token t, column d): the K routed slot rows of ypair (row
// pair_of[t*K + i], selection order i) summed from 0.f, then the shared expert's row added.
// The same additions in the same order as moe_combine (below), so the same bits; the index
// loads and then the row loads of up to 8 slots are issued before any add (see sum_strided).
__device__ __forceinline__ float moe_sum_at(const float* __restrict__ ypair, const int* __restrict__ pair_of,
                                            const float* __restrict__ shared, int K, int D, int t, int d) {
    const int* po = pair_of + t * K;
    float acc = 0.f;
    for (int i0 = 0; i0 < K; i0 += 8) {
        int sl[8];
        float r[8];
#pragma unroll
        for (int u = 0; u < 8; u++) sl[u] = i0 + u < K ? po[i0 + u] : 0;
#pragma unroll
        for (int u = 0; u < 8; u++) r[u] = i0 + u < K ? ypair[(i64)sl[u] * D + d] : 0.f;
#pragma unroll
        for (int u = 0; u < 8; u++)
            if (i0 + u < K) acc += r[u];
    }
    return acc + shared[(i64)t * D + d];
}
// The parameters every hc_post kernel takes (one list: the host passes the same arguments to
// whichever it launches, session.rs hc_post_mix_at).
#define HC_POST_PARAMS                                                                                        \
    float* S, const float* __restrict__ y, const float* __restrict__ post, const float* __restrict__ comb,    \
        const u16* __restrict__ fn, int M, int D, int N, float* pdot, double* pss, int ny, int T, int tt,     \
        const int* __restrict__ pair_of, const float* __restrict__ shared, int* hsat
#define HC_POST_ARGS S, y, post, comb, fn, M, D, N, pdot, pss, ny, T, tt, pair_of, shared, hsat
// y: the layer output added by hc_post, the sum of ny consecutive D-rows per token (y == 0:
// none); with pair_of (prefill's MoE output, DS4_FUSE_COMBINE) instead moe_combine's sum
// computed here (moe_sum_at: y = ypair, ny = K slots per token, shared = the shared
// expert's rows), so the combined row is never written; f16 slot rows (DS4_EXP_Y16) only in
// hc_post_mma8_y / _hy (session.rs hc_mma8_takes). hsat (may be null): the word the f16-state
// kernels (hc_post_mma8_h / _hy) set when the state saturates; the others never set it.
extern "C" __global__ void __launch_bounds__(256) hc_post_mix(HC_POST_PARAMS) {
    PDL_ENTRY;
    __shared__ float4 fsh[MAXM][32];
    int sp = blockIdx.x, nsplit = gridDim.x, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int d = sp * 32 + lane;
    bool ok = d < D;
    i64 fstride = (i64)N * D;
    for (int i = threadIdx.x; i < MAXM * 32; i += blockDim.x) {
        int m = i >> 5, dd = sp * 32 + (i & 31);
        float v[4];
#pragma unroll
        for (int b = 0; b < 4; b++) v[b] = (dd < D && m < M && b < N) ? h2f(fn[(i64)m * fstride + (i64)b * D + dd]) : 0.f;
        fsh[m][i & 31] = make_float4(v[0], v[1], v[2], v[3]);
    }
    __syncthreads();
    int t1 = min(T, (int)(blockIdx.y + 1) * tt);
    for (int t = blockIdx.y * tt + w; t < t1; t += HCP_WARPS) {
        float* St = S + (i64)t * N * D;
        float nv[4] = {0.f, 0.f, 0.f, 0.f};
        if (ok) {
            float sv[4];
#pragma unroll
            for (int a = 0; a < 4; a++) sv[a] = a < N ? St[(i64)a * D + d] : 0.f;
            if (y) {
                float yd = pair_of ? moe_sum_at(y, pair_of, shared, ny, D, t, d) : sum_strided(y + (i64)t * ny * D + d, D, ny);
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    if (b < N) {
                        float acc = __fmul_rn(post[t * N + b], yd);
#pragma unroll
                        for (int a = 0; a < 4; a++)
                            if (a < N) acc = hc_term(acc, comb[t * N * N + a * N + b], sv[a]);
                        nv[b] = acc;
                    }
                }
#pragma unroll
                for (int b = 0; b < 4; b++)
                    if (b < N) St[(i64)b * D + d] = nv[b];
            } else {
#pragma unroll
                for (int b = 0; b < 4; b++) nv[b] = sv[b];
            }
        }
        double ss = 0.0;
        float v[MAXM];
#pragma unroll
        for (int b = 0; b < 4; b++) ss += (double)nv[b] * (double)nv[b];
#pragma unroll
        for (int m = 0; m < MAXM; m++) {
            float4 f = fsh[m][lane];
            v[m] = ((f.x * nv[0] + f.y * nv[1]) + f.z * nv[2]) + f.w * nv[3];
        }
        hcp_store(v, ss, lane, t, sp, nsplit, M, pdot, pss);
    }
}

// float4 forms of sum_strided and moe_sum_at for hc_post_mix4: four consecutive columns, each
// column's terms added in the same order (the same bits per column).
__device__ __forceinline__ void add4(float4& s, float4 v) {
    s.x += v.x;
    s.y += v.y;
    s.z += v.z;
    s.w += v.w;
}
__device__ __forceinline__ float4 sum_strided4(const float* __restrict__ p, i64 stride, int n) {
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int q0 = 0; q0 < n; q0 += 8) {
        float4 r[8];
#pragma unroll
        for (int u = 0; u < 8; u++) r[u] = q0 + u < n ? *(const float4*)(p + (i64)(q0 + u) * stride) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int u = 0; u < 8; u++)
            if (q0 + u < n) add4(s, r[u]);
    }
    return s;
}
// YH: the slot rows are f16 (the down GEMM's GQ_FLAG_Y16 output, DS4_EXP_Y16), widened exactly
// and added as the f32 ones are.
// (shv(): the shared expert's four values, called after the slots' sum: moe_sum_at4 below
// loads them there, as it did before hc_post_mma8_hyp; loaded earlier, hc_post_mma8_h spilled)
template <bool YH, typename SH>
__device__ __forceinline__ float4 moe_sum_at4v(const void* __restrict__ ypair, const int* __restrict__ pair_of, const SH& shv, int K,
                                               int D, int t, int d) {
    const int* po = pair_of + t * K;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int i0 = 0; i0 < K; i0 += 8) {
        int sl[8];
        float4 r[8];
#pragma unroll
        for (int u = 0; u < 8; u++) sl[u] = i0 + u < K ? po[i0 + u] : 0;
#pragma unroll
        for (int u = 0; u < 8; u++)  // (element offsets: hcs_ld4 reads f16 as the f16 state's)
            r[u] = i0 + u < K ? hcs_ld4<YH ? HC_S_F16 : HC_S_F32>(ypair, (i64)sl[u] * D + d) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int u = 0; u < 8; u++)
            if (i0 + u < K) add4(acc, r[u]);
    }
    add4(acc, shv());
    return acc;
}
template <bool YH>
__device__ __forceinline__ float4 moe_sum_at4(const void* __restrict__ ypair, const int* __restrict__ pair_of,
                                              const float* __restrict__ shared, int K, int D, int t, int d) {
    return moe_sum_at4v<YH>(ypair, pair_of, [&] { return *(const float4*)(shared + (i64)t * D + d); }, K, D, t, d);
}

// The state update of token t at a lane's 4 columns d0 .. d0 + 3 (hc_post_mix4, hc_post_mma):
// new[b] = post[b] * y + sum_a comb[a][b] * old[a] by hc_term (the CPU reference's bits), y the
// sum of ny rows or the MoE slot sum (as hc_post_mix's), stored back into St; without y the
// state as it is. nv [stream][column]; returns the sum of squares of the 16 values (double,
// column-major order). FULL: N == 4 is known (no per-stream guards).
// SK: the state's storage (HC_S_*; St points at token t's state in it): the new values are
// rounded to it before the sum of squares (and before the caller's partial mixes); `*sat` is
// set when an f16 state saturated (a new value past 65504; f32: unused). YH: the MoE slot rows are f16.
// hc_post4_tok's update of the state from its parts: the old state sv [stream], y's four
// columns yd, post pv [stream] and comb cv [from][to] (shared with hc_post_pf_tok).
template <bool FULL, int SK>
__device__ __forceinline__ void hc_post4_upd(float (&nv)[4][4], void* St, const float4 (&sv)[4], const float4 yd, const float (&pv)[4],
                                             const float (&cv)[4][4], int N, int D, int d0, bool* sat) {
    const float yv[4] = {yd.x, yd.y, yd.z, yd.w};
#pragma unroll
    for (int b = 0; b < 4; b++) {
#pragma unroll
        for (int c = 0; c < 4; c++) {
            float acc = __fmul_rn(pv[b], yv[c]);
#pragma unroll
            for (int a = 0; a < 4; a++) {
                const float sa = c == 0 ? sv[a].x : c == 1 ? sv[a].y : c == 2 ? sv[a].z : sv[a].w;
                if (FULL || a < N) acc = hc_term(acc, cv[a][b], sa);
            }
            if (SK == HC_S_F16) *sat |= fabsf(acc) > 65504.f;
            nv[b][c] = (FULL || b < N) ? hcs_round<SK>(acc) : 0.f;
        }
    }
#pragma unroll
    for (int b = 0; b < 4; b++)
        if (FULL || b < N) hcs_st4<SK>(St, (i64)b * D + d0, make_float4(nv[b][0], nv[b][1], nv[b][2], nv[b][3]));
}
// The sum of squares of a lane's 16 new values (double, column-major order).
__device__ __forceinline__ double hc_post4_ss(const float (&nv)[4][4]) {
    double ss = 0.0;
#pragma unroll
    for (int c = 0; c < 4; c++)
#pragma unroll
        for (int b = 0; b < 4; b++) ss += (double)nv[b][c] * (double)nv[b][c];
    return ss;
}
template <bool FULL, int SK = HC_S_F32, bool YH = false>
__device__ __forceinline__ double hc_post4_tok(float (&nv)[4][4], void* St, const float* __restrict__ y, const float* __restrict__ post,
                                               const float* __restrict__ comb, int N, int D, int ny, int t, int d0,
                                               const int* __restrict__ pair_of, const float* __restrict__ shared, bool* sat = nullptr) {
    float4 sv[4];
#pragma unroll
    for (int a = 0; a < 4; a++) sv[a] = (FULL || a < N) ? hcs_ld4<SK>(St, (i64)a * D + d0) : make_float4(0.f, 0.f, 0.f, 0.f);
    if (y) {
        const float4 yd = pair_of ? moe_sum_at4<YH>(y, pair_of, shared, ny, D, t, d0) : sum_strided4(y + (i64)t * ny * D + d0, D, ny);
        float pv[4], cv[4][4];
#pragma unroll
        for (int b = 0; b < 4; b++) pv[b] = (FULL || b < N) ? post[t * N + b] : 0.f;
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int b = 0; b < 4; b++) cv[a][b] = (FULL || (a < N && b < N)) ? comb[t * N * N + a * N + b] : 0.f;
        hc_post4_upd<FULL, SK>(nv, St, sv, yd, pv, cv, N, D, d0, sat);
    } else {
#pragma unroll
        for (int b = 0; b < 4; b++) {
            nv[b][0] = sv[b].x;
            nv[b][1] = sv[b].y;
            nv[b][2] = sv[b].z;
            nv[b][3] = sv[b].w;
        }
    }
    return hc_post4_ss(nv);
}

// hc_post_mix over 128-column slices (prefill, D % 128 == 0; session.rs hc_prefill_split): a
// lane owns 4 consecutive columns, so a token's state, y and new state move as float4 (4x the
// bytes per load instruction and per warp in flight), and the 24 partial dots per (token,
// slice) are a quarter as many for hc_finish to reduce. The state update is hc_post_mix's
// arithmetic per column (hc_term: the same bits); each partial dot sums the lane's 4 columns
// in order before the reduce-scatter (another order than hc_post_mix's: the mixes differ in
// the last bits). Why: hc_post_mix's warps each keep one 32-column token in flight (a 1.4-1.8 TB/s
// latency chain of state, y and slot-index loads, ~250 instructions per 32 columns).
// fn staged as float4 (the N <= 4 stream weights) per (mix, lane column c, lane): 48 KB.
extern "C" __global__ void __launch_bounds__(256) hc_post_mix4(HC_POST_PARAMS) {
    PDL_ENTRY;
    __shared__ float4 fsh[MAXM][4][32];
    const int sp = blockIdx.x, nsplit = gridDim.x, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int d0 = sp * 128 + 4 * lane;
    const i64 fstride = (i64)N * D;
    for (int i = threadIdx.x; i < MAXM * 128; i += blockDim.x) {
        int m = i >> 7, cc = i & 127, dd = sp * 128 + cc;
        float v[4];
#pragma unroll
        for (int b = 0; b < 4; b++) v[b] = (m < M && b < N) ? h2f(fn[(i64)m * fstride + (i64)b * D + dd]) : 0.f;
        fsh[m][cc & 3][cc >> 2] = make_float4(v[0], v[1], v[2], v[3]);
    }
    __syncthreads();
    const int t1 = min(T, (int)(blockIdx.y + 1) * tt);
    for (int t = blockIdx.y * tt + w; t < t1; t += HCP_WARPS) {
        float nv[4][4];  // [stream][column]
        const double ss = hc_post4_tok<false>(nv, S + (i64)t * N * D, y, post, comb, N, D, ny, t, d0, pair_of, shared);
        float v[MAXM];
#pragma unroll
        for (int m = 0; m < MAXM; m++) {
            float s = 0.f;
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const float4 f = fsh[m][c][lane];
                s += ((f.x * nv[0][c] + f.y * nv[1][c]) + f.z * nv[2][c]) + f.w * nv[3][c];
            }
            v[m] = s;
        }
        hcp_store(v, ss, lane, t, sp, nsplit, M, pdot, pss);
    }
}

// hc_post_mix4's work with the partial mixes on tensor cores (prefill; N == 4, M <= 24, D % 128
// == 0: session.rs hc_mma_ok; `DS4_HC_MMA=0`: hc_post_mix4). Why: hc_post_mix4 reads its staged
// fn float4 once per token (96 shared loads of 512 bytes per token and 128-column slice), and
// Nsight Compute puts it at 88 % of its memory-pipe peak with DRAM at 42 % (8K tokens, ~0.6 ms
// per launch). Here a block takes 16 tokens at a time in three phases:
// 1. warp w updates tokens 2w, 2w + 1 as hc_post_mix4 does (lane on 4 columns, the same state
//    bits, float4 loads and stores) and puts the new state in shared memory, Bs[token][column
//    x 4 + stream] (row stride HCM_BST: the fragment loads below are free of bank conflicts);
// 2. warp w forms the partial mixes of k-steps 8w .. 8w + 7 (columns 16w .. 16w + 15, k =
//    (column pair, stream)) for all 16 tokens as mma.sync m16n8k8 (tf32): A = fn (two m-tiles,
//    M <= 24; f16, so exact in tf32; the warp's fragments staged once per block), B = the
//    state, split into its tf32 high part and the tf32 of the remainder (two products: ~22
//    bits of each value kept, against f32's 24);
// 3. the 8 warps' partials are added in warp order (deterministic) and stored as hc_post_mix4
//    stores them (pdot [t][split][m], pss [t][split]; the mixes differ from its in the last
//    bits, as any other summation order does).
// Dynamic shared memory HCM_SMEM: Bs (16 x HCM_BST floats), the partials [8][16][32], then fn's
// fragments as f16 (per warp, k-step and lane: m-tile 0's four values, m-tile 1's two: M <=
// 24, its rows 8-15 are zero), 73 KB: three blocks per SM (with the fragments in registers,
// 128 registers and two blocks: v2 on branch s32-hcmma, latency bound at 24 % occupancy).
// Kernel bench (H200, T 8192): y rows 0.527 ms against hc_post_mix4's 0.607, MoE sum 0.692
// against 0.783; Nsight Compute: DRAM 49 %, memory pipes 70 %, occupancy 37 %, 72 registers.
#define HCM_BST 516
#define HCM_SMEM ((16 * HCM_BST + 8 * 16 * 32) * 4 + 64 * 32 * 12)
#define HCM_SMEM8 ((8 * HCM_BST + 8 * 8 * 32) * 4 + 64 * 32 * 12)
__device__ __forceinline__ u32 f2tf32(float x) {
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint4& a, u32 b0, u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}
// ---- hc_post_mma8's loads a group ahead (PF: hc_post_mma8_hp / _hyp, `DS4_HC_PF`) ----
// Why: hc_post_mma8_h / _hy keep one token's loads in flight per warp during phase 1 and none
// during the mma and reduce phases (session 53's 8K trace on an H100: 586 / 657 us a launch,
// 1.1 / 1.6 TB/s). Here each warp issues the next group's loads of its token (state, y row or
// the shared expert's row, post and comb) right after its phase 1, into registers as loaded
// (the f16 state kept packed), so they land while phases 2 and 3 run. The MoE slot rows are
// still loaded in phase 1 (held a group ahead too, 16 more registers, ptxas spills even at 80).
// The values and their order of addition are hc_post4_tok's: the same bits.
#define HCPF_ROWS 1  // y: none, or one row per token (ny == 1)
#define HCPF_MOE 2   // y: the MoE sum
template <int SK> struct HcRaw { typedef float4 T; };
template <> struct HcRaw<HC_S_F16> { typedef uint2 T; };
template <int SK>
__device__ __forceinline__ typename HcRaw<SK>::T hcs_raw4(const void* S, i64 i) {
    return *(const typename HcRaw<SK>::T*)((const char*)S + i * (SK == HC_S_F32 ? 4 : 2));
}
__device__ __forceinline__ float4 hcs_cvt4(float4 v) { return v; }
__device__ __forceinline__ float4 hcs_cvt4(uint2 u) {
    return make_float4(h2f((u16)u.x), h2f((u16)(u.x >> 16)), h2f((u16)u.y), h2f((u16)(u.y >> 16)));
}
template <int SK>
struct HcPf {
    typename HcRaw<SK>::T s[4];  // the state's 4 streams
    float4 y;                    // y's row (HCPF_ROWS), the shared expert's row (HCPF_MOE)
    uint2 yh;                    // that row as f16 (R16: hc_post_mma8_hpy / _hyps), widened when used
    float pc;                    // lane l: post[l] (l < 4), comb[l - 4] (l < 20)
};
// Issue token t's loads (R16: y's row (HCPF_ROWS) or the shared expert's (HCPF_MOE) is f16,
// kept packed until used).
template <int SK, int PF, bool R16>
__device__ __forceinline__ void hc_pf_load(HcPf<SK>& p, const void* St, const void* __restrict__ y, const float* __restrict__ post,
                                           const float* __restrict__ comb, const float* __restrict__ shared, int D, int t, int d0,
                                           int lane) {
#pragma unroll
    for (int a = 0; a < 4; a++) p.s[a] = hcs_raw4<SK>(St, (i64)a * D + d0);
    p.pc = lane < 4 ? post[t * 4 + lane] : lane < 20 ? comb[t * 16 + lane - 4] : 0.f;
    if (!y) return;
    if (R16) p.yh = *(const uint2*)((const u16*)(PF == HCPF_MOE ? (const void*)shared : y) + (i64)t * D + d0);
    else p.y = *(const float4*)((PF == HCPF_MOE ? shared : (const float*)y) + (i64)t * D + d0);
}
// hc_post4_tok<true, SK, YH> on the loaded values (yp: y, or null).
template <int SK, bool YH, int PF, bool R16>
__device__ __forceinline__ double hc_pf_tok(float (&nv)[4][4], void* St, const HcPf<SK>& p, const void* __restrict__ yp,
                                            const int* __restrict__ pair_of, int D, int ny, int t, int d0, bool* sat) {
    float4 sv[4];
#pragma unroll
    for (int a = 0; a < 4; a++) sv[a] = hcs_cvt4(p.s[a]);
    if (yp) {
        float4 yd = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (PF == HCPF_MOE) {
            yd = moe_sum_at4v<YH>(yp, pair_of, [&] { return R16 ? hcs_cvt4(p.yh) : p.y; }, ny, D, t, d0);
        } else {
            add4(yd, R16 ? hcs_cvt4(p.yh) : p.y);  // (widened exactly: the f32 form's sum)
        }
        float pv[4], cv[4][4];
#pragma unroll
        for (int b = 0; b < 4; b++) pv[b] = __shfl_sync(0xffffffffu, p.pc, b);
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int b = 0; b < 4; b++) cv[a][b] = __shfl_sync(0xffffffffu, p.pc, 4 + 4 * a + b);
        hc_post4_upd<true, SK>(nv, St, sv, yd, pv, cv, 4, D, d0, sat);
    } else {
#pragma unroll
        for (int b = 0; b < 4; b++) {
            nv[b][0] = sv[b].x;
            nv[b][1] = sv[b].y;
            nv[b][2] = sv[b].z;
            nv[b][3] = sv[b].w;
        }
    }
    return hc_post4_ss(nv);
}

// The body for groups of 8 NT tokens (NT n-tiles; hc_post_mma: 2, hc_post_mma8: 1), the state
// stored as SK (HC_S_*), f16 MoE slot rows when YH, the loads a group ahead when PF (NT 1).
template <int NT, int SK = HC_S_F32, bool YH = false, int PF = 0, bool R16 = false>
__device__ __forceinline__ void hc_post_mma_body(float* S, const float* __restrict__ y, const float* __restrict__ post,
                                                 const float* __restrict__ comb, const u16* __restrict__ fn, int M, int D, int N,
                                                 float* pdot, double* pss, int ny, int T, int tt, const int* __restrict__ pair_of,
                                                 const float* __restrict__ shared, int* hsat) {
    constexpr int TG = 8 * NT;  // tokens per group
    extern __shared__ float hsm[];
    float* Bs = hsm;
    float* red = hsm + TG * HCM_BST;
    const int sp = blockIdx.x, nsplit = gridDim.x, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int g = lane >> 2, q = lane & 3, c0 = sp * 128;
    if (N != 4 || M > 24 || blockDim.x != 256) __trap();  // (the host checks: hc_mma_ok)
    // A fragments of k-steps 8w + j: a0 = fn[16 mt + g][q][2 ks], a1 = mix + 8, a2 = column
    // 2 ks + 1, a3 = both (each a 32-bit load of two f16 columns), kept as f16: m-tile 0 as
    // {a0 a2, a1 a3} (uint2), m-tile 1 as a0 a2 (its mixes 24..31 are zero); warp-private
    uint2* fr0 = (uint2*)(red + 8 * TG * 32) + w * 8 * 32;
    u32* fr1 = (u32*)((uint2*)(red + 8 * TG * 32) + 64 * 32) + w * 8 * 32;
    {
        const i64 fstride = (i64)N * D;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int col = c0 + 2 * (8 * w + j);
            const u32 p0 = g < M ? *(const u32*)(fn + (i64)g * fstride + (i64)q * D + col) : 0u;
            const u32 p1 = g + 8 < M ? *(const u32*)(fn + (i64)(g + 8) * fstride + (i64)q * D + col) : 0u;
            const u32 p2 = g + 16 < M ? *(const u32*)(fn + (i64)(g + 16) * fstride + (i64)q * D + col) : 0u;
            fr0[j * 32 + lane] = make_uint2(p0, p1);
            fr1[j * 32 + lane] = p2;
        }
        __syncwarp();
    }
    const int d0 = c0 + 4 * lane;
    const int tbeg = blockIdx.y * tt, t1 = min(T, tbeg + tt);
    bool sat = false;
    static_assert(PF == 0 || NT == 1, "the loads a group ahead: one token per warp");
    HcPf<SK> pf;
    const auto pf_next = [&](int tn) {
        if constexpr (PF != 0) {
            if (tn < t1) hc_pf_load<SK, PF, R16>(pf, hcs_tok<SK>(S, tn, N, D), y, post, comb, shared, D, tn, d0, lane);
        }
    };
    pf_next(tbeg + w);
    for (int t0 = tbeg; t0 < t1; t0 += TG) {
        // ---- 1. the new state of tokens t0 + NT w + u, u < NT ----
#pragma unroll
        for (int u = 0; u < NT; u++) {
            const int tl = NT * w + u, t = t0 + tl;
            float nv[4][4];  // [stream][column]
            if (t < t1) {
                double ss;
                if constexpr (PF != 0) ss = hc_pf_tok<SK, YH, PF, R16>(nv, hcs_tok<SK>(S, t, N, D), pf, y, pair_of, D, ny, t, d0, &sat);
                else ss = hc_post4_tok<true, SK, YH>(nv, hcs_tok<SK>(S, t, N, D), y, post, comb, N, D, ny, t, d0, pair_of, shared, &sat);
#pragma unroll
                for (int off = 16; off >= 1; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
                if (lane == 0) pss[(i64)t * nsplit + sp] = ss;
            } else {
#pragma unroll
                for (int b = 0; b < 4; b++)
#pragma unroll
                    for (int c = 0; c < 4; c++) nv[b][c] = 0.f;
            }
#pragma unroll
            for (int c = 0; c < 4; c++) *(float4*)(Bs + tl * HCM_BST + (4 * lane + c) * 4) = make_float4(nv[0][c], nv[1][c], nv[2][c], nv[3][c]);
        }
        pf_next(t0 + TG + w);  // (in flight through phases 2 and 3)
        __syncthreads();
        // ---- 2. the warp's k-steps for the group's tokens (n-tile nt: tokens 8 nt .. 8 nt + 7) ----
        float acc[2][NT][4] = {};  // [m-tile][n-tile]
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int kb = (2 * (8 * w + j)) * 4 + q;
            const uint2 f0 = fr0[j * 32 + lane];
            const u32 f1 = fr1[j * 32 + lane];
            const uint4 af[2] = {make_uint4(__float_as_uint(h2f((u16)f0.x)), __float_as_uint(h2f((u16)f0.y)), __float_as_uint(h2f((u16)(f0.x >> 16))),
                                            __float_as_uint(h2f((u16)(f0.y >> 16)))),
                                 make_uint4(__float_as_uint(h2f((u16)f1)), 0u, __float_as_uint(h2f((u16)(f1 >> 16))), 0u)};
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const float* br = Bs + (8 * nt + g) * HCM_BST + kb;
                const float v0 = br[0], v1 = br[4];
                const u32 h0 = f2tf32(v0), h1 = f2tf32(v1);
                const u32 l0 = f2tf32(v0 - __uint_as_float(h0)), l1 = f2tf32(v1 - __uint_as_float(h1));
#pragma unroll
                for (int mt = 0; mt < 2; mt++) {
                    mma_tf32(acc[mt][nt], af[mt], h0, h1);
                    mma_tf32(acc[mt][nt], af[mt], l0, l1);
                }
            }
        }
        // c0, c1: mix 16 mt + g, tokens 8 nt + 2q, + 1; c2, c3: mix 16 mt + g + 8
#pragma unroll
        for (int mt = 0; mt < 2; mt++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int r = 0; r < 4; r++) red[(w * TG + 8 * nt + 2 * q + (r & 1)) * 32 + 16 * mt + g + 8 * (r >> 1)] = acc[mt][nt][r];
        __syncthreads();
        // ---- 3. the warps' partials in warp order ----
        for (int i = threadIdx.x; i < TG * M; i += 256) {
            const int tl = i / M, m = i - tl * M;
            if (t0 + tl < t1) {
                float s = 0.f;
#pragma unroll
                for (int ww = 0; ww < 8; ww++) s += red[(ww * TG + tl) * 32 + m];
                pdot[((i64)(t0 + tl) * nsplit + sp) * M + m] = s;
            }
        }
    }
    // an f16 state that saturated: one flag word for the host (session.rs hc_sat_check)
    if (SK == HC_S_F16 && hsat && __any_sync(0xffffffffu, sat) && lane == 0) atomicOr(hsat, 1);
}
extern "C" __global__ void __launch_bounds__(256, 3) hc_post_mma(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<2>(HC_POST_ARGS);
}
// 8-token groups (the default; `DS4_HC_MMA8=0`: hc_post_mma): half the state and partials in
// shared memory (48.5 KB) and 8 accumulators instead of 16, so four blocks per SM at 64
// registers; twice the block barriers per token. Kernel bench at T 8192 (session 33): 0.515
// against 0.525 ms (y rows), 0.674 against 0.695 (MoE sum).
extern "C" __global__ void __launch_bounds__(256, 4) hc_post_mma8(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<1>(HC_POST_ARGS);
}
// hc_post_mma8 with f16 MoE slot rows (_y: `DS4_EXP_Y16`), on an f16 state (_h: `DS4_HC_S16`;
// S points at u16 values), or both (_hy). Separate entry points so that hc_post_mma8 compiles
// as it did before these existed (tools/gpu/sass_diff.py).
extern "C" __global__ void __launch_bounds__(256, 4) hc_post_mma8_y(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<1, HC_S_F32, true>(HC_POST_ARGS);
}
extern "C" __global__ void __launch_bounds__(256, 4) hc_post_mma8_h(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<1, HC_S_F16, false>(HC_POST_ARGS);
}
extern "C" __global__ void __launch_bounds__(256, 4) hc_post_mma8_hy(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<1, HC_S_F16, true>(HC_POST_ARGS);
}
// hc_post_mma8_h / _hy with the loads a group ahead (PF above; the default, `DS4_HC_PF=0`:
// without): _hp for y rows (ny == 1) or none, _hyp for the MoE sum of f16 slot rows. Kernel
// bench at T 8192 (H100, session 55): 0.460 against 0.555 ms, 0.593 against 0.615.
extern "C" __global__ void __launch_bounds__(256, 4) hc_post_mma8_hp(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<1, HC_S_F16, false, HCPF_ROWS>(HC_POST_ARGS);
}
extern "C" __global__ void __launch_bounds__(256, 4) hc_post_mma8_hyp(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<1, HC_S_F16, true, HCPF_MOE>(HC_POST_ARGS);
}
// hc_post_mma8_hp on f16 y rows (ny == 1: prefill's attention output as out_b writes it), and
// hc_post_mma8_hyp with the shared expert's rows as f16 (its down projection's output), under
// `DS4_DENSE_Y16` (session.rs dense_y16): 8 bytes per 4 columns and token instead of 16.
extern "C" __global__ void __launch_bounds__(256, 4) hc_post_mma8_hpy(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<1, HC_S_F16, false, HCPF_ROWS, true>(HC_POST_ARGS);
}
extern "C" __global__ void __launch_bounds__(256, 4) hc_post_mma8_hyps(HC_POST_PARAMS) {
    PDL_ENTRY;
    hc_post_mma_body<1, HC_S_F16, true, HCPF_MOE, true>(HC_POST_ARGS);
}

// 1/x for the Sinkhorn iterations: the hardware reciprocal plus one Newton step (within an
// ulp of the IEEE quotient, usually equal). The IEEE division is a call the compiler does not
// interleave: with 8 per iteration it made the 20 iterations the finish's critical path.
__device__ __forceinline__ float rcp_nr(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return fmaf(r, fmaf(-x, r, 1.f), r);
}

// One Sinkhorn normalization of the NT x NT matrix c: ROWS, every row divided by (its sum +
// eps), else every column; each sum in index order.
template <int NT, bool ROWS>
__device__ __forceinline__ void sk_normalize(float (&c)[MAXN][MAXN], float hc_eps) {
    float inv[NT];
#pragma unroll
    for (int i = 0; i < NT; i++) {
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < NT; j++) sum += ROWS ? c[i][j] : c[j][i];
        inv[i] = rcp_nr(sum + hc_eps);
    }
#pragma unroll
    for (int a = 0; a < NT; a++)
#pragma unroll
        for (int b = 0; b < NT; b++) c[a][b] *= ROWS ? inv[a] : inv[b];
}

// The Sinkhorn combine matrix (MODEL.md §2.4.2) in registers, from the logits in c: row
// softmax plus eps, then alternating column and row normalizations, every sum in index order
// (the CPU's arithmetic). NT = N at compile time: no per-row branches, so the NT independent
// row (column) chains of an iteration interleave; with N at run time the branches serialized
// them and the 20 iterations took ~8 us on the finishing block's critical path.
template <int NT>
__device__ __forceinline__ void sinkhorn_nt(float (&c)[MAXN][MAXN], int iters, float hc_eps) {
#pragma unroll
    for (int a = 0; a < NT; a++) {
        float mx = -INF_F;
#pragma unroll
        for (int b = 0; b < NT; b++) mx = fmaxf(mx, c[a][b]);
        float sum = 0.f;
#pragma unroll
        for (int b = 0; b < NT; b++) {
            c[a][b] = expf(c[a][b] - mx);
            sum += c[a][b];
        }
        float inv = 1.f / sum;
#pragma unroll
        for (int b = 0; b < NT; b++) c[a][b] = c[a][b] * inv + hc_eps;
    }
    for (int it = 0; it < iters; it++) {
        if (it > 0) sk_normalize<NT, true>(c, hc_eps);
        sk_normalize<NT, false>(c, hc_eps);
    }
}

// sinkhorn_nt for N at run time
__device__ __forceinline__ void sinkhorn_n(float (&c)[MAXN][MAXN], int N, int iters, float hc_eps) {
    switch (N) {
        case 1: sinkhorn_nt<1>(c, iters, hc_eps); break;
        case 2: sinkhorn_nt<2>(c, iters, hc_eps); break;
        case 3: sinkhorn_nt<3>(c, iters, hc_eps); break;
        default: sinkhorn_nt<4>(c, iters, hc_eps); break;  // N <= MAXN (checked by the host)
    }
}
// The Sinkhorn of the N x N logits in c (replicated in every lane of a warp), lane a*N+b
// storing C[a][b] at out[a*N+b] (selected by unrolled compares: no local-memory indexing).
__device__ __forceinline__ void sinkhorn_warp_store(float (&c)[MAXN][MAXN], int N, int iters, float hc_eps, int lane, float* out) {
    sinkhorn_n(c, N, iters, hc_eps);
    float mine = 0.f;
#pragma unroll
    for (int a = 0; a < MAXN; a++)
#pragma unroll
        for (int b = 0; b < MAXN; b++)
            if (a < N && b < N && lane == a * N + b) mine = c[a][b];
    if (lane < N * N) out[lane] = mine;
}

// A Sinkhorn deferred by hc_step (z_out) to a later launch of the same sublayer (attn_prep on
// the attention side, router_dec on the FFN side): comb [n][n] from the logits z, by one warp
// of one extra block. The 20 dependent iterations were the tail of hc_step's finishing block
// (~4-6 us per step); the extra block runs next to that launch's own blocks, and comb is first
// read by the next hc_step. (As a job of matvec_grouped it made ptxas spill the matvec paths:
// frame 8 -> 72 bytes.)
struct HcSk {
    const float* z;  // nullptr: none
    float* comb;
    int n, iters;
    float eps;
    int pad;
};
// The logits from logit(k) (k = a*N + b), then sinkhorn_warp_store.
template <typename F>
__device__ __forceinline__ void sinkhorn_warp_from(F logit, int N, int iters, float hc_eps, float* out) {
    float c[MAXN][MAXN];
#pragma unroll
    for (int a = 0; a < MAXN; a++)
#pragma unroll
        for (int b = 0; b < MAXN; b++) c[a][b] = (a < N && b < N) ? logit(a * N + b) : 0.f;
    sinkhorn_warp_store(c, N, iters, hc_eps, threadIdx.x & 31, out);
}
__device__ void hc_sk_warp(const HcSk& sk) {
    sinkhorn_warp_from([&](int k) { return sk.z[k]; }, sk.n, sk.iters, sk.eps, sk.comb);
}

// Finish hc_pre for token t: mix, pre/post/Sinkhorn (M == N*(N+2)) or head pre only
// (M == N), collapse the streams and apply the following weighted RMSNorm; optionally also
// the int8 blocks of the normalized row (q8s/q8d, the layout of quant_q8, D % 32 == 0).
// Called by a whole block (blockDim a multiple of 32, >= 64), dynamic smem xsh of (N + 1) * D
// floats (session.rs hc_fin_smem). The streams and norm weights are staged into shared memory by
// cp.async, issued before the partials are read, so both are one round trip (the register
// copies they replace spilled in hc_step: a store to local memory right after each load waited
// for the load). The partials are reduced by one warp per mix (lane-strided, then a
// butterfly), every thread derives the N pre weights itself, and warp 0 runs the Sinkhorn
// iterations (in registers; with z_out only their logits, for a later launch's hc_sk_warp)
// while the other warps write the normalized row, synchronizing among themselves only (no
// block-wide barrier after the first). The streams bypass L1 (cp.async.cg, __ldcg): in hc_step
// the last block reads what the other blocks of the same grid wrote.
// pdot layout: token t's partial of mix m from split s at t*M*nsplit + m*pm + s*ps: hc_step
// writes [t][m][split] (pm = nsplit, ps = 1: the finishing block's loads coalesce), hc_post_mix
// [t][split][m] (pm = 1, ps = M: its warps store 24 consecutive floats).
// sb = {scale[0..3), base[0..M)} into shared memory (threads 0 .. M+2; published by the
// caller's next barrier).
__device__ __forceinline__ void hc_load_sb(float* sb, const float* __restrict__ scale, const float* __restrict__ base, int M) {
    if ((int)threadIdx.x < 3 + M) sb[threadIdx.x] = threadIdx.x < 3 ? scale[threadIdx.x] : base[threadIdx.x - 3];
}
// hc_pre's pre weight of stream b from its reduced mix (sb: see hc_mix_out).
__device__ __forceinline__ float hc_pre_w(int b, float mix, float rs, const float* sb, float hc_eps) {
    return sigmoidf_((mix * rs) * sb[0] + sb[3 + b]) + hc_eps;
}
// The outputs of hc_pre's post and comb mixes m (post: [N, 2N), comb: [2N, N(N+2))) from the
// reduced mix, rs, and sb = {scale[0..3), base[0..M)}: post = 2 sigmoid, a comb logit affine.
__device__ __forceinline__ float hc_mix_out(int m, int N, float mix, float rs, const float* sb) {
    return m < 2 * N ? 2.f * sigmoidf_((mix * rs) * sb[1] + sb[3 + m]) : (mix * rs) * sb[2] + sb[3 + m];
}
// One warp: post, then the comb logits (z_out) or, without z_out, the Sinkhorn into comb_out.
// Every lane holds the whole N x N matrix in registers (no shuffles: the row and column sums of
// an iteration are independent chains) and sums in index order (the CPU's serial loops).
__device__ __forceinline__ void hc_post_comb_warp(const float* mix_s, float rs, const float* sb, int N, int t, float* post_out,
                                                  float* z_out, float* comb_out, int iters, float hc_eps, int lane) {
    if (lane < N) post_out[t * N + lane] = hc_mix_out(N + lane, N, mix_s[N + lane], rs, sb);
    if (z_out) {
        if (lane < N * N) z_out[t * N * N + lane] = hc_mix_out(2 * N + lane, N, mix_s[2 * N + lane], rs, sb);
        return;
    }
    float c[MAXN][MAXN];
#pragma unroll
    for (int i = 0; i < MAXN; i++)
#pragma unroll
        for (int j = 0; j < MAXN; j++) c[i][j] = (i < N && j < N) ? hc_mix_out(2 * N + i * N + j, N, mix_s[2 * N + i * N + j], rs, sb) : 0.f;
    sinkhorn_warp_store(c, N, iters, hc_eps, lane, comb_out + t * N * N);
}
// a / n as a product when n is a power of two (the same value: exact scaling), else the
// division (a 64-bit division is a called routine: ~0.1-0.2 us on a critical path)
__device__ __forceinline__ double div_n(double a, int n) {
    return (n & (n - 1)) == 0 ? a * __longlong_as_double((long long)(1023 - (31 - __clz(n))) << 52) : a / (double)n;
}
// hc_finish's h16flags (session.rs HcF16): h16b in gemm_qr's K order; no f32 row
#define HCF_PERM_B 1
#define HCF_NO_F32 2
#define HCF_NORM_GLOBAL 4  // the norm weights read where used, not staged (hc_finish: smem N * D floats)
#define HCF_SK_LATER 8     // hc_finish: comb gets the logits, hc_sk_rows runs the Sinkhorn afterwards
#define HCF_S_F16 16       // hc_finish_h: the state is stored as f16 (HC_S_F16)
// SK (HC_S_*): the state's storage. An f16 state is staged as it is stored (N * D halves,
// D % 8 == 0: checked by the host) and the collapsed row goes to D floats after it; the
// arithmetic on each value is the f32 path's (the f16 values widen exactly).
template <int SK = HC_S_F32>
__device__ void hc_finish_tok(int t, const float* S, const float* pdot, int pm, int ps, const double* pss, int nsplit, int M, int D,
                              int N, const float* __restrict__ scale, const float* __restrict__ base,
                              const float* __restrict__ norm_w, float eps, int iters, float hc_eps, float* post_out,
                              float* comb_out, float* z_out, float* xn_out, signed char* q8s, float2* q8d, float* xsh,
                              u64* tr = nullptr, u16* h16a = nullptr, u16* h16b = nullptr, int h16flags = 0,
                              bool norm_smem = true) {
    __shared__ double shd[32];
    __shared__ float mix_s[MAXM];
    __shared__ float rs_s;
    __shared__ float sb_s[3 + MAXM];  // scale[0..3) then base[0..M)
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    // the small parameters are fetched alongside the partials (published by the barrier below)
    hc_load_sb(sb_s, scale, base, M);
    // stage: ssh[s*D + d] = stream s (final: the ticket's fence ordered every block's writes),
    // nsh = norm_w; the collapse then writes x over stream 0 (each d by the thread that read it)
    float* ssh = xsh;
    const u16* s16 = (const u16*)xsh;
    float* xr = SK ? xsh + N * D / 2 : xsh;  // the collapsed row (f32: over stream 0)
    float* nsh = SK ? xr + D : xsh + N * D;
    const float* St = S + (i64)t * N * D;
    if (SK) {  // (a separate launch after S was written)
        const u16* Sh = (const u16*)S + (i64)t * N * D;
        for (int i = threadIdx.x; i < N * D / 8; i += blockDim.x) cp_async16(smem_u32(s16 + 8 * i), Sh + 8 * i, 16);
    } else if ((D & 3) == 0) {  // always in hc_step (D % 32 == 0): S 16-byte aligned, L2 only
        for (int i = threadIdx.x; i < N * D / 4; i += blockDim.x) cp_async16(smem_u32(ssh + 4 * i), St + 4 * i, 16);
    } else {  // hc_finish only (a separate launch after S was written: L1 is safe)
        for (int i = threadIdx.x; i < N * D; i += blockDim.x) cp_async4(smem_u32(ssh + i), St + i, 4);
    }
    if (norm_smem)
        for (int i = threadIdx.x; i < D; i += blockDim.x) cp_async4(smem_u32(nsh + i), norm_w + i, 4);
    cp_commit();
    // the norm weight of column d: staged, or read where it is used (hc_finish: N * D floats of
    // shared memory per block instead of N + 1, three blocks per SM instead of two)
    auto nwt = [&](int d) { return norm_smem ? nsh[d] : __ldg(norm_w + d); };
    // the partials: every load issued before any sum (one memory round trip when nw > M)
    for (int m = w; m <= M; m += nw) {
        if (m < M) {
            float a = 0.f;
            const float* pp = pdot + (i64)t * M * nsplit + m * pm;
            // ps == 1: written by other blocks of this launch (hc_step), so read from L2; else
            // by an earlier launch, and the warps' strided loads share L1 lines
#pragma unroll 4
            for (int s = lane; s < nsplit; s += 32) a += ps == 1 ? __ldcg(pp + s) : pp[(i64)s * ps];
            a = warp_sum(a);
            if (lane == 0) mix_s[m] = a;
        } else {
            double a = 0.0;
#pragma unroll 4
            for (int s = lane; s < nsplit; s += 32) a += __ldcg(pss + (i64)t * nsplit + s);
            a = warp_sum_d(a);
            if (lane == 0) rs_s = 1.f / sqrtf((float)div_n(a, N * D) + eps);
        }
    }
    cp_wait<0>();
    __syncthreads();
    if (tr && threadIdx.x == 0) tr[0] = gtimer();
    float rs = rs_s;
    const bool sink = M > N;
    // warp 0 keeps out of the collapse only while it runs the Sinkhorn here
    const int w0 = sink && !z_out ? 1 : 0;
    if (sink && w == 0) {
        // post and the Sinkhorn iterations (they need only the mixes; with z_out only their
        // logits), overlapped with the other warps' collapse
        hc_post_comb_warp(mix_s, rs, sb_s, N, t, post_out, z_out, comb_out, iters, hc_eps, lane);
        if (tr && lane == 0) tr[1] = gtimer();
        if (!z_out) return;  // the other warps synchronize among themselves (named barrier 1) from here on
    }
    float pre[MAXN];
#pragma unroll
    for (int a = 0; a < MAXN; a++) {
        pre[a] = a < N ? hc_pre_w(a, mix_s[a], rs, sb_s, hc_eps) : 0.f;
    }
    // the collapse by the warps not running the Sinkhorn (all of them with z_out or without one)
    const int first = (int)threadIdx.x - 32 * w0, stride = (int)blockDim.x - 32 * w0;
    int gw = w - w0, ngw = nw - w0;
    double ss = 0.0;
#pragma unroll 4
    auto sv = [&](int s, int d) { return SK ? h2f(s16[s * D + d]) : ssh[s * D + d]; };
    for (int d = first; d < D; d += stride) {
        float x = pre[0] * sv(0, d);
#pragma unroll
        for (int s = 1; s < MAXN; s++)
            if (s < N) x += pre[s] * sv(s, d);
        xr[d] = x;
        ss += (double)x * (double)x;
    }
    // sum over the collapsing warps (a named barrier: warp 0 may still be in the Sinkhorn); the
    // barrier also publishes the collapsed row to the group
    ss = warp_sum_d(ss);
    if (lane == 0) shd[gw] = ss;
    if (tr && gw == 0 && lane == 0) tr[2] = gtimer();
    asm volatile("bar.sync 1, %0;" ::"r"(ngw * 32) : "memory");
    if (tr && gw == 0 && lane == 0) tr[3] = gtimer();
    // (a butterfly over the warps' sums: every thread summing all 32 in turn was ~500 issue
    // slots per scheduler in this one-block phase)
    const double tss = warp_sum_d(lane < ngw ? shd[lane] : 0.0);
    float rsn = 1.f / sqrtf((float)div_n(tss, D) + eps);
    float* xo = xn_out + (i64)t * D;
    if (q8s) {
        // one warp per 32-value block (D % 32 == 0): the values quant_q8 would produce
        // (two blocks per warp and step, see q8_block2)
        int nb = D >> 5;
        for (int b = gw; b < nb; b += 2 * ngw) {
            int b1 = b + ngw < nb ? b + ngw : -1;
            int d0 = b * 32 + lane, d1 = (b1 < 0 ? b : b1) * 32 + lane;
            float v0 = (xr[d0] * rsn) * nwt(d0), v1 = (xr[d1] * rsn) * nwt(d1);
            xo[d0] = v0;
            if (b1 >= 0) xo[d1] = v1;
            q8_block2(v0, v1, lane, b, b1, q8s + (i64)t * D, q8d + (i64)t * (D >> 5));
        }
        if (tr && gw == 0 && lane == 0) tr[4] = gtimer();
        return;
    }
    if (h16a || h16b) {
        // prefill (hc_finish with DS4_HC_F16): also the f16 copies x_to_f16 makes of the row
        // (packed t x D; h16b in gemm_qr's K order when h16flags & HCF_PERM_B), from the same
        // f32 values and by the same conversion (pack_h2 on the column pairs 2p, 2p+1), so the
        // same bits; a column pair per thread (D % 32 == 0: checked by the host). HCF_NO_F32:
        // the f32 row is not written (every reader of it takes a copy; DS4_FFN_XN16)
        const bool permb = h16flags & HCF_PERM_B, w32 = !(h16flags & HCF_NO_F32);
        u32* ha = h16a ? (u32*)(h16a + (i64)t * D) : nullptr;
        u32* hb = h16b ? (u32*)(h16b + (i64)t * D) : nullptr;
        for (int p = first; p < (D >> 1); p += stride) {
            int d = 2 * p;
            float v0 = (xr[d] * rsn) * nwt(d), v1 = (xr[d + 1] * rsn) * nwt(d + 1);
            if (w32) *(float2*)(xo + d) = make_float2(v0, v1);
            u32 pk = pack_h2(v0, v1);
            if (ha) ha[p] = pk;
            if (hb) hb[permb ? qr_kpos(d) >> 1 : p] = pk;
        }
        return;
    }
    for (int d = first; d < D; d += stride) xo[d] = (xr[d] * rsn) * nwt(d);
}

// grid T, dynamic smem (N + 1) * D floats, N * D without the staged norm weights, N * D / 2 + D
// (+ D) for an f16 state (session.rs hc_finish_smem; the prefill path, decode uses hc_step).
// h16a / h16b (may be null): f16 copies of xn (see hc_finish_tok), h16flags: HCF_*.
// hc_finish reads an f32 state; hc_finish_h an f16 one (HCF_S_F16 in h16flags).
// Two entry points, not one with a branch on the flag: in one kernel the three instantiations
// grew the f32 path's code from 42 to 64 registers and 3.6K to 9.8K instructions (sass_diff).
// The parameters of hc_finish and hc_finish_h (session.rs launch_hc_finish_sk).
#define HC_FINISH_PARAMS                                                                                      \
    const float* __restrict__ S, const float* __restrict__ pdot, const double* __restrict__ pss, int nsplit,  \
        int M, int D, int N, const float* __restrict__ scale, const float* __restrict__ base,                 \
        const float* __restrict__ norm_w, float eps, int iters, float hc_eps, float* post_out,                \
        float* comb_out, float* xn_out, u16* h16a, u16* h16b, int h16flags
#define HC_FINISH_ARGS S, pdot, pss, nsplit, M, D, N, scale, base, norm_w, eps, iters, hc_eps, post_out, comb_out, xn_out, h16a, h16b, h16flags
template <int SK>
__device__ __forceinline__ void hc_finish_body(const float* S, const float* pdot, const double* pss, int nsplit, int M, int D,
                                               int N, const float* scale, const float* base, const float* norm_w, float eps,
                                               int iters, float hc_eps, float* post_out, float* comb_out, float* xn_out,
                                               u16* h16a, u16* h16b, int h16flags, float* xsh) {
    // HCF_SK_LATER: the comb logits go to comb_out (as z_out) and warp 0 joins the collapse
    hc_finish_tok<SK>(blockIdx.x, S, pdot, 1, M, pss, nsplit, M, D, N, scale, base, norm_w, eps, iters, hc_eps, post_out,
                      comb_out, (h16flags & HCF_SK_LATER) ? comb_out : nullptr, xn_out, nullptr, nullptr, xsh, nullptr, h16a,
                      h16b, h16flags, !(h16flags & HCF_NORM_GLOBAL));
}
extern "C" __global__ void __launch_bounds__(1024) hc_finish(HC_FINISH_PARAMS) {
    PDL_ENTRY;
    extern __shared__ float xsh[];
    hc_finish_body<HC_S_F32>(HC_FINISH_ARGS, xsh);
}
extern "C" __global__ void __launch_bounds__(1024) hc_finish_h(HC_FINISH_PARAMS) {
    PDL_ENTRY;
    if (!(h16flags & HCF_S_F16)) __trap();  // (the host passes it with this entry point)
    extern __shared__ float xsh[];
    hc_finish_body<HC_S_F16>(HC_FINISH_ARGS, xsh);
}

// The Sinkhorn of each token's comb logits (hc_finish with HCF_SK_LATER), in place: a thread
// per token, sinkhorn_nt as the warp form runs it (the same bits). Why: in hc_finish the
// Sinkhorn warp's 20 dependent iterations could outlast the collapse and hold the block (three
// per SM) resident; measured it did so only a little: 0.327 -> 0.316 ms per 8K-token finish
// with this launch included (kernel bench hcp, session 33).
extern "C" __global__ void __launch_bounds__(128) hc_sk_rows(float* comb, int T, int N, int iters, float hc_eps) {
    PDL_ENTRY;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    float* ct = comb + (i64)t * N * N;
    float c[MAXN][MAXN];
#pragma unroll
    for (int i = 0; i < MAXN; i++)
#pragma unroll
        for (int j = 0; j < MAXN; j++) c[i][j] = (i < N && j < N) ? ct[i * N + j] : 0.f;
    sinkhorn_n(c, N, iters, hc_eps);
#pragma unroll
    for (int i = 0; i < MAXN; i++)
#pragma unroll
        for (int j = 0; j < MAXN; j++)
            if (i < N && j < N) ct[i * N + j] = c[i][j];
}

// Decode (small T): hc_post_mix and hc_finish in one launch. grid (D/32, T), 1024 threads: a
// block owns 32 columns (one per lane) and its warps split the M mixes (warp w: mix w), so
// decode's 786 KB of fn is read by 128K threads instead of 4K (hc_post_mix with T = 1 was
// latency bound at ~24 us), and the finishing block has a thread per 4 columns: its phases
// are each about one memory round trip. Every warp recomputes the column's new state (L1 hits);
// warp 0 stores it after the block's reads. The partials are butterfly sums (fixed order).
// The last block to finish a token (a per-token ticket after __threadfence: the usual
// "last block" reduction) runs hc_finish_tok for it and resets the ticket for the next graph
// replay. Which block is last varies, the arithmetic does not: deterministic.
struct HcStepArgs {
    float* S;
    const float* y;       // nullptr: no hc_post (the first step after the embedding)
    const float* post;    // [T][N] and [T][N][N] of the previous finish (read before any write)
    const float* comb;
    const u16* fn;        // [M][N*D] f16 mixing weights of the next hc_pre
    float* pdot;          // [T][M][nsplit]
    double* pss;          // [T][nsplit]
    int* ticket;          // [T], zero between launches
    const float* scale;
    const float* base;
    const float* norm_w;
    float* post_out;
    float* comb_out;
    float* xn_out;
    signed char* q8s;     // optional int8 copy of xn_out (nullptr: none)
    float2* q8d;
    float* z_out;         // nullptr: the finishing block runs the Sinkhorn; else its logits (hc_sk_warp)
    int M, D, N, ny, iters;
    float eps, hc_eps;
    u64* trace;           // kernel bench only (nullptr: off): phase times, see hc_bench
    u64* gs;              // hc_step_gs: grid-barrier counters [T] (only grow)
};

// hc_step's first phase for the block's 32 columns (d = column of this lane, ok = d < D):
// the new state nv (hc_post of y into the old state; every warp computes it, L1 hits) and
// this block's partial of every mix (warp w: mixes w, w + nw, ...) into pdot [t][m][nsplit].
// Its loads in two parts: hc_mix_pre (the warp's first mix weights, the old state, the previous
// finish's post and comb: none of them written by the launch before this one in a decode
// step, see hc_step_gs) and hc_step_mix_y (y, then the arithmetic).
// device-only: one thread's loads of hc_mix_pre
struct HcMixPre {
    float fv[MAXN], sv[MAXN], pv[MAXN], cv[MAXN][MAXN];
};
__device__ __forceinline__ void hc_mix_pre(const HcStepArgs& a, int t, int d, bool ok, HcMixPre& p) {
    int w = threadIdx.x >> 5;
    int D = a.D, N = a.N, M = a.M;
    i64 fstride = (i64)N * D;
    const float* St = a.S + (i64)t * N * D;
    // this warp's (first) mix weights: independent of the state, so loaded first
#pragma unroll
    for (int b = 0; b < MAXN; b++) p.fv[b] = (ok && w < M && b < N) ? h2f(a.fn[(i64)w * fstride + (i64)b * D + d]) : 0.f;
    if (ok) {
#pragma unroll
        for (int s = 0; s < MAXN; s++) p.sv[s] = s < N ? St[(i64)s * D + d] : 0.f;
        if (a.y) {
            // post and comb loaded (predicated) before any use: behind the `b < N` branches
            // each b's loads waited for the previous b's sums (SASS: 4 dependent L2 round trips)
#pragma unroll
            for (int b = 0; b < MAXN; b++) p.pv[b] = b < N ? a.post[t * N + b] : 0.f;
#pragma unroll
            for (int s = 0; s < MAXN; s++)
#pragma unroll
                for (int b = 0; b < MAXN; b++) p.cv[s][b] = (s < N && b < N) ? a.comb[t * N * N + s * N + b] : 0.f;
        }
    }
}
__device__ __forceinline__ void hc_step_mix_y(const HcStepArgs& a, int t, int sp, int nsplit, int d, bool ok, const HcMixPre& p,
                                              float (&nv)[MAXN]) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int D = a.D, N = a.N, M = a.M;
    i64 fstride = (i64)N * D;
    const float(&fv)[MAXN] = p.fv;
#pragma unroll
    for (int b = 0; b < MAXN; b++) nv[b] = 0.f;
    if (ok) {
        const float(&sv)[MAXN] = p.sv;
        if (a.y) {
            const float(&pv)[MAXN] = p.pv;
            const float(&cv)[MAXN][MAXN] = p.cv;
            float yd = sum_strided(a.y + (i64)t * a.ny * D + d, D, a.ny);
#pragma unroll
            for (int b = 0; b < MAXN; b++) {
                if (b < N) {
                    float acc = __fmul_rn(pv[b], yd);
#pragma unroll
                    for (int s = 0; s < MAXN; s++)
                        if (s < N) acc = hc_term(acc, cv[s][b], sv[s]);
                    nv[b] = acc;
                }
            }
        } else {
#pragma unroll
            for (int b = 0; b < MAXN; b++) nv[b] = sv[b];
        }
    }
    for (int m = w; m < M; m += nw) {
        float dot = 0.f;
        if (ok) {
#pragma unroll
            for (int b = 0; b < MAXN; b++)
                if (b < N) dot += (m == w ? fv[b] : h2f(a.fn[(i64)m * fstride + (i64)b * D + d])) * nv[b];
        }
        dot = warp_sum(dot);
        if (lane == 0) a.pdot[((i64)t * M + m) * nsplit + sp] = dot;
    }
}
__device__ __forceinline__ void hc_step_mix(const HcStepArgs& a, int t, int sp, int nsplit, int d, bool ok, float (&nv)[MAXN]) {
    HcMixPre p;
    hc_mix_pre(a, t, d, ok, p);
    hc_step_mix_y(a, t, sp, nsplit, d, ok, p, nv);
}

extern "C" __global__ void __launch_bounds__(1024) hc_step(HcStepArgs a) {
    PDL_ENTRY;
    extern __shared__ float xsh[];
    __shared__ int last_s;
    int sp = blockIdx.x, nsplit = gridDim.x, t = blockIdx.y;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int D = a.D, N = a.N, M = a.M;
    int d = sp * 32 + lane;
    bool ok = d < D;
    if (a.trace && threadIdx.x == 0) a.trace[3 * sp] = gtimer();
    float* St = a.S + (i64)t * N * D;
    float nv[MAXN];
    hc_step_mix(a, t, sp, nsplit, d, ok, nv);
    __syncthreads();  // every warp has read the old state
    if (a.trace && threadIdx.x == 0) a.trace[3 * sp + 1] = gtimer();
    if (w == 0) {
        double ss = 0.0;
        if (ok) {
#pragma unroll
            for (int b = 0; b < MAXN; b++)
                if (b < N) {
                    if (a.y) St[(i64)b * D + d] = nv[b];
                    ss += (double)nv[b] * (double)nv[b];
                }
        }
        ss = warp_sum_d(ss);
        if (lane == 0) a.pss[(i64)t * nsplit + sp] = ss;
    }
    // the block's writes are ordered before thread 0's fence by the barrier, and the fence is
    // cumulative: one fence per block instead of one per thread
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        int k = atomicAdd(a.ticket + t, 1);
        last_s = k == nsplit - 1;
        if (last_s) {
            __threadfence();
            a.ticket[t] = 0;
        }
    }
    __syncthreads();
    if (a.trace && threadIdx.x == 0) a.trace[3 * sp + 2] = gtimer();
    if (!last_s) return;
    hc_finish_tok(t, a.S, a.pdot, nsplit, 1, a.pss, nsplit, M, D, N, a.scale, a.base, a.norm_w, a.eps, a.iters, a.hc_eps, a.post_out,
                  a.comb_out, a.z_out, a.xn_out, a.q8s, a.q8d, xsh, a.trace ? a.trace + 3 * nsplit : nullptr);
}

// hc_step with the finish spread over the grid (decode; `DS4_HC_GS=0`: hc_step). hc_step's
// last block alone staged the 4 x D state, collapsed it, normalized and quantized the row: ~6 us
// of its ~10.7 on one SM (kbench hc trace). Here every block keeps its 32 columns' new state
// in registers, stores the partials of the mixes and of the streams' Gram matrix
// G[i][j] = sum_d nv_i nv_j (double; i <= j), and waits at a grid barrier (launched
// cooperatively: every block resident, see session.rs hc_gs_fits). Then each block reduces the
// partials it needs itself (the same fixed order in every block: identical values), and
// finishes its own columns: pre from the mixes, the row's sum of squares as pre^T G pre (no
// second pass over the collapsed row), x, xn and its one int8 block. rs (the mixes' RMS over
// the N x D state) is the trace of G. With the Sinkhorn deferred, blocks 1..M-N also reduce
// one post or comb mix each and write its output (in block 0 the 20 extra reductions were a
// second round trip); otherwise block 0 does them all and runs the Sinkhorn. The barrier:
// fence, a counter increment without a return (the target was read at entry), polling. The
// counter [T] only grows (u64; a launch waits for the next multiple of nsplit), so nothing
// resets it between graph replays. kbench hc (session 15): 7.9-8.3 us against hc_step's 9.2-10.9.
__device__ __forceinline__ u64 ld_acquire_u64(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
#define HC_MAXG (MAXN * (MAXN + 1) / 2)
static_assert(MAXN * (MAXN + 1) / 2 + MAXN < 32, "hc_step_gs: a warp per pre mix and Gram entry, one more for post/comb");
// Launched with PDL (a layer's step; DS4_HC_PDL=0: not; session.rs hc_step_y) it may start while
// its predecessor (the layer's out_b or down matvec, or combine, which writes y) still runs: everything it
// reads before PDL_WAIT was written two or more launches back (the weights, the state from the
// previous hc_step, the previous finish's post and comb: comb by attn_prep's or router_dec's
// Sinkhorn block at the latest, three launches back), and it writes nothing before it. The
// first step after the embedding (y == nullptr), whose state the predecessor writes, waits
// first (the session never launches it with PDL anyway).
extern "C" __global__ void __launch_bounds__(1024) hc_step_gs(HcStepArgs a) {
    if (!a.y) PDL_WAIT;
    __shared__ float mix_s[MAXM];
    __shared__ double g_s[HC_MAXG];
    __shared__ float sb_s[3 + MAXM];  // scale[0..3) then base[0..M)
    int sp = blockIdx.x, nsplit = gridDim.x, t = blockIdx.y;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int D = a.D, N = a.N, M = a.M, G = N * (N + 1) / 2;
    int d = sp * 32 + lane;
    bool ok = d < D;
    if (a.trace && threadIdx.x == 0) a.trace[3 * sp] = gtimer();
    // parameters of the finish, independent of the state: fetched now
    hc_load_sb(sb_s, a.scale, a.base, M);
    float nwd = (w == 0 && ok) ? a.norm_w[d] : 0.f;
    // this launch's barrier target: the counter reads c in [base, base + nsplit) here (the
    // previous launch left it at base, a multiple of nsplit; only this launch's blocks move
    // it on), so the arrival needs no returning atomic
    u64 c0 = threadIdx.x == 0 ? ld_acquire_u64(a.gs + t) : 0;
    float* St = a.S + (i64)t * N * D;
    float nv[MAXN];
    HcMixPre pre;
    hc_mix_pre(a, t, d, ok, pre);
    PDL_WAIT;
    PDL_TRIGGER;
    hc_step_mix_y(a, t, sp, nsplit, d, ok, pre, nv);
    __syncthreads();  // every warp has read the old state
    if (a.trace && threadIdx.x == 0) a.trace[3 * sp + 1] = gtimer();
    if (w == 0 && a.y && ok) {
#pragma unroll
        for (int b = 0; b < MAXN; b++)
            if (b < N) St[(i64)b * D + d] = nv[b];
    }
    if (w < G) {
        // Gram entry w = (i, j), i <= j, in row order
        int i = 0, k = w;
        while (k >= N - i) { k -= N - i; i++; }
        int j = i + k;
        float vi = 0.f, vj = 0.f;
#pragma unroll
        for (int b = 0; b < MAXN; b++) {
            if (b == i) vi = nv[b];
            if (b == j) vj = nv[b];
        }
        double g = ok ? (double)vi * (double)vj : 0.0;
        g = warp_sum_d(g);
        if (lane == 0) a.pss[((i64)t * G + w) * nsplit + sp] = g;
    }
    // grid barrier: the block's writes are ordered before thread 0's fence by the barrier
    __syncthreads();
    if (threadIdx.x == 0) {
        const u64 target = (c0 / (u64)nsplit + 1) * (u64)nsplit;
        __threadfence();
        asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(a.gs + t) : "memory");
        while ((long long)(ld_acquire_u64(a.gs + t) - target) < 0) {
        }
    }
    __syncthreads();
    if (a.trace && threadIdx.x == 0) a.trace[3 * sp + 2] = gtimer();
    // the partials: the N pre mixes and G (every block, warp w: item w, the same order
    // everywhere); the post and comb mixes one per block (1 + m - N: blocks 1..M-N, warp
    // ncom) when the Sinkhorn is deferred, else all in block 0 (two per spare warp, 16 lanes
    // each). Every load is issued before any sum (one round trip).
    const int ncom = N + G;
    const bool spread = a.z_out && nsplit > M - N;
    const int xm = spread && sp >= 1 && sp <= M - N ? N + sp - 1 : -1;  // this block's extra mix
    if (w < ncom || (w == ncom && xm >= 0)) {
        if (w < N || w == ncom) {
            const int m = w < N ? w : xm;
            float s = 0.f;
            const float* pp = a.pdot + ((i64)t * M + m) * nsplit;
#pragma unroll 4
            for (int q = lane; q < nsplit; q += 32) s += __ldcg(pp + q);
            s = warp_sum(s);
            if (lane == 0) mix_s[m] = s;
        } else {
            double s = 0.0;
            const double* pp = a.pss + ((i64)t * G + (w - N)) * nsplit;
#pragma unroll 4
            for (int q = lane; q < nsplit; q += 32) s += __ldcg(pp + q);
            s = warp_sum_d(s);
            if (lane == 0) g_s[w - N] = s;
        }
    } else if (sp == 0 && !spread) {
        const int hl = lane & 15;
        for (int b0 = N + 2 * (w - ncom); b0 < M; b0 += 2 * (nw - ncom)) {
            int m = b0 + (lane >> 4);
            float s = 0.f;
            if (m < M) {
                const float* pp = a.pdot + ((i64)t * M + m) * nsplit;
#pragma unroll 4
                for (int q = hl; q < nsplit; q += 16) s += __ldcg(pp + q);
            }
#pragma unroll
            for (int o = 8; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (hl == 0 && m < M) mix_s[m] = s;
        }
    }
    __syncthreads();
    // G[i][j] for i <= j at g_s[i * N - i * (i - 1) / 2 + (j - i)]
    auto gij = [&](int i, int j) { return i <= j ? g_s[i * N - i * (i - 1) / 2 + (j - i)] : g_s[j * N - j * (j - 1) / 2 + (i - j)]; };
    double tr = 0.0;
    for (int b = 0; b < N; b++) tr += gij(b, b);
    float rs = 1.f / sqrtf((float)div_n(tr, N * D) + a.eps);
    if (w == 0) {
        float pre[MAXN];
#pragma unroll
        for (int b = 0; b < MAXN; b++) pre[b] = b < N ? hc_pre_w(b, mix_s[b], rs, sb_s, a.hc_eps) : 0.f;
        double ss = 0.0;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) ss += (double)pre[i] * (double)pre[j] * gij(i, j);
        float rsn = 1.f / sqrtf((float)div_n(ss, D) + a.eps);
        // the collapse as hc_finish_tok computes it
        float x = pre[0] * nv[0];
#pragma unroll
        for (int s = 1; s < MAXN; s++)
            if (s < N) x += pre[s] * nv[s];
        float v = (x * rsn) * nwd;
        if (ok) a.xn_out[(i64)t * D + d] = v;
        if (a.q8s) q8_block(v, lane, sp, a.q8s + (i64)t * D, a.q8d + (i64)t * (D >> 5));
        if (a.trace && lane == 0 && sp == 0) a.trace[3 * nsplit] = gtimer();
    } else if (w == 1 && xm >= 0 && lane == 0) {
        // this block's post or comb logit
        float v = hc_mix_out(xm, N, mix_s[xm], rs, sb_s);
        if (xm < 2 * N) a.post_out[t * N + xm - N] = v;
        else a.z_out[t * N * N + xm - 2 * N] = v;
    } else if (w == 1 && sp == 0 && M > N && !spread) {
        hc_post_comb_warp(mix_s, rs, sb_s, N, t, a.post_out, a.z_out, a.comb_out, a.iters, a.hc_eps, lane);
    }
}

// Rotate interleaved pairs of the last R values of v (shared memory) at position pos.
__device__ void rope_tail_smem(float* v, int n, int R, int pos, const float* omega, float sign) {
    int base = n - R;
    for (int k = threadIdx.x; k < R / 2; k += blockDim.x) {
        float th = (float)pos * omega[k];
        float c = cosf(th), s = sign * sinf(th);
        float a = v[base + 2 * k], b = v[base + 2 * k + 1];
        v[base + 2 * k] = a * c - b * s;
        v[base + 2 * k + 1] = a * s + b * c;
    }
}

// ------------------------------------------------------------------------------------------
// Near-tie recording (optional diagnostics, cpu::NearTie): a QAT rounding input or an indexer
// top-k cut within NEAR_TIE (relative) of its decision boundary. Two correct f32
// implementations may decide these differently, so the verifier may end a strict comparison
// at such a position. `ties` == 0: off (the margins are never computed). Layout (int32):
// [0] slot counter (may exceed the capacity: overflow), [1] capacity, [2..4) unused, then
// entries {layer, pos, kind, margin bits}. Kinds: 0 raw kv fp8, 1 compressed kv fp8,
// 2 indexer row fp4, 3 indexer query fp4, 4 indexer top-k cut. Margins are computed from
// the pre-rounding values only, so recording never changes a computed value (kept out of
// line so the kernels' hot paths keep their registers).
// ------------------------------------------------------------------------------------------
#define NEAR_TIE_REL 1e-5f

__device__ __noinline__ void note_tie(int* ties, int layer, int pos, int kind, float margin) {
    if (!ties || !(margin < NEAR_TIE_REL)) return;
    int slot = atomicAdd(ties, 1);
    if (slot < ties[1]) {
        int* e = ties + 4 + 4 * slot;
        e[0] = layer;
        e[1] = pos;
        e[2] = kind;
        e[3] = __float_as_int(margin);
    }
}

// Relative distance of r > 0 to the nearest power of two (ops::pow2_margin, in f64).
__device__ float pow2_margin(float r) {
    double k = round(log2((double)r));
    double p = exp2(k);
    return (float)(fabs((double)r - p) / p);
}

// ops::fp8_margin of one 64-block p[0..64) (before its round trip).
__device__ __noinline__ float fp8_block_margin(const float* p) {
    float amax = 0.f;
    for (int i = 0; i < 64; i++) amax = fmaxf(amax, fabsf(p[i]));
    float best = INF_F;
    if (amax > 1e-4f) best = fminf(best, pow2_margin(amax / 448.f));
    float scale = exp2i(ceil_log2_exact(fmaxf(amax, 1e-4f) / 448.f));
    for (int i = 0; i < 64; i++) {
        float a = fabsf(p[i] / scale);
        if (a == 0.f || a >= 448.f) continue;
        float step = exp2i(a < 0.015625f ? -9 : (int)(__float_as_uint(a) >> 23) - 127 - 3);
        float q = a / step;
        best = fminf(best, fabsf((q - floorf(q)) - 0.5f) * step / a);
    }
    return best;
}

// ops::fp4_margin of one 32-block p[0..32) (already Hadamard-rotated, before its round trip).
__device__ __noinline__ float fp4_block_margin(const float* p) {
    const float mids[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.f};
    float amax = 0.f;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(p[i]));
    if (amax == 0.f) return INF_F;
    float best = pow2_margin(amax / 6.f);
    float scale = exp2i(ceil_log2_exact(amax / 6.f));
    for (int i = 0; i < 32; i++) {
        float a = fabsf(p[i] / scale);
        for (int m = 0; m < 7; m++) best = fminf(best, fabsf(a - mids[m]) / mids[m]);
    }
    return best;
}

// FP8 E4M3 round trip on v[0..n) in blocks of 64, one warp per block (two values per lane; a
// thread per block was a 64-step serial chain on decode's critical path). The block maximum
// is order-independent, so the values are those of a serial loop. With `ties`, each block's
// margin is noted (kind, layer, pos) before it is rounded. blockDim must be a multiple of 32.
__device__ void fp8_sim_smem(float* v, int n, int* ties = nullptr, int layer = 0, int pos = 0, int kind = 0) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int b = w; b < n / 64; b += nw) {
        float* p = v + b * 64;
        if (ties) {
            if (lane == 0) note_tie(ties, layer, pos, kind, fp8_block_margin(p));
            __syncwarp();
        }
        float x0 = p[lane], x1 = p[lane + 32];
        float amax = warp_max(fmaxf(fabsf(x0), fabsf(x1)));
        amax = fmaxf(amax, 1e-4f);
        float scale = exp2i(ceil_log2_exact(amax / 448.f));
        p[lane] = e4m3_round(fminf(fmaxf(x0 / scale, -448.f), 448.f)) * scale;
        p[lane + 32] = e4m3_round(fminf(fmaxf(x1 / scale, -448.f), 448.f)) * scale;
    }
}

// FP4 (E2M1) round trip of a 32-value block held one value per lane: power-of-two block
// scale from the block's absolute maximum, nearest E2M1 value (ties to the even code).
// x / scale as x * 2^-k: k = log2(scale) is in [-126, 126] (amax is at least 2^-126 * 6 and
// finite), so 2^-k is a normal float and both forms are the exact scaling of x, correctly
// rounded: the same bits without the IEEE division's ~20 instructions.
// The FP4 step of one value of a block whose maximum |x| is amax (fp4_round_warp, idx_q_prep_l).
__device__ __forceinline__ float fp4_round_amax(float x, float amax) {
    amax = fmaxf(amax, 7.052966104933725e-38f);
    const int k = ceil_log2_exact(amax / 6.f);
    return e2m1_round(fminf(fmaxf(x * exp2i(-k), -6.f), 6.f)) * exp2i(k);
}
__device__ __forceinline__ float fp4_round_warp(float x) {
    return fp4_round_amax(x, warp_max(fabsf(x)));
}
// Float bit patterns base + 64 t .. + 63 for thread t (a grid of 2^18 blocks x 256 threads
// covers all 2^32 from base 0): e2m1_round against e2m1_round_search where |x| <= 6 (the
// clamped domain fp4_round_warp calls it on); bad[0] += mismatches. Kernel bench only.
extern "C" __global__ void __launch_bounds__(256) e2m1_check(u32 base, int* bad) {
    PDL_ENTRY;
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    int n = 0;
    for (u32 i = 0; i < 64; i++) {
        const float x = __uint_as_float(base + t * 64u + i);
        if (!(fabsf(x) <= 6.f)) continue;
        n += __float_as_uint(e2m1_round(x)) != __float_as_uint(e2m1_round_search(x));
    }
    if (n) atomicAdd(bad, n);
}
// Hadamard (natural order, scaled 1/sqrt(n)) + FP4 E2M1 round trip in blocks of 32. With
// `ties`, each block's margin is noted after the rotation, before the rounding.
__device__ void hadamard_fp4_smem(float* v, int n, int* ties = nullptr, int layer = 0, int pos = 0, int kind = 0) {
    for (int st = 1; st < n; st <<= 1) {
        __syncthreads();
        for (int i = threadIdx.x; i < n / 2; i += blockDim.x) {
            int blk = i / st, off = i % st;
            int a0 = blk * 2 * st + off, b0 = a0 + st;
            float a = v[a0], b = v[b0];
            v[a0] = a + b;
            v[b0] = a - b;
        }
    }
    __syncthreads();
    float sc = (float)(1.0 / sqrt((double)n));
    for (int i = threadIdx.x; i < n; i += blockDim.x) v[i] *= sc;
    __syncthreads();
    // one warp per 32-block, a value per lane (blockDim a multiple of 32)
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int b = w; b < n / 32; b += nw) {
        float* p = v + b * 32;
        if (ties) {
            if (lane == 0) note_tie(ties, layer, pos, kind, fp4_block_margin(p));
            __syncwarp();
        }
        p[lane] = fp4_round_warp(p[lane]);
    }
    __syncthreads();
}

// Values per thread attn_prep loads before summing (Rq 1024 and Dh 512 at 512 threads: 2, 1).
#define AP_PRE 2

// q LoRA norm and the KV row: qr = rmsnorm_w(qa), k = rope(rmsnorm_w(kv)), FP8 sim on the
// non-rotary part, stored into the raw ring at pos % cap. grid T (+ 1 with hsk.z: the
// Sinkhorn block), smem (Rq + Dh) floats.
extern "C" __global__ void __launch_bounds__(512) attn_prep(const float* __restrict__ qa, const float* __restrict__ kvp,
                                                            const float* __restrict__ qa_norm,
                                                            const float* __restrict__ kv_norm, int Rq, int Dh, int R,
                                                            float eps, const int* __restrict__ pos,
                                                            const float* __restrict__ omega, float* qr_out, float* raw,
                                                            int cap, int qat, int layer, int* ties, signed char* qrq,
                                                            float2* qrd, const HcSk hsk) {
    PDL_ENTRY;
    if (hsk.z && blockIdx.x == gridDim.x - 1) {  // the extra block: a deferred Sinkhorn (decode)
        if (threadIdx.x < 32) hc_sk_warp(hsk);
        return;
    }
    extern __shared__ float sm[];
    __shared__ double shd[2][32];
    int t = blockIdx.x, p = pos[t];
    float* q = sm;
    float* k = sm + Rq;
    const float* qs = qa + (i64)t * Rq;
    const float* ks = kvp + (i64)t * Dh;
    // Both rows' first AP_PRE values per thread loaded before either is used (one memory round
    // trip instead of two), then both sums of squares in one block reduction (per-thread sums in
    // index order, then warps in order: the order of the two separate norms it replaced).
    const int tid = threadIdx.x, bd = blockDim.x, lane = tid & 31, w = tid >> 5, nw = (bd + 31) >> 5;
    // (the norm weights too: loaded after the reduction they were one more round trip)
    float xq[AP_PRE], xk[AP_PRE], nq[AP_PRE], nk[AP_PRE];
#pragma unroll
    for (int j = 0; j < AP_PRE; j++) {
        int i = tid + j * bd;
        xq[j] = i < Rq ? qs[i] : 0.f;
        xk[j] = i < Dh ? ks[i] : 0.f;
        nq[j] = i < Rq ? qa_norm[i] : 0.f;
        nk[j] = i < Dh ? kv_norm[i] : 0.f;
    }
    double sq = 0.0, sk = 0.0;
#pragma unroll
    for (int j = 0; j < AP_PRE; j++) {
        int i = tid + j * bd;
        if (i < Rq) { q[i] = xq[j]; sq += (double)xq[j] * (double)xq[j]; }
        if (i < Dh) { k[i] = xk[j]; sk += (double)xk[j] * (double)xk[j]; }
    }
    for (int i = tid + AP_PRE * bd; i < Rq; i += bd) { float x = qs[i]; q[i] = x; sq += (double)x * (double)x; }
    for (int i = tid + AP_PRE * bd; i < Dh; i += bd) { float x = ks[i]; k[i] = x; sk += (double)x * (double)x; }
    sq = warp_sum_d(sq);
    sk = warp_sum_d(sk);
    if (lane == 0) { shd[0][w] = sq; shd[1][w] = sk; }
    __syncthreads();
    // the warps' sums by a butterfly (every thread summing them in turn was a chain of nw
    // dependent shared loads and adds), the means by div_n (no 64-bit division call)
    const double tq = warp_sum_d(lane < nw ? shd[0][lane] : 0.0), tk = warp_sum_d(lane < nw ? shd[1][lane] : 0.0);
    float rq = 1.f / sqrtf((float)div_n(tq, Rq) + eps), rk = 1.f / sqrtf((float)div_n(tk, Dh) + eps);
    // qrq != 0: qr also quantized for the int8 q_b matvecs (Rq and the block size are multiples
    // of 32, checked by the host, so each warp covers whole 32-value blocks: the conditions
    // below are warp-uniform)
    auto qout = [&](int i, float wn) {
        float v = (q[i] * rq) * wn;
        q[i] = v;
        qr_out[(i64)t * Rq + i] = v;
        if (qrq) q8_block(v, lane, (int)(((i64)t * Rq + i) >> 5), qrq, qrd);
    };
#pragma unroll
    for (int j = 0; j < AP_PRE; j++) {
        const int i = tid + j * bd;
        if (i < Rq) qout(i, nq[j]);
        if (i < Dh) k[i] = (k[i] * rk) * nk[j];
    }
    for (int i = tid + AP_PRE * bd; i < Rq; i += bd) qout(i, qa_norm[i]);
    for (int i = tid + AP_PRE * bd; i < Dh; i += bd) k[i] = (k[i] * rk) * kv_norm[i];
    __syncthreads();
    rope_tail_smem(k, Dh, R, p, omega, 1.f);
    __syncthreads();
    if (qat) fp8_sim_smem(k, Dh - R, ties, layer, p, 0);
    __syncthreads();
    float* dst = raw + (i64)(p % cap) * Dh;
    for (int i = threadIdx.x; i < Dh; i += blockDim.x) dst[i] = k[i];
}

// ------------------------------------------------------------------------------------------
// Compressor (MODEL.md §2.5.5). kv/sc: this batch's projections [T][w]; skv/ssc: frontier
// state [coff*r][w] as it was before the batch; rows: the layer's compressed row list.
// ------------------------------------------------------------------------------------------
struct CompArgs {
    const float* kv;
    const float* sc;
    const u16* ape;
    float* skv;
    float* ssc;
    float* rows;
    const float* norm;
    const float* omega;
    const int* pos;
    int T;
    int r;
    int d;
    int R;
    float eps;
    int qat;
    int indexer;
    int layer;  // for near-tie records
    int* ties;  // near-tie list or 0 (see note_tie)
};

__device__ __forceinline__ void comp_tok(const CompArgs& a, int p0, int q, int col, float& v, float& s) {
    int w = (a.r == 4 ? 2 : 1) * a.d;
    if (q >= p0) {
        i64 o = (i64)(q - p0) * w + col;
        v = a.kv[o];
        s = a.sc[o] + h2f(a.ape[(i64)(q - div_small(q, a.r) * a.r) * w + col]);
    } else {
        int row;
        if (a.r == 4) row = (q >= 4 * (p0 / 4)) ? 4 + (q & 3) : (q & 3);
        else row = q - div_small(q, a.r) * a.r;
        v = a.skv[(i64)row * w + col];
        s = a.ssc[(i64)row * w + col];
    }
}

// Column `i`'s values of window c's tokens j0 .. j0 + N - 1 (ok: the token exists and is in
// the window), every load issued before any use: comp_emit's loops loaded a token, used it,
// then loaded the next (one L2 round trip per token: 8 per ratio-4 window, 128 per ratio-128
// one). N 8 (comp_emit), 16 (comp_emit16).
template <int N>
__device__ __forceinline__ void comp_load8(const CompArgs& a, int p0, int c, int i, int j0, int nc, float (&vv)[N], float (&sv)[N],
                                           bool (&ok)[N]) {
#pragma unroll
    for (int u = 0; u < N; u++) {
        const int j = j0 + u;
        int q, col;
        ok[u] = j < nc;
        if (a.r == 4) {
            if (j < 4) { ok[u] = ok[u] && c > 0; q = 4 * c - 4 + j; col = i; }
            else { q = 4 * c + (j - 4); col = a.d + i; }
        } else {
            q = a.r * c + j;
            col = i;
        }
        vv[u] = 0.f;
        sv[u] = 0.f;
        if (ok[u]) comp_tok(a, p0, q, col, vv[u], sv[u]);
    }
}

// N: tokens whose loads are in flight at once (comp_load8).
template <int N>
__device__ __forceinline__ void comp_emit_body(const CompArgs& a) {
    extern __shared__ float pooled[];
    __shared__ double shd[32];
    int p0 = a.pos[0];
    int r = a.r, d = a.d;
    // (div_small here and in comp_tok: comp_load8's eight q % r were eight integer divisions
    // between the position's load and the token loads)
    int c = div_small(p0, r) + blockIdx.x;
    if ((c + 1) * r > p0 + a.T) return;  // no window closes for this block
    int i = threadIdx.x;
    if (i < d) {
        float m = -INF_F;
        const int nc = (r == 4) ? 8 : r;
        // pass 1: max (tokens N at a time, loads first: comp_load8)
        float vv[N], sv[N];
        bool ok[N];
        for (int j0 = 0; j0 < nc; j0 += N) {
            comp_load8<N>(a, p0, c, i, j0, nc, vv, sv, ok);
#pragma unroll
            for (int u = 0; u < N; u++)
                if (ok[u]) m = fmaxf(m, sv[u]);
        }
        float res = 0.f;
        if (m > -0.5e30f) {
            // pass 2 in token order (one chunk: still in registers)
            float num = 0.f, den = 0.f;
            for (int j0 = 0; j0 < nc; j0 += N) {
                if (nc > N) comp_load8<N>(a, p0, c, i, j0, nc, vv, sv, ok);
#pragma unroll
                for (int u = 0; u < N; u++) {
                    if (ok[u]) {
                        float e = expf(sv[u] - m);
                        den += e;
                        num += e * vv[u];
                    }
                }
            }
            res = num / den;
        }
        pooled[i] = res;
    }
    __syncthreads();
    double ss = 0.0;
    if (i < d) ss = (double)pooled[i] * (double)pooled[i];
    double tot = block_sum_d(ss, shd);
    float s = 1.f / sqrtf((float)(tot / (double)d) + a.eps);
    if (i < d) pooled[i] = (pooled[i] * s) * a.norm[i];
    __syncthreads();
    rope_tail_smem(pooled, d, a.R, c * r, a.omega, 1.f);
    __syncthreads();
    if (a.qat) {
        // the row's tie position: the window's last token (it emits the row and first sees it)
        int tp = (c + 1) * r - 1;
        if (a.indexer) hadamard_fp4_smem(pooled, d, a.ties, a.layer, tp, 2);
        else fp8_sim_smem(pooled, d - a.R, a.ties, a.layer, tp, 1);
    }
    __syncthreads();
    if (i < d) a.rows[(i64)c * d + i] = pooled[i];
}
extern "C" __global__ void __launch_bounds__(512) comp_emit(CompArgs a) {
    PDL_ENTRY;
    comp_emit_body<8>(a);
}
// comp_emit with 16 tokens' loads in flight (`DS4_COMP_L16=1`, ratio-128 windows): an 8K
// prefill's 65 ratio-128 windows are one block each, every thread a chain of 32 dependent L2
// round trips over its column's 128 tokens (127 us per layer on an H100, session 58's trace);
// 16 halve the chain. The same values in the same order: the same bits.
extern "C" __global__ void __launch_bounds__(512) comp_emit16(CompArgs a) {
    PDL_ENTRY;
    comp_emit_body<16>(a);
}

// Frontier update after the batch (runs after comp_emit, which reads the old state).
extern "C" __global__ void comp_state(CompArgs a) {
    PDL_ENTRY;
    int w = (a.r == 4 ? 2 : 1) * a.d;
    int nres = (a.r == 4) ? 4 : a.r;
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (i64)nres * w) return;
    int j = (int)(idx / w), col = (int)(idx % w);
    int p0 = a.pos[0], P1 = p0 + a.T;
    int r = a.r;
    // latest token < P1 with q % r == j
    int last = P1 - 1;
    int q = (last >= j) ? last - ((last - j) % r) : -1;
    if (r == 4) {
        float nv_cur = a.skv[(i64)(4 + j) * w + col], ns_cur = a.ssc[(i64)(4 + j) * w + col];
        float old_cur_v = nv_cur, old_cur_s = ns_cur;
        if (q >= p0) comp_tok(a, p0, q, col, nv_cur, ns_cur);
        int W0 = p0 / 4, W1 = P1 / 4;
        bool shift = W1 > W0;
        float nv_prev = 0.f, ns_prev = 0.f;
        if (shift) {
            int qp = 4 * (W1 - 1) + j;
            if (qp >= p0) comp_tok(a, p0, qp, col, nv_prev, ns_prev);
            else { nv_prev = old_cur_v; ns_prev = old_cur_s; }
        }
        a.skv[(i64)(4 + j) * w + col] = nv_cur;
        a.ssc[(i64)(4 + j) * w + col] = ns_cur;
        if (shift) {
            a.skv[(i64)j * w + col] = nv_prev;
            a.ssc[(i64)j * w + col] = ns_prev;
        }
    } else {
        if (q >= p0) {
            float v, s;
            comp_tok(a, p0, q, col, v, s);
            a.skv[(i64)j * w + col] = v;
            a.ssc[(i64)j * w + col] = s;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Lightning indexer (ratio-4 layers; MODEL.md §2.5.6)
// ------------------------------------------------------------------------------------------
// Near ties are noted only for queries that select (n_vis > topk), as the CPU path does.
// One warp per (head, token), lane l holding elements l + 32 j (j < Di / 32): the RoPE pairs
// and the Hadamard strides below 32 are lane shuffles, the strides from 32 on are register
// pairs, and the FP4 blocks of 32 are the j's. The same operations on the same values as the
// block-per-vector version it replaces (hadamard_fp4_smem, ~10 block barriers per 128 values:
// 1.25 ms per ratio-4 layer of an 8K prefill). Di a power of two in 32..256, R even (checked
// with the model shape: cuda/dims.rs). grid ceil(Hi * T / 8), block 256.
// Returns the f16 form's power-of-two scale when h16 is given (else 0).
template <int J>
__device__ __forceinline__ float idx_q_prep_vec(float* q, int p, const float2* cs, int R, int qat, int layer,
                                                int* tp, float* tb, u16* h16) {
    const int lane = threadIdx.x & 31, Di = 32 * J, base = Di - R;
    float v[J];
#pragma unroll
    for (int j = 0; j < J; j++) v[j] = q[lane + 32 * j];
    // RoPE on the last R values (rope_tail_smem): pairs (base + 2k, base + 2k + 1), base even
#pragma unroll
    for (int j = 0; j < J; j++) {
        const int i = lane + 32 * j;
        const float o = __shfl_xor_sync(0xffffffffu, v[j], 1);
        if (i >= base) {
            const float2 t = cs[(i - base) >> 1];
            const float c = t.x, sn = t.y;
            if ((i & 1) == 0) { float a = v[j], b = o; v[j] = a * c - b * sn; }
            else { float a = o, b = v[j]; v[j] = a * sn + b * c; }
        }
    }
    if (qat) {
        // Hadamard butterflies, strides 1 .. Di / 2 in order: (a, b) -> (a + b, a - b)
#pragma unroll
        for (int st = 1; st < 32; st <<= 1) {
#pragma unroll
            for (int j = 0; j < J; j++) {
                const float o = __shfl_xor_sync(0xffffffffu, v[j], st);
                v[j] = (lane & st) ? o - v[j] : v[j] + o;
            }
        }
#pragma unroll
        for (int js = 1; js < J; js <<= 1) {
#pragma unroll
            for (int j = 0; j < J; j++) {
                if ((j & js) == 0) {
                    const float a = v[j], b = v[j + js];
                    v[j] = a + b;
                    v[j + js] = a - b;
                }
            }
        }
        const float sc = (float)(1.0 / sqrt((double)Di));
#pragma unroll
        for (int j = 0; j < J; j++) v[j] *= sc;
        if (tp) {  // near-tie margins first: the rounding loop below then has no calls
            for (int j = 0; j < J; j++) {
                tb[lane] = v[j];
                __syncwarp();
                if (lane == 0) note_tie(tp, layer, p, 3, fp4_block_margin(tb));
                __syncwarp();
            }
        }
#pragma unroll
        for (int j = 0; j < J; j++) v[j] = fp4_round_warp(v[j]);
    }
    if (h16) {
        // prefill's tensor-core scores read q as idx_to_f16 leaves it (idx.cuh: the vector over
        // 2^e, e the exponent of its max |x|, as f16 in ITC_DP slots; 2^e returned, for the
        // caller to multiply by the head weight): the same max, products and roundings, so the
        // same bits, without the f32 round trip and the conversion launch
        float am = 0.f;
#pragma unroll
        for (int j = 0; j < J; j++) am = fmaxf(am, fabsf(v[j]));
        am = warp_max(am);
        float inv;
        const float s = pow2_of_max(am, inv);
#pragma unroll
        for (int j = 0; j < J; j++) h16[lane + 32 * j] = (u16)(pack_h2(v[j] * inv, 0.f) & 0xffffu);
        for (int i = 32 * J + lane; i < ITC_DP; i += 32) h16[i] = 0;
        return s;
    }
#pragma unroll
    for (int j = 0; j < J; j++) q[lane + 32 * j] = v[j];
    return 0.f;
}
// h16 (0: the f32 q in place): idx_to_f16's f16 form of q instead, with its scale per vector
// (wt ? wt[v] * wscale : 1) * 2^e into hsc (prefill's tensor-core scores; Di <= ITC_DP).
extern "C" __global__ void __launch_bounds__(256) idx_q_prep(float* qi, const int* __restrict__ pos, const float* __restrict__ omega,
                                                             int Hi, int Di, int R, int qat, int layer, int topk, int* ties, int T,
                                                             u16* h16, float* hsc, const float* __restrict__ wt, float wscale) {
    PDL_ENTRY;
    __shared__ float tb[8][32];  // a block's pre-rounding values for the near-tie margin
    // the token's RoPE (cos, sin) per pair (R <= Di <= 256), computed once for the block when
    // its 8 warps share a token (Hi % 8 == 0: each (head, token) had its lanes compute every
    // pair twice), else once per warp; the same cosf / sinf of the same angles as before
    __shared__ float2 cs_s[8][128];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const bool one_tok = (Hi & 7) == 0;
    const i64 ht = (i64)blockIdx.x * 8 + w;
    if (ht >= (i64)Hi * T) return;  // (one_tok: the whole block or none of it)
    const int p = pos[ht / Hi];
    float2* cs = cs_s[one_tok ? 0 : w];
    const int f0 = one_tok ? threadIdx.x : lane, fs = one_tok ? blockDim.x : 32;
    for (int k = f0; k < R / 2; k += fs) {
        const float th = (float)p * omega[k];
        cs[k] = make_float2(cosf(th), sinf(th));
    }
    if (one_tok) __syncthreads();
    else __syncwarp();
    float* q = qi + ht * Di;
    int* tp = (p + 1) / 4 > topk ? ties : nullptr;
    u16* h = (h16 && Di <= ITC_DP) ? h16 + ht * ITC_DP : nullptr;
    float sc;
    switch (Di) {
        case 32: sc = idx_q_prep_vec<1>(q, p, cs, R, qat, layer, tp, tb[w], h); break;
        case 64: sc = idx_q_prep_vec<2>(q, p, cs, R, qat, layer, tp, tb[w], h); break;
        case 128: sc = idx_q_prep_vec<4>(q, p, cs, R, qat, layer, tp, tb[w], h); break;
        default: sc = idx_q_prep_vec<8>(q, p, cs, R, qat, layer, tp, tb[w], nullptr); break;  // 256 (dims.rs check)
    }
    if (h && lane == 0) hsc[ht] = wt ? (wt[ht] * wscale) * sc : sc;
}

// ---- idx_q_prep_l: idx_q_prep with Di / 32 lanes per vector (`DS4_IDXQ_L=1`) ----
// Why: idx_q_prep's warp per (head, token) spends ~49 shuffles per vector on the Hadamard's lane
// strides and each FP4 block's maximum, ~200 instructions per vector in all: 404 us per
// ratio-4 layer of an 8K prefill on an H100 (session 58's trace), ~3x its bytes' time. Here
// lane `sub` of a vector's L = Di / 32 holds its elements 32 sub .. 32 sub + 31: the RoPE pairs,
// the strides below 32 and each FP4 block (one lane's 32 values) stay in registers; only the
// strides from 32 on and the vector's maximum are shuffles (~8 per vector at Di 128). The same
// operations on the same values, per element in the same order, as idx_q_prep_vec: the same
// bits. No near-tie notes (the host keeps idx_q_prep where they are asked for). Block 256 =
// 256 / L vectors: whole tokens (Hi divides 256 / L) or a part of one (256 / L divides Hi);
// their RoPE tables in shared memory (at most 2048 pairs: the host checks, idx_q_prep_l_ok).
#define IDXQ_L_CS 2048
template <int L>
__device__ __forceinline__ void idx_q_prep_l_body(float* qi, const int* __restrict__ pos, const float* __restrict__ omega, int Hi, int R,
                                                 int qat, int T, u16* h16, float* hsc, const float* __restrict__ wt, float wscale) {
    constexpr int VPB = 256 / L, Di = 32 * L;
    __shared__ float2 cs_s[IDXQ_L_CS];
    const int tid = threadIdx.x, lane = tid & 31, sub = lane % L;
    const i64 v0 = (i64)blockIdx.x * VPB;
    const int tk0 = (int)(v0 / Hi), tpb = VPB >= Hi ? VPB / Hi : 1, npair = R / 2;
    for (int k = tid; k < tpb * npair; k += 256) {
        const int tk = tk0 + k / npair;
        if (tk < T) {
            const float th = (float)pos[tk] * omega[k % npair];
            cs_s[k] = make_float2(cosf(th), sinf(th));
        }
    }
    __syncthreads();
    const i64 ht = v0 + tid / L;
    // (a vector past the batch still runs, on zeros, without loads or stores: its warp's
    // other vectors shuffle with the full mask)
    const bool live = ht < (i64)Hi * T;
    const float2* cs = cs_s + (live ? (int)(ht / Hi - tk0) * npair : 0);
    float* q = qi + ht * Di + 32 * sub;
    float v[32];
#pragma unroll
    for (int c = 0; c < 8; c++) {
        const float4 x = live ? ((const float4*)q)[c] : make_float4(0.f, 0.f, 0.f, 0.f);
        v[4 * c] = x.x;
        v[4 * c + 1] = x.y;
        v[4 * c + 2] = x.z;
        v[4 * c + 3] = x.w;
    }
    // RoPE on the last R values: pairs (base + 2k, base + 2k + 1), base even (as idx_q_prep_vec:
    // a the even element, b the odd one, before the rotation)
    const int base = Di - R;
#pragma unroll
    for (int j = 0; j < 32; j += 2) {
        const int i = 32 * sub + j;
        if (i >= base) {
            const float2 t = cs[(i - base) >> 1];
            const float c = t.x, sn = t.y;
            const float a = v[j], b = v[j + 1];
            v[j] = a * c - b * sn;
            v[j + 1] = a * sn + b * c;
        }
    }
    if (qat) {
        // Hadamard butterflies, strides 1 .. Di / 2 in order: (a, b) -> (a + b, a - b); the
        // strides below 32 within the lane, then across its vector's lanes
#pragma unroll
        for (int st = 1; st < 32; st <<= 1) {
#pragma unroll
            for (int j = 0; j < 32; j++) {
                if ((j & st) == 0) {
                    const float a = v[j], b = v[j + st];
                    v[j] = a + b;
                    v[j + st] = a - b;
                }
            }
        }
#pragma unroll
        for (int m = 1; m < L; m <<= 1) {
#pragma unroll
            for (int j = 0; j < 32; j++) {
                const float o = __shfl_xor_sync(0xffffffffu, v[j], m);
                v[j] = (sub & m) ? o - v[j] : v[j] + o;
            }
        }
        const float sc = (float)(1.0 / sqrt((double)Di));
        float am = 0.f;
#pragma unroll
        for (int j = 0; j < 32; j++) {
            v[j] *= sc;
            am = fmaxf(am, fabsf(v[j]));
        }
#pragma unroll
        for (int j = 0; j < 32; j++) v[j] = fp4_round_amax(v[j], am);
    }
    if (h16) {
        // idx_q_prep_vec's f16 form: the vector over 2^e of its max |x|, ITC_DP slots (Di <= ITC_DP)
        float am = 0.f;
#pragma unroll
        for (int j = 0; j < 32; j++) am = fmaxf(am, fabsf(v[j]));
#pragma unroll
        for (int m = 1; m < L; m <<= 1) am = fmaxf(am, __shfl_xor_sync(0xffffffffu, am, m));
        float inv;
        const float s = pow2_of_max(am, inv);
        if (!live) return;
        u16* h = h16 + ht * ITC_DP;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int j = 8 * c;
            ((uint4*)(h + 32 * sub))[c] = make_uint4(pack_h2(v[j] * inv, v[j + 1] * inv), pack_h2(v[j + 2] * inv, v[j + 3] * inv),
                                                     pack_h2(v[j + 4] * inv, v[j + 5] * inv), pack_h2(v[j + 6] * inv, v[j + 7] * inv));
        }
        for (int i = Di + 8 * sub; i < ITC_DP; i += 8 * L) *(uint4*)(h + i) = make_uint4(0u, 0u, 0u, 0u);
        if (sub == 0) hsc[ht] = wt ? (wt[ht] * wscale) * s : s;
        return;
    }
    if (!live) return;
#pragma unroll
    for (int c = 0; c < 8; c++) ((float4*)q)[c] = make_float4(v[4 * c], v[4 * c + 1], v[4 * c + 2], v[4 * c + 3]);
}
// idx_q_prep's parameters (layer, topk and ties unused: no near-tie notes); grid
// ceil(Hi * T * (Di / 32) / 256), block 256.
extern "C" __global__ void __launch_bounds__(256) idx_q_prep_l(float* qi, const int* __restrict__ pos, const float* __restrict__ omega,
                                                               int Hi, int Di, int R, int qat, int layer, int topk, int* ties, int T,
                                                               u16* h16, float* hsc, const float* __restrict__ wt, float wscale) {
    PDL_ENTRY;
    switch (Di) {
        case 32: idx_q_prep_l_body<1>(qi, pos, omega, Hi, R, qat, T, h16, hsc, wt, wscale); break;
        case 64: idx_q_prep_l_body<2>(qi, pos, omega, Hi, R, qat, T, h16, hsc, wt, wscale); break;
        case 128: idx_q_prep_l_body<4>(qi, pos, omega, Hi, R, qat, T, h16, hsc, wt, wscale); break;
        default: idx_q_prep_l_body<8>(qi, pos, omega, Hi, R, qat, T, nullptr, hsc, wt, wscale); break;  // 256
    }
}

// Rows per idx_score block (owned by session.rs, which sizes the grid; asserted equal by the
// kernel source): decode at 8K has 2048 rows, and 32 per block left 64 blocks for 132 SMs.
#define IDX_ROWS_PER_BLOCK 16
// scores[t][c] = sum_h wt_h*wscale * relu(qi_h . k_c), for c < n_vis(t), only when
// n_vis(t) > topk. grid (ceil(nmax/IDX_ROWS_PER_BLOCK), T), block 256, smem Hi*(Di+1) + Hi + 8*Di floats.
extern "C" __global__ void __launch_bounds__(256) idx_score(const float* __restrict__ qi, const float* __restrict__ wt,
                                                            const float* __restrict__ krows,
                                                            const int* __restrict__ pos, float* scores, int ldsc,
                                                            int Hi, int Di, float wscale, int topk) {
    PDL_ENTRY;
    extern __shared__ float sm[];
    int t = blockIdx.y;
    int n = (pos[t] + 1) / 4;
    if (n <= topk) return;
    int c0 = blockIdx.x * IDX_ROWS_PER_BLOCK;
    if (c0 >= n) return;
    int ld = Di + 1;
    float* qs = sm;
    float* ws = sm + Hi * ld;
    float* ks = ws + Hi;
    // Staging: float4 loads, 8 issued before any is stored (a scalar loop with a runtime
    // trip count made one L2 round trip per element per thread: ~28 us per decode call at 8K)
    const bool v4 = (Di & 3) == 0;
    if (v4) {
        const int d4 = Di / 4;
        stage_f4((const float4*)(qi + (i64)t * Hi * Di), Hi * d4, [&](int i, float4 v) {
            float* d = qs + (i / d4) * ld + (i % d4) * 4;
            d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w;
        });
    } else {
        for (int i = threadIdx.x; i < Hi * Di; i += blockDim.x) qs[(i / Di) * ld + (i % Di)] = qi[(i64)t * Hi * Di + i];
    }
    for (int i = threadIdx.x; i < Hi; i += blockDim.x) ws[i] = wt[(i64)t * Hi + i] * wscale;
    __syncthreads();
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float* kr = ks + warp * Di;
    for (int rr = warp; rr < IDX_ROWS_PER_BLOCK; rr += 8) {
        int c = c0 + rr;
        if (c >= n) break;
        if (v4) {
            for (int i = lane; i < Di / 4; i += 32) {
                float4 r = __ldg((const float4*)(krows + (i64)c * Di) + i);
                kr[4 * i] = r.x; kr[4 * i + 1] = r.y; kr[4 * i + 2] = r.z; kr[4 * i + 3] = r.w;
            }
        } else {
            for (int i = lane; i < Di; i += 32) kr[i] = krows[(i64)c * Di + i];
        }
        __syncwarp();
        float acc = 0.f;
        for (int h = lane; h < Hi; h += 32) {
            const float* qh = qs + h * ld;
            float dt = 0.f;
            for (int k = 0; k < Di; k++) dt += qh[k] * kr[k];
            acc += fmaxf(dt, 0.f) * ws[h];
        }
        acc = warp_sum(acc);
        if (lane == 0) scores[(i64)t * ldsc + c] = acc;
        __syncwarp();
    }
}

// Decode indexer scores (one query token per grid row y). idx_score staged the whole q (Hi x
// Di, 32 KB) into shared memory per 16 rows and read two shared operands per FMA: at 64K
// context (16K rows) ~44 us per call. Here a block first requests all its rows' k (cp.async,
// rpb x Di floats: the only DRAM reads, all in flight at once: a row-by-row register loop was
// latency bound at one DRAM round trip per row), while warp w loads heads [w*HPW, (w+1)*HPW)
// of q into registers, lane l holding the k positions [l*KPL, (l+1)*KPL) (Hi = 8*HPW, Di =
// 32*KPL). Per row and warp: HPW*KPL FMAs, a reduce-scatter of the HPW lane partials (each
// lane ends with one head's full dot: log2(HPW) halving steps, then a butterfly), relu *
// weight, and a butterfly over the warp's heads; two rows per step (independent shuffle
// chains). The 8 warps' partials of a row are summed in warp order: deterministic.
// grid (ceil(rows / rpb), T), block 256, dynamic smem rpb * Di floats.
#define IDXW_MAX_RPB 64
// Order-preserving u32 key of a float (larger float, larger key; a positive NaN above +inf,
// so callers that must not pick NaN skip it).
__device__ __forceinline__ u32 fkey(float f) {
    u32 u = __float_as_uint(f);
    u = u == 0x80000000u ? 0u : u;  // -0 ranks as +0: equal values tie by index, as on the host
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
template <int HPW, int KPL>
__device__ __forceinline__ void idxw_dot(const float (&q)[HPW][KPL], const float* kr, float (&v)[HPW]) {
    float kv[KPL];
    if constexpr (KPL == 4) {
        const float4 t = *(const float4*)kr;
        kv[0] = t.x; kv[1] = t.y; kv[2] = t.z; kv[3] = t.w;
    } else {
#pragma unroll
        for (int k = 0; k < KPL; k++) kv[k] = kr[k];
    }
#pragma unroll
    for (int h = 0; h < HPW; h++) {
        float a = q[h][0] * kv[0];
#pragma unroll
        for (int k = 1; k < KPL; k++) a += q[h][k] * kv[k];
        v[h] = a;
    }
}
template <int HPW, int KPL>
__device__ __forceinline__ void idxw_rows(const float* __restrict__ qt, const float* __restrict__ wt, const float* __restrict__ krows,
                                          float* __restrict__ out, int c0, int c1, float wscale, float* ks, float* part) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    constexpr int Di = 32 * KPL;
    const int nr = c1 - c0;
    {
        const float* src = krows + (i64)c0 * Di;
        for (int i = threadIdx.x; i < nr * Di / 4; i += blockDim.x) cp_async16(smem_u32(ks + 4 * i), src + 4 * i, 16);
        cp_commit();
    }
    float q[HPW][KPL];
#pragma unroll
    for (int h = 0; h < HPW; h++) {
        const float* qh = qt + (i64)(w * HPW + h) * Di + lane * KPL;
        if constexpr (KPL == 4) {
            const float4 t = *(const float4*)qh;
            q[h][0] = t.x; q[h][1] = t.y; q[h][2] = t.z; q[h][3] = t.w;
        } else {
#pragma unroll
            for (int k = 0; k < KPL; k++) q[h][k] = qh[k];
        }
    }
    // the head this lane's reduce-scatter ends with
    int hl = 0;
#pragma unroll
    for (int s = 0; (HPW >> s) > 1; s++) hl += (lane & (16 >> s)) ? (HPW >> (s + 1)) : 0;
    const float wl = wt[w * HPW + hl] * wscale;
    cp_wait<0>();
    __syncthreads();
    for (int r = 0; r < nr; r += 2) {
        // an odd last row is computed twice (its copy discarded): the rows stay uniform
        const int r1 = min(r + 1, nr - 1);
        float v[2][HPW];
        idxw_dot<HPW, KPL>(q, ks + r * Di + lane * KPL, v[0]);
        idxw_dot<HPW, KPL>(q, ks + r1 * Di + lane * KPL, v[1]);
        // reduce-scatter: at each step a lane keeps half of its heads (the upper half when its
        // offset bit is set) and adds the partner's partials of them
#pragma unroll
        for (int s = 0; (HPW >> s) > 1; s++) {
            const int half = HPW >> (s + 1), off = 16 >> s;
            const bool up = (lane & off) != 0;
#pragma unroll
            for (int i = 0; i < half; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const float give = up ? v[j][i] : v[j][i + half], keep = up ? v[j][i + half] : v[j][i];
                    v[j][i] = keep + __shfl_xor_sync(0xffffffffu, give, off);
                }
        }
        float rr[2];
#pragma unroll
        for (int j = 0; j < 2; j++) {
#pragma unroll
            for (int off = 16 / HPW; off >= 1; off >>= 1) v[j][0] += __shfl_xor_sync(0xffffffffu, v[j][0], off);
            rr[j] = fmaxf(v[j][0], 0.f) * wl;
        }
        // sum over the warp's heads (the lane bits the reduce-scatter consumed)
#pragma unroll
        for (int off = 16; off >= 32 / HPW; off >>= 1)
#pragma unroll
            for (int j = 0; j < 2; j++) rr[j] += __shfl_xor_sync(0xffffffffu, rr[j], off);
        if (lane == 0) {
            part[r * 8 + w] = rr[0];
            part[r1 * 8 + w] = rr[1];
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nr; i += blockDim.x) {
        float s = part[i * 8];
#pragma unroll
        for (int k = 1; k < 8; k++) s += part[i * 8 + k];
        out[c0 + i] = s;
    }
}
extern "C" __global__ void __launch_bounds__(256) idx_score_w(const float* __restrict__ qi, const float* __restrict__ wt,
                                                              const float* __restrict__ krows, const int* __restrict__ pos,
                                                              float* scores, int ldsc, int Hi, int Di, float wscale, int topk,
                                                              int rpb) {
    PDL_ENTRY;
    extern __shared__ float4 idxw_sm4[];
    __shared__ float part[IDXW_MAX_RPB * 8];
    const int t = blockIdx.y;
    const int n = (pos[t] + 1) / 4;
    if (n <= topk) return;
    const int c0 = blockIdx.x * rpb;
    if (c0 >= n) return;
    const int c1 = min(n, c0 + rpb);
    const float* qt = qi + (i64)t * Hi * Di;
    const float* w = wt + (i64)t * Hi;
    float* out = scores + (i64)t * ldsc;
    float* ks = (float*)idxw_sm4;
    // (session.rs idx_w_shape_ok: Hi in {16, 32, 64}, Di in {32, 64, 128})
#define IDXW_CASE(H, K) \
    if (Hi == 8 * H && Di == 32 * K) { idxw_rows<H, K>(qt, w, krows, out, c0, c1, wscale, ks, part); return; }
    IDXW_CASE(8, 4) IDXW_CASE(8, 2) IDXW_CASE(8, 1) IDXW_CASE(4, 4) IDXW_CASE(4, 2) IDXW_CASE(4, 1)
    IDXW_CASE(2, 4) IDXW_CASE(2, 2) IDXW_CASE(2, 1)
#undef IDXW_CASE
}

__device__ __forceinline__ float fkey_inv(u32 k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// Streaming top-k by radix select (no sort): the topk largest scores of the n visible rows,
// ties to the smaller index, written in ascending index order. topk_select: grid T, block
// 1024, one block per token. topk_cluster (decode's long contexts): a cluster of TOPK_CL
// blocks per token, each holding 1/TOPK_CL of the rows, their histograms summed through
// distributed shared memory: one block's passes over 16K rows were ~14 us of a 64K-context
// step's critical path (the ratio-4 layers' attention waits on them), and its time grows with
// the rows (1M positions: 256K rows, re-read in every pass).
#define TOPK_CL 8
static_assert(TOPK_CL % 4 == 0, "topk_rows sums the cluster's histograms 4 blocks at a time");
// device-only: the top-k kernels' shared memory, handed to their per-size bodies
struct __align__(16) TopkSmem {
    u32 hist[2][256];  // pass p counts into hist[p & 1] (a cluster's blocks read it after the pass)
    u32 prefix, remaining, below;
    u64 wsum[32];  // per-warp (gt, eq) counts of the output pass, then their exclusive prefix
    u64 total;     // the block's (gt, eq) counts
    u64 off;       // topk_cluster: the (gt, eq) counts of the cluster's lower-ranked blocks
    u32 teq;       // topk_cluster: the token's keys equal to the cut
};

// Thread j of the token's threads (block rank r, thread tid: j = r * blockDim + tid) owns the
// contiguous rows [j * per, j * per + per) of the n rows, so the output pass finds every row's
// slot from one prefix sum of the per-thread counts (the strided layout it replaces needed a
// prefix over the warps, three barriers, per 1024 rows: ~1 us each, most of a call at 16K
// rows). Where the keys live, by KC:
//  KC > 0: KC registers (the smallest that holds n, topk_select: every slot costs its test in
//          each pass whether it holds a key or not, and one 1024-thread block per token is
//          issue bound; 24 slots spilled);
//  KC = 0: dynamic shared memory, thread j's c-th key at ksm[c * blockDim + tid] (each thread
//          reads back only what it wrote: no barrier, no bank conflict), up to the launch's
//          shared memory (~56K rows per block);
//  KC < 0: read again from the scores in every pass (thread-strided: coalesced; a thread's
//          contiguous rows only in the output pass: kbench, 70K rows, 385 us when every pass
//          read them that way).
// CL: blocks per token (1: topk_select; TOPK_CL: topk_cluster, whose blocks are one cluster).
template <int KC, typename F>
__device__ __forceinline__ void topk_each(int per, F f) {
    if constexpr (KC > 0) {
#pragma unroll
        for (int c = 0; c < KC; c++) f(c);
    } else {
#pragma unroll 4
        for (int c = 0; c < per; c++) f(c);
    }
}
// The token's barrier: the block's, or the cluster's (release / acquire: the blocks' shared
// memory writes before it are visible to the cluster after it).
template <int CL>
__device__ __forceinline__ void topk_sync() {
    if constexpr (CL > 1) cluster_sync_all();
    else __syncthreads();
}
template <int KC, int CL>
__device__ __forceinline__ void topk_rows(TopkSmem& s, u32* ksm, const float* __restrict__ sc, int n, int t,
                                          const int* __restrict__ pos, int topk, int* sel, int layer, int* ties) {
    const int bd = blockDim.x, tid = threadIdx.x;
    const int rank = CL > 1 ? (int)cluster_rank() : 0;
    const int gt = rank * bd + tid, gbd = CL * bd;  // this thread and the threads of the token
    const int per = KC > 0 ? KC : (n + gbd - 1) / gbd;
    const int base = gt * per;
    u32 kc[KC > 0 ? KC : 1];
    if constexpr (KC > 0) {
        // vector loads where the row start allows them (decode: always)
        constexpr int V = KC % 4 == 0 ? 4 : (KC % 2 == 0 ? 2 : 1);
        const bool al = (((size_t)(sc + base)) & (4 * V - 1)) == 0;
#pragma unroll
        for (int g = 0; g < KC / V; g++) {
            const int i = base + V * g;
            if (V == 4 && al && i + 3 < n) {
                const float4 v = __ldg((const float4*)(sc + i));
                kc[V * g] = fkey(v.x); kc[V * g + 1] = fkey(v.y); kc[V * g + 2] = fkey(v.z); kc[V * g + 3] = fkey(v.w);
            } else if (V == 2 && al && i + 1 < n) {
                const float2 v = __ldg((const float2*)(sc + i));
                kc[V * g] = fkey(v.x); kc[V * g + 1] = fkey(v.y);
            } else {
#pragma unroll
                for (int e = 0; e < V; e++) kc[V * g + e] = i + e < n ? fkey(__ldg(sc + i + e)) : 0u;
            }
        }
    } else if constexpr (KC == 0) {
#pragma unroll 8
        for (int c = 0; c < per; c++) ksm[c * bd + tid] = base + c < n ? fkey(__ldg(sc + base + c)) : 0u;
    }
    auto key = [&](int c) -> u32 {
        if constexpr (KC > 0) return kc[c];
        else if constexpr (KC == 0) return ksm[c * bd + tid];
        else return fkey(__ldg(sc + base + c));
    };
    for (int i = tid; i < 512; i += bd) (&s.hist[0][0])[i] = 0;
    if (tid == 0) {
        s.below = 0;
        s.off = 0;
    }
    __syncthreads();
    u32 prefix = 0, mask = 0, remaining = topk;
    for (int pass = 0, shift = 24; shift >= 0; pass++, shift -= 8) {
        u32* hist = s.hist[pass & 1];
        // (one shared atomic per key: aggregating a warp's equal bins, by __match_any_sync or
        // by ballot + shfl + all, cost 4 us per call at 8K in the decode graph, sessions 12-13)
        if constexpr (KC >= 0) {
            topk_each<KC>(per, [&](int c) {
                if (base + c < n) {
                    const u32 k = key(c);
                    if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255], 1u);
                }
            });
        } else {  // order does not matter here: coalesced thread-strided loads
#pragma unroll 4
            for (int i = gt; i < n; i += gbd) {
                const u32 k = fkey(__ldg(sc + i));
                if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255], 1u);
            }
        }
        topk_sync<CL>();
        // the other histogram, last read (by every block of the token) in the previous pass's
        // scan, before the barrier above: zeroed for the next pass (published by the barrier
        // after the scan)
        for (int i = tid; i < 256; i += bd) s.hist[(pass + 1) & 1][i] = 0;
        // The cut bin: the largest b >= 1 whose suffix count S(b) = hist[b] + ... + hist[255]
        // reaches `remaining`, else 0; `remaining` - S(b + 1) keys of it are still to take.
        // Warp 0 scans (lane l owns bins 8l..8l+7; topk_cluster: summed over the cluster's
        // blocks, the same sums in every block): a serial scan by one thread cost ~4 us per
        // pass in decode.
        if (tid < 32) {
            int l = tid;
            u32 h8[8], lo8[8], tot = 0;  // lo8: topk_cluster, the lower-ranked blocks' counts
#pragma unroll
            for (int j = 0; j < 8; j++) h8[j] = lo8[j] = 0;
            if constexpr (CL > 1) {
#pragma unroll
                for (int r0 = 0; r0 < CL; r0 += 4) {  // (4 blocks' loads in flight: registers)
                    uint4 v[4][2];
#pragma unroll
                    for (int r = 0; r < 4; r++) {
                        const u32 a = dsmem_addr(hist + 8 * l, r0 + r);
                        v[r][0] = ld_dsmem_u4(a);
                        v[r][1] = ld_dsmem_u4(a + 16);
                    }
#pragma unroll
                    for (int r = 0; r < 4; r++) {
                        const u32 x[8] = {v[r][0].x, v[r][0].y, v[r][0].z, v[r][0].w, v[r][1].x, v[r][1].y, v[r][1].z, v[r][1].w};
#pragma unroll
                        for (int j = 0; j < 8; j++) {
                            h8[j] += x[j];
                            lo8[j] += r0 + r < rank ? x[j] : 0u;
                        }
                    }
                }
            } else {
#pragma unroll
                for (int j = 0; j < 8; j++) h8[j] = hist[8 * l + j];
            }
#pragma unroll
            for (int j = 0; j < 8; j++) tot += h8[j];
            u32 incl = tot;  // inclusive suffix sum over lanes l..31
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                u32 v = __shfl_down_sync(0xffffffffu, incl, o);
                if (l + o < 32) incl += v;
            }
            const u32 above = incl - tot;  // bins above this lane's range
            int best = 0;  // 1 + the cut bin found in this lane's range, 0: none
            u32 sfx = above;
            u32 rem_at = 0;
#pragma unroll
            for (int j = 7; j >= 0; j--) {
                u32 sb = sfx + h8[j];  // S(8l + j)
                if (!best && 8 * l + j >= 1 && sb >= remaining) { best = 8 * l + j + 1; rem_at = remaining - sfx; }
                sfx = sb;
            }
            int bmax = __reduce_max_sync(0xffffffffu, best);
            if (bmax == 0 && l == 0) {  // no bin >= 1 reaches it: bin 0, S(1) = incl - hist[0]
                s.prefix = prefix;
                s.remaining = remaining - (incl - h8[0]);
            } else if (bmax != 0 && best == bmax) {
                s.prefix = prefix | ((u32)(bmax - 1) << shift);
                s.remaining = rem_at;
            }
            if constexpr (CL > 1) {
                // The lower-ranked blocks' keys above the cut bin are above the cut (the cut's
                // higher bytes are this prefix): over the passes, their count; in the last pass
                // the cut bin holds the keys equal to it. So the output pass needs no exchange.
                const int cb = bmax ? bmax - 1 : 0;
                u32 lg = 0, le = 0, te = 0;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    lg += 8 * l + j > cb ? lo8[j] : 0u;
                    le += 8 * l + j == cb ? lo8[j] : 0u;
                    te += 8 * l + j == cb ? h8[j] : 0u;
                }
                lg = __reduce_add_sync(0xffffffffu, lg);
                le = __reduce_add_sync(0xffffffffu, le);
                te = __reduce_add_sync(0xffffffffu, te);
                if (l == 0) {
                    s.off += lg;
                    if (shift == 0) {
                        s.off += (u64)le << 32;
                        s.teq = te;
                    }
                }
            }
        }
        // (s.prefix is next written after the next pass's token barrier, which every thread
        // reaches after reading it here)
        __syncthreads();
        prefix = s.prefix;
        remaining = s.remaining;
        mask |= 255u << shift;
    }
    // topk_cluster: this block has read its partners' histograms for the last time (they may
    // leave once every block has arrived; its wait is at the end)
    if constexpr (CL > 1) cluster_arrive();
    const u32 kth = prefix;  // key of the topk-th largest; take `remaining` of the equal keys
    // Output: this thread's counts of keys above and equal to the cut, their exclusive prefix
    // over the token's threads (lower threads hold lower rows; topk_cluster: s.off counts the
    // lower-ranked blocks'), then its selected rows in order. Slot of a row = (rows above the
    // cut before it) + min(equal rows before it, remaining).
    const int lane = tid & 31, warp = tid >> 5, nw = bd >> 5;
    u32 ng = 0, ne = 0;
    u32 below = 0;  // largest key under the cut (near-tie margin only); every real key is > 0
    topk_each<KC>(per, [&](int c) {
        if (base + c < n) {
            const u32 k = key(c);
            ng += k > kth;
            ne += k == kth;
            if (ties && k < kth) below = max(below, k);  // the near-tie log only
        }
    });
    const u64 mine = (u64)ng | ((u64)ne << 32);
    u64 incl = mine;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u64 v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
    }
    if (lane == 31) s.wsum[warp] = incl;
    if (ties && below) atomicMax(&s.below, below);
    __syncthreads();
    if (warp == 0) {
        const u64 w0 = lane < nw ? s.wsum[lane] : 0ull;
        u64 wi = w0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const u64 v = __shfl_up_sync(0xffffffffu, wi, o);
            if (lane >= o) wi += v;
        }
        if (lane < nw) s.wsum[lane] = wi - w0;
        if (lane == 31) s.total = wi;
    }
    __syncthreads();
    const u64 ex = s.off + s.wsum[warp] + (incl - mine);
    u32 rg = (u32)ex, re = (u32)(ex >> 32);
    int* out = sel + (i64)t * topk;
    topk_each<KC>(per, [&](int c) {
        const int i = base + c;
        if (i < n) {
            const u32 k = key(c);
            if (k > kth) out[rg++ + min(re, remaining)] = i;
            else if (k == kth) {
                if (re < remaining) out[rg + re] = i;
                re++;
            }
        }
    });
    if (ties) {  // uniform branch: the barriers in it are reached by all threads or none
        u32 teq = (u32)(s.total >> 32), tbelow = s.below;  // the token's equal keys, largest under the cut
        if constexpr (CL > 1) {
            // the cluster's largest key under the cut (one exchange more: the near-tie log only)
            cluster_wait();
            cluster_sync_all();
            if (gt == 0)
                for (int r = 1; r < CL; r++) tbelow = max(tbelow, ld_dsmem_u32(dsmem_addr(&s.below, r)));
            teq = s.teq;
            cluster_arrive();
        }
        if (gt == 0) {
            // Gap between the last selected score and the best rejected one (cpu.rs): a
            // rejected score equal to the cut when equal keys outnumber the free slots.
            float cut = fkey_inv(kth);
            float next = teq > remaining ? cut : fkey_inv(tbelow);
            float m = fabsf(cut - next) / fmaxf(fmaxf(fabsf(cut), fabsf(next)), 1.17549435e-38f);
            note_tie(ties, layer, pos[t], 4, m);
        }
    }
    if constexpr (CL > 1) cluster_wait();  // no block leaves while a partner may read its memory
}

// ksm_keys: keys the launch's dynamic shared memory holds (0: none; session.rs launch_topk).
extern "C" __global__ void __launch_bounds__(1024) topk_select(const float* __restrict__ scores, int ldsc,
                                                               const int* __restrict__ pos, int topk, int* sel,
                                                               int layer, int* ties, int ksm_keys) {
    PDL_ENTRY;
    __shared__ TopkSmem s;
    extern __shared__ u32 topk_ksm[];
    int t = blockIdx.x;
    int n = (pos[t] + 1) / 4;
    if (n <= topk) return;
    const float* sc = scores + (i64)t * ldsc;
    const int b = blockDim.x;
    if (n <= 2 * b) topk_rows<2, 1>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if (n <= 4 * b) topk_rows<4, 1>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if (n <= 8 * b) topk_rows<8, 1>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if (n <= 16 * b) topk_rows<16, 1>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if (n <= 20 * b) topk_rows<20, 1>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if ((n + b - 1) / b * b <= ksm_keys) topk_rows<0, 1>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else topk_rows<-1, 1>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
}

// grid (TOPK_CL, T), one cluster per token; ksm_keys: keys one block's dynamic shared memory
// holds (session.rs launch_topk).
extern "C" __global__ void __cluster_dims__(TOPK_CL, 1, 1) __launch_bounds__(1024)
    topk_cluster(const float* __restrict__ scores, int ldsc, const int* __restrict__ pos, int topk, int* sel, int layer,
                 int* ties, int ksm_keys) {
    PDL_ENTRY;
    __shared__ TopkSmem s;
    extern __shared__ u32 topk_ksm[];
    int t = blockIdx.y;
    int n = (pos[t] + 1) / 4;
    if (n <= topk) return;  // the whole cluster (one token) returns: no barrier is left waiting
    const float* sc = scores + (i64)t * ldsc;
    const int b = blockDim.x * TOPK_CL;
    if (n <= 2 * b) topk_rows<2, TOPK_CL>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if (n <= 4 * b) topk_rows<4, TOPK_CL>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if (n <= 8 * b) topk_rows<8, TOPK_CL>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if (n <= 16 * b) topk_rows<16, TOPK_CL>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if (n <= 20 * b) topk_rows<20, TOPK_CL>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else if ((n + b - 1) / b * (int)blockDim.x <= ksm_keys) topk_rows<0, TOPK_CL>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
    else topk_rows<-1, TOPK_CL>(s, topk_ksm, sc, n, t, pos, topk, sel, layer, ties);
}

// ------------------------------------------------------------------------------------------
// Attention with sink (MODEL.md §2.5.7) in split-row partials with online softmax. Warp w of
// a block serves head blockIdx.x*8 + w; lane owns dims 4*lane + 128*jj + (0..3).
// ------------------------------------------------------------------------------------------
struct AttnArgs {
    const float* q;     // [T][H*Dh] q_b output (before the per-head norm and RoPE)
    const float* raw;   // ring [cap][Dh]
    const float* comp;  // compressed rows [.][Dh] (ratio > 0)
    const int* sel;     // [T][topk] indexer selection (ratio 4)
    const int* pos;
    const float* omega;
    float* po;          // [T][nsplit][H][Dh]
    float* pml;         // [T][nsplit][H][2]
    int cap;
    int topk;
    int H;
    int Dh;
    int R;
    int W;
    int ratio;
    int nsplit;
    float eps;
    int pad;
};

#define ATT_TR 16
extern "C" __global__ void __launch_bounds__(512) attn_partial(AttnArgs a) {
    PDL_ENTRY;
    extern __shared__ float4 ktile4[];  // ATT_TR * Dh floats
    float* ktile = (float*)ktile4;
    int t = blockIdx.z, sp = blockIdx.y;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int h = blockIdx.x * (blockDim.x >> 5) + warp;  // one head per warp
    bool hv = h < a.H;
    int p = a.pos[t];
    int Dh = a.Dh;
    int nraw = min(p + 1, a.W);
    int ncv = a.ratio ? (p + 1) / a.ratio : 0;
    bool use_sel = (a.ratio == 4) && (ncv > a.topk);
    int ncomp = use_sel ? a.topk : ncv;
    int n = nraw + ncomp;
    int chunk = (n + a.nsplit - 1) / a.nsplit;
    int r0 = sp * chunk, r1 = min(n, r0 + chunk);
    // q: load, per-head RMSNorm (no weight), RoPE on the tail
    float qv[4][4];
    double ss = 0.0;
    const float* qh = a.q + ((i64)t * a.H + (hv ? h : 0)) * Dh;
#pragma unroll
    for (int jj = 0; jj < 4; jj++) {
        int d = 4 * lane + 128 * jj;
        if (d < Dh) {
            float4 v = *(const float4*)(qh + d);
            qv[jj][0] = v.x; qv[jj][1] = v.y; qv[jj][2] = v.z; qv[jj][3] = v.w;
        } else {
            qv[jj][0] = qv[jj][1] = qv[jj][2] = qv[jj][3] = 0.f;
        }
#pragma unroll
        for (int i = 0; i < 4; i++) ss += (double)qv[jj][i] * (double)qv[jj][i];
    }
    ss = warp_sum_d(ss);
    float rs = 1.f / sqrtf((float)(ss / (double)Dh) + a.eps);
    int Dn = Dh - a.R;
#pragma unroll
    for (int jj = 0; jj < 4; jj++) {
        int d = 4 * lane + 128 * jj;
#pragma unroll
        for (int i = 0; i < 4; i++) qv[jj][i] *= rs;
        if (d < Dh && d >= Dn) {
#pragma unroll
            for (int pr = 0; pr < 2; pr++) {
                int k = (d + 2 * pr - Dn) / 2;
                float th = (float)p * a.omega[k];
                float c = cosf(th), s = sinf(th);
                float x0 = qv[jj][2 * pr], x1 = qv[jj][2 * pr + 1];
                qv[jj][2 * pr] = x0 * c - x1 * s;
                qv[jj][2 * pr + 1] = x0 * s + x1 * c;
            }
        }
    }
    float scale = 1.f / sqrtf((float)Dh);
    float m = -INF_F, l = 0.f;
    float o[4][4];
#pragma unroll
    for (int jj = 0; jj < 4; jj++)
#pragma unroll
        for (int i = 0; i < 4; i++) o[jj][i] = 0.f;
    int dq = Dh >> 2;  // float4 per row
    for (int rb = r0; rb < r1; rb += ATT_TR) {
        int cnt = min(ATT_TR, r1 - rb);
        __syncthreads();
        for (int f = threadIdx.x; f < cnt * dq; f += blockDim.x) {
            int rr = f / dq, c4 = f % dq;
            int r = rb + rr;
            const float* src;
            if (r < nraw) src = a.raw + (i64)((p - nraw + 1 + r) % a.cap) * Dh;
            else {
                int ci = r - nraw;
                int c = use_sel ? a.sel[(i64)t * a.topk + ci] : ci;
                src = a.comp + (i64)c * Dh;
            }
            ktile4[rr * dq + c4] = ((const float4*)src)[c4];
        }
        __syncthreads();
        if (!hv) continue;
        float sc[ATT_TR];
        float tmax = -INF_F;
#pragma unroll
        for (int rr = 0; rr < ATT_TR; rr++) {
            float part = 0.f;
            if (rr < cnt) {
                const float* kr = ktile + rr * Dh;
#pragma unroll
                for (int jj = 0; jj < 4; jj++) {
                    int d = 4 * lane + 128 * jj;
                    if (d < Dh) {
                        float4 kv = *(const float4*)(kr + d);
                        part += qv[jj][0] * kv.x + qv[jj][1] * kv.y + qv[jj][2] * kv.z + qv[jj][3] * kv.w;
                    }
                }
            }
            part = warp_sum(part);
            sc[rr] = (rr < cnt) ? part * scale : -INF_F;
            tmax = fmaxf(tmax, sc[rr]);
        }
        float mn = fmaxf(m, tmax);
        float fac = (m == -INF_F) ? 0.f : expf(m - mn);
        l *= fac;
#pragma unroll
        for (int jj = 0; jj < 4; jj++)
#pragma unroll
            for (int i = 0; i < 4; i++) o[jj][i] *= fac;
#pragma unroll
        for (int rr = 0; rr < ATT_TR; rr++) {
            if (rr >= cnt) break;
            float e = expf(sc[rr] - mn);
            l += e;
            const float* kr = ktile + rr * Dh;
#pragma unroll
            for (int jj = 0; jj < 4; jj++) {
                int d = 4 * lane + 128 * jj;
                if (d < Dh) {
                    float4 kv = *(const float4*)(kr + d);
                    o[jj][0] += e * kv.x; o[jj][1] += e * kv.y; o[jj][2] += e * kv.z; o[jj][3] += e * kv.w;
                }
            }
        }
        m = mn;
    }
    if (!hv) return;
    i64 base = ((i64)t * a.nsplit + sp) * a.H + h;
    float* op = a.po + base * Dh;
#pragma unroll
    for (int jj = 0; jj < 4; jj++) {
        int d = 4 * lane + 128 * jj;
        if (d < Dh) *(float4*)(op + d) = make_float4(o[jj][0], o[jj][1], o[jj][2], o[jj][3]);
    }
    if (lane == 0) { a.pml[base * 2] = m; a.pml[base * 2 + 1] = l; }
}

// Merge the splits with the sink, normalize, inverse RoPE on the tail. grid (H, T).
extern "C" __global__ void attn_combine(const float* __restrict__ po, const float* __restrict__ pml,
                                        const float* __restrict__ sinks, const int* __restrict__ pos,
                                        const float* __restrict__ omega, int H, int Dh, int R, int nsplit,
                                        float* out) {
    PDL_ENTRY;
    extern __shared__ float ov[];
    int h = blockIdx.x, t = blockIdx.y, p = pos[t];
    float sink = sinks[h];
    float M = sink;
    for (int s = 0; s < nsplit; s++) M = fmaxf(M, pml[(((i64)t * nsplit + s) * H + h) * 2]);
    float den = expf(sink - M);
    for (int s = 0; s < nsplit; s++) {
        i64 b = (((i64)t * nsplit + s) * H + h) * 2;
        float ms = pml[b], ls = pml[b + 1];
        if (ls > 0.f) den += ls * expf(ms - M);
    }
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float acc = 0.f;
        for (int s = 0; s < nsplit; s++) {
            i64 b = ((i64)t * nsplit + s) * H + h;
            float ls = pml[b * 2 + 1];
            if (ls > 0.f) acc += po[b * Dh + d] * expf(pml[b * 2] - M);
        }
        ov[d] = acc / den;
    }
    __syncthreads();
    rope_tail_smem(ov, Dh, R, p, omega, -1.f);
    __syncthreads();
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) out[((i64)t * H + h) * Dh + d] = ov[d];
}

// ------------------------------------------------------------------------------------------
// MoE routing (MODEL.md §2.6)
// ------------------------------------------------------------------------------------------
extern "C" __global__ void moe_route(const float* __restrict__ logits, const float* __restrict__ bias,
                                     const int* __restrict__ tid2eid, const int* __restrict__ tok, int E, int K,
                                     float wscale, int wnorm, int* sel, float* wts) {
    PDL_ENTRY;
    extern __shared__ float prob[];  // [E] probabilities, then [E] selection scores (+ bias)
    float* score = prob + E;
    int t = blockIdx.x;
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        float p = sqrtf(softplusf_(logits[(i64)t * E + e]));
        prob[e] = p;
        score[e] = p + (bias ? bias[e] : 0.f);
    }
    __syncthreads();
    __shared__ int s[16];
    if (threadIdx.x >= 32) return;
    int lane = threadIdx.x;
    if (tid2eid) {
        if (lane < K) s[lane] = tid2eid[(i64)tok[t] * K + lane];
    } else {
        // K rounds of a warp argmax of prob + bias over the experts not yet taken; ties go to
        // the smaller expert id. Scores come from shared memory (the bias was a global load
        // per candidate inside this serial loop).
        for (int i = 0; i < K; i++) {
            float bv = -INF_F;
            int bi = 0x7fffffff;
            for (int e = lane; e < E; e += 32) {
                bool taken = false;
                for (int q = 0; q < i; q++) taken |= (s[q] == e);
                if (taken) continue;
                float v = score[e];
                if (bi == 0x7fffffff || v > bv) { bv = v; bi = e; }
            }
            for (int o = 16; o > 0; o >>= 1) {
                float ov = __shfl_xor_sync(0xffffffffu, bv, o);
                int oi = __shfl_xor_sync(0xffffffffu, bi, o);
                if (oi != 0x7fffffff && (bi == 0x7fffffff || ov > bv || (ov == bv && oi < bi))) { bv = ov; bi = oi; }
            }
            if (lane == 0) s[i] = bi;
            __syncwarp();
        }
    }
    __syncwarp();
    if (lane != 0) return;
    float sum = 0.f;
    for (int i = 0; i < K; i++) sum += prob[s[i]];
    for (int i = 0; i < K; i++) {
        sel[t * K + i] = s[i];
        wts[t * K + i] = wnorm ? prob[s[i]] / sum * wscale : prob[s[i]] * wscale;
    }
}

// Group (token, slot) pairs by expert, in token order: off[E+1], pair_tok[slot] = token,
// pair_of[t*K+i] = slot, pair_w[slot] = routing weight. One block, thread per expert.
extern "C" __global__ void moe_group(const int* __restrict__ sel, const float* __restrict__ wts, int T, int K, int E,
                                     int* off, int* pair_tok, int* pair_of, float* pair_w) {
    PDL_ENTRY;
    extern __shared__ int cnt[];
    int TK = T * K;
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        int c = 0;
        for (int i = 0; i < TK; i++) c += (sel[i] == e);
        cnt[e] = c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int acc = 0;
        for (int e = 0; e < E; e++) { int c = cnt[e]; off[e] = acc; cnt[e] = acc; acc += c; }
        off[E] = acc;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        int slot = cnt[e];
        for (int i = 0; i < TK; i++)
            if (sel[i] == e) { pair_tok[slot] = i / K; pair_of[i] = slot; pair_w[slot] = wts[i]; slot++; }
    }
}

// moe_group2: moe_group's outputs, bit for bit, in O(T*K) work instead of O(T*K*E): one
// block of 1024 threads. Counts by shared integer atomics (order-free), then the pairs in
// chunks of 1024 in index order; a pair's slot = its expert's running base + the pairs of its
// expert in earlier warps of the chunk (prefix over the warps' counts) + its rank among equal
// lanes of its warp (__match_any_sync). Dynamic shared memory: (E + 32*E) ints.
extern "C" __global__ void __launch_bounds__(1024) moe_group2(const int* __restrict__ sel, const float* __restrict__ wts,
                                                               int T, int K, int E, int* off, int* pair_tok,
                                                               int* pair_of, float* pair_w) {
    PDL_ENTRY;
    extern __shared__ int mg_sm[];
    int* cnt = mg_sm;       // [E] counts, then the next free slot of each expert
    int* wc = mg_sm + E;    // [32][E] per-warp counts of the chunk, then their slot bases
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const int NW = 32;
    const int TK = T * K;
    for (int i = tid; i < E; i += 1024) cnt[i] = 0;
    for (int i = tid; i < NW * E; i += 1024) wc[i] = 0;
    __syncthreads();
    for (int i = tid; i < TK; i += 1024) {
        int e = sel[i];
        if ((unsigned)e < (unsigned)E) atomicAdd(&cnt[e], 1);
    }
    __syncthreads();
    if (w == 0) {
        int per = (E + 31) >> 5;
        int lo = min(lane * per, E), hi = min(lo + per, E);
        int s = 0;
        for (int e = lo; e < hi; e++) s += cnt[e];
        int incl = warp_scan_incl(s);
        int run = incl - s;
        for (int e = lo; e < hi; e++) {
            int c = cnt[e];
            off[e] = run;
            cnt[e] = run;
            run += c;
        }
        if (lane == 31) off[E] = incl;
    }
    __syncthreads();
    for (int c0 = 0; c0 < TK; c0 += 1024) {
        int i = c0 + tid;
        int e = i < TK ? sel[i] : -1;
        if ((unsigned)e >= (unsigned)E) e = -1;
        unsigned m = __match_any_sync(0xffffffffu, e);
        int rank = __popc(m & ((1u << lane) - 1u));
        if (e >= 0 && rank == 0) wc[w * E + e] = __popc(m);
        __syncthreads();
        for (int x = tid; x < E; x += 1024) {
            int run = cnt[x];
            for (int q = 0; q < NW; q++) {
                int v = wc[q * E + x];
                wc[q * E + x] = run;
                run += v;
            }
            cnt[x] = run;
        }
        __syncthreads();
        if (e >= 0) {
            int slot = wc[w * E + e] + rank;
            pair_tok[slot] = i / K;
            pair_of[i] = slot;
            pair_w[slot] = wts[i];
        }
        __syncthreads();
        for (int j = tid; j < NW * E; j += 1024) wc[j] = 0;
        __syncthreads();
    }
}

// moe_group2's outputs (the same bits) from two launches of a block per chunk of 1024 pairs
// instead of one block walking the chunks in turn (143 us per layer of an 8K prefill: 48
// chunks, each five block barriers and a 32-step serial walk). moe_grp_count: the chunk's
// per-expert counts into cb[chunk][E] (cb = cbt + 1); the last block to finish (the ticket
// cbt[0], reset by it) turns them into every chunk's first slot per expert (off[e] plus the expert's
// pairs in earlier chunks) and writes off. moe_grp_place: moe_group2's per-chunk placement
// (warp counts, the prefix over warps, the rank among equal lanes) from those bases. Grid
// ceil(T K / 1024) each, block 1024; dynamic shared memory E ints (count) / 32 E (place).
extern "C" __global__ void __launch_bounds__(1024) moe_grp_count(const int* __restrict__ sel, int T, int K, int E, int* off, int* cbt) {
    PDL_ENTRY;
    int* cb = cbt + 1;  // cbt[0]: the ticket (zero between launches)
    extern __shared__ int mg_sm[];
    __shared__ int last;
    const int tid = threadIdx.x, c = blockIdx.x, nch = gridDim.x, TK = T * K;
    for (int e = tid; e < E; e += 1024) mg_sm[e] = 0;
    __syncthreads();
    const int i = c * 1024 + tid;
    const int e = i < TK ? sel[i] : -1;
    if ((unsigned)e < (unsigned)E) atomicAdd(&mg_sm[e], 1);
    __syncthreads();
    for (int x = tid; x < E; x += 1024) cb[c * E + x] = mg_sm[x];
    __threadfence();
    __syncthreads();
    if (tid == 0) last = atomicAdd(cbt, 1) == nch - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    // the expert totals (chunk order), their exclusive prefix (one warp over the experts, as
    // moe_group2), then each chunk's base
    for (int x = tid; x < E; x += 1024) {
        int run = 0;
        for (int q = 0; q < nch; q++) run += __ldcg(cb + q * E + x);
        mg_sm[x] = run;
    }
    __syncthreads();
    if (tid < 32) {
        const int lane = tid, per = (E + 31) >> 5;
        const int lo = min(lane * per, E), hi = min(lo + per, E);
        int s = 0;
        for (int x = lo; x < hi; x++) s += mg_sm[x];
        const int incl = warp_scan_incl(s);
        int run = incl - s;
        for (int x = lo; x < hi; x++) {
            const int v = mg_sm[x];
            off[x] = run;
            mg_sm[x] = run;
            run += v;
        }
        if (lane == 31) off[E] = incl;
    }
    __syncthreads();
    for (int x = tid; x < E; x += 1024) {
        int run = mg_sm[x];
        for (int q = 0; q < nch; q++) {
            const int v = __ldcg(cb + q * E + x);
            cb[q * E + x] = run;
            run += v;
        }
    }
    if (tid == 0) cbt[0] = 0;
}
extern "C" __global__ void __launch_bounds__(1024) moe_grp_place(const int* __restrict__ sel, const float* __restrict__ wts, int T,
                                                                  int K, int E, const int* __restrict__ cbt, int* pair_tok,
                                                                  int* pair_of, float* pair_w) {
    PDL_ENTRY;
    extern __shared__ int mg_sm[];  // [32][E] per-warp counts, then their slot bases
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, c = blockIdx.x, TK = T * K;
    for (int j = tid; j < 32 * E; j += 1024) mg_sm[j] = 0;
    __syncthreads();
    const int i = c * 1024 + tid;
    int e = i < TK ? sel[i] : -1;
    if ((unsigned)e >= (unsigned)E) e = -1;
    const unsigned m = __match_any_sync(0xffffffffu, e);
    const int rank = __popc(m & ((1u << lane) - 1u));
    if (e >= 0 && rank == 0) mg_sm[w * E + e] = __popc(m);
    __syncthreads();
    for (int x = tid; x < E; x += 1024) {
        int run = cbt[1 + c * E + x];
        for (int q = 0; q < 32; q++) {
            const int v = mg_sm[q * E + x];
            mg_sm[q * E + x] = run;
            run += v;
        }
    }
    __syncthreads();
    if (e >= 0) {
        const int slot = mg_sm[w * E + e] + rank;
        pair_tok[slot] = i / K;
        pair_of[i] = slot;
        pair_w[slot] = wts[i];
    }
}

// mid = silu(min(g, c)) * clamp(u, -c, c) * w   (w = 1 when pw == 0), value i of n rows of F
// (moe_mid_gu: common.cuh, shared with gemm_qs_gu's epilogue)
__device__ __forceinline__ float moe_mid_at(const float* __restrict__ g, const float* __restrict__ u,
                                            const float* __restrict__ pw, int F, float clamp, i64 i) {
    float m = moe_mid_gu(g[i], u[i], clamp);
    return pw ? m * pw[i / F] : m;
}
// moe_mid_at for every value into mid (f32), or with mid16 != 0 stored rounded to f16 there
// instead (the f16-activation expert GEMM, GQ_FLAG_XH; the same rounding the f32 path gets
// inside the GEMM), in gemm_qr's K order (qr_kpos; F % 32 == 0) when perm == 1 (a thread per
// value) or 3 (a thread per 32-value block, the same bits). perm == 2:
// a thread per pair of values (2i, 2i + 1; F even, n * F / 2 threads), packed by pack_h2 as
// x_to_f16 packs them: the cuBLAS path's f16 copy of the f32 mids (DS4_MID_F16).
// perm == 4: the same values as perm 3 with a warp per 32 consecutive blocks: lane l loads the
// float4s l, l + 32, ... of the warp's 1024 values (each load instruction 512 contiguous bytes;
// perm 3's lanes were 128 bytes apart, so every instruction touched 32 lines: 2.0 TB/s at 8K
// tokens, session 19), packs its pairs into the warp's 2 KB of shared memory at their K-order
// places, and the warp stores the 2 KB as 512 contiguous bytes per instruction. 256 threads.
// perm == 6: perm 4 reading g and u as f16 (the expert GEMMs' GQ_FLAG_Y16 outputs).
// The mids of values 4c .. 4c + 3 of a 32-value block (quad c; g, u as float4, times w when
// weighted), packed as the logical f16 pairs 2c, 2c + 1 at their gemm_qr K-order places
// qr_kpos(4c) / 2, qr_kpos(4c + 2) / 2 of the block's 16 words `o` (perm 3 and 4).
__device__ __forceinline__ void moe_mid_quad(float4 a, float4 b, float clamp, bool weighted, float w, int c, u32* o) {
    float m0 = moe_mid_gu(a.x, b.x, clamp), m1 = moe_mid_gu(a.y, b.y, clamp);
    float m2 = moe_mid_gu(a.z, b.z, clamp), m3 = moe_mid_gu(a.w, b.w, clamp);
    if (weighted) {
        m0 *= w; m1 *= w; m2 *= w; m3 *= w;
    }
    o[qr_kpos(4 * c) >> 1] = pack_h2(m0, m1);
    o[qr_kpos(4 * c + 2) >> 1] = pack_h2(m2, m3);
}
#define MID_W_WARPS 8
template <bool GH>
__device__ __forceinline__ void moe_mid_warp(const void* __restrict__ g, const void* __restrict__ u,
                                             const float* __restrict__ pw, int n, int F, float clamp, u16* mid16) {
    __shared__ u32 st[MID_W_WARPS][32 * 16];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const i64 nb = (i64)n * F / 32;
    const i64 b0 = ((i64)blockIdx.x * MID_W_WARPS + w) * 32;  // the warp's first block
    if (b0 >= nb) return;
    u32* sw = st[w];
    float4 ga[8], ua[8];
#pragma unroll
    for (int q = 0; q < 8; q++) {
        const i64 b = b0 + 4 * q + (lane >> 3);
        const i64 f = b0 * 8 + lane + 32 * q;  // float4 index
        ga[q] = b < nb ? mid_ld4<GH>(g, f) : make_float4(0.f, 0.f, 0.f, 0.f);
        ua[q] = b < nb ? mid_ld4<GH>(u, f) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    const int c = lane & 7;  // the lane's quad within each of its blocks
#pragma unroll
    for (int q = 0; q < 8; q++) {
        const i64 b = b0 + 4 * q + (lane >> 3);
        const float wt = (pw && b < nb) ? pw[b * 32 / F] : 1.f;
        moe_mid_quad(ga[q], ua[q], clamp, pw != nullptr, wt, c, sw + 16 * (4 * q + (lane >> 3)));
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int wd = 4 * (lane + 32 * j);  // u32 index in the warp's 512
        if (b0 + wd / 16 < nb) *(uint4*)((u32*)mid16 + b0 * 16 + wd) = *(const uint4*)(sw + wd);
    }
}

extern "C" __global__ void moe_mid(const float* __restrict__ g, const float* __restrict__ u,
                                   const float* __restrict__ pw, int n, int F, float clamp, float* mid, u16* mid16,
                                   int perm) {
    PDL_ENTRY;
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (perm == 4) {
        moe_mid_warp<false>(g, u, pw, n, F, clamp, mid16);
        return;
    }
    if (perm == 3) {
        // a thread per 32-value block i (F % 32 == 0, mid16): 16-byte loads of g and u, the
        // block's 64 bytes of f16 in gemm_qr's K order as four 16-byte stores (the same values
        // and rounding as perm 1, whose thread per value kept ~1.6 TB/s in flight)
        if (i >= (i64)n * F / 32) return;
        const i64 i0 = i * 32;
        const float4* g4 = (const float4*)(g + i0);
        const float4* u4 = (const float4*)(u + i0);
        const float w = pw ? pw[i0 / F] : 1.f;
        u32 o[16];
#pragma unroll
        for (int q = 0; q < 8; q++) moe_mid_quad(g4[q], u4[q], clamp, pw != nullptr, w, q, o);
        uint4* d = (uint4*)(mid16 + i0);
#pragma unroll
        for (int c = 0; c < 4; c++) d[c] = make_uint4(o[4 * c], o[4 * c + 1], o[4 * c + 2], o[4 * c + 3]);
        return;
    }
    if (perm == 5) {
        // perm 2's pairs, two per thread from 16-byte loads (n * F % 4 == 0, g / u 16-byte and
        // mid16 8-byte aligned): the same values. Why: perm 2's 4-byte loads kept ~1.1 TB/s in
        // flight (the shared expert's mids, 155 us per layer of an 8K prefill)
        if (i >= (i64)n * F / 4) return;
        const float4 a = ((const float4*)g)[i], b = ((const float4*)u)[i];
        ((uint2*)mid16)[i] = make_uint2(pack_h2(moe_mid_gu(a.x, b.x, clamp), moe_mid_gu(a.y, b.y, clamp)),
                                        pack_h2(moe_mid_gu(a.z, b.z, clamp), moe_mid_gu(a.w, b.w, clamp)));
        return;
    }
    if (perm == 2) {
        if (i >= (i64)n * F / 2) return;
        float m0 = moe_mid_at(g, u, pw, F, clamp, 2 * i), m1 = moe_mid_at(g, u, pw, F, clamp, 2 * i + 1);
        ((u32*)mid16)[i] = pack_h2(m0, m1);
        return;
    }
    if (i >= (i64)n * F) return;
    float m = moe_mid_at(g, u, pw, F, clamp, i);
    if (mid16) mid16[perm ? i - (i & 31) + qr_kpos((int)(i & 31)) : i] = f2h(m);
    else mid[i] = m;
}
// moe_mid's warp form (perm 4) on f16 g and u (the routed experts' GQ_FLAG_Y16 outputs,
// `DS4_EXP_Y16`; 8-byte aligned): the same mids. Its own entry point so that moe_mid compiles
// as it did before (tools/gpu/sass_diff.py).
extern "C" __global__ void moe_mid_h(const u16* __restrict__ g, const u16* __restrict__ u, const float* __restrict__ pw, int n,
                                     int F, float clamp, u16* mid16) {
    PDL_ENTRY;
    moe_mid_warp<true>(g, u, pw, n, F, clamp, mid16);
}

// moe_mid's perm 5 (the shared expert's f16 mids, two pairs per thread) on f16 g and u (its
// gate / up outputs as cuBLAS writes them under `DS4_DENSE_Y16` bit 4; n * F % 4 == 0, 8-byte
// aligned): the mids of the widened values.
extern "C" __global__ void moe_mid_pairs_h(const u16* __restrict__ g, const u16* __restrict__ u, int n, int F, float clamp, u16* mid16) {
    PDL_ENTRY;
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (i64)n * F / 4) return;
    const float4 a = hcs_cvt4(((const uint2*)g)[i]), b = hcs_cvt4(((const uint2*)u)[i]);
    ((uint2*)mid16)[i] = make_uint2(pack_h2(moe_mid_gu(a.x, b.x, clamp), moe_mid_gu(a.y, b.y, clamp)),
                                    pack_h2(moe_mid_gu(a.z, b.z, clamp), moe_mid_gu(a.w, b.w, clamp)));
}

// out[t] = sum_i ypair[pair_of[t*K+i]] (selection order) + shared[t]. Prefill's hc_post_mix
// computes the same sum itself (moe_sum_at: keep the two in step) unless DS4_FUSE_COMBINE=0.
extern "C" __global__ void moe_combine(const float* __restrict__ ypair, const int* __restrict__ pair_of,
                                       const float* __restrict__ shared, int K, int D, float* out) {
    PDL_ENTRY;
    int t = blockIdx.y;
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= D) return;
    float acc = 0.f;
    for (int i = 0; i < K; i++) acc += ypair[(i64)pair_of[t * K + i] * D + d];
    out[(i64)t * D + d] = acc + shared[(i64)t * D + d];
}

// Greedy sampling: the index of the largest x[i], i != excl (NaN never wins; ties go to the
// lowest index; 0x7fffffff when nothing qualifies). Many blocks (one 1024-thread block was a
// 52 us serial scan of the 129K logits, 0.7 % of a decoded token): each block's best as a
// 64-bit key (orderable value bits, then the inverted index) into an integer atomicMax, which
// is exact and order independent (deterministic); the last block by ticket publishes the
// index and leaves key and ticket zero for the next launch. st: u32 [0] out, [1] ticket,
// [2..4) the key (8-byte aligned). tok (greedy decoding on the device, may be null): the
// publisher also writes the index as the next decode step's token (0 when nothing qualified:
// the host reads st[0] and reports that) and next_pos as its position.
extern "C" __global__ void __launch_bounds__(256) argmax_excl(const float* __restrict__ x, int n, int excl, u32* st, int* tok,
                                                              int* pos, int next_pos) {
    PDL_ENTRY;
    __shared__ unsigned long long bk[8];
    unsigned long long key = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float xi = x[i];
        if (i == excl || xi != xi) continue;
        unsigned long long k = ((unsigned long long)fkey(xi) << 32) | (u32)(0xffffffffu - (u32)i);
        key = k > key ? k : key;
    }
    for (int o = 16; o > 0; o >>= 1) {
        unsigned long long ok = __shfl_xor_sync(0xffffffffu, key, o);
        key = ok > key ? ok : key;
    }
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) bk[w] = key;
    __syncthreads();
    unsigned long long* slot = (unsigned long long*)(st + 2);
    if (threadIdx.x == 0) {
        for (int k = 1; k < (int)(blockDim.x >> 5); k++) key = bk[k] > key ? bk[k] : key;
        if (key) atomicMax(slot, key);
        __threadfence();
        if (atomicAdd(st + 1, 1u) == gridDim.x - 1) {
            __threadfence();
            unsigned long long best = atomicExch(slot, 0ull);
            u32 win = best ? 0xffffffffu - (u32)best : 0x7fffffffu;
            st[0] = win;
            st[1] = 0;
            if (tok) {
                tok[0] = win < (u32)n ? (int)win : 0;
                pos[0] = next_pos;
            }
        }
    }
}

// Sampling where the logits are (Backend::eval_near_max): every x[i] with (x[i] - m) / t >=
// floor, m = x[amax[0]] (argmax_excl's winner, launched just before), appended to o as (i,
// value bits) pairs after a NEAR_HDR-word header: o[0] the number found (only the first cap
// are written), o[1] the non-finite logits (the host then reads all logits), o[2] the winner,
// o[3] m's bits, o[4..6] the f64 sum of exp((x[i] - m) / t) over the finite logits when `part`
// is given (top_p < 1), o[6] the blocks' ticket for it. Words 0, 1 and 6 must be zero at
// launch. The pairs' order is the atomics' (the host sorts them by id): one atomic per warp
// that finds any (a flat distribution's 129K appends would queue on one address). The sum:
// each thread's logits in f64 (expf's values, within 2 ulp), the block's in a fixed tree,
// part[block], then the last block (ticket) adds the blocks' partials in order: the same bits
// every run (sampling::NEAR_SUM_TOL bounds its error).
#define NEAR_HDR 8
extern "C" __global__ void __launch_bounds__(256) near_max(const float* __restrict__ x, int n, const u32* __restrict__ amax, float t,
                                                           float floor, u32* o, int cap, double* part) {
    PDL_ENTRY;
    __shared__ double wsum_s[8];
    const u32 b = amax[0];
    if (b >= (u32)n) {
        if (blockIdx.x == 0 && threadIdx.x == 0) o[1] = 1u;
        return;
    }
    const float m = x[b];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        o[2] = b;
        o[3] = __float_as_uint(m);
    }
    const int lane = threadIdx.x & 31;
    double ws = 0.0;
    // (whole warps step together: the ballots need every lane)
    for (int base = blockIdx.x * blockDim.x + (threadIdx.x & ~31); base < n; base += gridDim.x * blockDim.x) {
        const int i = base + lane;
        const float v = i < n ? x[i] : 0.f;
        const bool fin = isfinite(v);
        const float xs = (v - m) / t;
        if (part && i < n && fin) ws += (double)expf(xs);
        const bool keep = i < n && fin && xs >= floor;
        const unsigned bad = __ballot_sync(0xffffffffu, i < n && !fin);
        const unsigned kb = __ballot_sync(0xffffffffu, keep);
        if (lane == 0 && bad) atomicAdd(o + 1, (u32)__popc(bad));
        if (kb) {
            u32 first = 0;
            if (lane == 0) first = atomicAdd(o, (u32)__popc(kb));
            first = __shfl_sync(0xffffffffu, first, 0);
            const u32 k = first + (u32)__popc(kb & ((1u << lane) - 1u));
            if (keep && k < (u32)cap) {
                o[NEAR_HDR + 2 * k] = (u32)i;
                o[NEAR_HDR + 1 + 2 * k] = __float_as_uint(v);
            }
        }
    }
    if (!part) return;
    double d = warp_sum_d(ws);
    if (lane == 0) wsum_s[threadIdx.x >> 5] = d;
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0.0;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++) s += wsum_s[w];
        part[blockIdx.x] = s;
        __threadfence();
        if (atomicAdd(o + 6, 1u) == gridDim.x - 1) {
            __threadfence();
            s = 0.0;
            for (int k = 0; k < (int)gridDim.x; k++) s += __ldcg(part + k);
            o[4] = (u32)__double_as_longlong(s);
            o[5] = (u32)(__double_as_longlong(s) >> 32);
        }
    }
}

// Sampling with top_k where the logits are (Backend::eval_top_k): the k < n largest logits,
// ties to the smaller id (sampling::plan_top_k's rule), by the indexer's radix select on one
// cluster (topk_rows), into sel in ascending id order. The caller has checked that every logit
// is finite (near_max's count: fkey orders NaN above +inf).
extern "C" __global__ void __cluster_dims__(TOPK_CL, 1, 1) __launch_bounds__(1024)
    topk_logits(const float* __restrict__ x, int n, int k, int* sel) {
    PDL_ENTRY;
    __shared__ TopkSmem s;
    if (n <= k) return;  // (the whole cluster: no barrier is left waiting)
    if (n <= 16 * (int)blockDim.x * TOPK_CL) topk_rows<16, TOPK_CL>(s, nullptr, x, n, 0, nullptr, k, sel, 0, nullptr);
    else topk_rows<-1, TOPK_CL>(s, nullptr, x, n, 0, nullptr, k, sel, 0, nullptr);
}
// topk_logits' ids with their logits' bits as near_max's pairs, o[0] = k.
extern "C" __global__ void __launch_bounds__(1024) topk_pairs(const float* __restrict__ x, const int* __restrict__ sel, int k, u32* o) {
    PDL_ENTRY;
    for (int i = threadIdx.x; i < k; i += blockDim.x) {
        const int id = sel[i];
        o[NEAR_HDR + 2 * i] = (u32)id;
        o[NEAR_HDR + 1 + 2 * i] = __float_as_uint(x[id]);
    }
    if (threadIdx.x == 0) o[0] = (u32)k;
}

// Read probe for the decode matvec benches: the least time a kernel needs to read n float4
// at this size (4 loads in flight per thread; the xor keeps the loads alive: the store
// practically never happens).
extern "C" __global__ void __launch_bounds__(256) read_f4(const uint4* __restrict__ x, i64 n, u32* __restrict__ out) {
    PDL_ENTRY;
    u32 acc = 0;
    const i64 st = (i64)gridDim.x * blockDim.x;
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * st < n; i += 4 * st) {
        uint4 a = __ldg(x + i), b = __ldg(x + i + st), c = __ldg(x + i + 2 * st), d = __ldg(x + i + 3 * st);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += st) {
        uint4 a = __ldg(x + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9e3779b9u) out[0] = acc;
}

// Bandwidth probe: y[i] = x[i] (float4), used by ds4-bench for the device-copy ceiling.
extern "C" __global__ void copy_f4(const float4* __restrict__ x, float4* __restrict__ y, i64 n) {
    PDL_ENTRY;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) y[i] = x[i];
}
