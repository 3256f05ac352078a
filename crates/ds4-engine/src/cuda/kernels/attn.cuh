// ------------------------------------------------------------------------------------------
// Prefill attention on tensor cores (Precision::Fast). Same function as attn_partial +
// attn_combine with nsplit = 1 (MODEL.md §2.5.7-2.5.8), but per query token as two small
// GEMMs over the token's KV row set, shared by all heads (MQA: key = value = the row):
//   S[64 heads x 64 rows] = Q . K^T,  O[64 x Dh] += P . V
// with mma.sync m16n8k16 (f16 inputs, f32 accumulation) and an online softmax in f32.
//
// One CTA per query token, 8 warps. Warp w owns heads 16*(w&3)..+15 and the half
// hf = w>>2 of the head dims: it computes the partial S over its half of the dims, the two
// warps of a head group add their halves through shared memory (a+b == b+a exactly, so both
// hold bit-identical S, P, max and sum), then each accumulates O for its half of the dims
// with P kept in registers. KV rows are gathered (raw ring / compressed / indexer selection)
// as f16 with cp.async into a double-buffered tile of 64 rows; a prepass (attn_kv_f16)
// converts the layer's f32 rows once so that the gather moves half the bytes and needs no
// registers. Shared-memory rows are XOR-swizzled in 16-byte chunks (chunk ^ (row & 7)) so
// the ldmatrix row fetches are free of bank conflicts without padding.
// ------------------------------------------------------------------------------------------
struct AttnTcArgs {
    const float* q;      // [T][H*Dh] q_b output (before the per-head norm and RoPE)
    const u16* kv;       // f16 rows: [cap] raw ring (index pos % cap), then compressed rows
    const int* sel;      // [T][topk] indexer selection (ratio 4)
    const int* pos;      // [T]
    const float* omega;  // [R/2]
    const float* sinks;  // [H]
    float* out;          // [T][H][Dh] normalized, inverse-RoPE'd head outputs
    int cap;
    int topk;
    int H;
    int Dh;
    int R;
    int W;
    int ratio;
    float eps;
    const u16* q16;      // non-null: q as f16 (the q_b GEMM's f16 output, same layout), read instead of q
};

#define ATC_ROWS 64   // KV rows per tile
#define ATC_HEADS 64  // heads per CTA (fewer are zero-padded)

// f32 -> f16 copy of the raw ring (rows [0, raw_rows)) and the compressed rows (after them).
extern "C" __global__ void attn_kv_f16(const float* __restrict__ raw, const float* __restrict__ comp, u16* dst,
                                       int raw_rows, int comp_rows, int Dh) {
    PDL_ENTRY;
    i64 n4 = (i64)(raw_rows + comp_rows) * Dh / 4;
    i64 nraw4 = (i64)raw_rows * Dh / 4;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (i64)gridDim.x * blockDim.x) {
        float4 v = i < nraw4 ? ((const float4*)raw)[i] : ((const float4*)comp)[i - nraw4];
        uint2 h;
        h.x = pack_h2(v.x, v.y);
        h.y = pack_h2(v.z, v.w);
        ((uint2*)dst)[i] = h;
    }
}

__device__ __forceinline__ u32 atc_smem_u32(const void* p) {
    u32 r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void atc_cp16(u32 dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void atc_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void atc_wait0() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void atc_ldm4(u32* r, u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
__device__ __forceinline__ void atc_ldm4t(u32* r, u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
__device__ __forceinline__ void atc_mma(float* c, const u32* a, u32 b0, u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Barrier of the two warps (64 threads) that share head group mt (ids 1..4; 0 is __syncthreads).
__device__ __forceinline__ void atc_pair_bar(int mt) { asm volatile("bar.sync %0, 64;\n" ::"r"(mt + 1) : "memory"); }

// Byte offset of element (row, col) in a swizzled [rows][DHP] f16 tile (col a multiple of 8
// for 16-byte accesses; any col for the element address).
template <int DHP>
__device__ __forceinline__ u32 atc_off(int row, int col) {
    return (u32)(row * (DHP * 2) + ((((col >> 3) ^ (row & 7))) << 4) + ((col & 7) << 1));
}

// The raw q of this warp's heads (w, w+8, ...; lane: dims 4*lane + 128*j), zeros past H / Dh,
// from the f32 q or, when q16 is set, its f16 form (half the bytes of the prologue's longest
// round trip). All loads are issued before any use: one memory round trip per CTA, not one per head.
template <int HPW, int QJ>
__device__ __forceinline__ void atn_q_load(float (&v)[HPW][QJ][4], const float* q, const u16* q16, int t, int H, int Dh, int warp, int lane) {
    if (q16) {
        uint2 u[HPW][QJ];
#pragma unroll
        for (int hh = 0; hh < HPW; hh++) {
            const int h = warp + 8 * hh;
#pragma unroll
            for (int j = 0; j < QJ; j++) {
                const int d = 4 * lane + 128 * j;
                u[hh][j] = (h < H && d < Dh) ? *(const uint2*)(q16 + ((i64)t * H + h) * Dh + d) : make_uint2(0u, 0u);
            }
        }
#pragma unroll
        for (int hh = 0; hh < HPW; hh++)
#pragma unroll
            for (int j = 0; j < QJ; j++) {
                v[hh][j][0] = h2f((u16)(u[hh][j].x & 0xffffu));
                v[hh][j][1] = h2f((u16)(u[hh][j].x >> 16));
                v[hh][j][2] = h2f((u16)(u[hh][j].y & 0xffffu));
                v[hh][j][3] = h2f((u16)(u[hh][j].y >> 16));
            }
        return;
    }
#pragma unroll
    for (int hh = 0; hh < HPW; hh++) {
        const int h = warp + 8 * hh;
        const float* qh = q + ((i64)t * H + h) * Dh;
#pragma unroll
        for (int j = 0; j < QJ; j++) {
            const int d = 4 * lane + 128 * j;
            if (h < H && d < Dh) {
                const float4 x = *(const float4*)(qh + d);
                v[hh][j][0] = x.x; v[hh][j][1] = x.y; v[hh][j][2] = x.z; v[hh][j][3] = x.w;
            } else {
                v[hh][j][0] = v[hh][j][1] = v[hh][j][2] = v[hh][j][3] = 0.f;
            }
        }
    }
}
// Four dims of one normalized head (x * rs), rotated pairwise by (rc, rsn) when `rot`, as f16.
__device__ __forceinline__ uint2 atn_q_pack(const float (&x)[4], float rs, const float (&rc)[2], const float (&rsn)[2], bool rot) {
    float y[4];
#pragma unroll
    for (int i = 0; i < 4; i++) y[i] = x[i] * rs;
    if (rot) {
#pragma unroll
        for (int pr = 0; pr < 2; pr++) {
            const float x0 = y[2 * pr], x1 = y[2 * pr + 1];
            y[2 * pr] = x0 * rc[pr] - x1 * rsn[pr];
            y[2 * pr + 1] = x0 * rsn[pr] + x1 * rc[pr];
        }
    }
    uint2 hv;
    hv.x = pack_h2(y[0], y[1]);
    hv.y = pack_h2(y[2], y[3]);
    return hv;
}
// The output scale of head h: its softmax over the visible rows (running max m in log2 units,
// sum l) and the head's sink logit, which takes probability mass but has no value row.
__device__ __forceinline__ float atn_sink_scale(const float* sinks, int h, int H, float m, float l) {
    const float sk = (h < H) ? sinks[h] * 1.4426950408889634f : 0.f;
    const float M = fmaxf(m, sk);
    const float em = exp2f(m - M);
    return em / (exp2f(sk - M) + l * em);
}

// The online softmax's pieces shared by attn_tc, attn_tw and attn_tx. An accumulator row's
// columns sit in the 4 lanes of a quad (mma / wgmma layouts): its max and sum take two shuffles.
__device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}
// A tile of S in accumulator layout (NJ n8 tiles): scaled by sl2 (log2 units), columns at or
// past n masked (c0: this thread's first column), the row pair's maxima over the thread's columns.
template <int NJ>
__device__ __forceinline__ void s_mask_max(float (&s)[NJ][4], int c0, int n, float sl2, float (&mx)[2]) {
    mx[0] = mx[1] = NEG_INF_F;
#pragma unroll
    for (int j = 0; j < NJ; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float x = c0 + 8 * j + (e & 1) < n ? s[j][e] * sl2 : NEG_INF_F;
            s[j][e] = x;
            mx[e >> 1] = fmaxf(mx[e >> 1], x);
        }
}
// S -> P = exp2(S - m) in place, the row pair's sums over the thread's columns added to rsum.
// (attn_tw / attn_tx write each n8 tile's P into shared memory inside this loop: with the
// stores after it the SASS is scheduled differently, not measured; they keep their own loops.)
template <int NJ>
__device__ __forceinline__ void s_exp_sum(float (&s)[NJ][4], const float (&m)[2], float (&rsum)[2]) {
#pragma unroll
    for (int j = 0; j < NJ; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float pv = exp2f(s[j][e] - m[e >> 1]);
            s[j][e] = pv;
            rsum[e >> 1] += pv;
        }
}
// O's rows rescaled to a new running max: f0 for the thread's first row, f1 for its second.
template <int NO>
__device__ __forceinline__ void acc_rescale(float (&o)[NO][4], float f0, float f1) {
#pragma unroll
    for (int j = 0; j < NO; j++) {
        o[j][0] *= f0; o[j][1] *= f0;
        o[j][2] *= f1; o[j][3] *= f1;
    }
}

// Dynamic shared memory: Q [64][DHP] f16, K/V [2][64][DHP] f16, exchange [8 warps][32][32] f32.
template <int DHP>
__device__ void attn_tc_body(const AttnTcArgs& a) {
    constexpr int NCH = DHP / 8;    // 16-byte chunks per row
    constexpr int HALF = DHP / 2;   // dims per warp
    constexpr int KS = HALF / 16;   // k16 steps of the partial S
    constexpr int NO = HALF / 8;    // n8 tiles of the warp's O
    constexpr int QJ = DHP / 128;   // float4 per lane per head row in the Q prep
    constexpr int TILE_B = ATC_ROWS * DHP * 2;
    extern __shared__ float4 atc_sm4[];
    u8* sm = (u8*)atc_sm4;
    const u32 sQ = atc_smem_u32(sm);
    const u32 sK = sQ + ATC_HEADS * DHP * 2;
    float* xch = (float*)(sm + ATC_HEADS * DHP * 2 + 2 * TILE_B);

    const int t = blockIdx.x;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int Dh = a.Dh, H = a.H;
    const int p = a.pos[t];
    const int nraw = min(p + 1, a.W);
    const int ncv = a.ratio ? (p + 1) / a.ratio : 0;
    const bool use_sel = (a.ratio == 4) && (ncv > a.topk);
    const int ncomp = use_sel ? a.topk : ncv;
    const int n = nraw + ncomp;  // >= 1: the token's own raw row
    const int ntiles = (n + ATC_ROWS - 1) / ATC_ROWS;
    const int ring0 = (p - nraw + 1) % a.cap;  // ring slot of the oldest raw row
    const int* selt = a.sel + (i64)t * a.topk;
    const int dch = Dh >> 3;  // valid 16-byte chunks per row

    // Gather one tile of rows as f16 (rows past n and dims past Dh are zero-filled, so the
    // P . V products of masked columns are exact zeros, never 0 * garbage).
    auto load_tile = [&](int it, int buf) {
        const u32 dst = sK + buf * TILE_B;
#pragma unroll 4
        for (int f = tid; f < ATC_ROWS * NCH; f += 256) {
            int rr = f / NCH, c = f % NCH;
            int r = it * ATC_ROWS + rr;
            const u16* src = a.kv;
            int bytes = 0;
            if (r < n && c < dch) {
                int row;
                if (r < nraw) {
                    row = ring0 + r;
                    if (row >= a.cap) row -= a.cap;
                } else {
                    int ci = r - nraw;
                    row = a.cap + (use_sel ? selt[ci] : ci);
                }
                src = a.kv + (i64)row * Dh + c * 8;
                bytes = 16;
            }
            atc_cp16(dst + atc_off<DHP>(rr, c * 8), src, bytes);
        }
        atc_commit();
    };
    load_tile(0, 0);

    // Q prep: per-head RMSNorm (no weight, f64 sum of squares like attn_partial), RoPE on the
    // tail at the token position, f16 into shared memory. Warp w takes heads w, w+8, ...;
    // lane holds dims 4*lane + 128*j. All loads of the warp's heads are issued before the
    // first reduction (one round of memory latency per CTA instead of one per head), and the
    // rotation angles are the same for every head, so they are computed once.
    {
        constexpr int HPW = ATC_HEADS / 8;
        const int Dn = Dh - a.R;
        float v[HPW][QJ][4];
        atn_q_load<HPW, QJ>(v, a.q, a.q16, t, H, Dh, warp, lane);
        float rc[QJ][2], rsn[QJ][2];
#pragma unroll
        for (int j = 0; j < QJ; j++) {
            int d = 4 * lane + 128 * j;
#pragma unroll
            for (int pr = 0; pr < 2; pr++) {
                rc[j][pr] = 1.f;
                rsn[j][pr] = 0.f;
                if (d < Dh && d >= Dn) {
                    float th = (float)p * a.omega[(d + 2 * pr - Dn) / 2];
                    rc[j][pr] = cosf(th);
                    rsn[j][pr] = sinf(th);
                }
            }
        }
#pragma unroll
        for (int hh = 0; hh < HPW; hh++) {
            const int h = warp + 8 * hh;
            double ss = 0.0;
#pragma unroll
            for (int j = 0; j < QJ; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) ss += (double)v[hh][j][i] * (double)v[hh][j][i];
            ss = warp_sum_d(ss);
            float rs = 1.f / sqrtf((float)(ss / (double)Dh) + a.eps);
#pragma unroll
            for (int j = 0; j < QJ; j++) {
                int d = 4 * lane + 128 * j;
                *(uint2*)(sm + atc_off<DHP>(h, d)) = atn_q_pack(v[hh][j], rs, rc[j], rsn[j], d < Dh && d >= Dn);  // zeros past Dh / H
            }
        }
    }

    const int mt = warp & 3, hf = warp >> 2;
    const int g = lane >> 2, tq = lane & 3;
    const float sl2 = (1.f / sqrtf((float)Dh)) * 1.4426950408889634f;  // scale, in log2 units
    float o[NO][4];
#pragma unroll
    for (int j = 0; j < NO; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    float mrow[2] = {NEG_INF_F, NEG_INF_F};  // running max (log2 units) of rows g, g+8
    float lrow[2] = {0.f, 0.f};
    // per-lane ldmatrix coordinates
    const int a_row = mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;  // Q (A operand)
    const int a_col = (lane >> 4) * 8;
    const int b_row = (lane & 7) + ((lane >> 4) & 1) * 8;  // K rows (B of Q.K^T)
    const int b_col = ((lane >> 3) & 1) * 8;
    const int v_row = (lane & 7) + ((lane >> 3) & 1) * 8;  // V rows (B of P.V, transposed)
    const int v_col = ((lane >> 4) & 1) * 8;
    float* xw = xch + warp * 1024;
    const float* xp = xch + (warp ^ 4) * 1024;

    for (int it = 0; it < ntiles; it++) {
        atc_wait0();
        __syncthreads();  // tile `it` (and Q) visible; every warp is done with tile it-1
        if (it + 1 < ntiles) load_tile(it + 1, (it + 1) & 1);
        const u32 kt = sK + (it & 1) * TILE_B;
        // partial S over this warp's half of the dims
        float s[8][4];
#pragma unroll
        for (int j = 0; j < 8; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            const int k0 = hf * HALF + ks * 16;
            u32 af[4];
            atc_ldm4(af, sQ + atc_off<DHP>(a_row, k0 + a_col));
#pragma unroll
            for (int np = 0; np < 4; np++) {
                u32 bf[4];
                atc_ldm4(bf, kt + atc_off<DHP>(np * 16 + b_row, k0 + b_col));
                atc_mma(s[2 * np], af, bf[0], bf[1]);
                atc_mma(s[2 * np + 1], af, bf[2], bf[3]);
            }
        }
        // add the partner warp's half (same fragment layout)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) xw[(j * 4 + e) * 32 + lane] = s[j][e];
        atc_pair_bar(mt);
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[j][e] += xp[(j * 4 + e) * 32 + lane];
        // mask, scale, online softmax (rows g: e = 0,1; g+8: e = 2,3)
        const int cbase = it * ATC_ROWS + 2 * tq;
        float mx[2];
        s_mask_max(s, cbase, n, sl2, mx);
        float fac[2], mnew[2], rsum[2] = {0.f, 0.f};
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = quad_max(mx[r]);
            mnew[r] = fmaxf(mrow[r], mx[r]);  // finite: every tile has a valid column
            fac[r] = exp2f(mrow[r] - mnew[r]);
            mrow[r] = mnew[r];
        }
        s_exp_sum(s, mnew, rsum);
#pragma unroll
        for (int r = 0; r < 2; r++) {
            rsum[r] = quad_sum(rsum[r]);
            lrow[r] = lrow[r] * fac[r] + rsum[r];
        }
        acc_rescale(o, fac[0], fac[1]);
        // O += P . V over this warp's dims; P's accumulator layout is the A fragment layout
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            u32 pa[4];
            pa[0] = pack_h2(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = pack_h2(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = pack_h2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = pack_h2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int np = 0; np < NO / 2; np++) {
                u32 bf[4];
                atc_ldm4t(bf, kt + atc_off<DHP>(kk * 16 + v_row, hf * HALF + np * 16 + v_col));
                atc_mma(o[2 * np], pa, bf[0], bf[1]);
                atc_mma(o[2 * np + 1], pa, bf[2], bf[3]);
            }
        }
    }

    // sink, normalization, inverse RoPE on the tail, store
    const int Dn = Dh - a.R;
    float f[2];
    int hrow[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        hrow[r] = mt * 16 + g + 8 * r;
        f[r] = atn_sink_scale(a.sinks, hrow[r], H, mrow[r], lrow[r]);
    }
#pragma unroll
    for (int j = 0; j < NO; j++) {
        const int d = hf * HALF + j * 8 + 2 * tq;
        if (d >= Dh) continue;
        float c = 1.f, sn = 0.f;
        if (d >= Dn) {
            float th = (float)p * a.omega[(d - Dn) / 2];
            c = cosf(th);
            sn = -sinf(th);
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            if (hrow[r] >= H) continue;
            float x0 = o[j][2 * r] * f[r], x1 = o[j][2 * r + 1] * f[r];
            float2 y = make_float2(x0 * c - x1 * sn, x0 * sn + x1 * c);
            *(float2*)(a.out + ((i64)t * H + hrow[r]) * Dh + d) = y;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256, 1) attn_tc_512(AttnTcArgs a) {
    PDL_ENTRY;
    attn_tc_body<512>(a);
}
extern "C" __global__ void __launch_bounds__(256, 1) attn_tc_128(AttnTcArgs a) {
    PDL_ENTRY;
    attn_tc_body<128>(a);
}

// ------------------------------------------------------------------------------------------
// Prefill attention on wgmma (sm_90a; `attn_tw_<dhp>`): attn_tc's function (one CTA per query
// token, all heads against the token's gathered KV rows, online softmax in f32, f16 products
// with f32 accumulation), restructured for the warpgroup instructions. Why: attn_tc's
// mma.sync warps each ldmatrix their own copy of every K/V fragment (four warps per half
// read the same tile), split S over the dims with an exchange through shared memory, and ran
// at ~115 TFLOP/s (ratio-4 layers) / ~60 (window-only layers) on the H200; wgmma reads each
// shared operand once per warpgroup.
//
// Measured (H200, 2048 tokens, h64 dh512): ratio-4 rows at 8K 1.52 -> 0.68 ms, window-only
// 0.58 -> 0.31 ms against attn_tc (session 16). Phase trace per CTA (kernel bench, session
// 24): ~6.5 us until Q is prepared (the 128 KB of f32 q), ~5.4 us of epilogue (64 KB of f16
// heads out) and ~2.7 us per 64-row tile. Staging either end differently (q by cp.async or the
// bulk-copy engine, the heads through shared memory or out by a bulk copy) did not make it
// cheaper: those ends are bound by what one SM moves, not by how (bench/NOTES.md).
//
// Two warpgroups, 64-row tiles, two tile buffers (the next tile's gather in flight while the
// current one is used). Warpgroup g: S for the tile's rows 32g..32g+31 over all dims
// (m64n32k16, A = Q, B = K, both from shared memory), a common running max through shared
// memory (both warpgroups then hold bit-identical maxima and rescale factors), P as f16 into
// a shared [64 heads][64 rows] tile, then O[:, half g of the dims] += P . V (m64n<dhp/2>k16,
// B = the same tile read MN-major). Every operand lives in the 128-byte-swizzled layout:
// 64-dim slabs of [64 rows][128 bytes], 16-byte chunk c of row r stored at c ^ (r & 7)
// (descriptor swizzle mode 1; slabs 1024-byte aligned). out16 != 0: the heads are written as
// f16 there (the out_a GEMM's input) instead of f32 to a.out.
// ------------------------------------------------------------------------------------------
#define ATW_SLAB 8192  // one 64-dim slab of 64 rows (bytes)

// Byte offset of element (row, col) in a slab-major swizzled tile of R rows: 64-dim slabs of R
// x 128 bytes, 16-byte chunk c of row r at c ^ (r & 7) (descriptor swizzle mode 1; also
// idx_score_wg's tiles).
template <int R>
__device__ __forceinline__ u32 sw128_off(int row, int col) {
    return (u32)((col >> 6) * (R * 128) + row * 128 + ((((col >> 3) & 7) ^ (row & 7)) << 4) + ((col & 7) << 1));
}
// (row < 64: one slab is ATW_SLAB bytes)
__device__ __forceinline__ u32 atw_off(int row, int col) {
    static_assert(ATW_SLAB == 64 * 128, "an attention slab is 64 rows of 128 bytes");
    return sw128_off<64>(row, col);
}
// Shared-memory matrix descriptor, 128-byte swizzle (mode 1). K-major operands: rows 128
// bytes apart, 8-row groups SBO = 1024 apart (LBO unused). MN-major (V): LBO = the next 64
// dims (one slab), SBO = the next 8 rows.
__device__ __forceinline__ u64 wg_desc_sw128(u32 saddr, u32 lbo, u32 sbo) {
    return (u64)((saddr & 0x3FFFF) >> 4) | ((u64)((lbo >> 4) & 0x3FFF) << 16) | ((u64)((sbo >> 4) & 0x3FFF) << 32) | ((u64)1 << 62);
}

#if WG_OK
// d (+)= A . B with both operands from shared memory (descriptors da, db); TB: B MN-major
// (transposed). acc == 0: d = A . B.
template <int N, int TB>
__device__ __forceinline__ void wg_mma_ss(float (&d)[N / 8][4], u64 da, u32 db_lo, u32 db_hi, int acc) {
    if constexpr (N == 32) {
        asm volatile(
            "{\n.reg .pred p;\n.reg .b64 db;\nsetp.ne.b32 p, %19, 0;\nmov.b64 db, {%17, %18};\n"
            "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, db, p, 1, 1, 0, %20;\n}\n"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
            : "l"(da), "r"(db_lo), "r"(db_hi), "r"(acc), "n"(TB));
    }
    else if constexpr (N == 64) {
        asm volatile(
            "{\n.reg .pred p;\n.reg .b64 db;\nsetp.ne.b32 p, %35, 0;\nmov.b64 db, {%33, %34};\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, db, p, 1, 1, 0, %36;\n}\n"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
            : "l"(da), "r"(db_lo), "r"(db_hi), "r"(acc), "n"(TB));
    }
    else if constexpr (N == 128) {
        asm volatile(
            "{\n.reg .pred p;\n.reg .b64 db;\nsetp.ne.b32 p, %67, 0;\nmov.b64 db, {%65, %66};\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, db, p, 1, 1, 0, %68;\n}\n"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
            : "l"(da), "r"(db_lo), "r"(db_hi), "r"(acc), "n"(TB));
    }
    else if constexpr (N == 256) {
        asm volatile(
            "{\n.reg .pred p;\n.reg .b64 db;\nsetp.ne.b32 p, %131, 0;\nmov.b64 db, {%129, %130};\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, db, p, 1, 1, 0, %132;\n}\n"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])
            : "l"(da), "r"(db_lo), "r"(db_hi), "r"(acc), "n"(TB));
    }

}
#endif

// Dynamic shared memory: Q, two K/V tiles, P (one slab; attn_tx two), the row maxima and sums
// of both warpgroups ([2][64] f32 each; attn_tx: the rescale factors of its two P buffers, then
// the maxima and sums), the RoPE table (256 (cos, sin)), the token's indexer selection (topk
// ints). See attn_tw_smem / attn_tx_smem. pv_lbo / pv_sbo: V's MN-major descriptor strides
// (the host passes 8192 / 1024); pf > 0: the L2 prefetch of CTA t + pf's q (DS4_ATW_PF).
// tr (kernel bench only; nullptr: off): per CTA %globaltimer at entry, Q prepared, the first
// tile ready, the tile loop done, exit, and the SM id (ATW_TR words per CTA).
#define ATW_TR 6
// A compile-time int for the generic lambdas below (no <type_traits> under NVRTC).
template <int N> struct AtwN { static constexpr int value = N; };
__device__ __forceinline__ void nb_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void nb_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
// ALT (attn_tx_<dhp>): the tile loop with the warpgroups' roles split instead of each taking
// half of every tile's S. Warpgroup 0 computes S of the whole 64-row tile (m64n64k16: Q is
// read from shared memory once per tile, not twice, and the S products stop being bound by
// those reads), the softmax of all 64 columns (no max exchange), writes P and the rescale
// factors into one of two P buffers, and accumulates O for dims 0 .. DHP/2; warpgroup 1
// rescales and accumulates O for the other half from the same P and gathers the tiles two
// ahead. They meet at named barriers (ids 1-6: tile b landed, P b written, warpgroup 0's
// P . V of buffer b done), so warpgroup 0's next S overlaps warpgroup 1's P . V and gather.
// Kernel bench (session 24, same call, attn_tw / attn_tx, ms for 2048 tokens at 8K): ratio 4
// 0.692 / 0.668 (the tile loop 27.3 / 25.2 us per CTA), ratio 128 0.397 / 0.392, window only
// 0.310 / 0.320 (its prologue gathers two tiles); an 8K prompt +0.3 %.
template <int DHP, bool ALT>
__device__ __forceinline__ void attn_tw_body(const AttnTcArgs& a, u32 pv_lbo, u32 pv_sbo, u16* out16, int pf, u64* tr) {
#if WG_OK
    constexpr int NSL = DHP / 64;           // 64-dim slabs per row
    constexpr int TILE_B = NSL * ATW_SLAB;  // one 64-row tile (or Q)
    constexpr int NO = DHP / 16;            // n8 tiles of a warpgroup's O (DHP / 2 dims)
    constexpr int NCH = DHP / 8;            // 16-byte chunks per row
    constexpr int QJ = DHP / 128;           // float4 per lane per head row in the Q prep
    extern __shared__ __align__(1024) u8 atw_sm[];
    const u32 sQ = smem_u32(atw_sm);
    const u32 sK = sQ + TILE_B;
    const u32 sP = sK + 2 * TILE_B;
    u8* const pP = atw_sm + 3 * TILE_B;
    constexpr int PSL = ALT ? 2 : 1;  // P buffers
    float* const smx = (float*)(atw_sm + 3 * TILE_B + PSL * ATW_SLAB);
    float* const sml = smx + 128;
    float2* const scs = (float2*)(sml + 128);  // [R/2] the token's RoPE (cos, sin), R <= 512
    int* const ssel = (int*)(scs + 256);
    if ((sQ & 1023) != 0) __trap();  // the swizzle pattern is anchored to 1024-byte boundaries

    const int t = blockIdx.x;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wg = tid >> 7, wl = warp & 3;
    const int Dh = a.Dh, H = a.H;
    u64* const trt = (tr && tid == 0) ? tr + (i64)t * ATW_TR : nullptr;
    if (trt) trt[0] = gtimer();
    const int p = a.pos[t];
    const int nraw = min(p + 1, a.W);
    const int ncv = a.ratio ? (p + 1) / a.ratio : 0;
    const bool use_sel = (a.ratio == 4) && (ncv > a.topk);
    const int ncomp = use_sel ? a.topk : ncv;
    const int n = nraw + ncomp;  // >= 1: the token's own raw row
    const int ntiles = (n + 63) / 64;
    const int ring0 = (p - nraw + 1) % a.cap;
    const int dch = Dh >> 3;
    // q first: its DRAM round trip is the prologue's longest, and nothing else on the SM
    // hides it (one CTA per SM)
    constexpr int HPW = 8;
    float v[HPW][QJ][4];
    atn_q_load<HPW, QJ>(v, a.q, a.q16, t, H, Dh, warp, lane);
    if (use_sel) {
        const int* selt = a.sel + (i64)t * a.topk;
        for (int i = tid; i < a.topk; i += 256) ssel[i] = selt[i];
    }
    // the rotation angles of this position, once (the Q prep and the output's inverse RoPE
    // share them; per-element cosf / sinf unrolled over the output dims bloated the code)
    for (int i = tid; i < a.R / 2; i += 256) {
        const float th = (float)p * a.omega[i];
        scs[i] = make_float2(cosf(th), sinf(th));
    }
    __syncthreads();

    // Gather one tile of rows as f16 (rows past n and dims past Dh zero-filled: the P . V
    // products of masked columns are exact zeros). LPR lanes per row, each CPT chunks of it
    // (LPR apart: the same swizzle, ATW_SLAB * LPR / 8 bytes apart in shared memory), so a
    // row's index is found once per thread, not once per chunk.
    // nwc: AtwN<warps issuing it>, w: this warp among them.
    constexpr int LPR = NCH < 32 ? NCH : 32, CPT = NCH / LPR, RPW = 32 / LPR;
    const int cl = lane % LPR;
    auto load_tile = [&](int it, int buf, auto nwc, int w) {
        constexpr int NW = decltype(nwc)::value, RPT = 64 / (NW * RPW);
        const u32 dst = sK + buf * TILE_B + (cl >> 3) * ATW_SLAB;
#pragma unroll
        for (int i = 0; i < RPT; i++) {
            const int rr = (w + NW * i) * RPW + lane / LPR;
            const int r = it * 64 + rr;
            const bool ok = r < n;
            int row = 0;
            if (ok) {
                if (r < nraw) {
                    row = ring0 + r;
                    if (row >= a.cap) row -= a.cap;
                } else {
                    const int ci = r - nraw;
                    row = a.cap + (use_sel ? ssel[ci] : ci);
                }
            }
            const u16* src = a.kv + (i64)row * Dh + cl * 8;
            const u32 d0 = dst + rr * 128 + (((cl & 7) ^ (rr & 7)) << 4);
#pragma unroll
            for (int c = 0; c < CPT; c++)
                atc_cp16(d0 + c * (LPR / 8) * ATW_SLAB, src + c * LPR * 8, ok && cl + c * LPR < dch ? 16 : 0);
        }
        atc_commit();
    };
    load_tile(0, 0, AtwN<8>{}, warp);
    if (ALT && ntiles > 1) load_tile(1, 1, AtwN<8>{}, warp);

    // Q prep (as attn_tc, f32 sum of squares): per-head RMSNorm, RoPE on the tail, f16 into
    // the swizzled Q tile; warp w takes heads w, w+8, ...; zeros past Dh / H. (Its loads
    // were issued first thing, before the selection's staging and the first gather.)
    {
        const int Dn = Dh - a.R;
        float rc[QJ][2], rsn[QJ][2];
#pragma unroll
        for (int j = 0; j < QJ; j++) {
            const int d = 4 * lane + 128 * j;
#pragma unroll
            for (int pr = 0; pr < 2; pr++) {
                const float2 cs = (d < Dh && d >= Dn) ? scs[(d + 2 * pr - Dn) / 2] : make_float2(1.f, 0.f);
                rc[j][pr] = cs.x;
                rsn[j][pr] = cs.y;
            }
        }
#pragma unroll
        for (int hh = 0; hh < HPW; hh++) {
            const int h = warp + 8 * hh;
            // (f32: attn_tc's f64 sum cost ~1 us of conversions per CTA; Q is rounded to f16 next)
            float ss = 0.f;
#pragma unroll
            for (int j = 0; j < QJ; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) ss = fmaf(v[hh][j][i], v[hh][j][i], ss);
            ss = warp_sum(ss);
            const float rs = 1.f / sqrtf(ss / (float)Dh + a.eps);
#pragma unroll
            for (int j = 0; j < QJ; j++) {
                const int d = 4 * lane + 128 * j;
                *(uint2*)(atw_sm + atw_off(h, d)) = atn_q_pack(v[hh][j], rs, rc[j], rsn[j], d < Dh && d >= Dn);
            }
        }
    }

    if (trt) trt[1] = gtimer();
    const float sl2 = (1.f / sqrtf((float)Dh)) * 1.4426950408889634f;  // scale, in log2 units
    float o[NO][4];
#pragma unroll
    for (int j = 0; j < NO; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    float s[4][4];
    float mrow[2] = {NEG_INF_F, NEG_INF_F};  // running max (log2 units) of rows hr, hr+8
    float lrow[2] = {0.f, 0.f};              // running sums over this warpgroup's columns
    const int hr = wl * 16 + (lane >> 2);     // the accumulator rows (heads) of this thread
    const int cq = 2 * (lane & 3);            // its column pair within an n8 tile
    const u64 dq = wg_desc_sw128(sQ, 16, 1024);
    // (B descriptors as two words: offsets are added to the low word only, which cannot carry
    // out of its 14-bit address field below 256 KB, so a step costs a 32-bit add, not a 64-bit one)
    const u64 dk = wg_desc_sw128(sK + wg * 32 * 128, 16, 1024);
    const u32 dk_lo = (u32)dk, dk_hi = (u32)(dk >> 32);
    const u64 dp = wg_desc_sw128(sP, 16, 1024);
    const u64 dv = wg_desc_sw128(sK + wg * (NSL / 2) * ATW_SLAB, pv_lbo, pv_sbo);
    const u32 dv_lo = (u32)dv, dv_hi = (u32)(dv >> 32);

    float lsum[2];
    if constexpr (!ALT) {
    for (int it = 0; it < ntiles; it++) {
        const int buf = it & 1;
        atc_wait0();
        wg_wait0();  // this warpgroup's P . V of tile it-1
        wg_pin<DHP / 2>(o);
        fence_proxy_async();
        __syncthreads();  // tile it (and Q) visible to the tensor cores; tile it-1's buffer and P free
        if (trt && it == 0) trt[2] = gtimer();
        // pf > 0: once this CTA's own q is in, ask L2 for the q of the CTA pf later (about one
        // wave of one CTA per SM), so that its prologue does not wait on DRAM (issued at the
        // CTA's start instead, the prefetch competed with its own q loads and lost)
        if (it == 0 && tid == 0 && pf > 0 && t + pf < (int)gridDim.x)
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(a.q16 ? (const void*)(a.q16 + (i64)(t + pf) * H * Dh) : (const void*)(a.q + (i64)(t + pf) * H * Dh)),
                         "r"((u32)(H * Dh * (a.q16 ? 2 : 4))) : "memory");
        // S over this warpgroup's 32 rows of the tile (the pins keep the compiler from moving
        // accumulator reads or writes across the fences and waits, which would serialize wgmma;
        // so does a wait_group 1 with two accumulator sets in flight: every wait here is 0)
        wg_pin<32>(s);
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < DHP / 16; ks++) {
            const u32 off = (ks >> 2) * ATW_SLAB + (ks & 3) * 32;
            wg_mma_ss<32, 0>(s, dq + (off >> 4), dk_lo + ((buf * TILE_B + off) >> 4), dk_hi, ks);
        }
        wg_commit();
        // the next tile's gather runs under this tile's S, softmax and P . V
        if (it + 1 < ntiles) load_tile(it + 1, buf ^ 1, AtwN<8>{}, warp);
        wg_wait0();
        wg_pin<32>(s);
        // mask, scale, row maxima of this warpgroup's columns
        const int cb = it * 64 + wg * 32 + cq;
        float mx[2];
        s_mask_max(s, cb, n, sl2, mx);
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = quad_max(mx[r]);
        }
        if ((lane & 3) == 0) {
            smx[wg * 64 + hr] = mx[0];
            smx[wg * 64 + hr + 8] = mx[1];
        }
        __syncthreads();
        float fac[2], mnew[2], rsum[2] = {0.f, 0.f};
#pragma unroll
        for (int r = 0; r < 2; r++) {
            // the same max in both warpgroups (max is exact and order-free)
            mnew[r] = fmaxf(mrow[r], fmaxf(smx[hr + 8 * r], smx[64 + hr + 8 * r]));  // finite: column 0 of the tile is valid
            fac[r] = exp2f(mrow[r] - mnew[r]);
            mrow[r] = mnew[r];
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float pv = exp2f(s[j][e] - mnew[e >> 1]);
                s[j][e] = pv;
                rsum[e >> 1] += pv;
            }
            const int col = wg * 32 + 8 * j + cq;
            *(u32*)(pP + atw_off(hr, col)) = pack_h2(s[j][0], s[j][1]);
            *(u32*)(pP + atw_off(hr + 8, col)) = pack_h2(s[j][2], s[j][3]);
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            rsum[r] = quad_sum(rsum[r]);
            lrow[r] = lrow[r] * fac[r] + rsum[r];
        }
        fence_proxy_async();
        __syncthreads();  // P complete
        // (x * 1 == x: a warp whose rows kept their maxima skips the DHP / 2 multiplies)
        if (__any_sync(0xffffffffu, fac[0] != 1.f || fac[1] != 1.f)) {
            acc_rescale(o, fac[0], fac[1]);
        }
        // O[:, half wg] += P . V (k = the tile's 64 rows)
        wg_pin<DHP / 2>(o);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
            wg_mma_ss<DHP / 2, 1>(o, dp + ((kk * 32) >> 4), dv_lo + ((buf * TILE_B + kk * 16 * 128) >> 4), dv_hi, 1);
        wg_commit();
    }
    wg_wait0();
    wg_pin<DHP / 2>(o);
    if (trt) trt[3] = gtimer();
    // both warpgroups' row sums
    if ((lane & 3) == 0) {
        sml[wg * 64 + hr] = lrow[0];
        sml[wg * 64 + hr + 8] = lrow[1];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 2; r++) lsum[r] = sml[hr + 8 * r] + sml[64 + hr + 8 * r];
    } else {
        constexpr int BT = 1, PR = 3, PD = 5;  // named barriers, + buffer: tile landed, P written, wg 0's P . V done
        float* const sfac = smx;               // [2][64] the rescale factors that go with P buffer b
        atc_wait0();
        fence_proxy_async();
        __syncthreads();  // Q and tiles 0, 1 visible to the tensor cores
        if (trt) trt[2] = gtimer();
        // this warpgroup's half of O rescaled (unless no row's max moved) and += P_b . V_b
        auto pv_half = [&](int b, float f0, float f1) {
            if (__any_sync(0xffffffffu, f0 != 1.f || f1 != 1.f)) acc_rescale(o, f0, f1);
            wg_pin<DHP / 2>(o);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                wg_mma_ss<DHP / 2, 1>(o, dp + ((b * ATW_SLAB + kk * 32) >> 4), dv_lo + ((b * TILE_B + kk * 16 * 128) >> 4), dv_hi, 1);
            wg_commit();
        };
        if (wg == 0) {
            float s[8][4];
            const u64 dk0 = wg_desc_sw128(sK, 16, 1024);
            const u32 dk0_lo = (u32)dk0, dk0_hi = (u32)(dk0 >> 32);
            for (int it = 0; it < ntiles; it++) {
                const int b = it & 1;
                if (it >= 2) nb_sync(BT + b, 256);
                // S of the tile's 64 rows; P . V of the previous tile may still run
                wg_pin<64>(s);
                wg_pin<DHP / 2>(o);
                wg_fence();
#pragma unroll
                for (int ks = 0; ks < DHP / 16; ks++) {
                    const u32 off = (ks >> 2) * ATW_SLAB + (ks & 3) * 32;
                    wg_mma_ss<64, 0>(s, dq + (off >> 4), dk0_lo + ((b * TILE_B + off) >> 4), dk0_hi, ks);
                }
                wg_commit();
                if (it >= 1) {
                    wg_wait1();  // the previous tile's P . V: its buffer may take the tile after next
                    wg_pin<DHP / 2>(o);
                    if (it + 1 < ntiles) nb_arrive(PD + (b ^ 1), 256);
                }
                wg_wait0();
                wg_pin<64>(s);
                const int cb = it * 64 + cq;
                float mx[2];
                s_mask_max(s, cb, n, sl2, mx);
                float fac[2], rsum[2] = {0.f, 0.f};
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    mx[r] = quad_max(mx[r]);
                    const float mnew = fmaxf(mrow[r], mx[r]);  // finite: column 0 of the tile is valid
                    fac[r] = exp2f(mrow[r] - mnew);
                    mrow[r] = mnew;
                }
                u8* const pb = pP + b * ATW_SLAB;
#pragma unroll
                for (int j = 0; j < 8; j++) {
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const float pv = exp2f(s[j][e] - mrow[e >> 1]);
                        s[j][e] = pv;
                        rsum[e >> 1] += pv;
                    }
                    *(u32*)(pb + atw_off(hr, 8 * j + cq)) = pack_h2(s[j][0], s[j][1]);
                    *(u32*)(pb + atw_off(hr + 8, 8 * j + cq)) = pack_h2(s[j][2], s[j][3]);
                }
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    rsum[r] = quad_sum(rsum[r]);
                    lrow[r] = lrow[r] * fac[r] + rsum[r];
                }
                if ((lane & 3) == 0) {
                    sfac[b * 64 + hr] = fac[0];
                    sfac[b * 64 + hr + 8] = fac[1];
                }
                fence_proxy_async();
                nb_arrive(PR + b, 256);
                pv_half(b, fac[0], fac[1]);
            }
            wg_wait0();
            wg_pin<DHP / 2>(o);
        } else {
            for (int it = 0; it < ntiles; it++) {
                const int b = it & 1;
                nb_sync(PR + b, 256);
                pv_half(b, sfac[b * 64 + hr], sfac[b * 64 + hr + 8]);
                wg_wait0();
                wg_pin<DHP / 2>(o);
                if (it + 2 < ntiles) {
                    nb_sync(PD + b, 256);  // warpgroup 0 is done with buffer b too
                    load_tile(it + 2, b, AtwN<4>{}, warp - 4);
                    atc_wait0();
                    fence_proxy_async();
                    nb_arrive(BT + b, 256);
                }
            }
        }
        if (trt) trt[3] = gtimer();
        // the row maxima and sums are warpgroup 0's
        if (wg == 0 && (lane & 3) == 0) {
            sml[hr] = lrow[0];
            sml[hr + 8] = lrow[1];
            sml[64 + hr] = mrow[0];
            sml[64 + hr + 8] = mrow[1];
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < 2; r++) {
            lsum[r] = sml[hr + 8 * r];
            mrow[r] = sml[64 + hr + 8 * r];
        }
    }

    // sink, normalization, inverse RoPE on the tail, store
    const int Dn = Dh - a.R;
    float f[2];
#pragma unroll
    for (int r = 0; r < 2; r++) f[r] = atn_sink_scale(a.sinks, hr + 8 * r, H, mrow[r], lsum[r]);
#pragma unroll
    for (int j = 0; j < NO; j++) {
        const int d = wg * (DHP / 2) + j * 8 + cq;
        if (d >= Dh) continue;
        const float2 cs = d >= Dn ? scs[(d - Dn) / 2] : make_float2(1.f, 0.f);
        const float c = cs.x, sn = -cs.y;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int h = hr + 8 * r;
            if (h >= H) continue;
            const float x0 = o[j][2 * r] * f[r], x1 = o[j][2 * r + 1] * f[r];
            const float y0 = x0 * c - x1 * sn, y1 = x0 * sn + x1 * c;
            const i64 at = ((i64)t * H + h) * Dh + d;
            if (out16)
                *(u32*)(out16 + at) = pack_h2(y0, y1);
            else
                *(float2*)(a.out + at) = make_float2(y0, y1);
        }
    }
    if (trt) {
        u32 sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        trt[4] = gtimer();
        trt[5] = sm;
    }
#else
    __trap();  // built only for sm_90a (the host checks wgmma_built)
#endif
}

extern "C" __global__ void __launch_bounds__(256, 1) attn_tw_512(AttnTcArgs a, u32 pv_lbo, u32 pv_sbo, u16* out16, int pf, u64* tr) {
    PDL_ENTRY;
    attn_tw_body<512, false>(a, pv_lbo, pv_sbo, out16, pf, tr);
}
extern "C" __global__ void __launch_bounds__(256, 1) attn_tw_128(AttnTcArgs a, u32 pv_lbo, u32 pv_sbo, u16* out16, int pf, u64* tr) {
    PDL_ENTRY;
    attn_tw_body<128, false>(a, pv_lbo, pv_sbo, out16, pf, tr);
}
extern "C" __global__ void __launch_bounds__(256, 1) attn_tx_512(AttnTcArgs a, u32 pv_lbo, u32 pv_sbo, u16* out16, int pf, u64* tr) {
    PDL_ENTRY;
    attn_tw_body<512, true>(a, pv_lbo, pv_sbo, out16, pf, tr);
}
extern "C" __global__ void __launch_bounds__(256, 1) attn_tx_128(AttnTcArgs a, u32 pv_lbo, u32 pv_sbo, u16* out16, int pf, u64* tr) {
    PDL_ENTRY;
    attn_tw_body<128, true>(a, pv_lbo, pv_sbo, out16, pf, tr);
}
