// Decode matvec, second design (`mv2`). Decode streams ~9.2 GB of weights per token, so
// every matvec must keep HBM busy: many independent 8-32 byte loads in flight per lane and
// no barrier before the first one.
//
// * A block is 8 warps. `wk` warps share a group of rows and split its columns (split-K
//   inside the block: small-row matrices still fill the GPU); each warp owns `R` rows.
//   The per-warp partials are combined in a fixed order through shared memory.
// * A lane walks column groups g = lane, lane + 32, ... of its column slice. It loads the
//   input slice of one group (G floats) into registers ONCE (read-only cache: all blocks of an
//   SM share x through L1) and applies it to its R rows: x traffic per weight byte falls by R,
//   which is what keeps 2-bit formats (16 bytes of f32 x per weight byte) off the L1 limit.
// * Paired jobs compute two matrices of the same shape at the same rows (gate and up of a
//   SwiGLU FFN) and write silu(min(g,c)) * clamp(u,-c,c) * weight: the MoE "mid" vector,
//   without another kernel.
// Deterministic: fixed per-lane order, butterfly warp sums, fixed-order split-K combine.

struct MvJob2 {
    WMat w;
    WMat w2;              // paired jobs: the "up" matrix (same type and shape); w2.pay == 0 otherwise
    const float* x;
    float* y;
    const int* sel;       // per-slot expert ids (nullptr: plain matrix)
    const float* wts;     // paired jobs: per-slot routing weight (nullptr: 1)
    i64 x_slot;           // floats between slot inputs (0: every slot reads the same x)
    int nslots;
    int x_grp_rows;       // rows sharing one x slice (block-diagonal weights), multiple of rows/block
    int rpw;              // rows per warp R: 1, 2 or 4
    int wk;               // warps splitting one row group's columns: 1, 2, 4 or 8
    float clamp;          // paired: SwiGLU clamp
    int pad;
};

// One column group (G values) of x in registers.
template <int TY>
__device__ __forceinline__ void mv2_load_x(const float* __restrict__ x, int g, float* xv) {
    const int G = XG<TY>::G;
    const float4* p = (const float4*)(x + (i64)g * G);
#pragma unroll
    for (int k = 0; k < G / 4; k++) {
        float4 v = __ldg(p + k);
        xv[4 * k] = v.x; xv[4 * k + 1] = v.y; xv[4 * k + 2] = v.z; xv[4 * k + 3] = v.w;
    }
}

__device__ __forceinline__ float dot4v(const float* x, float b0, float b1, float b2, float b3) {
    return x[0] * b0 + x[1] * b1 + x[2] * b2 + x[3] * b3;
}

// Dot of column group g of `row` with the group's x values (registers).
template <int TY>
__device__ __forceinline__ float mv2_gdot(const u8* __restrict__ pay, const u8* __restrict__ hdr, int cols, int row,
                                          int g, const float* xv, const u64* gsm) {
    if (TY == T_F32 || TY == T_F16) {
        float v[8];
        deq8<TY>(pay, hdr, cols, row, g * 8, v, gsm);
        return dot4v(xv, v[0], v[1], v[2], v[3]) + dot4v(xv + 4, v[4], v[5], v[6], v[7]);
    } else if (TY == T_Q8_0) {
        int nb = cols >> 5;
        i64 blk = (i64)row * nb + (g >> 1);
        uint4 q = __ldg((const uint4*)(pay + blk * 32 + (g & 1) * 16));
        float d = h2f(__ldg((const u16*)(hdr + blk * 2)));
        u32 w[4] = {q.x, q.y, q.z, q.w};
        float acc = 0.f;
#pragma unroll
        for (int k = 0; k < 4; k++)
            acc += dot4v(xv + 4 * k, sbyte_f(w[k], 0), sbyte_f(w[k], 1), sbyte_f(w[k], 2), sbyte_f(w[k], 3));
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
#pragma unroll
            for (int i = 0; i < 8; i++) {
                float m = i < 4 ? ubyte_f(grl, i & 3) : ubyte_f(grh, i & 3);
                float p = m * xv[8 * k + i];
                acc += ((sg >> i) & 1) ? -p : p;
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
        u32 scp = __ldg((const u16*)(P + j0));  // j0 is even: the two scale bytes as one load
        int sc0 = scp & 0xff, sc1 = scp >> 8;
        u32 dd = __ldg((const u32*)(hdr + blk * 4));
        float d = h2f((u16)(dd & 0xffff)), dmin = h2f((u16)(dd >> 16));
        u32 w[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        float a0 = 0.f, a1 = 0.f, s0 = 0.f, s1 = 0.f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float* xk = xv + 4 * k;
            u32 ww = (w[k] >> sft) & 0x03030303u;
            float p = dot4v(xk, ubyte_f(ww, 0), ubyte_f(ww, 1), ubyte_f(ww, 2), ubyte_f(ww, 3));
            float sx = xk[0] + xk[1] + xk[2] + xk[3];
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
        uint4 hh = __ldg((const uint4*)H);
        float d = h2f((u16)(hh.x & 0xffff)), dmin = h2f((u16)(hh.x >> 16));
        int sc, m;
        q4k_scale_min_w(j, hh.y, hh.z, hh.w, sc, m);
        u32 w[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        float a = 0.f, sx = 0.f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float* xk = xv + 4 * k;
            u32 ww = (w[k] >> sft) & 0x0F0F0F0Fu;
            a += dot4v(xk, ubyte_f(ww, 0), ubyte_f(ww, 1), ubyte_f(ww, 2), ubyte_f(ww, 3));
            sx += xk[0] + xk[1] + xk[2] + xk[3];
        }
        return d * (float)sc * a - dmin * (float)m * sx;
    }
}

template <int TY, int R>
__device__ __forceinline__ void mv2_body(const MvJob2& j, int slot, int rowA, const float* __restrict__ x,
                                         const u8* pay, const u8* hdr, const u8* pay2, const u8* hdr2,
                                         int ks, float (*red)[8], const u64* gsm) {
    const int G = XG<TY>::G;
    int cols = j.w.cols, rows = j.w.rows;
    int ng = cols / G;
    int lwk = __ffs(j.wk) - 1;  // wk is a power of two (mv_place)
    int g0 = (ng * ks) >> lwk, g1 = (ng * (ks + 1)) >> lwk;
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
        float xv[G];
        mv2_load_x<TY>(x, g, xv);
#pragma unroll
        for (int r = 0; r < R; r++) {
            acc[r] += mv2_gdot<TY>(pay, hdr, cols, rr[r], g, xv, gsm);
            if (paired) acc2[r] += mv2_gdot<TY>(pay2, hdr2, cols, rr[r], g, xv, gsm);
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        float a = warp_sum(acc[r]);
        float b = paired ? warp_sum(acc2[r]) : 0.f;
        if (lane == 0) { red[warp][2 * r] = a; red[warp][2 * r + 1] = b; }
    }
}

// Where block lb (counted from its job's first) of a split-K matvec launch (mv2 / mvq job J)
// works: its slot and first row, rows per block, this warp's column split ks and first row
// rowA, the weight pointers (of the slot's expert when the job selects experts) and the slot's
// routing weight wsl (paired jobs with weights; else 1), loaded together with the expert id.
template <class J>
__device__ __forceinline__ void mv_place(const J& j, int lb, int& slot, int& row0, int& rpb, int& ks, int& rowA, const u8*& pay,
                                         const u8*& hdr, const u8*& pay2, const u8*& hdr2, float& wsl) {
    // rpw and wk are powers of two (checked by the host), so only the slot needs a division
    // (div_small); these run before the expert id's load, on every block's path to its first
    // weight load
    int lwk = __ffs(j.wk) - 1;
    rpb = (j.rpw * 8) >> lwk;  // rows per warp x row groups per block (a power of two)
    int lrpb = __ffs(rpb) - 1;
    int bps = (j.w.rows + rpb - 1) >> lrpb;
    slot = div_small(lb, bps);
    row0 = (lb - slot * bps) << lrpb;
    int warp = threadIdx.x >> 5;
    ks = warp & (j.wk - 1);
    rowA = row0 + (warp >> lwk) * j.rpw;
    pay = j.w.pay;
    hdr = j.w.hdr;
    pay2 = j.w2.pay;
    hdr2 = j.w2.hdr;
    i64 e = j.sel ? ld_early(j.sel + slot) : 0;
    wsl = pay2 && j.wts ? ld_early(j.wts + slot) : 1.f;
    if (j.sel) {
        pay += e * j.w.e_pay;
        hdr += e * j.w.e_hdr;
        if (pay2) { pay2 += e * j.w2.e_pay; hdr2 += e * j.w2.e_hdr; }
    }
}

// A matvec output: the row's sum a, or for paired jobs the clamped SwiGLU of (gate a, up c)
// times the slot's routing weight.
__device__ __forceinline__ float mv_out(float a, float c, bool paired, float clamp, float wsl) {
    if (!paired) return a;
    const float gg = fminf(a, clamp);
    const float uu = fminf(fmaxf(c, -clamp), clamp);
    return siluf_(gg) * uu * wsl;
}

// The split-K combine of mv2 / mvq after the block barrier: thread (row group g, row r) sums
// the wk column slices of its row in order (red[unit][2r]: w, [2r + 1]: the paired w2) and
// writes y, through the clamped SwiGLU (times the slot's routing weight wsl, loaded by the
// caller before its main loop) for paired jobs. rpw and wk are powers of two.
// yq != 0 (mvq jobs of 32 rows per block, rows a multiple of 32: checked by the host): warp 0
// holds one whole 32-value block of y and also writes it quantized (q8_block, as quant_q8
// would: the next int8 matvec reads it without a quantization launch).
template <int RS>
__device__ __forceinline__ void mv_split_combine(const float (*red)[RS], int row0, int rpb, int rpw, int wk, int rows, bool paired,
                                                 float clamp, float wsl, int slot, float* y, signed char* yq = nullptr,
                                                 float2* yd = nullptr) {
    const int t = threadIdx.x;  // the block's row this thread combines
    if (t >= rpb || row0 + t >= rows) return;
    int g = t >> (__ffs(rpw) - 1), r = t & (rpw - 1);
    float a = 0.f, c = 0.f;
    for (int k = 0; k < wk; k++) {
        a += red[g * wk + k][2 * r];
        c += red[g * wk + k][2 * r + 1];
    }
    const float v = mv_out(a, c, paired, clamp, wsl);
    y[(i64)slot * rows + row0 + t] = v;
    if (yq) q8_block(v, t, (slot * rows + row0) >> 5, yq, yd);
}

// Shared body of the mv2 entry points (which differ only in their register cap).
__device__ __forceinline__ void mv2_main(const MvJob2* __restrict__ jobs, const int* b0, int njobs) {
    __shared__ u64 gsm[256];
    __shared__ float red[8][8];
    int b = blockIdx.x;
    const int ji = job_of_block(b0, njobs, b);
    const MvJob2 j = jobs[ji];
    int slot, row0, rpb, ks, rowA;
    const u8 *pay, *hdr, *pay2, *hdr2;
    float wsl;
    mv_place(j, b - b0[ji], slot, row0, rpb, ks, rowA, pay, hdr, pay2, hdr2, wsl);
    // the IQ2_XXS grid is only needed (and only copied) by IQ2_XXS jobs; block-uniform branch
    bool iq2 = j.w.type == T_IQ2_XXS;
    if (iq2) {
        for (int i = threadIdx.x; i < 256; i += blockDim.x) gsm[i] = IQ2XXS_GRID[i];
        __syncthreads();
    }
    int cols = j.w.cols;
    const float* x = j.x + (i64)slot * j.x_slot + (i64)(row0 / j.x_grp_rows) * cols;
#define MV2_R(TY)                                                                                  \
    if (j.rpw == 4) mv2_body<TY, 4>(j, slot, rowA, x, pay, hdr, pay2, hdr2, ks, red, gsm);         \
    else if (j.rpw == 2) mv2_body<TY, 2>(j, slot, rowA, x, pay, hdr, pay2, hdr2, ks, red, gsm);    \
    else mv2_body<TY, 1>(j, slot, rowA, x, pay, hdr, pay2, hdr2, ks, red, gsm);
    switch (j.w.type) {
        case T_F32: MV2_R(T_F32) break;
        case T_F16: MV2_R(T_F16) break;
        case T_Q8_0: MV2_R(T_Q8_0) break;
        case T_IQ2_XXS: MV2_R(T_IQ2_XXS) break;
        case T_Q2_K: MV2_R(T_Q2_K) break;
        default: MV2_R(T_Q4_K) break;
    }
#undef MV2_R
    __syncthreads();
    mv_split_combine(red, row0, rpb, j.rpw, j.wk, j.w.rows, j.w2.pay != nullptr, j.clamp, wsl, slot, j.y);
}

// Entry points: the same kernel under different register caps (minimum resident blocks per
// SM), chosen per job table by the session (occupancy vs. loads in flight per lane).
extern "C" __global__ void __launch_bounds__(256, 1) mv2(const __grid_constant__ JobSet<MvJob2> js, int njobs) {
    PDL_ENTRY;
    mv2_main(js.j, js.b0, njobs);
}
extern "C" __global__ void __launch_bounds__(256, 2) mv2_b2(const __grid_constant__ JobSet<MvJob2> js, int njobs) {
    PDL_ENTRY;
    mv2_main(js.j, js.b0, njobs);
}
extern "C" __global__ void __launch_bounds__(256, 3) mv2_b3(const __grid_constant__ JobSet<MvJob2> js, int njobs) {
    PDL_ENTRY;
    mv2_main(js.j, js.b0, njobs);
}
extern "C" __global__ void __launch_bounds__(256, 4) mv2_b4(const __grid_constant__ JobSet<MvJob2> js, int njobs) {
    PDL_ENTRY;
    mv2_main(js.j, js.b0, njobs);
}
