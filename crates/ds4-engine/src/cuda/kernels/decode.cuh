// ------------------------------------------------------------------------------------------
// Decode (T = 1) kernels: attention in one launch (attn_dec) and the MoE router (moe_route_w).
// The previous pair attn_partial + attn_combine and moe_route stay for prefill and for A/B
// (DS4_ATTN_DEC=old, DS4_ROUTE=old).
// ------------------------------------------------------------------------------------------

// Decode attention with sink (MODEL.md §2.5.7-2.5.8), same function as attn_partial +
// attn_combine for one token. Grid (ceil(H/8) head groups, nsplit row splits), nsplit a
// multiple of ADC_CL; clusters of ADC_CL consecutive splits. Block: 8 heads, 8 warps; warp w
// serves heads 2*(w&3), 2*(w&3)+1 (each K=V row read from shared memory feeds two heads) over
// one of two row subsets (w>>2) of every tile. Steps:
//   1. the split's rows (at most ADC_TR per tile) go to shared memory by cp.async in two
//      commit groups, issued before the q prologue (RMSNorm, RoPE from a per-block cos/sin
//      table) so that the loads overlap it;
//   2. online softmax per (warp, head) over rows taken two at a time;
//   3. each block leaves its 2 x 8 partials (m, l, o) in its shared memory; after a cluster
//      barrier, rank r merges its run of dq/8 float4 columns of all 16 partials of the cluster
//      (fixed order) through distributed shared memory;
//   4. with one cluster per head group that is the final merge (sink, normalization, inverse
//      RoPE); with NC = nsplit / 8 > 1 every rank writes its merged slice to `part`, and the
//      last of the NC ranks r of the head group (a per-(group, rank) counter, reset by that
//      block for the next launch or graph replay) merges the NC slices in cluster order.
// Deterministic: every sum has a fixed order that does not depend on arrival order.
#define ADC_HPB 8
#define ADC_TR 48
#define ADC_CL 8

struct AttnDecArgs {
    const float* q;      // [H*Dh] q_b output (before the per-head norm and RoPE)
    const float* raw;    // ring [cap][Dh]
    const float* comp;   // compressed rows [.][Dh] (ratio > 0)
    const int* sel;      // [topk] indexer selection (ratio 4)
    const int* pos;      // [1]
    const float* omega;  // [R/2]
    const float* sinks;  // [H]
    float* part;         // [G][NC][8][Dh] merged o, then [G][NC][8 ranks][8][2] (m, l)
    int* cnt;            // [G][8] zero between launches
    float* out;          // [H][Dh]
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
    u64* trace;  // kernel bench only (nullptr: off): ADC_TRACE phase times per block
    signed char* qs;  // out also as int8 blocks (quant_q8's layout and values; nullptr: not)
    float2* qd;
};

// Phase k of this block's trace (%globaltimer, thread 0): 0 entry, 1 q prologue done, 2 rows
// done, 3 first cluster barrier passed, 4 cluster merge done, 5 cross-cluster counter taken,
// 6 output written.
#define ADC_TRACE(k)                                     \
    if (a.trace && tid == 0) a.trace[8 * ((i64)blockIdx.x * gridDim.y + blockIdx.y) + (k)] = gtimer();

extern "C" __global__ void __cluster_dims__(1, ADC_CL, 1) __launch_bounds__(256, 2) attn_dec(AttnDecArgs a) {
    PDL_ENTRY;
    extern __shared__ float4 adc_sm4[];
    float* ks = (float*)adc_sm4;  // [ADC_TR][Dh] row tile; after the rows: [2][8][Dh] partial o
    __shared__ float cs[2][256];  // cos, sin of the RoPE pairs at p
    __shared__ float2 pml_s[2 * ADC_HPB];  // [subset][head] partial (m, l)
    __shared__ int last;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = blockIdx.x, sp = blockIdx.y;
    ADC_TRACE(0);
    const int Dh = a.Dh, dq = Dh >> 2;
    const int p = a.pos[0];
    const int nraw = min(p + 1, a.W);
    // (div_small: these divisions sit between the position's load and the first row copy)
    const int ncv = a.ratio ? div_small(p + 1, a.ratio) : 0;
    const bool use_sel = (a.ratio == 4) && (ncv > a.topk);
    const int n = nraw + (use_sel ? a.topk : ncv);
    const int chunk = div_small(n + a.nsplit - 1, a.nsplit);
    const int r0 = min(n, sp * chunk), r1 = min(n, r0 + chunk);

    // cp.async of rows [tb, tb + cnt) into the tile: rows [0, hlf) then [hlf, cnt) as two
    // commit groups; warp w copies rows w, w + 8, ... of each half (lane j of the warp first
    // resolves the source of its j-th row: the indexer lookups are issued in parallel).
    auto issue = [&](int tb, int cnt) {
        int hlf = (cnt + 1) >> 1;
        int ph_l = lane >> 4, i_l = lane & 15;
        int b0 = ph_l ? hlf : 0, b1 = ph_l ? cnt : hlf;
        int myr = b0 + warp + 8 * i_l;
        const float* src = a.raw;
        if (myr < b1) {
            int r = tb + myr;
            if (r < nraw) {
                const int q = p - nraw + 1 + r;
                src = a.raw + (i64)(q - div_small(q, a.cap) * a.cap) * Dh;
            }
            else {
                int ci = r - nraw;
                int c = use_sel ? a.sel[ci] : ci;
                src = a.comp + (i64)c * Dh;
            }
        }
        for (int ph = 0; ph < 2; ph++) {
            int c0 = ph ? hlf : 0, c1 = ph ? cnt : hlf;
            for (int i = 0; c0 + warp + 8 * i < c1; i++) {  // warp-uniform bound
                const float* s = (const float*)__shfl_sync(0xffffffffu, (long long)src, ph * 16 + i);
                float* d = ks + (i64)(c0 + warp + 8 * i) * Dh;
                for (int c4 = lane; c4 < dq; c4 += 32) cp_async16(smem_u32(d + 4 * c4), s + 4 * c4, 16);
            }
            cp_commit();
        }
    };
    // this warp's two query heads, loaded before the row copies are issued (for ratio 4 those
    // first wait for the indexer selection: the two round trips overlap)
    const int hp = warp & 3, rs = warp >> 2;
    const int hb = g * ADC_HPB + 2 * hp;  // heads hb, hb + 1
    const bool hv0 = hb < a.H, hv1 = hb + 1 < a.H;
    float qv[2][16];
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const float* qh = a.q + (i64)((j ? hv1 : hv0) ? hb + j : 0) * Dh;
#pragma unroll
        for (int jj = 0; jj < 4; jj++) {
            int d = 4 * lane + 128 * jj;
            float4 v = d < Dh ? *(const float4*)(qh + d) : make_float4(0.f, 0.f, 0.f, 0.f);
            qv[j][4 * jj] = v.x; qv[j][4 * jj + 1] = v.y; qv[j][4 * jj + 2] = v.z; qv[j][4 * jj + 3] = v.w;
        }
    }
    if (r0 < r1) issue(r0, min(ADC_TR, r1 - r0));

    // q prologue (overlaps the copies): cos/sin table, per-head RMSNorm (f64 sum of squares as
    // in attn_partial), RoPE on the tail pairs.
    for (int k = tid; k < a.R / 2; k += blockDim.x) {
        float th = (float)p * a.omega[k];
        cs[0][k] = cosf(th);
        cs[1][k] = sinf(th);
    }
#pragma unroll
    for (int j = 0; j < 2; j++) {
        double ss = 0.0;
#pragma unroll
        for (int jj = 0; jj < 4; jj++)
#pragma unroll
            for (int i = 0; i < 4; i++) ss += (double)qv[j][4 * jj + i] * (double)qv[j][4 * jj + i];
        ss = warp_sum_d(ss);
        float rsn = 1.f / sqrtf((float)(ss / (double)Dh) + a.eps);
#pragma unroll
        for (int i = 0; i < 16; i++) qv[j][i] *= rsn;
    }
    __syncthreads();  // cs ready
    const int Dn = Dh - a.R;
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int jj = 0; jj < 4; jj++)
#pragma unroll
            for (int pr = 0; pr < 2; pr++) {
                int d = 4 * lane + 128 * jj + 2 * pr;
                if (d < Dh && d >= Dn) {
                    int k = (d - Dn) >> 1;
                    float c = cs[0][k], s = cs[1][k];
                    float x0 = qv[j][4 * jj + 2 * pr], x1 = qv[j][4 * jj + 2 * pr + 1];
                    qv[j][4 * jj + 2 * pr] = x0 * c - x1 * s;
                    qv[j][4 * jj + 2 * pr + 1] = x0 * s + x1 * c;
                }
            }

    ADC_TRACE(1);
    const float scale = 1.f / sqrtf((float)Dh);
    float m[2] = {-INF_F, -INF_F}, l[2] = {0.f, 0.f};
    float o[2][16];
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int i = 0; i < 16; i++) o[j][i] = 0.f;

    for (int tb = r0; tb < r1; tb += ADC_TR) {
        const int cnt = min(ADC_TR, r1 - tb);
        if (tb != r0) {
            __syncthreads();  // the previous tile is consumed
            issue(tb, cnt);
        }
        const int hlf = (cnt + 1) >> 1;
        for (int ph = 0; ph < 2; ph++) {
            if (ph == 0) cp_wait<1>();
            else cp_wait<0>();
            __syncthreads();
            if (!hv0) continue;
            const int c0 = ph ? hlf : 0, c1 = ph ? cnt : hlf;
            const int cw = (c1 - c0 + 1) >> 1;
            const int w0 = rs ? c0 + cw : c0, w1 = rs ? c1 : c0 + cw;
            for (int rr = w0; rr < w1; rr += 2) {
                const bool two = rr + 1 < w1;
                const float* k0p = ks + (i64)rr * Dh;
                const float* k1p = ks + (i64)(two ? rr + 1 : rr) * Dh;
                float k0[16], k1[16];
#pragma unroll
                for (int jj = 0; jj < 4; jj++) {
                    int d = 4 * lane + 128 * jj;
                    float4 u = make_float4(0.f, 0.f, 0.f, 0.f), v = u;
                    if (d < Dh) {
                        u = *(const float4*)(k0p + d);
                        v = *(const float4*)(k1p + d);
                    }
                    k0[4 * jj] = u.x; k0[4 * jj + 1] = u.y; k0[4 * jj + 2] = u.z; k0[4 * jj + 3] = u.w;
                    k1[4 * jj] = v.x; k1[4 * jj + 1] = v.y; k1[4 * jj + 2] = v.z; k1[4 * jj + 3] = v.w;
                }
                // per-lane partial dots (the attn_partial expression), then 4 warp sums
                float s00 = 0.f, s01 = 0.f, s10 = 0.f, s11 = 0.f;
#pragma unroll
                for (int jj = 0; jj < 4; jj++) {
                    const int b = 4 * jj;
                    s00 += qv[0][b] * k0[b] + qv[0][b + 1] * k0[b + 1] + qv[0][b + 2] * k0[b + 2] + qv[0][b + 3] * k0[b + 3];
                    s01 += qv[0][b] * k1[b] + qv[0][b + 1] * k1[b + 1] + qv[0][b + 2] * k1[b + 2] + qv[0][b + 3] * k1[b + 3];
                    s10 += qv[1][b] * k0[b] + qv[1][b + 1] * k0[b + 1] + qv[1][b + 2] * k0[b + 2] + qv[1][b + 3] * k0[b + 3];
                    s11 += qv[1][b] * k1[b] + qv[1][b + 1] * k1[b + 1] + qv[1][b + 2] * k1[b + 2] + qv[1][b + 3] * k1[b + 3];
                }
#pragma unroll
                for (int of = 16; of > 0; of >>= 1) {
                    s00 += __shfl_xor_sync(0xffffffffu, s00, of);
                    s01 += __shfl_xor_sync(0xffffffffu, s01, of);
                    s10 += __shfl_xor_sync(0xffffffffu, s10, of);
                    s11 += __shfl_xor_sync(0xffffffffu, s11, of);
                }
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    float sa = (j ? s10 : s00) * scale;
                    float sb = two ? (j ? s11 : s01) * scale : -INF_F;
                    float mn = fmaxf(m[j], fmaxf(sa, sb));
                    if (mn > m[j]) {  // warp-uniform (the scores are warp sums); rare once m settles
                        float fac = (m[j] == -INF_F) ? 0.f : expf(m[j] - mn);
                        l[j] *= fac;
#pragma unroll
                        for (int i = 0; i < 16; i++) o[j][i] *= fac;
                        m[j] = mn;
                    }
                    float ea = expf(sa - mn), eb = two ? expf(sb - mn) : 0.f;
                    l[j] += ea + eb;
#pragma unroll
                    for (int i = 0; i < 16; i++) o[j][i] += ea * k0[i] + eb * k1[i];
                }
            }
        }
    }
    ADC_TRACE(2);
    // partials of this block into shared memory (over the row tile)
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const int hl = 2 * hp + j;
        float* op = ks + (i64)(rs * ADC_HPB + hl) * Dh;
#pragma unroll
        for (int jj = 0; jj < 4; jj++) {
            int d = 4 * lane + 128 * jj;
            if (d < Dh) *(float4*)(op + d) = make_float4(o[j][4 * jj], o[j][4 * jj + 1], o[j][4 * jj + 2], o[j][4 * jj + 3]);
        }
        if (lane == 0) {
            pml_s[rs * ADC_HPB + hl] = make_float2(m[j], l[j]);
        }
    }
    __syncthreads();
    cluster_sync_all();
    ADC_TRACE(3);

    // cluster merge in one round of remote loads: each thread loads the 16 partials' (m, l)
    // of its head and its float4 column of all 16 partial o (fixed order: rank, subset; a
    // partial without rows has o = 0, m = -inf, l = 0), then derives the weights itself (the
    // same max and sums, in the same order, as one thread per head did, so the same bits; the
    // two-round form with two block barriers and a serial weight phase between them took
    // ~3.4 us after the cluster barrier in every case, kbench dec trace, session 25).
    // Rank r merges a contiguous run of dq/8 float4 columns of the 8 heads (consecutive threads
    // read consecutive 16 bytes of the remote partials; the strided c4 = rank + 8 i put a
    // warp's remote loads in the same banks), one per thread.
    const u32 rank = cluster_rank();
    const int cidx = sp / ADC_CL, NC = a.nsplit / ADC_CL;
    const int nq = (dq + ADC_CL - 1) / ADC_CL;
    const int c4 = (int)rank * nq + tid % nq;
    const bool have = tid < ADC_HPB * nq && c4 < dq;
    const int hl = have ? tid / nq : 0;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    float Mc = -INF_F, Lc = 0.f;
    if (have) {
        float2 ml[2 * ADC_CL];
        float4 v[2 * ADC_CL];
#pragma unroll
        for (int e = 0; e < 2 * ADC_CL; e++) {
            ml[e] = ld_dsmem2(dsmem_addr(&pml_s[(e & 1) * ADC_HPB + hl], e >> 1));
            v[e] = ld_dsmem4(dsmem_addr(ks + (i64)((e & 1) * ADC_HPB + hl) * Dh + 4 * c4, e >> 1));
        }
#pragma unroll
        for (int e = 0; e < 2 * ADC_CL; e++)
            if (ml[e].y > 0.f) Mc = fmaxf(Mc, ml[e].x);
#pragma unroll
        for (int e = 0; e < 2 * ADC_CL; e++) {
            float w = ml[e].y > 0.f ? expf(ml[e].x - Mc) : 0.f;
            Lc += ml[e].y * w;
            if (w > 0.f) {
                acc.x += w * v[e].x;
                acc.y += w * v[e].y;
                acc.z += w * v[e].z;
                acc.w += w * v[e].w;
            }
        }
    }
    cluster_sync_all();  // no block leaves while another still reads its shared memory
    ADC_TRACE(4);

    const int h = g * ADC_HPB + hl;
    const bool hv = have && h < a.H;
    if (NC > 1) {
        float* po = a.part;
        float* pml = a.part + (i64)gridDim.x * NC * ADC_HPB * Dh;
        if (have) *(float4*)(po + ((i64)(g * NC + cidx) * ADC_HPB + hl) * Dh + 4 * c4) = acc;
        if (have && tid % nq == 0) {  // (a rank without columns writes none: none are read)
            i64 b = (((i64)(g * NC + cidx) * ADC_CL + rank) * ADC_HPB + hl) * 2;
            pml[b] = Mc;
            pml[b + 1] = Lc;
        }
        __threadfence();
        __syncthreads();
        if (tid == 0) {
            int prev = atomicAdd(&a.cnt[g * ADC_CL + rank], 1);
            last = prev == NC - 1;
            if (last) atomicExch(&a.cnt[g * ADC_CL + rank], 0);
        }
        __syncthreads();
        ADC_TRACE(5);
        if (!last) return;
        __threadfence();
        if (!hv) return;
        // merge the NC cluster slices in cluster order (L2 reads: other blocks wrote them)
        const float sink = a.sinks[h];
        float M = sink;
        for (int c = 0; c < NC; c++) {
            i64 b = (((i64)(g * NC + c) * ADC_CL + rank) * ADC_HPB + hl) * 2;
            float mc = __ldcg(pml + b), lc = __ldcg(pml + b + 1);
            if (lc > 0.f) M = fmaxf(M, mc);
        }
        float den = expf(sink - M);
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int c = 0; c < NC; c++) {
            i64 b = (((i64)(g * NC + c) * ADC_CL + rank) * ADC_HPB + hl) * 2;
            float mc = __ldcg(pml + b), lc = __ldcg(pml + b + 1);
            float4 u = __ldcg((const float4*)(po + ((i64)(g * NC + c) * ADC_HPB + hl) * Dh + 4 * c4));  // loaded unconditionally: no round trip behind the test
            if (lc > 0.f) {
                float w = expf(mc - M);
                den += lc * w;
                v.x += w * u.x;
                v.y += w * u.y;
                v.z += w * u.z;
                v.w += w * u.w;
            }
        }
        acc = v;
        Mc = M;
        Lc = den;  // acc / Lc below
    } else {
        if (!hv) return;
        const float sink = a.sinks[h];
        float M = Lc > 0.f ? fmaxf(sink, Mc) : sink;
        float den = expf(sink - M);
        if (Lc > 0.f) {
            float w = expf(Mc - M);
            den += Lc * w;
            acc.x *= w;
            acc.y *= w;
            acc.z *= w;
            acc.w *= w;
        } else {
            acc = make_float4(0.f, 0.f, 0.f, 0.f);
        }
        Lc = den;
    }
    float y[4] = {acc.x / Lc, acc.y / Lc, acc.z / Lc, acc.w / Lc};
    // inverse RoPE (angle -p) on the tail pairs, as rope_tail_smem(.., -1)
#pragma unroll
    for (int pr = 0; pr < 2; pr++) {
        int d = 4 * c4 + 2 * pr;
        if (d >= Dn) {
            int k = (d - Dn) >> 1;
            float c = cs[0][k], s = -cs[1][k];
            float x0 = y[2 * pr], x1 = y[2 * pr + 1];
            y[2 * pr] = x0 * c - x1 * s;
            y[2 * pr + 1] = x0 * s + x1 * c;
        }
    }
    *(float4*)(a.out + (i64)h * Dh + 4 * c4) = make_float4(y[0], y[1], y[2], y[3]);
    if (a.qs) {
        // the int8 copy for out_a (no quant_q8 launch): a 32-value block is 8 consecutive c4 of
        // one head, i.e. an aligned group of 8 lanes (nq = dq / 8 columns per head and rank,
        // a multiple of 8: session.rs attn_dec_q8_ok); q8_code and q8_scale, the max and the
        // code sum over the group (both exact in any order)
        const u32 gm = 0xffu << (lane & 24);
        float am = fmaxf(fmaxf(fabsf(y[0]), fabsf(y[1])), fmaxf(fabsf(y[2]), fabsf(y[3])));
#pragma unroll
        for (int o = 4; o > 0; o >>= 1) am = fmaxf(am, __shfl_xor_sync(gm, am, o));
        int q[4], sq = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = q8_code(y[i], am);
            sq += q[i];
        }
#pragma unroll
        for (int o = 4; o > 0; o >>= 1) sq += __shfl_xor_sync(gm, sq, o);
        const i64 e0 = (i64)h * Dh + 4 * c4;
        *(char4*)(a.qs + e0) = make_char4((signed char)q[0], (signed char)q[1], (signed char)q[2], (signed char)q[3]);
        if ((lane & 7) == 0) a.qd[e0 >> 5] = q8_scale(am, sq);
    }
    ADC_TRACE(6);
}

// ------------------------------------------------------------------------------------------
// MoE routing (MODEL.md §2.6) in one warp per token, E <= 256 experts (8 per lane, in
// registers), K <= 32. Same selection as moe_route / the CPU reference: K rounds, each taking
// the largest prob + bias among the experts not yet taken, ties to the smaller expert id.
// A round is two warp reductions (redux.sync): the max of an order-preserving integer key of
// the score, then the min id among the lanes holding that key. Keys are exact for every
// non-NaN score (-0 and +0 cannot occur: prob >= +0). Weights: the selected probabilities,
// summed in selection order, as moe_route.
// ------------------------------------------------------------------------------------------
__device__ __forceinline__ u32 route_key(float f) {
    u32 u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // > 0 for every non-NaN float
}

// The routing of one token by one warp: logits_t = its E router logits (read from L2: in
// router_dec other blocks wrote them), hs = the hash table row (tid2eid + tok * K) or null.
__device__ __forceinline__ void route_warp(const float* logits_t, const float* __restrict__ bias, const int* hs_row, int E, int K,
                                           float wscale, int wnorm, int* sel_t, float* wts_t) {
    const int lane = threadIdx.x & 31;
    float x[8], pr[8];
    u32 key[8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
        int e = lane + 32 * j;
        x[j] = e < E ? __ldcg(logits_t + e) : 0.f;
    }
#pragma unroll
    for (int j = 0; j < 8; j++) {
        int e = lane + 32 * j;
        float p = sqrtf(softplusf_(x[j]));
        pr[j] = p;
        key[j] = e < E ? route_key(p + (bias ? bias[e] : 0.f)) : 0u;
    }
    int mys = 0x7fffffff;  // lane i: the i-th selected expert
    float myp = 0.f, sum = 0.f;
    // hash layers: lane i loads the i-th table entry (all lookups in parallel)
    const int hs = (hs_row && lane < K) ? hs_row[lane] : 0;
    for (int i = 0; i < K; i++) {
        int s;
        if (hs_row) {
            s = __shfl_sync(0xffffffffu, hs, i);
        } else {
            u32 best = 0u;
            int bj = 0;
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (key[j] > best) { best = key[j]; bj = j; }  // strict: the smaller id on ties
            u32 mx = __reduce_max_sync(0xffffffffu, best);
            u32 cand = (mx != 0u && best == mx) ? (u32)(lane + 32 * bj) : 0xffffffffu;
            u32 si = __reduce_min_sync(0xffffffffu, cand);
            s = si == 0xffffffffu ? 0x7fffffff : (int)si;
        }
        // the selected expert's probability from the lane that holds it; mark it taken
        float c = 0.f;
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (lane + 32 * j == s) {
                c = pr[j];
                key[j] = 0u;
            }
        float ps = __shfl_sync(0xffffffffu, c, s & 31);
        sum += ps;
        if (lane == i) { mys = s; myp = ps; }
    }
    if (lane < K) {
        sel_t[lane] = mys;
        wts_t[lane] = wnorm ? myp / sum * wscale : myp * wscale;
    }
}

extern "C" __global__ void __launch_bounds__(32) moe_route_w(const float* __restrict__ logits, const float* __restrict__ bias,
                                                             const int* __restrict__ tid2eid, const int* __restrict__ tok, int E, int K,
                                                             float wscale, int wnorm, int* sel, float* wts) {
    PDL_ENTRY;
    const int t = blockIdx.x;
    route_warp(logits + (i64)t * E, bias, tid2eid ? tid2eid + (i64)tok[t] * K : nullptr, E, K, wscale, wnorm, sel + t * K, wts + t * K);
}

// Decode router in one launch (T = 1): the router matvec, one row per warp with matvec_grouped's
// arithmetic (row_dot: the logits equal the reference-precision path's), then the last block to
// take the ticket (fence + atomic, reset for the next launch or graph replay, as hc_step) runs
// the selection on its warp 0. Saves moe_route_w's launch. Grid ceil(E / 8), smem D floats.
struct RouterDecArgs {
    WMat w;
    const float* x;
    float* logits;
    const float* bias;
    int* sel;
    float* wts;
    int* ticket;
    int E;
    int K;
    float wscale;
    int wnorm;
    HcSk sk;  // a deferred Sinkhorn, run by one extra block (sk.z == nullptr: none)
};

// A warp's row with its loads issued before x is staged (MvPre: at 4096 F16 columns the whole
// row in one trip instead of row_dot's four); row_dot's sum order, so the same logits.
template <int TY>
__device__ __forceinline__ void router_rows(const RouterDecArgs& a, float4* xs) {
    constexpr int U = TY == T_F16 ? 16 : 8;
    const int lane = threadIdx.x & 31, row = blockIdx.x * 8 + (threadIdx.x >> 5);
    const int ng = a.w.cols / XG<TY>::G;
    const int rr[1] = {min(row, a.E - 1)};
    MvPre<TY, 1, U> pre;
    pre.load(a.w.pay, a.w.hdr, a.w.cols, rr, lane, ng);
    load_x_swz<TY>(xs, a.x, a.w.cols);
    __syncthreads();
    float acc[1] = {0.f};
    for (int g = lane; g < ng; g += 32 * U) {
        if (g != lane) pre.load(a.w.pay, a.w.hdr, a.w.cols, rr, g, ng);
        pre.add(acc, g, ng, xs);
    }
    const float sum = warp_sum(acc[0]);
    if (row < a.E && lane == 0) a.logits[row] = sum;
}

extern "C" __global__ void __launch_bounds__(256) router_dec(RouterDecArgs a) {
    PDL_ENTRY;
    extern __shared__ float4 xs_dyn[];
    __shared__ int last_s;
    const int nrb = (a.E + 7) / 8;  // router blocks (8 rows each); block nrb: the Sinkhorn
    if ((int)blockIdx.x == nrb) {
        if (threadIdx.x < 32) hc_sk_warp(a.sk);
        return;
    }
    switch (a.w.type) {  // the host launches F32 / F16 / Q8_0 routers only (no grid table needed)
        case T_F32: router_rows<T_F32>(a, xs_dyn); break;
        case T_F16: router_rows<T_F16>(a, xs_dyn); break;
        default: router_rows<T_Q8_0>(a, xs_dyn); break;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        int k = atomicAdd(a.ticket, 1);
        last_s = k == nrb - 1;
        if (last_s) {
            __threadfence();
            *a.ticket = 0;
        }
    }
    __syncthreads();
    if (!last_s || threadIdx.x >= 32) return;
    route_warp(a.logits, a.bias, nullptr, a.E, a.K, a.wscale, a.wnorm, a.sel, a.wts);
}
