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
#pragma unroll
        for (int hh = 0; hh < HPW; hh++) {
            const int h = warp + 8 * hh;
            const float* qh = a.q + ((i64)t * H + h) * Dh;
#pragma unroll
            for (int j = 0; j < QJ; j++) {
                int d = 4 * lane + 128 * j;
                if (h < H && d < Dh) {
                    float4 x = *(const float4*)(qh + d);
                    v[hh][j][0] = x.x; v[hh][j][1] = x.y; v[hh][j][2] = x.z; v[hh][j][3] = x.w;
                } else {
                    v[hh][j][0] = v[hh][j][1] = v[hh][j][2] = v[hh][j][3] = 0.f;
                }
            }
        }
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
                float y[4];
#pragma unroll
                for (int i = 0; i < 4; i++) y[i] = v[hh][j][i] * rs;
                if (d < Dh && d >= Dn) {
#pragma unroll
                    for (int pr = 0; pr < 2; pr++) {
                        float x0 = y[2 * pr], x1 = y[2 * pr + 1];
                        y[2 * pr] = x0 * rc[j][pr] - x1 * rsn[j][pr];
                        y[2 * pr + 1] = x0 * rsn[j][pr] + x1 * rc[j][pr];
                    }
                }
                uint2 hv;
                hv.x = pack_h2(y[0], y[1]);
                hv.y = pack_h2(y[2], y[3]);
                *(uint2*)(sm + atc_off<DHP>(h, d)) = hv;  // zeros past Dh / H
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
        float mx[2] = {NEG_INF_F, NEG_INF_F};
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int col = cbase + j * 8 + (e & 1);
                float x = col < n ? s[j][e] * sl2 : NEG_INF_F;
                s[j][e] = x;
                mx[e >> 1] = fmaxf(mx[e >> 1], x);
            }
        float fac[2], mnew[2], rsum[2] = {0.f, 0.f};
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            mnew[r] = fmaxf(mrow[r], mx[r]);  // finite: every tile has a valid column
            fac[r] = exp2f(mrow[r] - mnew[r]);
            mrow[r] = mnew[r];
        }
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float pv = exp2f(s[j][e] - mnew[e >> 1]);
                s[j][e] = pv;
                rsum[e >> 1] += pv;
            }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            rsum[r] += __shfl_xor_sync(0xffffffffu, rsum[r], 1);
            rsum[r] += __shfl_xor_sync(0xffffffffu, rsum[r], 2);
            lrow[r] = lrow[r] * fac[r] + rsum[r];
        }
#pragma unroll
        for (int j = 0; j < NO; j++) {
            o[j][0] *= fac[0]; o[j][1] *= fac[0];
            o[j][2] *= fac[1]; o[j][3] *= fac[1];
        }
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
    const float L2E = 1.4426950408889634f;
    float f[2];
    int hrow[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        int h = mt * 16 + g + 8 * r;
        hrow[r] = h;
        float sk = (h < H) ? a.sinks[h] * L2E : 0.f;
        float M = fmaxf(mrow[r], sk);
        float em = exp2f(mrow[r] - M);
        float den = exp2f(sk - M) + lrow[r] * em;
        f[r] = em / den;
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
