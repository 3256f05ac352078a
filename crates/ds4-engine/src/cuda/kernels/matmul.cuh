// Quantized weight access, matvec (decode) and GEMM (prefill) kernels.
//
// Weights are repacked at upload (see cuda/weights.rs): every quant block is split into a
// 16-byte-aligned "payload" array and a small "header" array (scales), both indexed by the
// block number row*nb + b. This makes every payload load an aligned 8/16-byte vector load
// (the GGUF Q8_0 and IQ2_XXS blocks are only 2-byte aligned).
//   Q8_0    payload 32 (qs)               header 2  (d)
//   IQ2_XXS payload 64 (qs)               header 2  (d)
//   Q2_K    payload 80 (scales16 + qs64)  header 4  (d, dmin)
//   Q4_K    payload 128 (qs)              header 16 (d, dmin, scales12)
//   F16/F32 payload = the plain row-major matrix, no header.

#define T_F32 0
#define T_F16 1
#define T_Q8_0 8
#define T_Q2_K 10
#define T_Q4_K 12
#define T_IQ2_XXS 16

struct WMat {
    const u8* pay;
    const u8* hdr;
    i64 e_pay;   // bytes between experts in pay (0 for plain matrices)
    i64 e_hdr;   // bytes between experts in hdr
    int type;
    int rows;
    int cols;
    int pad;
};

__device__ const u64 IQ2XXS_GRID[256] = {
#include "iq2xxs_grid.inc"
};

template <int TY> struct QT;
template <> struct QT<T_F32> { static const int BL = 1, PB = 4, HB = 0; };
template <> struct QT<T_F16> { static const int BL = 1, PB = 2, HB = 0; };
template <> struct QT<T_Q8_0> { static const int BL = 32, PB = 32, HB = 2; };
template <> struct QT<T_IQ2_XXS> { static const int BL = 256, PB = 64, HB = 2; };
template <> struct QT<T_Q2_K> { static const int BL = 256, PB = 80, HB = 4; };
template <> struct QT<T_Q4_K> { static const int BL = 256, PB = 128, HB = 16; };

__device__ __forceinline__ void q4k_scale_min(int j, const u8* s, int& sc, int& m) {
    if (j < 4) { sc = s[j] & 63; m = s[j + 4] & 63; }
    else {
        sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}
// The same from the 12 scale bytes held in three loaded words (bytes 0-3, 4-7, 8-11): a
// runtime-indexed byte array made of loaded words goes through local memory.
__device__ __forceinline__ void q4k_scale_min_w(int j, u32 w0, u32 w1, u32 w2, int& sc, int& m) {
    auto b = [&](int i) -> int { return (int)(((i < 4 ? w0 : (i < 8 ? w1 : w2)) >> (8 * (i & 3))) & 255); };
    if (j < 4) { sc = b(j) & 63; m = b(j + 4) & 63; }
    else {
        sc = (b(j + 4) & 15) | ((b(j - 4) >> 6) << 4);
        m = (b(j + 4) >> 4) | ((b(j) >> 6) << 4);
    }
}

// Dequantize 8 consecutive values of row `row`, starting at column c (c % 8 == 0).
// Every kernel that may decode IQ2_XXS copies the grid into shared memory first: the lookup
// index depends on the loaded bits, and a dependent global load per 8 values stalls the warp.
#define GRID_SMEM                                                        \
    __shared__ u64 gsm[256];                                             \
    for (int _i = threadIdx.x; _i < 256; _i += blockDim.x) gsm[_i] = IQ2XXS_GRID[_i]; \
    __syncthreads();

template <int TY>
__device__ __forceinline__ void deq8(const u8* __restrict__ pay, const u8* __restrict__ hdr, int cols,
                                     int row, int c, float* v, const u64* gsm) {
    if (TY == T_F32) {
        const float4* p = (const float4*)(pay + ((i64)row * cols + c) * 4);
        float4 a = __ldg(p), b = __ldg(p + 1);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    } else if (TY == T_F16) {
        uint4 a = __ldg((const uint4*)(pay + ((i64)row * cols + c) * 2));
        u32 w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
        for (int i = 0; i < 4; i++) { v[2 * i] = h2f((u16)(w[i] & 0xffff)); v[2 * i + 1] = h2f((u16)(w[i] >> 16)); }
    } else if (TY == T_Q8_0) {
        int nb = cols >> 5;
        i64 blk = (i64)row * nb + (c >> 5);
        uint2 q = __ldg((const uint2*)(pay + blk * 32 + (c & 31)));
        float d = h2f(__ldg((const u16*)(hdr + blk * 2)));
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = d * (float)(signed char)((q.x >> (8 * i)) & 0xff);
            v[4 + i] = d * (float)(signed char)((q.y >> (8 * i)) & 0xff);
        }
    } else if (TY == T_IQ2_XXS) {
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (c >> 8);
        int e = c & 255, sb = e >> 5, k = (e >> 3) & 3;
        uint2 q = __ldg((const uint2*)(pay + blk * 64 + sb * 8));
        float d = h2f(__ldg((const u16*)(hdr + blk * 2)));
        u32 A = q.x, B = q.y;
        int gi = (A >> (8 * k)) & 255;
        u32 s = (B >> (7 * k)) & 127;
        s |= (u32)(__popc(s) & 1) << 7;
        float db = d * (0.5f + (float)(B >> 28)) * 0.25f;
        u64 g = gsm[gi];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float mag = (float)((g >> (8 * i)) & 0xff);
            v[i] = ((s >> i) & 1) ? -(db * mag) : db * mag;
        }
    } else if (TY == T_Q2_K) {
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (c >> 8);
        int e = c & 255, h = e >> 7, s = (e >> 5) & 3, l0 = e & 31;
        const u8* P = pay + blk * 80;
        int j = 8 * h + 2 * s + (l0 >= 16 ? 1 : 0);
        int scb = __ldg(P + j);
        uint2 q = __ldg((const uint2*)(P + 16 + 32 * h + l0));
        float d = h2f(__ldg((const u16*)(hdr + blk * 4))), dmin = h2f(__ldg((const u16*)(hdr + blk * 4 + 2)));
        float dl = d * (float)(scb & 15), ml = dmin * (float)(scb >> 4);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = dl * (float)((q.x >> (8 * i + 2 * s)) & 3) - ml;
            v[4 + i] = dl * (float)((q.y >> (8 * i + 2 * s)) & 3) - ml;
        }
    } else {  // Q4_K
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (c >> 8);
        int e = c & 255, j = e >> 5, l0 = e & 31;
        const u8* H = hdr + blk * 16;
        uint2 q = __ldg((const uint2*)(pay + blk * 128 + 32 * (j >> 1) + l0));
        float d = h2f(__ldg((const u16*)H)), dmin = h2f(__ldg((const u16*)(H + 2)));
        int sc, m;
        q4k_scale_min(j, H + 4, sc, m);
        float dl = d * (float)sc, ml = dmin * (float)m;
        int sh = (j & 1) ? 4 : 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = dl * (float)((q.x >> (8 * i + sh)) & 15) - ml;
            v[4 + i] = dl * (float)((q.y >> (8 * i + sh)) & 15) - ml;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Decode matvec. One warp per row; lanes walk 8-column groups g = lane + 32*i. The input
// vector sits in shared memory with the two float4 halves of every group swapped when
// ((g >> 2) & 1) so that the 8 lanes of a shared-memory phase hit 8 distinct bank quads.
// The per-row result is a fixed butterfly reduction: deterministic.
// ------------------------------------------------------------------------------------------

// Column-group width per weight type in the decode matvec: one lane step covers one group
// (8 values for F16/F32, a half Q8_0 block = one 16-byte load, a 32-value sub-block for the
// K-quants/IQ2_XXS so the sub-block's scale and bits are read once).
template <int TY> struct XG { static const int G = 32; };
template <> struct XG<T_F32> { static const int G = 8; };
template <> struct XG<T_F16> { static const int G = 8; };
template <> struct XG<T_Q8_0> { static const int G = 16; };

// Shared-memory slot (in float4 units) of part k of column group g: rotations chosen so that
// the 8 lanes of one shared-memory phase (consecutive g, same k) hit 8 distinct bank quads.
template <int G>
__device__ __forceinline__ int xslot(int g, int k) {
    if (G == 8) return 2 * g + (k ^ ((g >> 2) & 1));
    if (G == 16) return 4 * g + ((k + (g >> 1)) & 3);
    return 8 * g + ((k + g) & 7);
}

// Staged with stage_f4: the plain loop was not unrolled (SASS: one LD.E.128 + STS per
// iteration), so a block waited 4 (q_a group, out_a) to 8 (out_b) dependent L2 round trips
// before its first weight load.
template <int TY>
__device__ __forceinline__ void load_x_swz(float4* xs, const float* __restrict__ x, int cols) {
    const int G = XG<TY>::G, P = G / 4;
    stage_f4((const float4*)x, cols >> 2, [&](int f, float4 v) { xs[xslot<G>(f / P, f % P)] = v; });
}

__device__ __forceinline__ float dot4(float4 a, float b0, float b1, float b2, float b3) {
    return a.x * b0 + a.y * b1 + a.z * b2 + a.w * b3;
}

// Dot of column group g of `row` with x (shared memory, swizzled for the type's group width).
template <int TY>
__device__ __forceinline__ float gdot(const u8* __restrict__ pay, const u8* __restrict__ hdr, int cols, int row, int g,
                                      const float4* xs, const u64* gsm) {
    if (TY == T_F32 || TY == T_F16) {
        float v[8];
        deq8<TY>(pay, hdr, cols, row, g * 8, v, gsm);
        float4 a = xs[xslot<8>(g, 0)], b = xs[xslot<8>(g, 1)];
        return dot4(a, v[0], v[1], v[2], v[3]) + dot4(b, v[4], v[5], v[6], v[7]);
    } else if (TY == T_Q8_0) {
        int nb = cols >> 5;
        i64 blk = (i64)row * nb + (g >> 1);
        uint4 q = __ldg((const uint4*)(pay + blk * 32 + (g & 1) * 16));
        float d = h2f(__ldg((const u16*)(hdr + blk * 2)));
        u32 w[4] = {q.x, q.y, q.z, q.w};
        float acc = 0.f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            float4 xv = xs[xslot<16>(g, k)];
            acc += dot4(xv, sbyte_f(w[k], 0), sbyte_f(w[k], 1), sbyte_f(w[k], 2), sbyte_f(w[k], 3));
        }
        return d * acc;
    } else if (TY == T_IQ2_XXS) {
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (g >> 3);
        uint2 q = __ldg((const uint2*)(pay + blk * 64 + (g & 7) * 8));
        float d = h2f(__ldg((const u16*)(hdr + blk * 2)));
        u32 A = q.x, B = q.y;
        float acc = 0.f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            u64 gr = gsm[(A >> (8 * k)) & 255];
            u32 grl = (u32)gr, grh = (u32)(gr >> 32);
            u32 sg = (B >> (7 * k)) & 127;
            sg |= (u32)(__popc(sg) & 1) << 7;
            float4 x0 = xs[xslot<32>(g, 2 * k)], x1 = xs[xslot<32>(g, 2 * k + 1)];
            float xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
            for (int i = 0; i < 8; i++) {
                float m = i < 4 ? ubyte_f(grl, i & 3) : ubyte_f(grh, i & 3);
                acc += ((sg >> i) & 1) ? -(m * xv[i]) : m * xv[i];
            }
        }
        return d * (0.5f + (float)(B >> 28)) * 0.25f * acc;
    } else if (TY == T_Q2_K) {
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (g >> 3);
        int sub = g & 7, h = sub >> 2, sft = 2 * (sub & 3);
        const u8* P = pay + blk * 80;
        uint4 q0 = __ldg((const uint4*)(P + 16 + 32 * h)), q1 = __ldg((const uint4*)(P + 16 + 32 * h + 16));
        int j0 = 8 * h + 2 * (sub & 3);
        int sc0 = __ldg(P + j0), sc1 = __ldg(P + j0 + 1);
        float d = h2f(__ldg((const u16*)(hdr + blk * 4))), dmin = h2f(__ldg((const u16*)(hdr + blk * 4 + 2)));
        u32 w[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        float a0 = 0.f, a1 = 0.f, s0 = 0.f, s1 = 0.f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float4 xv = xs[xslot<32>(g, k)];
            u32 ww = (w[k] >> sft) & 0x03030303u;
            float p = dot4(xv, ubyte_f(ww, 0), ubyte_f(ww, 1), ubyte_f(ww, 2), ubyte_f(ww, 3));
            float sx = xv.x + xv.y + xv.z + xv.w;
            if (k < 4) { a0 += p; s0 += sx; } else { a1 += p; s1 += sx; }
        }
        return d * ((float)(sc0 & 15) * a0 + (float)(sc1 & 15) * a1) - dmin * ((float)(sc0 >> 4) * s0 + (float)(sc1 >> 4) * s1);
    } else {  // Q4_K
        int nb = cols >> 8;
        i64 blk = (i64)row * nb + (g >> 3);
        int j = g & 7, sft = (j & 1) * 4;
        const u8* H = hdr + blk * 16;
        const u8* P = pay + blk * 128 + 32 * (j >> 1);
        uint4 q0 = __ldg((const uint4*)P), q1 = __ldg((const uint4*)(P + 16));
        float d = h2f(__ldg((const u16*)H)), dmin = h2f(__ldg((const u16*)(H + 2)));
        int sc, m;
        q4k_scale_min(j, H + 4, sc, m);
        u32 w[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        float a = 0.f, sx = 0.f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float4 xv = xs[xslot<32>(g, k)];
            u32 ww = (w[k] >> sft) & 0x0F0F0F0Fu;
            a += dot4(xv, ubyte_f(ww, 0), ubyte_f(ww, 1), ubyte_f(ww, 2), ubyte_f(ww, 3));
            sx += xv.x + xv.y + xv.z + xv.w;
        }
        return d * (float)sc * a - dmin * (float)m * sx;
    }
}

template <int TY>
__device__ __forceinline__ float row_dot(const u8* __restrict__ pay, const u8* __restrict__ hdr, int cols, int row,
                                         const float4* xs, int lane, const u64* gsm) {
    const int G = XG<TY>::G;
    int ng = cols / G;
    float acc = 0.f;
#pragma unroll 4
    for (int g = lane; g < ng; g += 32) acc += gdot<TY>(pay, hdr, cols, row, g, xs, gsm);
    return warp_sum(acc);
}

// The f32-activation decode matvecs' F32 / F16 / Q8_0 rows with every load of a loop trip
// issued before any use (gdot loads and uses one group at a time: at 4096 F16 columns a row
// pair was 8 trips, each a memory latency; the same pattern that cost mvq 2x, session 9).
// MvPre<TY, R, U> holds U column groups of R rows: load() issues the loads of groups g,
// g + 32, ..., add() sums them into the R accumulators in gdot's arithmetic and column
// order, so a row's sum has the same bits as row_dot's. A caller may issue the first trip's
// loads before staging x (they do not depend on it).
template <int TY> struct MvRaw;
template <> struct MvRaw<T_F32> { uint4 a, b; };
template <> struct MvRaw<T_F16> { uint4 a; };
template <> struct MvRaw<T_Q8_0> { uint4 a; u32 d; };

template <int TY, int R, int U>
struct MvPre {
    MvRaw<TY> w[U][R];
    __device__ __forceinline__ void load(const u8* __restrict__ pay, const u8* __restrict__ hdr, int cols, const int (&row)[R], int g,
                                         int ng) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int gu = min(g + 32 * u, ng - 1);  // past the end: a valid group, not added
#pragma unroll
            for (int r = 0; r < R; r++) {
                if constexpr (TY == T_F32) {
                    const uint4* p = (const uint4*)(pay + ((i64)row[r] * cols + gu * 8) * 4);
                    w[u][r].a = __ldg(p);
                    w[u][r].b = __ldg(p + 1);
                } else if constexpr (TY == T_F16) {
                    w[u][r].a = __ldg((const uint4*)(pay + ((i64)row[r] * cols + gu * 8) * 2));
                } else {
                    i64 blk = (i64)row[r] * (cols >> 5) + (gu >> 1);
                    w[u][r].a = __ldg((const uint4*)(pay + blk * 32 + (gu & 1) * 16));
                    w[u][r].d = __ldg((const u16*)(hdr + blk * 2));
                }
            }
        }
    }
    __device__ __forceinline__ void add(float (&acc)[R], int g, int ng, const float4* xs) const {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int gg = g + 32 * u;
            if (gg >= ng) break;
#pragma unroll
            for (int r = 0; r < R; r++) {
                const MvRaw<TY>& q = w[u][r];
                float v;
                if constexpr (TY == T_F32 || TY == T_F16) {
                    float f[8];
                    if constexpr (TY == T_F32) {
                        u32 b[8] = {q.a.x, q.a.y, q.a.z, q.a.w, q.b.x, q.b.y, q.b.z, q.b.w};
#pragma unroll
                        for (int i = 0; i < 8; i++) f[i] = __uint_as_float(b[i]);
                    } else {
                        u32 b[4] = {q.a.x, q.a.y, q.a.z, q.a.w};
#pragma unroll
                        for (int i = 0; i < 4; i++) { f[2 * i] = h2f((u16)(b[i] & 0xffff)); f[2 * i + 1] = h2f((u16)(b[i] >> 16)); }
                    }
                    float4 xa = xs[xslot<8>(gg, 0)], xb = xs[xslot<8>(gg, 1)];
                    v = dot4(xa, f[0], f[1], f[2], f[3]) + dot4(xb, f[4], f[5], f[6], f[7]);
                } else {
                    u32 b[4] = {q.a.x, q.a.y, q.a.z, q.a.w};
                    float a = 0.f;
#pragma unroll
                    for (int k = 0; k < 4; k++) {
                        float4 xv = xs[xslot<16>(gg, k)];
                        a += dot4(xv, sbyte_f(b[k], 0), sbyte_f(b[k], 1), sbyte_f(b[k], 2), sbyte_f(b[k], 3));
                    }
                    v = h2f((u16)q.d) * a;
                }
                acc[r] += v;
            }
        }
    }
};

// A matvec job inside a grouped launch. Rows of slot s use expert sel[s] (when sel != 0),
// read x + s*x_slot (+ (row / x_grp_rows) * cols for block-diagonal weights) and write
// y[s*rows + row].
struct MvJob {
    WMat w;
    const float* x;
    float* y;
    const int* sel;    // device expert ids for slots (nullptr: plain matrix)
    i64 x_slot;        // floats between slot inputs
    int nslots;
    int x_grp_rows;    // rows sharing one x slice (== rows for a plain matvec)
};

#define MV_ROWS_PER_WARP 2
#define MV_WARPS 8
#define MV_ROWS_PER_BLOCK (MV_ROWS_PER_WARP * MV_WARPS)

template <int TY>
__device__ void mv_block(const MvJob& j, int lb, float4* xs, const u64* gsm) {
    int rows = j.w.rows, cols = j.w.cols;
    int blocks_per_slot = (rows + MV_ROWS_PER_BLOCK - 1) / MV_ROWS_PER_BLOCK;
    int slot = lb / blocks_per_slot;
    int row0 = (lb % blocks_per_slot) * MV_ROWS_PER_BLOCK;
    const u8* pay = j.w.pay;
    const u8* hdr = j.w.hdr;
    if (j.sel) {
        int e = j.sel[slot];
        pay += (i64)e * j.w.e_pay;
        hdr += (i64)e * j.w.e_hdr;
    }
    const float* x = j.x + (i64)slot * j.x_slot + (i64)(row0 / j.x_grp_rows) * cols;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    static_assert(MV_ROWS_PER_WARP == 2, "mv_block walks two rows per warp");
    load_x_swz<TY>(xs, x, cols);
    __syncthreads();
    // the warp's two rows in one loop: both rows' loads are in flight together (one after the
    // other, each row waited for its own loads behind the other's reduction); each row's sum
    // keeps its order, so the results are the same bits
    const int ra = row0 + warp * MV_ROWS_PER_WARP;
    if (ra < rows) {
        const int rb = min(ra + 1, rows - 1);  // a tail row recomputes row ra, not stored
        const int ng = cols / XG<TY>::G;
        float a0 = 0.f, a1 = 0.f;
        // unroll 2 x 2 rows: as many loads per lane in flight as row_dot's unroll 4
#pragma unroll 2
        for (int g = lane; g < ng; g += 32) {
            a0 += gdot<TY>(pay, hdr, cols, ra, g, xs, gsm);
            a1 += gdot<TY>(pay, hdr, cols, rb, g, xs, gsm);
        }
        a0 = warp_sum(a0);
        a1 = warp_sum(a1);
        if (lane == 0) {
            j.y[(i64)slot * rows + ra] = a0;
            if (ra + 1 < rows) j.y[(i64)slot * rows + ra + 1] = a1;
        }
    }
}

__device__ __forceinline__ void matvec_grouped_main(const MvJob* __restrict__ jobs, const int* b0, int njobs) {
    extern __shared__ float4 xs_dyn[];
    __shared__ u64 gsm[256];
    int b = blockIdx.x;
    const int ji = job_of_block(b0, njobs, b);
    MvJob j = jobs[ji];
    // only IQ2_XXS blocks need the grid (2 KB per block otherwise wasted); mv_block's barrier
    // after staging x publishes it
    if (j.w.type == T_IQ2_XXS)
        for (int i = threadIdx.x; i < 256; i += blockDim.x) gsm[i] = IQ2XXS_GRID[i];
    int lb = b - b0[ji];
    switch (j.w.type) {
        case T_F32: mv_block<T_F32>(j, lb, xs_dyn, gsm); break;
        case T_F16: mv_block<T_F16>(j, lb, xs_dyn, gsm); break;
        case T_Q8_0: mv_block<T_Q8_0>(j, lb, xs_dyn, gsm); break;
        case T_IQ2_XXS: mv_block<T_IQ2_XXS>(j, lb, xs_dyn, gsm); break;
        case T_Q2_K: mv_block<T_Q2_K>(j, lb, xs_dyn, gsm); break;
        default: mv_block<T_Q4_K>(j, lb, xs_dyn, gsm); break;
    }
}

extern "C" __global__ void __launch_bounds__(256, 3) matvec_grouped(const __grid_constant__ JobSet<MvJob> js, int njobs) {
    PDL_ENTRY;
    matvec_grouped_main(js.j, js.b0, njobs);
}

// ------------------------------------------------------------------------------------------
// Fused MoE down projection for one token per blockIdx.y: out[d] = sum_i down[e_i]·mid_i
// (selection order) + down_sh·mid_sh, mid_i = silu(min(g,c))·clamp(u,-c,c)·w_i.
// g/u: [T][K][F] (routed), gs/us: [T][F] (shared).
// ------------------------------------------------------------------------------------------
template <int TY, int TYS>
__device__ void moe_down_body(WMat wd, WMat wsh, const int* sel, const float* wts, const float* g, const float* u,
                              const float* gs, const float* us, float* out, int K, float clamp, float clamp_sh,
                              float4* xs, const u64* gsm) {
    int t = blockIdx.y;
    int F = wd.cols, D = wd.rows;
    float* xf = (float*)xs;
    // mids, each stored swizzled (for its weight type) in its own F-float region
    for (int i = 0; i <= K; i++) {
        float4* xr = xs + (i64)i * (F >> 2);
        const int G = (i < K) ? XG<TY>::G : XG<TYS>::G;
        const int P = G / 4;
        for (int f = threadIdx.x; f < (F >> 2); f += blockDim.x) {
            float4 r;
            float* rp = (float*)&r;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                int c = 4 * f + q;
                float gg, uu, w, cl;
                if (i < K) { gg = g[((i64)t * K + i) * F + c]; uu = u[((i64)t * K + i) * F + c]; w = wts[t * K + i]; cl = clamp; }
                else { gg = gs[(i64)t * F + c]; uu = us[(i64)t * F + c]; w = 1.f; cl = clamp_sh; }
                gg = fminf(gg, cl);
                uu = fminf(fmaxf(uu, -cl), cl);
                float m = siluf_(gg) * uu;
                rp[q] = (i < K) ? m * w : m;
            }
            int sl = (G == 8) ? xslot<8>(f / P, f % P) : (G == 16) ? xslot<16>(f / P, f % P) : xslot<32>(f / P, f % P);
            xr[sl] = r;
        }
    }
    (void)xf;
    __syncthreads();
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int row0 = blockIdx.x * MV_ROWS_PER_BLOCK;
#pragma unroll
    for (int r = 0; r < MV_ROWS_PER_WARP; r++) {
        int row = row0 + warp * MV_ROWS_PER_WARP + r;
        if (row >= D) continue;
        float acc = 0.f;
        for (int i = 0; i < K; i++) {
            int e = sel[t * K + i];
            acc += row_dot<TY>(wd.pay + (i64)e * wd.e_pay, wd.hdr + (i64)e * wd.e_hdr, F, row, xs + (i64)i * (F >> 2), lane, gsm);
        }
        acc += row_dot<TYS>(wsh.pay, wsh.hdr, F, row, xs + (i64)K * (F >> 2), lane, gsm);
        if (lane == 0) out[(i64)t * D + row] = acc;
    }
}

extern "C" __global__ void __launch_bounds__(256) moe_down_fused(WMat wd, WMat wsh, const int* sel, const float* wts,
                                                                 const float* g, const float* u, const float* gs,
                                                                 const float* us, float* out, int K, float clamp,
                                                                 float clamp_sh) {
    PDL_ENTRY;
    extern __shared__ float4 xs_dyn[];
    __shared__ u64 gsm[256];
    // the grid only for IQ2_XXS weights; published by the barrier after the mids are staged
    if (wd.type == T_IQ2_XXS || wsh.type == T_IQ2_XXS)
        for (int i = threadIdx.x; i < 256; i += blockDim.x) gsm[i] = IQ2XXS_GRID[i];
#define MDB(TY)                                                                                                    \
    if (wsh.type == T_Q8_0) moe_down_body<TY, T_Q8_0>(wd, wsh, sel, wts, g, u, gs, us, out, K, clamp, clamp_sh, xs_dyn, gsm); \
    else if (wsh.type == T_F16) moe_down_body<TY, T_F16>(wd, wsh, sel, wts, g, u, gs, us, out, K, clamp, clamp_sh, xs_dyn, gsm); \
    else moe_down_body<TY, T_F32>(wd, wsh, sel, wts, g, u, gs, us, out, K, clamp, clamp_sh, xs_dyn, gsm);
    switch (wd.type) {
        case T_F32: MDB(T_F32) break;
        case T_F16: MDB(T_F16) break;
        case T_Q8_0: MDB(T_Q8_0) break;
        case T_IQ2_XXS: MDB(T_IQ2_XXS) break;
        case T_Q2_K: MDB(T_Q2_K) break;
        default: MDB(T_Q4_K) break;
    }
#undef MDB
}

// ------------------------------------------------------------------------------------------
// GEMM for prefill: y[yrow(j)][r] = sum_c W[r][c] * x[xrow(j)][c] for tokens j of a group.
// Groups (MoE): blockIdx.z = expert e, tokens grp_off[e] .. grp_off[e+1], xrow = gather[j]
// (or j), yrow = j, weights offset by e. Plain: one group of T tokens.
// Two math paths: f32 FMA (reference precision) and f16 tensor-core mma (fast path, f32
// accumulation). Both dequantize a weight tile into shared memory first.
// ------------------------------------------------------------------------------------------
struct GemmArgs {
    WMat w;
    const float* x;
    float* y;
    const int* grp_off;  // nullptr: single group [0, T)
    const int* gather;   // nullptr: xrow = j
    int ldx;
    int ldy;
    int T;
    int flags;  // gemm_q only: GQ_FLAG_HDEQ = f16x2 dequantization
};
// The routed experts' gate and up in one gemm_qs launch (gemm_qs_gu / gemm_qs2_gu; GemmArgs.w
// is the gate, GemmArgs.y the f16 mids in gemm_qr's K order, ldy = the mid width): the up
// matrix (the gate's type, shape and expert strides), the pairs' routing weights and the
// SwiGLU clamp (moe_mid's arguments).
struct GuArgs {
    WMat w2;
    const float* pw;
    float clamp;
    int pad;
};

#define GF_BM 64
#define GF_BN 64
#define GF_BK 32

template <int TY>
__device__ void gemm_f32_body(const GemmArgs& a, float (*Ws)[GF_BM + 4], float (*Xs)[GF_BN + 4], const u64* gsm) {
    int e = blockIdx.z;
    int j0 = 0, j1 = a.T;
    const u8* pay = a.w.pay;
    const u8* hdr = a.w.hdr;
    if (a.grp_off) {
        j0 = a.grp_off[e];
        j1 = a.grp_off[e + 1];
        pay += (i64)e * a.w.e_pay;
        hdr += (i64)e * a.w.e_hdr;
    }
    int tb = j0 + blockIdx.y * GF_BN;
    if (tb >= j1) return;
    int rb = blockIdx.x * GF_BM;
    int rows = a.w.rows, cols = a.w.cols;
    int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int k = 0; k < 4; k++) acc[i][k] = 0.f;
    int lr = tid >> 2, lc = (tid & 3) * 8;
    int wrow = rb + lr;
    int tok = tb + lr;
    const float* xp = nullptr;
    if (tok < j1) {
        int xr = a.gather ? a.gather[tok] : tok;
        xp = a.x + (i64)xr * a.ldx;
    }
    for (int k0 = 0; k0 < cols; k0 += GF_BK) {
        float v[8];
        if (wrow < rows) deq8<TY>(pay, hdr, cols, wrow, k0 + lc, v, gsm);
        else {
#pragma unroll
            for (int i = 0; i < 8; i++) v[i] = 0.f;
        }
#pragma unroll
        for (int i = 0; i < 8; i++) Ws[lc + i][lr] = v[i];
        if (xp) {
            float4 p0 = *(const float4*)(xp + k0 + lc), p1 = *(const float4*)(xp + k0 + lc + 4);
            Xs[lc + 0][lr] = p0.x; Xs[lc + 1][lr] = p0.y; Xs[lc + 2][lr] = p0.z; Xs[lc + 3][lr] = p0.w;
            Xs[lc + 4][lr] = p1.x; Xs[lc + 5][lr] = p1.y; Xs[lc + 6][lr] = p1.z; Xs[lc + 7][lr] = p1.w;
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) Xs[lc + i][lr] = 0.f;
        }
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < GF_BK; k++) {
            float wa[4], xb[4];
#pragma unroll
            for (int i = 0; i < 4; i++) { wa[i] = Ws[k][ty * 4 + i]; xb[i] = Xs[k][tx * 4 + i]; }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[i][q] = fmaf(wa[i], xb[q], acc[i][q]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
        int tk = tb + tx * 4 + q;
        if (tk >= j1) continue;
        float* yp = a.y + (i64)tk * a.ldy;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int r = rb + ty * 4 + i;
            if (r < rows) yp[r] = acc[i][q];
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) gemm_f32(GemmArgs a) {
    PDL_ENTRY;
    __shared__ float Ws[GF_BK][GF_BM + 4];
    __shared__ float Xs[GF_BK][GF_BN + 4];
    GRID_SMEM
    switch (a.w.type) {
        case T_F32: gemm_f32_body<T_F32>(a, Ws, Xs, gsm); break;
        case T_F16: gemm_f32_body<T_F16>(a, Ws, Xs, gsm); break;
        case T_Q8_0: gemm_f32_body<T_Q8_0>(a, Ws, Xs, gsm); break;
        case T_IQ2_XXS: gemm_f32_body<T_IQ2_XXS>(a, Ws, Xs, gsm); break;
        case T_Q2_K: gemm_f32_body<T_Q2_K>(a, Ws, Xs, gsm); break;
        default: gemm_f32_body<T_Q4_K>(a, Ws, Xs, gsm); break;
    }
}

// Tensor-core path: tile 128 rows x 64 tokens x 32 k, 8 warps (4 along rows x 2 along
// tokens), each warp 32x32 = 2 (m16) x 4 (n8) mma.m16n8k16 tiles. Row stride 40 halfs in
// shared memory avoids bank conflicts on the fragment loads.
#define GH_BM 128
#define GH_BN 64
#define GH_BK 32
#define GH_LD 40

__device__ __forceinline__ void mma16816(float* c, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int TY>
__device__ void gemm_h_body(const GemmArgs& a, u16* As, u16* Bs, const u64* gsm) {
    int e = blockIdx.z;
    int j0 = 0, j1 = a.T;
    const u8* pay = a.w.pay;
    const u8* hdr = a.w.hdr;
    if (a.grp_off) {
        j0 = a.grp_off[e];
        j1 = a.grp_off[e + 1];
        pay += (i64)e * a.w.e_pay;
        hdr += (i64)e * a.w.e_hdr;
    }
    int tb = j0 + blockIdx.y * GH_BN;
    if (tb >= j1) return;
    int rb = blockIdx.x * GH_BM;
    int rows = a.w.rows, cols = a.w.cols;
    int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    int wm = warp & 3, wn = warp >> 2;
    int gq = lane >> 2, cq = lane & 3;
    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int n = 0; n < 4; n++)
#pragma unroll
            for (int q = 0; q < 4; q++) acc[i][n][q] = 0.f;
    // loaders: A 128 rows x 32 k = 512 groups of 8 -> 2 per thread; B 64 tokens x 32 k -> 1 per thread
    int br = tid >> 2, bc = (tid & 3) * 8;
    int tok = tb + br;
    const float* xp = nullptr;
    if (tok < j1) {
        int xr = a.gather ? a.gather[tok] : tok;
        xp = a.x + (i64)xr * a.ldx;
    }
    for (int k0 = 0; k0 < cols; k0 += GH_BK) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int gi = tid + h * 256;
            int ar = gi >> 2, ac = (gi & 3) * 8;
            float v[8];
            if (rb + ar < rows) deq8<TY>(pay, hdr, cols, rb + ar, k0 + ac, v, gsm);
            else {
#pragma unroll
                for (int i = 0; i < 8; i++) v[i] = 0.f;
            }
            uint4 pk;
            pk.x = pack_h2(v[0], v[1]); pk.y = pack_h2(v[2], v[3]); pk.z = pack_h2(v[4], v[5]); pk.w = pack_h2(v[6], v[7]);
            *(uint4*)(As + ar * GH_LD + ac) = pk;
        }
        {
            uint4 pk;
            if (xp) {
                float4 p0 = *(const float4*)(xp + k0 + bc), p1 = *(const float4*)(xp + k0 + bc + 4);
                pk.x = pack_h2(p0.x, p0.y); pk.y = pack_h2(p0.z, p0.w); pk.z = pack_h2(p1.x, p1.y); pk.w = pack_h2(p1.z, p1.w);
            } else {
                pk.x = pk.y = pk.z = pk.w = 0u;
            }
            *(uint4*)(Bs + br * GH_LD + bc) = pk;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < GH_BK; kk += 16) {
            u32 af[2][4], bf[4][2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                int r0 = wm * 32 + i * 16 + gq;
                af[i][0] = *(const u32*)(As + r0 * GH_LD + kk + 2 * cq);
                af[i][1] = *(const u32*)(As + (r0 + 8) * GH_LD + kk + 2 * cq);
                af[i][2] = *(const u32*)(As + r0 * GH_LD + kk + 2 * cq + 8);
                af[i][3] = *(const u32*)(As + (r0 + 8) * GH_LD + kk + 2 * cq + 8);
            }
#pragma unroll
            for (int n = 0; n < 4; n++) {
                int c0 = wn * 32 + n * 8 + gq;
                bf[n][0] = *(const u32*)(Bs + c0 * GH_LD + kk + 2 * cq);
                bf[n][1] = *(const u32*)(Bs + c0 * GH_LD + kk + 2 * cq + 8);
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int n = 0; n < 4; n++) mma16816(acc[i][n], af[i], bf[n]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int n = 0; n < 4; n++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                int r = rb + wm * 32 + i * 16 + gq + ((q >> 1) << 3);
                int tk = tb + wn * 32 + n * 8 + 2 * cq + (q & 1);
                if (r < rows && tk < j1) a.y[(i64)tk * a.ldy + r] = acc[i][n][q];
            }
}

extern "C" __global__ void __launch_bounds__(256) gemm_h(GemmArgs a) {
    PDL_ENTRY;
    __shared__ __align__(16) u16 As[GH_BM * GH_LD];
    __shared__ __align__(16) u16 Bs[GH_BN * GH_LD];
    GRID_SMEM
    switch (a.w.type) {
        case T_F32: gemm_h_body<T_F32>(a, As, Bs, gsm); break;
        case T_F16: gemm_h_body<T_F16>(a, As, Bs, gsm); break;
        case T_Q8_0: gemm_h_body<T_Q8_0>(a, As, Bs, gsm); break;
        case T_IQ2_XXS: gemm_h_body<T_IQ2_XXS>(a, As, Bs, gsm); break;
        case T_Q2_K: gemm_h_body<T_Q2_K>(a, As, Bs, gsm); break;
        default: gemm_h_body<T_Q4_K>(a, As, Bs, gsm); break;
    }
}

// ------------------------------------------------------------------------------------------
// gemm_q64 / gemm_q128: the Fast-precision prefill GEMM (CudaSession::gemm; DS4_GEMM=old
// selects gemm_h). Same GemmArgs semantics as gemm_h. Design, and why:
//  * Block tile 128 weight rows x BN tokens (BN = 128; 64 when the launch has too few tiles or
//    the experts too few tokens), K step 32. 8 warps as 2 (rows) x 4 (tokens), warp tile
//    64 x BN/4, mma.sync m16n8k16 with f16 inputs and f32 accumulation (plain sm_90: wgmma
//    would need sm_90a).
//  * A 3-stage cp.async pipeline (16-byte .cg copies; zero-fill outside the matrix) stages the
//    RAW weight bytes (the K step's payload slice + its block header) and the f32 activations,
//    so global latency hides behind the math of the previous step. Raw quantized bytes are
//    2-8x smaller than f16, which keeps the footprint at 2 blocks per SM.
//  * Each K step every thread dequantizes two 8-value groups of one weight row from the staged
//    bytes into a double-buffered f16 tile (row stride 40 halfs: the 8 row addresses of an
//    ldmatrix phase land in distinct banks). The dequant of step k+1 overlaps the mma of step
//    k, one barrier per step.
//  * Activations stay f32 in shared memory (row stride 40 floats: a half warp's float2
//    fragment loads hit distinct banks) and are rounded to f16 while the B fragments are
//    built: no conversion pass over x and no scratch buffer (for the 512/1024-row GEMMs an
//    extra pass over x would cost about as much as the math).
//  * Persistent blocks walk a tile list (expert, token tile, row tile) built in shared memory
//    from grp_off: a grouped launch no longer pays for the empty (expert, token tile) blocks
//    of a T-sized grid. Row tiles are innermost, so blocks running together share an
//    activation tile in L2.
//  * Deterministic: every output element is one thread's fixed-order sum, stored once.
// ------------------------------------------------------------------------------------------
#define GQ_BM 128
#define GQ_BK 32
#define GQ_ST 3
#define GQ_XLD 40
#define GQ_WLD 40

// Raw bytes staged per weight row per K step (RB) and the number of copies that fill them (NP).
//   F32 32 floats; F16 32 halfs; Q8_0 qs[32] + the 4 aligned bytes holding d;
//   IQ2_XXS the sub-block's 8 bytes + the 4 aligned bytes holding d;
//   Q2_K qs[32] of the 128-half + the aligned scale word holding the step's 2 scale bytes
//   (at 32) + (d, dmin) (at 36), 48 with padding; Q4_K qs[32] of the 64-pair + header 16.
template <int TY> struct GQR;
template <> struct GQR<T_F32> { static const int RB = 128, NP = 8; };
template <> struct GQR<T_F16> { static const int RB = 64, NP = 4; };
template <> struct GQR<T_Q8_0> { static const int RB = 48, NP = 3; };
template <> struct GQR<T_IQ2_XXS> { static const int RB = 16, NP = 2; };
template <> struct GQR<T_Q2_K> { static const int RB = 48, NP = 4; };
template <> struct GQR<T_Q4_K> { static const int RB = 48, NP = 3; };

// cp.async with zero fill: n = bytes read from src (0 or the full size)
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, int n) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async8(u32 dst, const void* src, int n) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async4(u32 dst, const void* src, int n) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ void ldsm_x4(u32* r, u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// the 4-byte-aligned word holding a 2-byte header (cp.async needs 4-byte alignment)
__device__ __forceinline__ const u8* al4(const u8* p) { return (const u8*)((u64)p & ~(u64)3); }

// ---- wgmma (sm_90a): the activation operand of gemm_qr ----
// B comes from shared memory K-major and 64-byte swizzled (descriptor swizzle mode 2): token
// row r of a 32-k stage is 64 contiguous bytes at r * 64, its 16-byte chunk c stored at chunk
// c ^ ((r >> 1) & 3) (the hardware XORs address bits 4-5 with bits 7-8, so a stage starts
// 512-byte aligned); 8-row groups 512 bytes apart (SBO), LBO unused; the second k16 half
// starts 32 bytes on. Why: in the no-swizzle core-matrix layout (8 rows x 16 bytes per core
// matrix, LBO 128, SBO 512) the core matrices of a k16 slice all start on the same banks, and
// every gemm_qr variant staged that way issued MMA at the same ~300 TFLOP/s whatever its other
// work; swizzled, the IQ2_XXS gate at 8K tokens went 3.32 -> 2.10 ms (H200, session 8).
__device__ __forceinline__ u32 sw64_off(int row, int c) { return (u32)(row * 64 + ((c ^ ((row >> 1) & 3)) << 4)); }
__device__ __forceinline__ u64 wg_desc_sw64(u32 saddr) {
    return (u64)((saddr & 0x3FFFF) >> 4) | ((u64)1 << 16) | ((u64)(512 >> 4) << 32) | ((u64)2 << 62);
}
// generic-proxy shared-memory writes (st.shared, cp.async) made visible to wgmma's reads
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_OK 1
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }
// The same products with the weight operand A in registers (gemm_qr): m64nNk16 into the
// first N / 8 rows of d, A = the thread's 4 packed f16x2 fragment registers (the mma.sync
// m16n8k16 A layout, warp w of the warpgroup on rows 16w .. 16w+15), B from shared memory.
template <int N, int R>
__device__ __forceinline__ void wg_mma_rs(float (&d)[R][4], const u32 (&ar)[4], u64 db) {
    static_assert(N % 64 == 0 && N <= 256 && N / 8 <= R, "wgmma N: 64 .. 256, within d");
    if constexpr (N == 64) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
            : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(1));
    } else if constexpr (N == 128) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
            : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(1));
    } else if constexpr (N == 192) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, {%96,%97,%98,%99}, %100, p, 1, 1, 0;\n}\n"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3])
            : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(1));
    } else if constexpr (N == 256) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, {%128,%129,%130,%131}, %132, p, 1, 1, 0;\n}\n"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])
            : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(1));
    }
}
#else
#define WG_OK 0
#endif
template <int N>
__device__ __forceinline__ void wg_pin(float (&d)[N / 8][4]) {
#pragma unroll
    for (int j = 0; j < N / 8; j++)
#pragma unroll
        for (int q = 0; q < 4; q++) asm volatile("" : "+f"(d[j][q])::"memory");
}

// Copy q (of GQR<TY>::NP) of one staged raw weight row for the K step at column k0: the row's
// bytes at wst + row * RB (prow / hrow: its payload and header; wok false: zero-filled).
template <int TY>
__device__ __forceinline__ void gq_wcopy(u32 wst, int row, int q, const u8* prow, const u8* hrow, bool wok, int k0) {
    const int RB = GQR<TY>::RB;
    int n = wok ? 16 : 0;
    u32 d = wst + row * RB + q * 16;
    if (TY == T_F32) {
        cp_async16(d, prow + k0 * 4 + q * 16, n);
    } else if (TY == T_F16) {
        cp_async16(d, prow + k0 * 2 + q * 16, n);
    } else if (TY == T_Q8_0) {
        int b = k0 >> 5;
        if (q < 2) cp_async16(d, prow + b * 32 + q * 16, n);
        else cp_async4(d, al4(hrow + b * 2), wok ? 4 : 0);
    } else if (TY == T_IQ2_XXS) {
        // sub-block (k0 / 32) % 8 of block k0 / 256: 8 bytes at 64 * (k0 / 256) + 8 * ((k0 / 32) % 8)
        if (q == 0) cp_async8(wst + row * RB, prow + (k0 >> 5) * 8, wok ? 8 : 0);
        else cp_async4(wst + row * RB + 8, al4(hrow + (k0 >> 8) * 2), wok ? 4 : 0);
    } else if (TY == T_Q2_K) {
        int b = k0 >> 8, h = (k0 >> 7) & 1;
        // scale bytes j = 8h + 2s, +1 of this 32-column step share one aligned word
        int sw = (8 * h + 2 * ((k0 >> 5) & 3)) & ~3;
        if (q < 2) cp_async16(d, prow + b * 80 + 16 + 32 * h + q * 16, n);
        else if (q == 2) cp_async4(d, prow + b * 80 + sw, wok ? 4 : 0);
        else cp_async4(wst + row * RB + 36, hrow + b * 4, wok ? 4 : 0);
    } else {  // Q4_K
        int b = k0 >> 8, j = (k0 >> 5) & 7;
        if (q < 2) cp_async16(d, prow + b * 128 + 32 * (j >> 1) + q * 16, n);
        else cp_async16(d, hrow + b * 16, n);
    }
}

// Issue the copies of one K step (columns k0 .. k0+31) into a stage (shared addresses wst,
// xst): weight rows rb..rb+127 (raw bytes, RB per row) and BN activation rows (row stride
// GQ_XLD elements: f32, or f16 when XH; the core-matrix layout for wgmma). prow / hrow: this
// thread's weight row (payload, header; row 0 when past the matrix, wok false: zero-filled).
// xoff / xsrc / xn: this thread's activation copies (stage offset, source at column 0, bytes:
// 0 past the group's end), set once per tile in gemm_q_body.
template <int TY, int BN, bool XH, int BM = GQ_BM>
__device__ __forceinline__ void gq_load(u32 wst, u32 xst, const u8* prow, const u8* hrow, bool wok, int k0,
                                        const u32 (&xoff)[BN / 32], const u8* const (&xsrc)[BN / 32],
                                        const int (&xn)[BN / 32]) {
    const int tid = threadIdx.x;
    const int NP = GQR<TY>::NP;
#pragma unroll
    // tokens past the group's end are not copied at all: a stale value in a token's stage
    // row only reaches that token's outputs, which are never stored (and the copy would still
    // be a request to L2)
    for (int i = 0; i < (XH ? BN / 64 : BN / 32); i++)
        if (xn[i]) cp_async16(xst + xoff[i], xsrc[i] + k0 * (XH ? 2 : 4), 16);
    // every copy of this thread is of weight row tid % BM (256 * i does not change it)
    const int row = tid & (BM - 1);
#pragma unroll
    for (int i = 0; i < (BM * NP + 255) / 256; i++) {
        int p = tid + 256 * i;
        if ((BM * NP) % 256 != 0 && p >= BM * NP) break;
        gq_wcopy<TY>(wst, row, p / BM, prow, hrow, wok, k0);
    }
}

// Dequantize the staged raw bytes of one row (R) for column group g (columns k0+8g .. +7) into
// 8 packed f16. hs: byte offset of the 2-byte d inside its staged aligned word (Q8_0, IQ2_XXS).
// Same arithmetic as deq8 (f32 products, rounded once to f16).
template <int TY>
__device__ __forceinline__ uint4 gq_deq(const u8* R, int g, int k0, int hs, const u64* gsm) {
    float v[8];
    if (TY == T_F16) {
        return *(const uint4*)(R + g * 16);
    } else if (TY == T_F32) {
        float4 p0 = *(const float4*)(R + g * 32), p1 = *(const float4*)(R + g * 32 + 16);
        v[0] = p0.x; v[1] = p0.y; v[2] = p0.z; v[3] = p0.w; v[4] = p1.x; v[5] = p1.y; v[6] = p1.z; v[7] = p1.w;
    } else if (TY == T_Q8_0) {
        uint2 q = *(const uint2*)(R + g * 8);
        float d = h2f(*(const u16*)(R + 32 + hs));
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = d * (float)(signed char)((q.x >> (8 * i)) & 0xff);
            v[4 + i] = d * (float)(signed char)((q.y >> (8 * i)) & 0xff);
        }
    } else if (TY == T_IQ2_XXS) {
        uint2 q = *(const uint2*)R;
        float d = h2f(*(const u16*)(R + 8 + hs));
        u32 A = q.x, B = q.y;
        int gi = (A >> (8 * g)) & 255;
        u32 s = (B >> (7 * g)) & 127;
        s |= (u32)(__popc(s) & 1) << 7;
        float db = d * (0.5f + (float)(B >> 28)) * 0.25f;
        u64 gr = gsm[gi];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float mag = (float)((gr >> (8 * i)) & 0xff);
            v[i] = ((s >> i) & 1) ? -(db * mag) : db * mag;
        }
    } else if (TY == T_Q2_K) {
        int s = (k0 >> 5) & 3;
        int scb = R[32 + ((s & 1) << 1) + (g >= 2 ? 1 : 0)];  // byte 8h+2s(+1) of the staged word
        uint2 q = *(const uint2*)(R + g * 8);
        float d = h2f(*(const u16*)(R + 36)), dmin = h2f(*(const u16*)(R + 38));
        float dl = d * (float)(scb & 15), ml = dmin * (float)(scb >> 4);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = dl * (float)((q.x >> (8 * i + 2 * s)) & 3) - ml;
            v[4 + i] = dl * (float)((q.y >> (8 * i + 2 * s)) & 3) - ml;
        }
    } else {  // Q4_K
        int j = (k0 >> 5) & 7;
        uint2 q = *(const uint2*)(R + g * 8);
        float d = h2f(*(const u16*)(R + 32)), dmin = h2f(*(const u16*)(R + 34));
        int sc, m;
        q4k_scale_min(j, R + 36, sc, m);
        float dl = d * (float)sc, ml = dmin * (float)m;
        int sh = (j & 1) ? 4 : 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = dl * (float)((q.x >> (8 * i + sh)) & 15) - ml;
            v[4 + i] = dl * (float)((q.y >> (8 * i + sh)) & 15) - ml;
        }
    }
    uint4 pk;
    pk.x = pack_h2(v[0], v[1]); pk.y = pack_h2(v[2], v[3]); pk.z = pack_h2(v[4], v[5]); pk.w = pack_h2(v[6], v[7]);
    return pk;
}

// ---- f16x2 dequantization (GemmArgs.flags & GQ_FLAG_HDEQ; the default, see session.rs) ----
// The grouped expert GEMMs have ~48-192 tokens per expert, so each decoded weight feeds few
// mma and the f32 decode (per value: extract, int->float, multiply, then a pack per pair) is
// the largest instruction cost of a K step. These decode two values per instruction instead:
// a quant field is moved into the low byte of a half whose high byte is 0x64, which IS the
// f16 1024 + field (exact), one sub.f16x2 removes the 1024, one fma/mul.f16x2 applies the
// scales (scales rounded to f16 first: up to ~2 f16 ulps per weight instead of 1; this path
// feeds f16 mma anyway, the Reference path is untouched).
__device__ __forceinline__ u32 h2_sub(u32 a, u32 b) {
    u32 r;
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ u32 h2_mul(u32 a, u32 b) {
    u32 r;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ u32 h2_fma(u32 a, u32 b, u32 c) {
    u32 r;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
// bytes b0, b1 of w as the halves {1024 + b0, 1024 + b1} (b0 in the low half)
__device__ __forceinline__ u32 h2_bytes01(u32 w) { return __byte_perm(w, 0x64646464u, 0x4140); }
__device__ __forceinline__ u32 h2_bytes23(u32 w) { return __byte_perm(w, 0x64646464u, 0x4342); }
#define H2_1024 0x64006400u
#define H2_1152 0x64806480u
// The per-group scales in f16x2 arithmetic, the same values as the f32 products rounded once
// (d * sc is exact in f32: an f16 times a small integer; mul.rn.f16x2 of the exact operands
// rounds that product once too). Why: the f32 form spent two int->float conversions, two f16
// -> f32 and a pack per group on the conversion pipe, a quarter of the FMA pipe's rate.
// K-quants: dm = {d, dmin} (the block header's word), sm = {sc, m} as u16 fields (< 1024)
// -> dl2 = {d sc, d sc}, nml2 = {-dmin m, -dmin m}.
__device__ __forceinline__ void kq_scales(u32 dm, u32 sm, u32& dl2, u32& nml2) {
    u32 p = h2_mul(h2_sub(sm | H2_1024, H2_1024), dm);
    dl2 = __byte_perm(p, 0, 0x1010);
    nml2 = __byte_perm(p, 0, 0x3232) ^ 0x80008000u;
}
// IQ2_XXS: the sub-block factor (0.5 + n) / 4 (n: 4 bits) in both halves, exact:
// (1024 + n) / 4 - 255.875 in one fma (every intermediate is exact in f16).
__device__ __forceinline__ u32 iq2_sub_scale(u32 n) {
    return h2_fma((n * 0x10001u) | H2_1024, 0x34003400u /* 0.25 */, 0xDBFFDBFFu /* -255.875 */);
}
#define GQ_FLAG_HDEQ 1
#define GQ_FLAG_XH 2  // x holds f16 rows (ldx in halfs): see gq_mma
// A group split over launches by its remainder modulo GQ_SPLIT_NX (gemm_qs's tile) in the
// dynamic tile order (qr_class_count): GQ_FLAG_HI keeps the full tiles and a remainder of more
// than 128 tokens; GQ_FLAG_LO takes only a remainder of at most 128 (64 with GQ_FLAG_S64) and
// more than 0 (64 with GQ_FLAG_MIDB) tokens, as one tile of gemm_qs2 / gemm_qs4. See
// session.rs QsSplit.
#define GQ_FLAG_HI 4
#define GQ_FLAG_LO 8
#define GQ_FLAG_S64 16
#define GQ_FLAG_MIDB 32
// y holds f16 rows (ldy in halfs), each output rounded once from its f32 sum (f2h_sat): the
// routed experts' gate / up / down outputs in prefill (session.rs `DS4_EXP_Y16`)
#define GQ_FLAG_Y16 64
// gemm_q64 / gemm_q128 split over K (a plain launch with few tiles: a few-token batch): flags
// bits 8..12 hold ks - 1; tile kc of ks covers K steps [kc nk / ks, (kc + 1) nk / ks) and
// stores its partial sums at y + kc T ldy, which gq_ks_sum adds in kc order (session.rs
// gemm_ks).
#define GQ_KS_SHIFT 8
#define GQ_SPLIT_NX 256
// gemm_qs_dg (the kernel bench's diagnosis of gemm_qs; the outputs are not the product): flags
// bits 24..28 name the parts of the K step left out, so their share of the time shows.
// HALFX: the activation copies of tokens 128-255 (half the L2 reads of a full tile); NODEQ:
// the dequantization (the first step's fragments reused); NOMMA: the products; NOX: every
// activation copy; NOW: the weight copies.
#define GQ_DG_SHIFT 24
#define GQ_DG_HALFX 1
#define GQ_DG_NODEQ 2
#define GQ_DG_NOMMA 4
#define GQ_DG_NOX 8
#define GQ_DG_NOW 16
// One output of gemm_qr / gemm_qs: f32, or f16 (H: GQ_FLAG_Y16, their `_y16` entry points;
// gemm_q64 / gemm_q128 write f32 only).
template <bool H>
__device__ __forceinline__ void gq_put_as(const GemmArgs& a, i64 i, float v) {
    if (H) ((u16*)a.y)[i] = f2h_sat(v);
    else a.y[i] = v;
}

// The IQ2_XXS grid as f16: g16[i] = the 8 magnitudes of grid entry i (built per block). With
// GS copies: entry i at g16[i * GS + c] for every copy c (gemm_qr / gemm_qs: GQ_GREP).
template <int GS = 1>
__device__ __forceinline__ void gq_build_g16(uint4* g16) {
    for (int i = threadIdx.x; i < 256 * GS; i += blockDim.x) {
        u64 g = IQ2XXS_GRID[i / GS];
        u32 w[4];
#pragma unroll
        for (int p = 0; p < 4; p++)
            w[p] = pack_h2((float)((g >> (16 * p)) & 0xff), (float)((g >> (16 * p + 8)) & 0xff));
        g16[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

// Same staged bytes and layout as gq_deq, f16x2 arithmetic. GS: copies of the IQ2_XXS grid
// (g16 = this thread's copy, entries GS apart; see GQ_GREP).
template <int TY, int GS = 1>
__device__ __forceinline__ uint4 gq_deqh(const u8* R, int g, int k0, int hs, const uint4* g16) {
    u32 o[4];
    if (TY == T_Q8_0) {
        uint2 q = *(const uint2*)(R + g * 8);
        u32 dh = *(const u16*)(R + 32 + hs);
        u32 d2 = dh | (dh << 16);
        // signed byte b -> unsigned b ^ 0x80 = b + 128; the halves hold 1152 + b
        u32 x0 = q.x ^ 0x80808080u, x1 = q.y ^ 0x80808080u;
        o[0] = h2_mul(h2_sub(h2_bytes01(x0), H2_1152), d2);
        o[1] = h2_mul(h2_sub(h2_bytes23(x0), H2_1152), d2);
        o[2] = h2_mul(h2_sub(h2_bytes01(x1), H2_1152), d2);
        o[3] = h2_mul(h2_sub(h2_bytes23(x1), H2_1152), d2);
    } else if (TY == T_IQ2_XXS) {
        uint2 q = *(const uint2*)R;
        u32 dh = *(const u16*)(R + 8 + hs);
        u32 A = q.x, B = q.y;
        u32 db2 = h2_mul(iq2_sub_scale(B >> 28), dh | (dh << 16));
        int gi = (A >> (8 * g)) & 255;
        u32 s = (B >> (7 * g)) & 127;
        s |= (u32)(__popc(s) & 1) << 7;
        uint4 m = g16[gi * GS];
        u32 mm[4] = {m.x, m.y, m.z, m.w};
#pragma unroll
        for (int p = 0; p < 4; p++) {
            // sign bit 2p -> bit 15, bit 2p+1 -> bit 31 (the two shifted copies do not overlap)
            u32 sg = (s * ((1u << (15 - 2 * p)) + (1u << (30 - 2 * p)))) & 0x80008000u;
            o[p] = h2_mul(mm[p] ^ sg, db2);
        }
    } else if (TY == T_Q2_K) {
        int s = (k0 >> 5) & 3;
        int scb = R[32 + ((s & 1) << 1) + (g >= 2 ? 1 : 0)];  // byte 8h+2s(+1) of the staged word
        uint2 q = *(const uint2*)(R + g * 8);
        u32 dl2, nml2;
        kq_scales(*(const u32*)(R + 36), (u32)(scb & 15) | ((u32)(scb >> 4) << 16), dl2, nml2);
        u32 x0 = (q.x >> (2 * s)) & 0x03030303u, x1 = (q.y >> (2 * s)) & 0x03030303u;
        o[0] = h2_fma(h2_sub(h2_bytes01(x0), H2_1024), dl2, nml2);
        o[1] = h2_fma(h2_sub(h2_bytes23(x0), H2_1024), dl2, nml2);
        o[2] = h2_fma(h2_sub(h2_bytes01(x1), H2_1024), dl2, nml2);
        o[3] = h2_fma(h2_sub(h2_bytes23(x1), H2_1024), dl2, nml2);
    } else {  // Q4_K
        int j = (k0 >> 5) & 7;
        uint2 q = *(const uint2*)(R + g * 8);
        int sc, m;
        q4k_scale_min(j, R + 36, sc, m);
        u32 dl2, nml2;
        kq_scales(*(const u32*)(R + 32), (u32)sc | ((u32)m << 16), dl2, nml2);
        int sh = (j & 1) ? 4 : 0;
        u32 x0 = (q.x >> sh) & 0x0f0f0f0fu, x1 = (q.y >> sh) & 0x0f0f0f0fu;
        o[0] = h2_fma(h2_sub(h2_bytes01(x0), H2_1024), dl2, nml2);
        o[1] = h2_fma(h2_sub(h2_bytes23(x0), H2_1024), dl2, nml2);
        o[2] = h2_fma(h2_sub(h2_bytes01(x1), H2_1024), dl2, nml2);
        o[3] = h2_fma(h2_sub(h2_bytes23(x1), H2_1024), dl2, nml2);
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

// Dequantize a staged K step into the f16 tile: thread -> row tid % 128, 8-value groups
// tid / 128 and tid / 128 + 2 (consecutive threads on consecutive rows: the 16-byte stores of
// a phase hit distinct banks). hrow: the row's header (gq_load), for the offset of the 2-byte
// d inside its staged word. Both groups are decoded before either is stored (the stores could
// alias the staged bytes for the compiler, which then reloaded them after the first store).
template <int TY, bool HD>
__device__ __forceinline__ void gq_deq_stage(const u8* wst, u16* wh, const u8* hrow, int k0, const u64* gsm,
                                             const uint4* g16) {
    const int tid = threadIdx.x;
    int row = tid & (GQ_BM - 1), g0 = tid / GQ_BM;
    const u8* R = wst + row * GQR<TY>::RB;
    int hs = 0;
    if (TY == T_Q8_0) hs = (int)((u64)(hrow + (k0 >> 5) * 2) & 2);
    if (TY == T_IQ2_XXS) hs = (int)((u64)(hrow + (k0 >> 8) * 2) & 2);
    uint4 v[2];
#pragma unroll
    for (int h = 0; h < 2; h++) v[h] = HD ? gq_deqh<TY>(R, g0 + 2 * h, k0, hs, g16) : gq_deq<TY>(R, g0 + 2 * h, k0, hs, gsm);
#pragma unroll
    for (int h = 0; h < 2; h++) *(uint4*)(wh + row * GQ_WLD + (g0 + 2 * h) * 8) = v[h];
}

// mma over one staged K step: A = f16 weight tile (ldmatrix), B = the activations: f32 rounded
// to f16 here, or (XH) already f16, loaded by ldmatrix (one x4 = two 8-token fragments: same
// values, so the same sums, as rounding the f32 rows here).
template <int BN, bool XH>
__device__ __forceinline__ void gq_mma(const u16* wh, const u8* xsb, int wm, int wn, int lane,
                                       float (&acc)[4][BN / 32][4]) {
    const int NT = BN / 32;
#pragma unroll
    for (int kk = 0; kk < GQ_BK; kk += 16) {
        u32 bf[NT][2];
        if (XH) {
            const u16* xs = (const u16*)xsb;
#pragma unroll
            for (int n2 = 0; n2 < NT / 2; n2++) {
                u32 r[4];
                int tok = wn * (BN / 4) + n2 * 16 + (lane & 7) + ((lane >> 4) << 3);
                ldsm_x4(r, smem_u32(xs + tok * GQ_XLD + kk + ((lane >> 3) & 1) * 8));
                bf[2 * n2][0] = r[0];
                bf[2 * n2][1] = r[1];
                bf[2 * n2 + 1][0] = r[2];
                bf[2 * n2 + 1][1] = r[3];
            }
        } else {
            const float* xs = (const float*)xsb;
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const float* xp = xs + (wn * (BN / 4) + n * 8 + (lane >> 2)) * GQ_XLD + kk + 2 * (lane & 3);
                float2 p0 = *(const float2*)xp, p1 = *(const float2*)(xp + 8);
                bf[n][0] = pack_h2(p0.x, p0.y);
                bf[n][1] = pack_h2(p1.x, p1.y);
            }
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            u32 af[4];
            ldsm_x4(af, smem_u32(wh + (wm * 64 + i * 16 + (lane & 15)) * GQ_WLD + kk + (lane >> 4) * 8));
#pragma unroll
            for (int n = 0; n < NT; n++) mma16816(acc[i][n], af, bf[n]);
        }
    }
}

// tst[e] = the first token tile (of BN tokens) of group e, tst[ng] = the total (warp 0; the
// block's barrier at the end publishes it). One group (T tokens) when a.grp_off is null.
template <int BN>
__device__ __forceinline__ void gq_tile_prefix(const GemmArgs& a, int ng, int* tst) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (warp == 0) {
        int per = (ng + 31) >> 5;
        int lo = lane * per, hi = min(lo + per, ng);
        int s = 0;
        for (int e = lo; e < hi; e++) s += a.grp_off ? (a.grp_off[e + 1] - a.grp_off[e] + BN - 1) / BN : (a.T + BN - 1) / BN;
        int incl = warp_scan_incl(s);
        int run = incl - s;
        for (int e = lo; e < hi; e++) {
            tst[e] = run;
            run += a.grp_off ? (a.grp_off[e + 1] - a.grp_off[e] + BN - 1) / BN : (a.T + BN - 1) / BN;
        }
        if (lane == 31) tst[ng] = incl;
    }
    __syncthreads();
}

// The group holding token tile tt of a tile prefix (pre[e]: group e's first tile, ascending
// over the ng groups): the last e with pre[e] <= tt.
__device__ __forceinline__ int gq_group_of(const int* pre, int ng, int tt) {
    int lo = 0, hi = ng;
    while (hi - lo > 1) {
        int mid = (lo + hi) >> 1;
        if (pre[mid] <= tt) lo = mid;
        else hi = mid;
    }
    return lo;
}
// Group e's tokens [j0, j1) and weights (the whole batch and a.w when a.grp_off is null).
__device__ __forceinline__ void gq_group_span(const GemmArgs& a, int e, int& j0, int& j1, const u8*& pay, const u8*& hdr) {
    j0 = 0;
    j1 = a.T;
    pay = a.w.pay;
    hdr = a.w.hdr;
    if (a.grp_off) {
        j0 = a.grp_off[e];
        j1 = a.grp_off[e + 1];
        pay += (i64)e * a.w.e_pay;
        hdr += (i64)e * a.w.e_hdr;
    }
}

// Tile `tile` of a grouped GEMM (row tile fastest): its first token tb, the group's end j1
// (tokens tb .. min(tb + BN, j1) - 1), first weight row rb, and the group's weights.
template <int BN, int BM>
__device__ __forceinline__ void gq_tile_locate(const GemmArgs& a, int ng, const int* tst, int tile, int rtiles, int& tb,
                                               int& j1, int& rb, const u8*& pay, const u8*& hdr) {
    int tt = tile / rtiles, rt = tile - tt * rtiles;
    const int e = gq_group_of(tst, ng, tt);
    int j0;
    gq_group_span(a, e, j0, j1, pay, hdr);
    tb = j0 + (tt - tst[e]) * BN;
    rb = rt * BM;
}

// The weight row this thread copies in a tile starting at row rb (gq_load: row rb + tid % BM;
// past the matrix: row 0, zero-filled, wok false): its payload and header.
template <int TY, int BM>
__device__ __forceinline__ void gq_copy_row(const u8* pay, const u8* hdr, int rb, int rows, int cols, const u8*& prow,
                                            const u8*& hrow, bool& wok) {
    int wr = rb + (threadIdx.x & (BM - 1));
    wok = wr < rows;
    if (!wok) wr = 0;
    prow = pay + (i64)wr * ((cols / QT<TY>::BL) * QT<TY>::PB);
    hrow = hdr + (i64)wr * ((cols / QT<TY>::BL) * QT<TY>::HB);
}
// A tile's start, shared by the grouped GEMM bodies: its tokens [tb, j1) and rows from rb
// (gq_tile_locate), its group's header base `hdr`, and this thread's copy row (gq_copy_row).
template <int TY, int BN, int BM>
__device__ __forceinline__ void gq_tile_begin(const GemmArgs& a, int ng, const int* tst, int tile, int rtiles, int& tb, int& j1,
                                              int& rb, const u8*& hdr, const u8*& prow, const u8*& hrow, bool& wok) {
    const u8* pay;
    gq_tile_locate<BN, BM>(a, ng, tst, tile, rtiles, tb, j1, rb, pay, hdr);
    gq_copy_row<TY, BM>(pay, hdr, rb, a.w.rows, a.w.cols, prow, hrow, wok);
}

// mma.sync over 128 weight rows (2 x 4 warps, a warp tile of 64 rows x BN/4 tokens) x BN
// tokens; weights dequantized per K step into a shared f16 tile (gq_deq_stage).
template <int TY, int BN, bool HD, bool XH>
__device__ void gemm_q_body(const GemmArgs& a, int ngroups, u8* smem, const u64* gsm, const uint4* g16) {
    constexpr int BM = GQ_BM, NT = BN / 32;
    // bytes of one activation stage, halfs of one f16 weight tile
    constexpr int XS = BN * GQ_XLD * (XH ? 2 : 4), WHS = BM * GQ_WLD;
    const int RB = GQR<TY>::RB;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wm = warp & 1, wn = warp >> 1;
    const int ng = a.grp_off ? ngroups : 1;
    int* tst = (int*)smem;  // tst[e] = first token tile of group e; tst[ng] = total
    const int tsb = ((ng + 1) * 4 + 15) & ~15;
    u8* xst = smem + tsb;
    u8* wst = smem + tsb + GQ_ST * XS;
    u16* wh = (u16*)(wst + GQ_ST * BM * RB);
    gq_tile_prefix<BN>(a, ng, tst);
    const int rows = a.w.rows, cols = a.w.cols;
    const int rtiles = (rows + BM - 1) / BM;
    const int ntiles = rtiles * tst[ng];
    const int nk_all = cols / GQ_BK;
    const int ks = ((a.flags >> GQ_KS_SHIFT) & 31) + 1;
    for (int tile_k = blockIdx.x; tile_k < ntiles * ks; tile_k += gridDim.x) {
        // (ks 1: kc 0, the whole K range, y itself)
        const int kc = tile_k / ntiles, tile = tile_k - kc * ntiles;
        const int k0 = kc * nk_all / ks, nk = (kc + 1) * nk_all / ks - k0;
        float* yk = a.y + (i64)kc * a.T * a.ldy;
        int tb, j1, rb;
        const u8 *hdr, *prow, *hrow;
        bool wok;
        gq_tile_begin<TY, BN, BM>(a, ng, tst, tile, rtiles, tb, j1, rb, hdr, prow, hrow, wok);
        // this thread's activation copies, fixed for the tile: 8 threads per f32 row (4 per f16
        // row) copy 16 bytes each; a step adds its column offset to the source (the SASS of a
        // K step spent ~75 of ~210 instructions on these addresses when recomputed each step)
        u32 xoff[NT];
        const u8* xsrc[NT];
        int xn[NT];
#pragma unroll
        for (int i = 0; i < NT; i++) {
            int tl = XH ? (tid >> 2) + 64 * i : (tid >> 3) + 32 * i, part = XH ? tid & 3 : tid & 7;
            int tok = tb + tl;
            xoff[i] = XH ? (tl * GQ_XLD + part * 8) * 2 : (tl * GQ_XLD + part * 4) * 4;
            bool in = (!XH || i < BN / 64) && tok < j1;
            xn[i] = in ? 16 : 0;
            xsrc[i] = in ? (const u8*)a.x + (i64)(a.gather ? a.gather[tok] : tok) * a.ldx * (XH ? 2 : 4) + part * 16 : (const u8*)a.x;
        }
        // opaque to the compiler: kept in registers instead of recomputed every K step
#pragma unroll
        for (int i = 0; i < (XH ? BN / 64 : BN / 32); i++) asm volatile("" : "+r"(xoff[i]), "+r"(xn[i]), "+l"(xsrc[i]));
        const u32 xs_u = smem_u32(xst), ws_u = smem_u32(wst);
        float acc[4][NT][4] = {};
        // prologue: stages 0 .. ST-2 in flight, step 0 dequantized
#pragma unroll
        for (int s = 0; s < GQ_ST - 1; s++) {
            if (s < nk) gq_load<TY, BN, XH>(ws_u + s * BM * RB, xs_u + s * XS, prow, hrow, wok, (k0 + s) * GQ_BK, xoff, xsrc, xn);
            cp_commit();
        }
        cp_wait<GQ_ST - 2>();
        __syncthreads();
        gq_deq_stage<TY, HD>(wst, wh, hrow, k0 * GQ_BK, gsm, g16);
        // ring positions, advanced per step (no divisions): stage and f16 tile read by step
        // kt's products, raw stage dequantized for step kt+1, stages loaded for step kt+2
        int xc = 0, wc = 0, rn = 1 % GQ_ST, rl = 2 % GQ_ST;
        for (int kt = 0; kt < nk; kt++) {
            // step kt+1 landed (own copies), then the barrier publishes it and the dequantized
            // tile of step kt, and retires every read of step kt-1's stages and f16 buffer
            cp_wait<GQ_ST - 3>();
            __syncthreads();
            int kn = kt + GQ_ST - 1;
            if (kn < nk) gq_load<TY, BN, XH>(ws_u + rl * BM * RB, xs_u + rl * XS, prow, hrow, wok, (k0 + kn) * GQ_BK, xoff, xsrc, xn);
            cp_commit();
            int wn1 = wc ^ 1;
            if (kt + 1 < nk) gq_deq_stage<TY, HD>(wst + rn * BM * RB, wh + wn1 * WHS, hrow, (k0 + kt + 1) * GQ_BK, gsm, g16);
            gq_mma<BN, XH>(wh + wc * WHS, xst + xc * XS, wm, wn, lane, acc);
            xc = xc + 1 == GQ_ST ? 0 : xc + 1;
            wc = wn1;
            rn = rn + 1 == GQ_ST ? 0 : rn + 1;
            rl = rl + 1 == GQ_ST ? 0 : rl + 1;
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    int r = rb + wm * 64 + i * 16 + (lane >> 2) + ((q >> 1) << 3);
                    int tk = tb + wn * (BN / 4) + n * 8 + 2 * (lane & 3) + (q & 1);
                    if (r < rows && tk < j1) yk[(i64)tk * a.ldy + r] = acc[i][n][q];
                }
        __syncthreads();  // the next tile's prologue overwrites the stages and f16 tile
    }
}

// gemm_q's split-K partials summed in kc order: y[t ldy + r] = sum_kc part[(kc T + t) rows + r].
extern "C" __global__ void __launch_bounds__(256) gq_ks_sum(const float* __restrict__ part, int ks, int T, int rows, float* __restrict__ y,
                                                            int ldy) {
    PDL_ENTRY;
    const i64 n = (i64)T * rows;
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = part[i];
    for (int kc = 1; kc < ks; kc++) s += part[(i64)kc * n + i];
    const int t = (int)(i / rows), r = (int)(i - (i64)t * rows);
    y[(i64)t * ldy + r] = s;
}

template <int BN>
__device__ __forceinline__ void gemm_q_dispatch(const GemmArgs& a, int ngroups, u8* smem) {
    __shared__ uint4 g16[256];
    const bool hd = (a.flags & GQ_FLAG_HDEQ) != 0;
    if (hd && a.w.type == T_IQ2_XXS) gq_build_g16(g16);  // published by GRID_SMEM's barrier
    GRID_SMEM
    // f16 activations (GQ_FLAG_XH) are built for the f16x2-dequantized quant types only: the
    // host sets the flag for those (gq_xh_type in session.rs)
    const bool xh = hd && (a.flags & GQ_FLAG_XH) != 0;
#define GQ_BODY(TY)                                                       \
    if (xh) gemm_q_body<TY, BN, true, true>(a, ngroups, smem, gsm, g16);  \
    else if (hd) gemm_q_body<TY, BN, true, false>(a, ngroups, smem, gsm, g16); \
    else gemm_q_body<TY, BN, false, false>(a, ngroups, smem, gsm, g16);
    switch (a.w.type) {
        case T_F32: gemm_q_body<T_F32, BN, false, false>(a, ngroups, smem, gsm, g16); break;
        case T_F16: gemm_q_body<T_F16, BN, false, false>(a, ngroups, smem, gsm, g16); break;
        case T_Q8_0: GQ_BODY(T_Q8_0) break;
        case T_IQ2_XXS: GQ_BODY(T_IQ2_XXS) break;
        case T_Q2_K: GQ_BODY(T_Q2_K) break;
        default: GQ_BODY(T_Q4_K) break;
    }
#undef GQ_BODY
}

// Dynamic shared memory (bytes, see launch_gemm_q_kernel): align16((ngroups+1)*4)
//   + GQ_ST*XS + GQ_ST*128*RB(type) + 2*WHS*2 (XS, WHS: gemm_q_body).
//   Grid: persistent, any size.
extern "C" __global__ void __launch_bounds__(256, 2) gemm_q128(GemmArgs a, int ngroups) {
    PDL_ENTRY;
    extern __shared__ __align__(16) u8 gq_smem[];
    gemm_q_dispatch<128>(a, ngroups, gq_smem);
}
// ---- gemm_qr: the grouped expert GEMM with the weights dequantized into registers ----
// sm_90a only; f16 activations stored in qr_kpos order (x_to_f16 / moe_mid with perm); the
// f16x2-dequantized quant types (Q8_0, IQ2_XXS, Q2_K, Q4_K). Tile: 128 weight rows (a
// warpgroup per 64) x up to 256 tokens of one group; the wgmma N is the tile's token count
// rounded up to 64, so a group of 192 tokens is one 192-wide tile, not 256 slots.
// Why: the earlier wgmma kernel (gemm_qw128) dequantized each K step into a shared f16 tile
// that wgmma then read back, ~140-225 instructions per thread and step in a serial chain
// (dequantize, store, barrier, MMA), and ran no faster than mma.sync (4.93 ms for the IQ2_XXS
// gate at 8K tokens); a 64 x 256 variant with half the dequantization per MAC was slower
// still. Here a thread dequantizes only its own A fragments straight into registers: with
// the activations' K order permuted, the 8 values a thread holds for a 32-k step (two k16
// halves) are one quant group of one row, the unit gq_deqh decodes, for its 2 rows. Raw
// weights and activations stream through GR_ST stages issued GR_ST - 2 steps ahead; the
// registers are double-buffered so the next step's dequantization runs while the current
// step's products do. One block per SM (128 accumulators per thread). Kernel bench at 8K
// tokens: IQ2_XXS gate 4.94 -> 3.61 ms, Q2_K down 5.60 -> 3.99 ms; Nsight Compute then showed
// L2 73 % busy (each token tile's activations are re-read by every row tile) and the SM 27 %:
// so the copies of tokens past a group's end are skipped (3.61 -> 3.32 ms), and gemm_qr2
// takes 256 rows per tile (half the activation reads per MAC), which wins below ~160 tokens
// per expert (the host's choice: gemm_qr in session.rs). With the activation stages swizzled
// (session 8): 2.10 ms for that IQ2_XXS gate, 2.70 ms for the Q2_K down.
#define GR_ST 8
// Copies of the f16 IQ2_XXS grid in gemm_qr / gemm_qs (8 x 4 KB of static shared memory),
// lane l reading copy l % 8. Why: a warp's 16-byte lookups of random grid entries go out in
// four phases of 8 lanes, and 8 lanes picking entries at random fall on the same 4-bank group
// ~2.5-3x per phase; with copy l % 8 at bank group l % 8 every phase is one wavefront. Nsight
// Compute on gemm_qs2 at 2K tokens (uneven routing): L1/shared throughput 88 %, SM 44 %, short
// scoreboard the first consumer stall. Kernel bench (session 22), IQ2_XXS gate: gemm_qs 8K
// tokens 1.797 -> 1.730 ms (uniform), 2.286 -> 2.162 (skewed); gemm_qs2 2K skewed 1.423 -> 1.230.
// The same f16 values: bits unchanged. In the dynamic shared memory of IQ2_XXS launches only.
#define GQ_GREP 8
// gemm_qs's raw weights per group of P K steps: the producer copies a row's bytes once per
// group into slot (step % GR_ST) / P (RB bytes per row), where every step of the group reads
// them. Q2_K: the 32 qs bytes of a 128-half, the scale word and (d, dmin) serve steps 2j and
// 2j + 1 alike (the layout of GQR, copied half as often); Q4_K: the 64-pair's 32 bytes and
// the header likewise; IQ2_XXS: both steps' 8 bytes as one 16-byte copy, then the d word (RB
// 32). Why: Nsight Compute on gemm_qs (IQ2_XXS gate, 8K tokens) counted 367M shared-memory
// wavefronts in a ~3.2M-cycle launch (~87 % of the SMs' one per cycle), 200M of them the
// producer's cp.async writes: a copy touching 32 rows' global lines costs 32 wavefronts
// however few bytes it moves (the 8-byte IQ2_XXS copy: 67M for 2M instructions).
// PAIR: IQ2_XXS's pair row (step 2j's 8 bytes, step 2j + 1's, the d word at DW).
template <int TY> struct QSW { static const int P = 2, RB = GQR<TY>::RB; static const bool PAIR = false; };
template <> struct QSW<T_Q8_0> { static const int P = 1, RB = GQR<T_Q8_0>::RB; static const bool PAIR = false; };
template <> struct QSW<T_IQ2_XXS> { static const int P = 2, RB = 32, DW = 16; static const bool PAIR = true; };
// This thread's A fragments of one 32-k step from the staged raw rows r0 and r0 + 8 (quant
// group g = lane % 4): f[h] = the registers of k16 half h (rows r0, r0+8 at pairs 2g, then
// 2g + 8 of the permuted order). hp0 / hp1: the rows' header addresses (low bits), for the
// offset of a 2-byte d inside its staged aligned word (as gq_deq_stage).
// RB: the staged row stride; PAIR: rows in QSW<IQ2_XXS>'s pair layout, `sub` the step's place
// in the pair (gq_deqh reads d at R + 8 + hs: ho moves that onto the row's d word).
template <int TY, int RB = GQR<TY>::RB, bool PAIR = false>
__device__ __forceinline__ void qr_deq(const u8* st, int r0, int g, int k0, u32 hp0, u32 hp1, const uint4* g16,
                                       u32 (&f)[2][4], int sub = 0) {
    static_assert(!PAIR || TY == T_IQ2_XXS, "the pair layout is IQ2_XXS's");
    const u32 sh = TY == T_IQ2_XXS ? (k0 >> 8) * 2 : (k0 >> 5) * 2;
    const bool hd = TY == T_Q8_0 || TY == T_IQ2_XXS;
    const int qo = PAIR ? 8 * sub : 0, ho = PAIR ? QSW<T_IQ2_XXS>::DW - 8 - qo : 0;
    uint4 v0 = gq_deqh<TY, GQ_GREP>(st + r0 * RB + qo, g, k0, hd ? (int)((hp0 + sh) & 2) + ho : 0, g16);
    uint4 v1 = gq_deqh<TY, GQ_GREP>(st + (r0 + 8) * RB + qo, g, k0, hd ? (int)((hp1 + sh) & 2) + ho : 0, g16);
    f[0][0] = v0.x; f[0][1] = v1.x; f[0][2] = v0.y; f[0][3] = v1.y;
    f[1][0] = v0.z; f[1][1] = v1.z; f[1][2] = v0.w; f[1][3] = v1.w;
}

// a compile-time int as a value (NVRTC has no <type_traits>)
template <int V> struct IC { static constexpr int value = V; };
#if WG_OK
// The K loop of one tile with N-wide products. MB: 64-row blocks per warpgroup (the tile has
// 128 * MB rows), NX = 256 / MB: the activation stage's token capacity. Stages: GR_ST
// activation stages of NX x 64 bytes at xs_u, then GR_ST raw weight stages of 128 * MB x RB at
// ws_u / wst. The copies of row tid % (128 * MB) (prow, hrow, wok) and of the activations
// (xoff, xsrc, xn) are gq_load's; r0[b]: this thread's first fragment row of block b.
template <int TY, int MB, int N>
__device__ __forceinline__ void qr_kloop(float (&acc)[MB][256 / MB / 8][4], int nk, const u8* wst, u32 ws_u, u32 xs_u,
                                         const u8* prow, const u8* hrow, bool wok, const u32 (&xoff)[256 / MB / 32],
                                         const u8* const (&xsrc)[256 / MB / 32], const int (&xn)[256 / MB / 32],
                                         const int (&r0)[MB], int grp, const u32 (&hp)[MB][2], const uint4* g16) {
    constexpr int BM = 128 * MB, NX = 256 / MB, XS = NX * 64, RB = GQR<TY>::RB;
    // The copies' sources advance one 256-column block (GR_ST steps) at a time and the K loop
    // is unrolled over a block, so each step's stage, copy offsets and shared addresses are
    // compile-time constants (the kernel bench with parts of the step left out measured the
    // copies' and the dequantization's instructions as most of the step beyond the products:
    // 2.11 ms for the IQ2_XXS gate at 8K tokens, 1.22 ms with neither).
    static_assert(GR_ST == 8 && GR_ST * GQ_BK == 256, "a block of GR_ST steps is one 256-column super-block");
    constexpr int PBLK = (256 / QT<TY>::BL) * QT<TY>::PB, HBLK = (256 / QT<TY>::BL) * QT<TY>::HB;
    const u8* lp = prow;
    const u8* lh = hrow;
    const u8* lx[256 / MB / 32];
#pragma unroll
    for (int i = 0; i < 256 / MB / 32; i++) lx[i] = xsrc[i];
    // (step s's copies: block s / GR_ST at offset s % GR_ST, which is also its stage)
#pragma unroll
    for (int s = 0; s < GR_ST - 1; s++) {
        if (s < nk) gq_load<TY, NX, true, BM>(ws_u + s * BM * RB, xs_u + s * XS, lp, lh, wok, s * GQ_BK, xoff, lx, xn);
        cp_commit();
    }
    cp_wait<GR_ST - 2>();
    fence_proxy_async();
    __syncthreads();
    u32 fa[MB][2][4], fb[MB][2][4];
#pragma unroll
    for (int b = 0; b < MB; b++) qr_deq<TY>(wst, r0[b], grp, 0, hp[b][0], hp[b][1], g16, fa[b]);
    const u64 db0 = wg_desc_sw64(xs_u);
    // Step kt = k8 + U of block k8 (stage U): issue its products (A = cur), retire step kt-1's
    // (whose stage and registers are reused next), then refill that stage GR_ST - 1 steps
    // ahead and dequantize step kt+1 into nxt while step kt's products run.
    auto step = [&](auto U, int k8, u32 (&cur)[MB][2][4], u32 (&nxt)[MB][2][4]) {
        constexpr int u = decltype(U)::value;
        constexpr int sp = (u + GR_ST - 1) % GR_ST, sn = (u + 1) % GR_ST;
        const int kt = k8 + u;
        const u64 db = db0 + (u64)((u * XS) >> 4);
        wg_fence();
#pragma unroll
        for (int b = 0; b < MB; b++) {
            wg_mma_rs<N>(acc[b], cur[b][0], db);
            wg_mma_rs<N>(acc[b], cur[b][1], db + 2);
        }
        wg_commit();
        wg_wait1();
        cp_wait<GR_ST - 3>();
        fence_proxy_async();
        __syncthreads();
        // step kt-1's stage = step kt+GR_ST-1's, at offset sp of its block: this block's
        // last step (u == 0), else the next block's (the sources move on after u == 0)
        if (kt + GR_ST - 1 < nk) gq_load<TY, NX, true, BM>(ws_u + sp * BM * RB, xs_u + sp * XS, lp, lh, wok, sp * GQ_BK, xoff, lx, xn);
        cp_commit();
        if (u == 0) {
            lp += PBLK;
            lh += HBLK;
#pragma unroll
            for (int i = 0; i < 256 / MB / 32; i++) lx[i] += GR_ST * GQ_BK * 2;
        }
        if (kt + 1 < nk) {
#pragma unroll
            for (int b = 0; b < MB; b++) qr_deq<TY>(wst + sn * BM * RB, r0[b], grp, (kt + 1) * GQ_BK, hp[b][0], hp[b][1], g16, nxt[b]);
        }
    };
    for (int k8 = 0; k8 < nk; k8 += GR_ST) {
        // (GR_ST is even: the registers alternate across blocks as within one)
        step(IC<0>{}, k8, fa, fb);
        if (k8 + 1 < nk) step(IC<1>{}, k8, fb, fa);
        if (k8 + 2 < nk) step(IC<2>{}, k8, fa, fb);
        if (k8 + 3 < nk) step(IC<3>{}, k8, fb, fa);
        if (k8 + 4 < nk) step(IC<4>{}, k8, fa, fb);
        if (k8 + 5 < nk) step(IC<5>{}, k8, fb, fa);
        if (k8 + 6 < nk) step(IC<6>{}, k8, fa, fb);
        if (k8 + 7 < nk) step(IC<7>{}, k8, fb, fa);
    }
    wg_wait0();
#pragma unroll
    for (int b = 0; b < MB; b++) wg_pin<NX>(acc[b]);
}
#endif

// gemm_qr's tile order when the launch passes a tile counter (session.rs qr_sched_dyn): the token
// tiles in classes of their 64-token chunk count, the most chunks first (the longest tiles
// first), row tile fastest within a token tile, and each block takes its next tile from the
// counter when it finishes one. Why: with one block per SM and tiles handed out round-robin,
// an SM's share is a fixed list whose cost depends on the token counts of the experts it
// happens to get (partial tiles cost their dequantization in full). Measured: +0.8 % on an 8K
// prefill of the synthetic model, ~1 % in the kernel bench's Q2_K down; the rest of the in-
// prefill launches' ~25 % over the kernel bench is their ~40 % more token tiles under uneven
// routing (session.rs print_moe_stats). The products and their order inside a tile are
// unchanged: same output bits.
// pc[k * (ng + 1) + e] (class k = 0 .. NX / 64 - 1, k = 0 the tiles of NX / 64 chunks): the
// class-k token tiles of groups before e; pc[k * (ng + 1) + ng] = the class total (warp k;
// published by the barrier at the end). Group e's class-0 tiles are its full tiles (then its
// partial one when that has NX / 64 chunks too); a class k > 0 holds partial tiles only.
// The split halves (GQ_FLAG_HI / GQ_FLAG_LO): HI drops a remainder of at most 128 tokens, LO
// keeps only its band of them (no full tiles; its one tile starts after the group's
// GQ_SPLIT_NX multiples: qr_tile_locate).
__device__ __forceinline__ int gq_split_rem(const GemmArgs& a, int n, int rem) {
    if (a.flags & GQ_FLAG_LO) {
        const int r = n % GQ_SPLIT_NX;
        const int hi = (a.flags & GQ_FLAG_S64) ? 64 : 128, lo = (a.flags & GQ_FLAG_MIDB) ? 64 : 0;
        return r > lo && r <= hi ? r : 0;
    }
    return (a.flags & GQ_FLAG_HI) && rem <= 128 ? 0 : rem;
}
template <int NX>
__device__ __forceinline__ int qr_class_count(const GemmArgs& a, int e, int k) {
    constexpr int CM = NX / 64;
    int n = a.grp_off ? a.grp_off[e + 1] - a.grp_off[e] : a.T;
    int full = (a.flags & GQ_FLAG_LO) ? 0 : n / NX, rem = n - (n / NX) * NX;
    if (a.flags & (GQ_FLAG_HI | GQ_FLAG_LO)) rem = gq_split_rem(a, n, rem);
    int cls = rem ? CM - ((rem + 63) >> 6) : -1;
    return (k == 0 ? full : 0) + (cls == k ? 1 : 0);
}
template <int NX>
__device__ __forceinline__ void qr_class_prefix(const GemmArgs& a, int ng, int* pc) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (warp < NX / 64) {
        const int k = warp;
        int per = (ng + 31) >> 5;
        int lo = lane * per, hi = min(lo + per, ng);
        int s = 0;
        for (int e = lo; e < hi; e++) s += qr_class_count<NX>(a, e, k);
        int incl = warp_scan_incl(s);
        int run = incl - s;
        int* p = pc + k * (ng + 1);
        for (int e = lo; e < hi; e++) {
            p[e] = run;
            run += qr_class_count<NX>(a, e, k);
        }
        if (lane == 31) p[ng] = incl;
    }
    __syncthreads();
}
// Tile `tile` of that order: as gq_tile_locate (tokens [tb, j1), rows from rb, the group's
// weights).
template <int NX, int BM>
__device__ __forceinline__ void qr_tile_locate(const GemmArgs& a, int ng, const int* pc, int tile, int rtiles, int& tb,
                                               int& j1, int& rb, const u8*& pay, const u8*& hdr) {
    constexpr int CM = NX / 64;
    int tt = tile / rtiles, rt = tile - tt * rtiles;
    int k = 0;
    while (k < CM - 1 && tt >= pc[k * (ng + 1) + ng]) {
        tt -= pc[k * (ng + 1) + ng];
        k++;
    }
    const int* p = pc + k * (ng + 1);
    const int e = gq_group_of(p, ng, tt);
    int j0;
    gq_group_span(a, e, j0, j1, pay, hdr);
    // class 0: the group's tiles in order; a later class: its one partial tile (LO: the one
    // tile after the group's GQ_SPLIT_NX multiples)
    if (a.flags & GQ_FLAG_LO) tb = j0 + (j1 - j0) / GQ_SPLIT_NX * GQ_SPLIT_NX;
    else tb = j0 + (k == 0 ? tt - p[e] : (j1 - j0) / NX) * NX;
    rb = rt * BM;
}

// gemm_qr / gemm_qs's tile table in tst (every thread; ends with the block's barrier): the
// class prefixes of the dynamic order when the launch passes a counter, else gq_tile_prefix's
// round-robin table. Returns the token tiles of the launch.
template <int NX>
__device__ __forceinline__ int qr_tile_table(const GemmArgs& a, int ng, int* tst, const int* ctr) {
    if (ctr) qr_class_prefix<NX>(a, ng, tst);
    else gq_tile_prefix<NX>(a, ng, tst);
    if (!ctr) return tst[ng];
    int ntt = 0;
#pragma unroll
    for (int k = 0; k < NX / 64; k++) ntt += tst[k * (ng + 1) + ng];
    return ntt;
}

// gemm_qr / gemm_qs's K loop for a tile of nc 64-token chunks: LOOP(N) with products N = 64 nc
// wide (an MB 2 tile holds 2 chunks at most)
#define QX_BY_NC(LOOP)                      \
    if constexpr (MB == 4) {                \
        LOOP(64);                           \
    } else if constexpr (MB == 2) {         \
        if (nc == 1) LOOP(64);              \
        else LOOP(128);                     \
    } else {                                \
        switch (nc) {                       \
            case 1: LOOP(64); break;        \
            case 2: LOOP(128); break;       \
            case 3: LOOP(192); break;       \
            default: LOOP(256); break;      \
        }                                   \
    }

// A tile's outputs (rows from rb, tokens [tb, j1)): accumulator (b, j, q) is row r0[b] (+8 for
// q >= 2), token 8j + 2 (lane % 4) (+1 for odd q)
template <int MB, bool H>
__device__ __forceinline__ void qr_store(const GemmArgs& a, const float (&acc)[MB][256 / MB / 8][4], int rb, const int (&r0)[MB],
                                            int tb, int j1, int rows, int lane) {
#pragma unroll
    for (int b = 0; b < MB; b++)
#pragma unroll
        for (int j = 0; j < 256 / MB / 8; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                int r = rb + r0[b] + ((q >> 1) << 3);
                int tk = tb + j * 8 + 2 * (lane & 3) + (q & 1);
                if (r < rows && tk < j1) gq_put_as<H>(a, (i64)tk * a.ldy + r, acc[b][j][q]);
            }
}

// The dynamic order's counter (two ints) after a block's last tile: the last block out resets
// it for the next launch (every block's last request, the one past the end, has returned
// before it counts itself out). One thread per block.
__device__ __forceinline__ void qr_ctr_done(int* ctr) {
    if (atomicAdd(ctr + 1, 1) == (int)gridDim.x - 1) {
        atomicExch(ctr, 0);
        atomicExch(ctr + 1, 0);
    }
}

// (inlined: a wgmma pipeline must not cross a function call, or ptxas serializes it)
// H: f16 outputs (GQ_FLAG_Y16; the `_y16` entry points, so that the f32 kernels compile as
// they did before the f16 form existed: a run-time branch between the two store loops grew
// gemm_qs2's spills from 180 to 312 bytes and gemm_qs's code by a third, sass_diff.py)
template <int TY, int MB, bool H>
__device__ __forceinline__ void gemm_qr_body(const GemmArgs& a, int ngroups, u8* smem, const uint4* g16, int* ctr) {
#if WG_OK
    constexpr int BM = 128 * MB, NX = 256 / MB, XS = NX * 64, NT = NX / 32;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int ng = a.grp_off ? ngroups : 1;
    // the tile table: tst (gq_tile_prefix) without a counter, else the class prefixes pc
    // (qr_class_prefix) and two slots for the next tile; the activation stages start
    // 1024-byte aligned (the swizzled layout needs 512): smem is declared so aligned, the
    // table is padded to a multiple of 1024 (session.rs qr_table_bytes, the same size)
    constexpr int CM = NX / 64;
    int* tst = (int*)smem;
    int* slot = tst + CM * (ng + 1);
    const int tsb = ((CM * (ng + 1) + 2) * 4 + 1023) & ~1023;
    u8* xst = smem + tsb;
    u8* wst = xst + GR_ST * XS;
    if (smem_u32(xst) & 511) __trap();
    const int ntt = qr_tile_table<NX>(a, ng, tst, ctr);
    const int rows = a.w.rows, cols = a.w.cols;
    const int rtiles = (rows + BM - 1) / BM;
    const int ntiles = rtiles * ntt;
    const int nk = cols / GQ_BK;
    const i64 hrs = (i64)(cols / QT<TY>::BL) * QT<TY>::HB;
    // this thread's fragment rows in the tile (r0[b], r0[b] + 8 of each 64-row block of its
    // warpgroup) and its quant group
    int r0[MB];
#pragma unroll
    for (int b = 0; b < MB; b++) r0[b] = (warp >> 2) * 64 * MB + 64 * b + (warp & 3) * 16 + (lane >> 2);
    const int grp = lane & 3;
    const u32 xs_u = smem_u32(xst), ws_u = smem_u32(wst);
    for (int tile = blockIdx.x, it = 0; tile < ntiles; it++) {
        // the block's next tile, asked for now and read after this tile's closing barrier
        // (two slots: a slot is rewritten two tiles later, after every thread read it)
        if (ctr && tid == 0) slot[it & 1] = (int)gridDim.x + atomicAdd(ctr, 1);
        int tb, j1, rb;
        const u8 *hdr, *prow, *hrow;
        bool wok;
        if (ctr) {
            const u8* pay;
            qr_tile_locate<NX, BM>(a, ng, tst, tile, rtiles, tb, j1, rb, pay, hdr);
            gq_copy_row<TY, BM>(pay, hdr, rb, rows, cols, prow, hrow, wok);
        } else {
            gq_tile_begin<TY, NX, BM>(a, ng, tst, tile, rtiles, tb, j1, rb, hdr, prow, hrow, wok);
        }
        u32 hp[MB][2];
#pragma unroll
        for (int b = 0; b < MB; b++)
#pragma unroll
            for (int h = 0; h < 2; h++) hp[b][h] = (u32)(u64)(hdr + (i64)min(rb + r0[b] + 8 * h, rows - 1) * hrs);
        // 64-token chunks of this tile: the products' N
        const int nc = min((j1 - tb + 63) >> 6, NX / 64);
        // activation copies, fixed for the tile (the swizzled layout of sw64_off)
        u32 xoff[NT];
        const u8* xsrc[NT];
        int xn[NT];
#pragma unroll
        for (int i = 0; i < NT; i++) {
            int tl = (tid >> 2) + 64 * i, part = tid & 3;
            int tok = tb + tl;
            xoff[i] = sw64_off(tl, part);
            bool in = i < NX / 64 && tok < j1;
            xn[i] = in ? 16 : 0;
            xsrc[i] = in ? (const u8*)a.x + (i64)(a.gather ? a.gather[tok] : tok) * a.ldx * 2 + part * 16 : (const u8*)a.x;
        }
#pragma unroll
        for (int i = 0; i < NX / 64; i++) asm volatile("" : "+r"(xoff[i]), "+r"(xn[i]), "+l"(xsrc[i]));
        float acc[MB][NX / 8][4] = {};
#define QR_K(N) qr_kloop<TY, MB, N>(acc, nk, wst, ws_u, xs_u, prow, hrow, wok, xoff, xsrc, xn, r0, grp, hp, g16)
        QX_BY_NC(QR_K)
#undef QR_K
        qr_store<MB, H>(a, acc, rb, r0, tb, j1, rows, lane);
        __syncthreads();  // the next tile's prologue overwrites the stages
        tile = ctr ? slot[it & 1] : tile + (int)gridDim.x;
    }
    if (ctr && tid == 0) qr_ctr_done(ctr);
#endif
}


// ---- gemm_qs / gemm_qs2: gemm_qr's / gemm_qr2's tiles with the copies on a producer warpgroup ----
// Why: gemm_qr's K step is its threads' own instruction chain, and the copies were a quarter of
// it (kernel bench with parts of the step left out, session 19: 2.11 ms for the IQ2_XXS gate
// at 8K tokens, 1.53 without the copies and their waits, 1.22 with the products alone). Here
// warps 0-7 (gemm_qr's / gemm_qr2's two warpgroups and fragment rows, MB 1 / 2) only
// dequantize and issue the products; warps 8-11 (the producer warpgroup) issue every copy into
// the same GR_ST stages, and the two sides meet at per-stage mbarriers instead of a block barrier per step: full[s]
// (the producer's 128 threads, once their copies into stage s have completed and been fenced
// for the async proxy, as gemm_qr's threads do before its barrier) and empty[s] (one lane per
// consumer warp, once the products that read the stage have retired). The producer runs up to
// GR_ST - 1 steps ahead, across tiles: it tags each step's stage with the step's tile (tinfo),
// so the consumers learn their next tile from the stage they wait for; a tag of -1 ends the
// launch. setmaxnreg moves registers from the producer to the consumers (one warp of the
// producer and two consumer warps share a sub-partition's 16K registers; a block of 288
// threads, one producer warp, was refused at launch for that reason with 224 per thread).
// Same tiles, fragments and products in the same order as gemm_qr / gemm_qr2: the same output
// bits.
// copy q of a row's group (first step's column k0) into its slot (ws: the slot's base)
template <int TY>
__device__ __forceinline__ void qs_wcopy(u32 ws, int row, int q, const u8* prow, const u8* hrow, bool wok, int k0) {
    if constexpr (TY == T_IQ2_XXS) {
        constexpr int RB = QSW<TY>::RB;
        if (q == 0) cp_async16(ws + row * RB, prow + (k0 >> 5) * 8, wok ? 16 : 0);
        else cp_async4(ws + row * RB + QSW<TY>::DW, al4(hrow + (k0 >> 8) * 2), wok ? 4 : 0);
    } else {
        gq_wcopy<TY>(ws, row, q, prow, hrow, wok, k0);
    }
}
#define QS_LAG 3  // the producer confirms step g's copies after issuing step g + QS_LAG
// Registers per thread after setmaxnreg: an SM sub-partition holds 16K registers and one warp of
// each warpgroup, so 2 x 224 + 56 per lane fit (the launch gives 384 x 168)
#define QS_CONSUMER_REGS 224
#define QS_PRODUCER_REGS 56
// gemm_qs2 (twice the fragments per consumer, half the producer's activation rows): 232 / 40
#define QS2_CONSUMER_REGS 232
#define QS2_PRODUCER_REGS 40
// gemm_qs4 (512 rows x 64 tokens; IQ2_XXS, Q2_K, Q4_K): as gemm_qs2
#define QS4_CONSUMER_REGS 232
#define QS4_PRODUCER_REGS 40
#if WG_OK
// (the barriers by their shared-memory addresses)
__device__ __forceinline__ void mbar_init(u32 b, u32 n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 b, u32 parity) {
    u32 ok;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(ok)
                     : "r"(b), "r"(parity)
                     : "memory");
    } while (!ok);
}

// A consumer warpgroup's K loop over one tile (global steps G .. G + nk - 1; step G's stage
// is full): as qr_kloop (MB 64-row blocks per warpgroup), the stage of step g at g % GR_ST.
template <int TY, int MB, int N, bool DG = false>
__device__ __forceinline__ void qs_kloop(float (&acc)[MB][256 / MB / 8][4], int nk, u32 G, u32 full, u32 empty, const u8* wst,
                                         u32 xs_u, const int (&r0)[MB], int grp, const u32 (&hp)[MB][2], const uint4* g16, int dg = 0) {
    constexpr int P = QSW<TY>::P, RB = QSW<TY>::RB, WS = 128 * MB * RB, XS = 256 / MB * 64;
    const int lane = threadIdx.x & 31;
    u32 fa[MB][2][4], fb[MB][2][4];
    // (a tile's first step G is a multiple of GR_ST: every tile's nk is)
#pragma unroll
    for (int b = 0; b < MB; b++) qr_deq<TY, RB, QSW<TY>::PAIR>(wst + (G % GR_ST) / P * WS, r0[b], grp, 0, hp[b][0], hp[b][1], g16, fa[b], 0);
    const u64 db0 = wg_desc_sw64(xs_u);
    // issue step kt's products (A = cur), retire step kt-1's and free its stage, then wait for
    // step kt+1's stage and dequantize it into nxt while step kt's products run
    auto step = [&](int kt, u32 (&cur)[MB][2][4], u32 (&nxt)[MB][2][4]) {
        const u32 g = G + kt, s = g % GR_ST;
        const u64 db = db0 + (u64)((s * XS) >> 4);
        wg_fence();
        if (!DG || !(dg & GQ_DG_NOMMA)) {
#pragma unroll
            for (int b = 0; b < MB; b++) {
                wg_mma_rs<N>(acc[b], cur[b][0], db);
                wg_mma_rs<N>(acc[b], cur[b][1], db + 2);
            }
        }
        wg_commit();
        wg_wait1();
        if (kt > 0) {
            __syncwarp();
            if (lane == 0) mbar_arrive(empty + 8 * ((g - 1) % GR_ST));
        }
        if (kt + 1 < nk) {
            const u32 sn = (g + 1) % GR_ST;
            mbar_wait(full + 8 * sn, ((g + 1) / GR_ST) & 1);
            if (!DG || !(dg & GQ_DG_NODEQ)) {
#pragma unroll
                for (int b = 0; b < MB; b++)
                    qr_deq<TY, RB, QSW<TY>::PAIR>(wst + sn / P * WS, r0[b], grp, (kt + 1) * GQ_BK, hp[b][0], hp[b][1], g16, nxt[b], (int)(sn % P));
            } else {
#pragma unroll
                for (int b = 0; b < MB; b++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int i = 0; i < 4; i++) nxt[b][h][i] = cur[b][h][i];
            }
        }
    };
    for (int kt = 0; kt < nk; kt += 2) {
        step(kt, fa, fb);
        if (kt + 1 < nk) step(kt + 1, fb, fa);
    }
    wg_wait0();
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + 8 * ((G + nk - 1) % GR_ST));
#pragma unroll
    for (int b = 0; b < MB; b++) wg_pin<256 / MB>(acc[b]);
}
#endif

// gemm_qs_gu's tile outputs. A tile's rows interleave the two matrices in 8-row halves of each
// 16-row fragment block (gemm_qs_body's GU: tile row q is row gu_feat(q) of the gate when bit 3
// of q is clear, of the up when set), so every thread holds the gate and up outputs of the same
// (feature, token) pairs (fragment rows r0 and r0 + 8: acc[.][.][0 / 1] and [2 / 3]) and stores
// their mids itself in moe_mid's places: y[tk ldy + qr_kpos(f)] = f16(moe_mid_gu_fast(g, u,
// clamp) * pw[tk]), rounded once (the same f32 g and u as gemm_qs's outputs; within one f16
// step of gemm_qs + gemm_qs + moe_mid, whose silu is the exact one). Both warpgroups store half
// the mids, no exchange, no barrier between them. Why: session 54's layout (a warpgroup per
// matrix) had the up warpgroup hand its accumulators over and the gate warpgroup compute and
// store every mid alone (0.52x the unfused launches, session 55; 0.89x with this layout and
// the exact silu, 1.00x / 1.26x with the fast one for IQ2_XXS / Q4_K, session 56).
// The feature (row of either matrix, within the tile) of fragment row r: r0's gate row.
__device__ __forceinline__ int gu_feat(int r) { return ((r >> 4) << 3) | (r & 7); }
// CO (`xch`: GU_XCH floats after the stages): each warpgroup stages its 32 MB features x NX
// tokens of f16 mids as [token][features in qr_kpos order], 16-byte chunks XOR-swizzled by the
// token, then writes them 16 bytes per thread (a token's features are one contiguous run of y:
// the warpgroup's first feature is a multiple of 32, so qr_kpos(f0 + i) = f0 + qr_kpos(i)).
// Why: the direct stores write 2 bytes at a time. Named barriers 5 and 6 (one per warpgroup).
// The host checks rows % 8, ldy % 8 and y's alignment (launch_gemm_gu).
#define GU_XCH (128 * 64)
template <int MB, bool CO>
__device__ __forceinline__ void gemm_qs_gu_store(const GemmArgs& a, const GuArgs& gu, float (&acc)[MB][256 / MB / 8][4], float* xch, int rb,
                                                 const int (&r0)[MB], int tb, int j1, int rows) {
    constexpr int NJ = 256 / MB / 8, NX = 8 * NJ, FW = 32 * MB, CH = FW / 8;
    static_assert(2 * FW * NX * 2 <= GU_XCH * 4, "both warpgroups' staged mids fit xch");
    const int lane = threadIdx.x & 31, wg = threadIdx.x >> 7;
    u16* y = (u16*)a.y;
    // the tile's routing weights, one copy per warpgroup (0 past the group's end). Why: loaded
    // from global memory next to the mids, ptxas hoisted them into registers and spilled (120 to
    // 316 bytes with moe_mid_gu_fast). The barrier before also keeps the previous tile's
    // readers of pws (and of st, CO) ahead of this tile's writes.
    __shared__ float pws[2][NX];
    asm volatile("bar.sync %0, 128;" ::"r"(5 + wg) : "memory");
    for (int i = threadIdx.x & 127; i < NX; i += 128) pws[wg][i] = tb + i < j1 ? gu.pw[tb + i] : 0.f;
    asm volatile("bar.sync %0, 128;" ::"r"(5 + wg) : "memory");
    // f(mid, tile feature, tile token) for each of the thread's 2 MB NJ (feature, token) pairs
    const auto each = [&](auto f) {
#pragma unroll
        for (int b = 0; b < MB; b++)
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int q = 0; q < 2; q++) {
                    const int tl = j * 8 + 2 * (lane & 3) + q;
                    f(moe_mid_gu_fast(acc[b][j][q], acc[b][j][q + 2], gu.clamp) * pws[wg][tl], gu_feat(r0[b]), tl);
                }
    };
    if constexpr (!CO) {
        each([&](float v, int f, int tl) {
            if (rb + f < rows && tb + tl < j1) y[(i64)(tb + tl) * a.ldy + qr_kpos(rb + f)] = f2h(v);
        });
        return;
    }
    u16* st = (u16*)xch + wg * FW * NX;
    const int f0 = wg * FW;  // the warpgroup's first tile feature
    each([&](float v, int f, int tl) {
        const int e = qr_kpos(f - f0);
        st[tl * FW + (((e >> 3) ^ (tl & (CH - 1))) << 3) + (e & 7)] = f2h(v);
    });
    asm volatile("bar.sync %0, 128;" ::"r"(5 + wg) : "memory");
    for (int i = threadIdx.x & 127; i < NX * CH; i += 128) {
        const int tl = i / CH, c = i % CH;
        if (tb + tl < j1 && rb + f0 + 8 * c < rows)
            *(uint4*)(y + (i64)(tb + tl) * a.ldy + rb + f0 + 8 * c) = *(const uint4*)(st + tl * FW + ((c ^ (tl & (CH - 1))) << 3));
    }
}

// (inlined: a wgmma pipeline must not cross a function call, or ptxas serializes it)
// GU (gemm_qs_gu / gemm_qs2_gu): a tile covers 64 MB features of the gate and the up, their
// rows interleaved by 8 (gemm_qs_gu_store, gu_feat), so gate and up share each activation stage
// and the tile's outputs are the mids instead of g and u: moe_mid's launch and the f32 g / u
// round trip go (2 x 4 bytes written and read per value against 2 written).
template <int TY, int MB, bool H, int GU = 0, bool DG = false>
__device__ __forceinline__ void gemm_qs_body(const GemmArgs& a, int ngroups, u8* smem, const uint4* g16, int* ctr, const GuArgs* gu = nullptr) {
#if WG_OK
    constexpr int BM = 128 * MB, NX = 256 / MB, XS = NX * 64, NP = GQR<TY>::NP, CM = NX / 64, QP = QSW<TY>::P, WSQ = BM * QSW<TY>::RB;
    // rows of one matrix per tile (GU: half the tile's rows from each, interleaved by 8)
    constexpr int BT = GU ? BM / 2 : BM;
    // (the weight slots, GR_ST / QP of WSQ bytes, fit in session.rs's GR_ST x BM x GQR::RB)
    static_assert(GR_ST % QP == 0 && GR_ST / QP * QSW<TY>::RB <= GR_ST * GQR<TY>::RB, "gemm_qs weight slots");
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int ng = a.grp_off ? ngroups : 1;
    const int dg = DG ? (a.flags >> GQ_DG_SHIFT) & 31 : 0;  // gemm_qs_dg's parts left out
    // dynamic shared memory: the barriers, the stages' tile tags, the tile table (as gemm_qr's),
    // then the stages from a 1024-byte boundary (session.rs qs_table_bytes: the same size)
    const u32 full = smem_u32(smem), empty = full + 8 * GR_ST;  // GR_ST mbarriers each
    int* tinfo = (int*)(smem + 16 * GR_ST);
    int* slot = tinfo + GR_ST;  // the producer's next tiles (dynamic order)
    int* tst = slot + 2;
    const int tsb = (GR_ST * 20 + 8 + CM * (ng + 1) * 4 + 1023) & ~1023;
    u8* xst = smem + tsb;
    u8* wst = xst + GR_ST * XS;
    if (smem_u32(xst) & 511) __trap();
    if (tid == 0) {
        for (int s = 0; s < GR_ST; s++) {
            mbar_init(full + 8 * s, 128);
            mbar_init(empty + 8 * s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // (the table's barrier also publishes the barriers' initialization)
    const int ntt = qr_tile_table<NX>(a, ng, tst, ctr);
    const int rows = a.w.rows, cols = a.w.cols;
    const int rtiles = (rows + BT - 1) / BT;
    const int ntiles = rtiles * ntt;
    const int nk = cols / GQ_BK;
    const u32 xs_u = smem_u32(xst), ws_u = smem_u32(wst);
    // a tile's tokens [tb, j1), first row rb and its group's weights
    auto locate = [&](int tile, int& tb, int& j1, int& rb, const u8*& pay, const u8*& hdr) {
        if (ctr) qr_tile_locate<NX, BT>(a, ng, tst, tile, rtiles, tb, j1, rb, pay, hdr);
        else gq_tile_locate<NX, BT>(a, ng, tst, tile, rtiles, tb, j1, rb, pay, hdr);
    };
    // GU: the up matrix's bytes of the same expert (the same strides as the gate's)
    auto up_of = [&](const u8* p, const u8* base, const u8* base2) { return base2 + (p - base); };
    if (warp >= 8) {
        // ---- the producer warpgroup: every copy, GR_ST - 1 steps ahead at most ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(MB == 1 ? QS_PRODUCER_REGS : MB == 2 ? QS2_PRODUCER_REGS : QS4_PRODUCER_REGS));
        const int p = tid - 256;
        // this thread's activation copies: token rows p / 4 + 32 j, 16-byte part p % 4 (in the
        // swizzled layout of sw64_off row + 32 j is 2048 j bytes further), and weight rows
        // p + 128 i
        const u32 xo0 = sw64_off(p >> 2, p & 3);
        const i64 prb = (i64)(cols / QT<TY>::BL) * QT<TY>::PB, hrb = (i64)(cols / QT<TY>::BL) * QT<TY>::HB;
        u32 G = 0;
        int tile = blockIdx.x;
        for (int it = 0; tile < ntiles; it++) {
            // the block's next tile, asked for now and read after this one's copies (two slots:
            // a slot is rewritten two tiles later, after the producer barrier below)
            if (ctr && p == 0) slot[it & 1] = (int)gridDim.x + atomicAdd(ctr, 1);
            int tb, j1, rb;
            const u8 *pay, *hdr;
            locate(tile, tb, j1, rb, pay, hdr);
            const u8 *prow[MB], *hrow[MB];
            bool wok[MB];
#pragma unroll
            for (int i = 0; i < MB; i++) {
                const int q = p + 128 * i;
                const bool m2 = GU && (q & 8);  // GU: the up's rows
                int wr = rb + (GU ? gu_feat(q) : q);
                wok[i] = wr < rows;
                if (!wok[i]) wr = 0;  // zero-filled
                prow[i] = (m2 ? up_of(pay, a.w.pay, gu->w2.pay) : pay) + wr * prb;
                hrow[i] = (m2 ? up_of(hdr, a.w.hdr, gu->w2.hdr) : hdr) + wr * hrb;
            }
            // the copies cover the products' nc 64-token chunks; rows past the group's end copy
            // its last token again (those outputs are never stored), so every copy of a chunk
            // is unconditional
            const int nc = min((j1 - tb + 63) >> 6, NX / 64);
            const u8* xsrc[NX / 32];
#pragma unroll
            for (int j = 0; j < NX / 32; j++) {
                const int tok = min(tb + (p >> 2) + 32 * j, j1 - 1);
                xsrc[j] = (const u8*)a.x + (i64)(a.gather ? a.gather[tok] : tok) * a.ldx * 2 + (p & 3) * 16;
            }
            for (int kt = 0; kt < nk; kt++, G++) {
                const u32 s = G % GR_ST;
                mbar_wait(empty + 8 * s, ((G / GR_ST) & 1) ^ 1);
                // a group's slot is free once the last step of its previous group is (steps retire
                // in order; that step's stage is in this round too: P divides GR_ST)
                if (QP > 1 && s % QP == 0) mbar_wait(empty + 8 * (s + QP - 1), ((G / GR_ST) & 1) ^ 1);
                if (p == 0) tinfo[s] = tile;
                const u32 xs = xs_u + s * XS + xo0, ws = ws_u + s / QP * WSQ;
                const int ko = kt * (GQ_BK * 2);
                // (gemm_qs_dg: GQ_DG_HALFX copies the first 128 tokens' rows only, GQ_DG_NOX none)
                const int ncx = !DG ? nc : (dg & GQ_DG_NOX) ? 0 : (dg & GQ_DG_HALFX) ? min(nc, 2) : nc;
#pragma unroll
                for (int c = 0; c < NX / 64; c++)
                    if (c < ncx) {
                        cp_async16(xs + 2048 * (2 * c), xsrc[2 * c] + ko, 16);
                        cp_async16(xs + 2048 * (2 * c + 1), xsrc[2 * c + 1] + ko, 16);
                    }
                if (s % QP == 0 && (!DG || !(dg & GQ_DG_NOW))) {
#pragma unroll
                    for (int i = 0; i < MB; i++)
#pragma unroll
                        for (int q = 0; q < NP; q++) qs_wcopy<TY>(ws, p + 128 * i, q, prow[i], hrow[i], wok[i], kt * GQ_BK);
                }
                cp_commit();
                if (G >= QS_LAG) {
                    cp_wait<QS_LAG>();
                    fence_proxy_async();
                    mbar_arrive(full + 8 * ((G - QS_LAG) % GR_ST));
                }
            }
            if (ctr) {
                asm volatile("bar.sync 1, 128;" ::: "memory");  // the producer's threads: slot written
                tile = slot[it & 1];
            } else {
                tile += (int)gridDim.x;
            }
        }
        // the end: step G tagged -1 (no copies), then every step not confirmed yet
        mbar_wait(empty + 8 * (G % GR_ST), ((G / GR_ST) & 1) ^ 1);
        if (p == 0) tinfo[G % GR_ST] = -1;
        cp_wait<0>();
        fence_proxy_async();
        for (u32 g = G >= QS_LAG ? G - QS_LAG : 0; g <= G; g++) mbar_arrive(full + 8 * (g % GR_ST));
        if (ctr && p == 0) qr_ctr_done(ctr);
    } else {
        // ---- the consumers: gemm_qr's fragments ----
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(MB == 1 ? QS_CONSUMER_REGS : MB == 2 ? QS2_CONSUMER_REGS : QS4_CONSUMER_REGS));
        // this thread's fragment rows (r0[b], r0[b] + 8 of each 64-row block of its warpgroup)
        // and its quant group
        int r0[MB];
#pragma unroll
        for (int b = 0; b < MB; b++) r0[b] = (warp >> 2) * 64 * MB + 64 * b + (warp & 3) * 16 + (lane >> 2);
        const int grp = lane & 3;
        const i64 hrs = (i64)(cols / QT<TY>::BL) * QT<TY>::HB;
        for (u32 G = 0;; G += nk) {
            const u32 s0 = G % GR_ST;
            mbar_wait(full + 8 * s0, (G / GR_ST) & 1);
            const int tile = tinfo[s0];
            if (tile < 0) break;
            int tb, j1, rb;
            const u8 *pay, *hdr;
            locate(tile, tb, j1, rb, pay, hdr);
            // (GU: fragment row r0 is the gate's row rb + gu_feat(r0), r0 + 8 the up's same row)
            const u8* hup = GU ? up_of(hdr, a.w.hdr, gu->w2.hdr) : hdr;
            u32 hp[MB][2];
#pragma unroll
            for (int b = 0; b < MB; b++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    hp[b][h] = GU ? (u32)(u64)((h ? hup : hdr) + (i64)min(rb + gu_feat(r0[b]), rows - 1) * hrs)
                                  : (u32)(u64)(hdr + (i64)min(rb + r0[b] + 8 * h, rows - 1) * hrs);
            const int nc = min((j1 - tb + 63) >> 6, NX / 64);
            float acc[MB][NX / 8][4] = {};
#define QS_K(N) qs_kloop<TY, MB, N, DG>(acc, nk, G, full, empty, wst, xs_u, r0, grp, hp, g16, dg)
            QX_BY_NC(QS_K)
#undef QS_K
            if constexpr (GU != 0) gemm_qs_gu_store<MB, GU == 2>(a, *gu, acc, (float*)(wst + GR_ST * BM * GQR<TY>::RB), rb, r0, tb, j1, rows);
            else qr_store<MB, H>(a, acc, rb, r0, tb, j1, rows, lane);
        }
    }
#endif
}

// gemm_qr / gemm_qr2 / gemm_qs / gemm_qs2: the body (gemm_qs_body when QS) for the launch's
// block type. MB 1: 128 rows x up to 256 tokens; MB 2: 256 rows x up to 128 tokens (half the
// activation reads per MAC, twice the dequantization). Grid: persistent, one block per SM.
// Dynamic shared memory (bytes, see launch_gemm_q_kernel; CM = 4 / MB, RB by type), after the
// IQ2_XXS grid's GQ_GREP copies (32 KB) for that type:
//   gemm_qr:  align1024((CM * (ngroups+1) + 2) * 4) + GR_ST * (256 / MB * 64 + 128 * MB * RB);
//   gemm_qs:  align1024(GR_ST * 20 + 8 + CM * (ngroups + 1) * 4) + the same stages (session.rs
//             qs_table_bytes), 384 threads (session.rs QS_THREADS: two consumer warpgroups and
//             the producer).
// The IQ2_XXS grid's GQ_GREP copies at the start of the dynamic shared memory (that type only:
// 32 KB, a multiple of 1024, so the body's alignment holds; session.rs gq_grid_bytes adds them
// to the launch's size), published by the tile table's barrier (gq_tile_prefix /
// qr_class_prefix). Moves smem past them; returns this lane's copy.
__device__ __forceinline__ const uint4* gq_grid_prologue(const GemmArgs& a, u8*& smem) {
    uint4* g16r = (uint4*)smem;
    if (a.w.type == T_IQ2_XXS) {
        gq_build_g16<GQ_GREP>(g16r);
        smem += 256 * GQ_GREP * 16;
    }
    return g16r + (threadIdx.x & (GQ_GREP - 1));
}
template <int MB, bool QS, bool H>
__device__ __forceinline__ void gemm_qx_dispatch(const GemmArgs& a, int ngroups, u8* smem, int* ctr) {
    if (!WG_OK) __trap();
    const uint4* g16 = gq_grid_prologue(a, smem);
#define QX_BODY(TY)                                                   \
    if constexpr (QS) gemm_qs_body<TY, MB, H>(a, ngroups, smem, g16, ctr); \
    else gemm_qr_body<TY, MB, H>(a, ngroups, smem, g16, ctr);
    switch (a.w.type) {
        case T_Q8_0: QX_BODY(T_Q8_0) break;
        case T_IQ2_XXS: QX_BODY(T_IQ2_XXS) break;
        case T_Q2_K: QX_BODY(T_Q2_K) break;
        default: QX_BODY(T_Q4_K) break;
    }
#undef QX_BODY
}
// ctr: two ints, zero between launches (the tile counter and the blocks done; the kernel
// leaves them zero), or nullptr for the round-robin order of gq_tile_prefix.
extern "C" __global__ void __launch_bounds__(256, 1) gemm_qr(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qx_dispatch<1, false, false>(a, ngroups, gq_smem, ctr);
}
extern "C" __global__ void __launch_bounds__(256, 1) gemm_qr_y16(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qx_dispatch<1, false, true>(a, ngroups, gq_smem, ctr);
}
extern "C" __global__ void __launch_bounds__(256, 1) gemm_qr2(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qx_dispatch<2, false, false>(a, ngroups, gq_smem, ctr);
}
extern "C" __global__ void __launch_bounds__(256, 1) gemm_qr2_y16(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qx_dispatch<2, false, true>(a, ngroups, gq_smem, ctr);
}
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qx_dispatch<1, true, false>(a, ngroups, gq_smem, ctr);
}
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs_y16(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qx_dispatch<1, true, true>(a, ngroups, gq_smem, ctr);
}
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs2(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qx_dispatch<2, true, false>(a, ngroups, gq_smem, ctr);
}
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs2_y16(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qx_dispatch<2, true, true>(a, ngroups, gq_smem, ctr);
}
// gemm_qs (IQ2_XXS, f32 out) with parts of its K step left out by the flags' GQ_DG_* bits: the
// kernel bench's diagnosis of what bounds gemm_qs (time only; the outputs are not the product).
// A separate entry point, so that gemm_qs's machine code is not touched.
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs_dg(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
#if WG_OK
    if (a.w.type != T_IQ2_XXS) __trap();
    u8* smem = gq_smem;
    const uint4* g16 = gq_grid_prologue(a, smem);
    gemm_qs_body<T_IQ2_XXS, 1, false, 0, true>(a, ngroups, smem, g16, ctr);
#else
    __trap();
#endif
}

// gemm_qs_body for the three types whose raw weights the producer copies once per pair of K
// steps (QSW P = 2: IQ2_XXS, Q2_K, Q4_K), after the IQ2_XXS grid's copies: gemm_qs4 and
// gemm_qs_gu / gemm_qs2_gu.
// (the dynamic shared memory is declared in the kernels: an extern __shared__ __align__(1024)
// inside a device function moved every kernel's dynamic shared memory to a 1 KB boundary)
template <int MB, bool H, int GU>
__device__ __forceinline__ void gemm_qs_p2_entry(const GemmArgs& a, int ngroups, int* ctr, const GuArgs* gu, u8* gq_smem) {
#if WG_OK
    u8* smem = gq_smem;
    const uint4* g16 = gq_grid_prologue(a, smem);
    switch (a.w.type) {
        case T_IQ2_XXS: gemm_qs_body<T_IQ2_XXS, MB, H, GU>(a, ngroups, smem, g16, ctr, gu); break;
        case T_Q2_K: gemm_qs_body<T_Q2_K, MB, H, GU>(a, ngroups, smem, g16, ctr, gu); break;
        case T_Q4_K: gemm_qs_body<T_Q4_K, MB, H, GU>(a, ngroups, smem, g16, ctr, gu); break;
        default: __trap();
    }
#else
    __trap();
#endif
}
// gemm_qs4: 512-row tiles of up to 64 tokens (MB 4) for IQ2_XXS, Q2_K and Q4_K (Q8_0's
// unpaired raw stages, GR_ST x 512 x 48 bytes, do not fit beside the activations). Dynamic
// shared memory: the grid's copies (IQ2_XXS), qs_table_bytes, then GR_ST activation stages of
// 64 x 64 bytes and GR_ST / P weight slots of 512 x RB (QSW; session.rs
// launch_gemm_q_kernel sizes it so, with QS_PAIR and qs_slot_row_bytes).
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs4(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qs_p2_entry<4, false, 0>(a, ngroups, ctr, nullptr, gq_smem);
}
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs4_y16(GemmArgs a, int ngroups, int* ctr) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qs_p2_entry<4, true, 0>(a, ngroups, ctr, nullptr, gq_smem);
}
// gemm_qs_gu / gemm_qs2_gu: gate and up of the routed experts in one launch, the mids out
// (gemm_qs_body's GU; IQ2_XXS, Q2_K, Q4_K). Dynamic shared memory: gemm_qs / gemm_qs2's, then
// GU_XCH floats for the exchange (session.rs launch_gemm_qx).
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs_gu(GemmArgs a, int ngroups, int* ctr, const __grid_constant__ GuArgs gu) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qs_p2_entry<1, true, 1>(a, ngroups, ctr, &gu, gq_smem);
}
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs2_gu(GemmArgs a, int ngroups, int* ctr, const __grid_constant__ GuArgs gu) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qs_p2_entry<2, true, 1>(a, ngroups, ctr, &gu, gq_smem);
}
// gemm_qs_gu with the mids staged for 16-byte stores (gemm_qs_gu_store's CO; `DS4_GU_FUSE=2`;
// gemm_qs2's form of it spilled 1 KB and serialized its wgmma: C7520)
extern "C" __global__ void __launch_bounds__(384, 1) gemm_qs_guc(GemmArgs a, int ngroups, int* ctr, const __grid_constant__ GuArgs gu) {
    PDL_ENTRY;
    extern __shared__ __align__(1024) u8 gq_smem[];
    gemm_qs_p2_entry<1, true, 2>(a, ngroups, ctr, &gu, gq_smem);
}

extern "C" __global__ void __launch_bounds__(256, 2) gemm_q64(GemmArgs a, int ngroups) {
    PDL_ENTRY;
    extern __shared__ __align__(16) u8 gq_smem[];
    gemm_q_dispatch<64>(a, ngroups, gq_smem);
}

// Repack GGUF blocks into (payload, header) arrays. Each block's header is a contiguous byte
// range [hoff, hoff+hlen) of the block; the payload is the remaining contiguous range.
extern "C" __global__ void repack_blocks(const u8* __restrict__ src, u8* __restrict__ pay, u8* __restrict__ hdr,
                                         i64 nblocks, int bbytes, int hoff, int hlen) {
    PDL_ENTRY;
    i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblocks) return;
    const u8* s = src + b * bbytes;
    int plen = bbytes - hlen;
    int poff = (hoff == 0) ? hlen : 0;
    u8* p = pay + b * plen;
    u8* h = hdr + b * hlen;
    for (int i = 0; i < hlen; i++) h[i] = s[hoff + i];
    for (int i = 0; i < plen; i++) p[i] = s[poff + i];
}

// Dequantize a whole matrix (row-major f32 out); used by tests to check every format.
extern "C" __global__ void dequant_rows(WMat w, float* out) {
    PDL_ENTRY;
    GRID_SMEM
    i64 gidx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    int ng = w.cols >> 3;
    if (gidx >= (i64)w.rows * ng) return;
    int row = (int)(gidx / ng), c = (int)(gidx % ng) * 8;
    float v[8];
    switch (w.type) {
        case T_F32: deq8<T_F32>(w.pay, w.hdr, w.cols, row, c, v, gsm); break;
        case T_F16: deq8<T_F16>(w.pay, w.hdr, w.cols, row, c, v, gsm); break;
        case T_Q8_0: deq8<T_Q8_0>(w.pay, w.hdr, w.cols, row, c, v, gsm); break;
        case T_IQ2_XXS: deq8<T_IQ2_XXS>(w.pay, w.hdr, w.cols, row, c, v, gsm); break;
        case T_Q2_K: deq8<T_Q2_K>(w.pay, w.hdr, w.cols, row, c, v, gsm); break;
        default: deq8<T_Q4_K>(w.pay, w.hdr, w.cols, row, c, v, gsm); break;
    }
    for (int i = 0; i < 8; i++) out[(i64)row * w.cols + c + i] = v[i];
}

// ------------------------------------------------------------------------------------------
// cuBLAS dense path (cuda/blas.rs): the weight matrix is dequantized once per call into a
// row-major f16 scratch matrix and the activations are rounded to a packed f16 matrix; cuBLAS
// then runs the product with f32 accumulation. One thread per 8 consecutive values.
// ------------------------------------------------------------------------------------------

template <int TY>
__device__ __forceinline__ void deq_f16_one(const WMat& w, u16* __restrict__ out, int row, int c, const u64* gsm) {
    float v[8];
    deq8<TY>(w.pay, w.hdr, w.cols, row, c, v, gsm);
    uint4 pk;
    pk.x = pack_h2(v[0], v[1]); pk.y = pack_h2(v[2], v[3]); pk.z = pack_h2(v[4], v[5]); pk.w = pack_h2(v[6], v[7]);
    *(uint4*)(out + (i64)row * w.cols + c) = pk;
}

// One thread per 8 consecutive values of w (gidx = row * cols/8 + column group) -> out, row-major
// f16 (ld = cols). gsm: the IQ2_XXS grid in shared memory (filled only for that type).
__device__ __forceinline__ void deq_f16_at(const WMat& w, u16* __restrict__ out, i64 gidx, const u64* gsm) {
    int ng = w.cols >> 3;
    if (gidx >= (i64)w.rows * ng) return;
    int row = (int)(gidx / ng), c = (int)(gidx % ng) * 8;
    switch (w.type) {
        case T_F32: deq_f16_one<T_F32>(w, out, row, c, gsm); break;
        case T_F16: deq_f16_one<T_F16>(w, out, row, c, gsm); break;
        case T_Q8_0: deq_f16_one<T_Q8_0>(w, out, row, c, gsm); break;
        case T_IQ2_XXS: deq_f16_one<T_IQ2_XXS>(w, out, row, c, gsm); break;
        case T_Q2_K: deq_f16_one<T_Q2_K>(w, out, row, c, gsm); break;
        default: deq_f16_one<T_Q4_K>(w, out, row, c, gsm); break;
    }
}

// only IQ2_XXS decodes through the grid table: the other types skip the copy
#define DEQ_GRID_SMEM                                                                      \
    __shared__ u64 gsm[256];                                                               \
    if (w.type == T_IQ2_XXS) {                                                             \
        for (int i = threadIdx.x; i < 256; i += blockDim.x) gsm[i] = IQ2XXS_GRID[i];       \
        __syncthreads();                                                                   \
    }

// out: rows x cols f16 (row-major, ld = cols). Requires cols % 8 == 0 (checked by the caller).
extern "C" __global__ void __launch_bounds__(256) deq_f16(WMat w, u16* __restrict__ out) {
    PDL_ENTRY;
    DEQ_GRID_SMEM
    deq_f16_at(w, out, (i64)blockIdx.x * blockDim.x + threadIdx.x, gsm);
}

// Routed experts (cuBLAS expert path): expert e = blockIdx.y of the stack `w` (w.rows x w.cols
// per expert, e_pay / e_hdr bytes apart) -> out + e * rows * cols, row-major f16. Experts that
// no token chose (off[e + 1] == off[e], moe_group's slot offsets) are skipped: their scratch
// matrix is never read. The whole block takes the same branch, so the early return is safe
// before the grid copy's __syncthreads.
extern "C" __global__ void __launch_bounds__(256) deq_f16_exp(WMat w, const int* __restrict__ off, u16* __restrict__ out) {
    PDL_ENTRY;
    int e = blockIdx.y;
    if (off[e + 1] == off[e]) return;
    DEQ_GRID_SMEM
    WMat we = w;
    we.pay += (i64)e * w.e_pay;
    we.hdr += (i64)e * w.e_hdr;
    deq_f16_at(we, out + (i64)e * w.rows * w.cols, (i64)blockIdx.x * blockDim.x + threadIdx.x, gsm);
}

// x: rows of `cols` f32 at row stride ldx (ldx % 4 == 0, 16-byte aligned base, cols % 8 == 0:
// checked by the caller) -> out: t x cols f16, packed (ld = cols). Output row r reads x row
// gather[r] (the routed experts' token of slot r), or row r when gather is null. perm != 0:
// stored in gemm_qr's K order (qr_kpos; cols % 32 == 0, checked by the caller).
extern "C" __global__ void __launch_bounds__(256) x_to_f16(const float* __restrict__ x, int ldx, int cols, int t,
                                                           const int* __restrict__ gather, u16* __restrict__ out,
                                                           int perm) {
    PDL_ENTRY;
    i64 gidx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    int ng = cols >> 3;
    if (gidx >= (i64)t * ng) return;
    int r = (int)(gidx / ng), c = (int)(gidx % ng) * 8;
    int xr = gather ? gather[r] : r;
    const float4* p = (const float4*)(x + (i64)xr * ldx + c);
    float4 a = p[0], b = p[1];
    uint4 pk;
    pk.x = pack_h2(a.x, a.y); pk.y = pack_h2(a.z, a.w); pk.z = pack_h2(b.x, b.y); pk.w = pack_h2(b.z, b.w);
    if (perm) {
        // physical pairs 4q + i (q = this group of 8 in its block of 32) -> pairs 4i + q
        u32* o = (u32*)(out + (i64)r * cols + (c & ~31));
        int q = (c >> 3) & 3;
        o[q] = pk.x; o[4 + q] = pk.y; o[8 + q] = pk.z; o[12 + q] = pk.w;
    } else {
        *(uint4*)(out + (i64)r * cols + c) = pk;
    }
}
