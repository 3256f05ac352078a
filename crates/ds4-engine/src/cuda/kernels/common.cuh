// Common helpers for the ds4 CUDA kernels. Compiled by NVRTC at run time (see cuda/mod.rs for
// why NVRTC rather than embedded PTX). No system headers: NVRTC has none, so the few things
// we need (f16 conversion, limits) are written out here with inline PTX.
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// Programmatic dependent launch (see driver.rs): every kernel starts with PDL_ENTRY (or with
// PDL_TRIGGER, a prologue that touches only immutable data such as weights, then PDL_WAIT).
// TRIGGER lets the next kernel be scheduled now; WAIT blocks until the previous kernel has
// finished and its memory is visible, so no dependent read or any write may precede it.
// Without the launch attribute (or before sm_90) both are no-ops.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PDL_TRIGGER asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#define PDL_WAIT asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define PDL_TRIGGER
#define PDL_WAIT
#endif
// PDL_ENTRY waits first, then releases the successor: at most two kernels in flight (the
// other order let a third kernel's blocks take slots its predecessor still needed; measured
// 90.5 vs 93.5 t/s decode on the H200, both below PDL off).
#define PDL_ENTRY \
    PDL_WAIT;     \
    PDL_TRIGGER

#define NEG_INF_F (-1.0e30f)
#define INF_F (__int_as_float(0x7f800000))

// Global nanosecond timer (kernel-bench phase traces only).
__device__ __forceinline__ u64 gtimer() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// The tensor-core indexer's padded f16 vector length (Di <= 128; idx.cuh, idx_q_prep)
#define ITC_DP 128
// The power-of-two scale of the tensor-core indexer's f16 vectors (idx.cuh's f16_pow2_scaled,
// idx_q_prep): for am = max |x| of a vector, returns 2^e and sets inv = 2^-e, e the unbiased
// exponent of am, clamped so that both are normal f32.
__device__ __forceinline__ float pow2_of_max(float am, float& inv) {
    int be = (int)((__float_as_uint(am) >> 23) & 255u);
    int e = (am > 0.f && be < 255) ? max(be, 1) - 127 : 0;
    e = min(e, 126);
    inv = __uint_as_float((u32)(127 - e) << 23);
    return __uint_as_float((u32)(127 + e) << 23);
}

__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ u16 f2h(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
// f2h saturating at f16's largest finite value (NaN stays NaN): the f16 stores of values that
// were f32 until then (the f16 hc state, the routed experts' f16 outputs), where an inf
// would become a NaN downstream (silu(-inf) = -inf * 0).
__device__ __forceinline__ u16 f2h_sat(float f) {
    return f2h(fabsf(f) > 65504.f ? copysignf(65504.f, f) : f);
}
// Two f32 -> packed f16x2 (lo in the low half), round to nearest even.
__device__ __forceinline__ u32 pack_h2(float lo, float hi) {
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
// K order of the f16 activations read by gemm_qr (matmul.cuh): inside each block of 32
// values, the 4-byte pair 4a + b is stored at pair 4b + a (a 4 x 4 transpose of pairs, its own
// inverse). Position of value c. Why: a wgmma thread's register A fragments of one 32-k step
// then hold 8 consecutive weights of a row, i.e. exactly one quant group (see gemm_qr_body).
__device__ __forceinline__ int qr_kpos(int c) {
    int p = (c >> 1) & 15;
    return (c & ~31) | ((((p & 3) << 2) | (p >> 2)) << 1) | (c & 1);
}
__device__ __forceinline__ float ldh(const u8* p) { return h2f(*(const u16*)p); }

// Exact float of byte k (0..3, a compile-time constant) of w, without the int->float convert
// instruction (I2F issues at a quarter of the FMA rate on sm_90 and bounded the decode
// matvecs): the byte is placed in the mantissa of 2^23 by one byte permute and 2^23 is
// subtracted. Same values as (float)(u8) / (float)(signed char), so results are unchanged.
__device__ __forceinline__ float ubyte_f(u32 w, int k) {
    return __int_as_float(__byte_perm(w, 0x4B000000u, 0x7540u | (u32)k)) - 8388608.f;
}
// Signed byte k (two's complement): flip the sign bit (x + 128), convert, subtract 2^23 + 128.
__device__ __forceinline__ float sbyte_f(u32 w, int k) {
    return __int_as_float(__byte_perm(w ^ 0x80808080u, 0x4B000000u, 0x7540u | (u32)k)) - 8388736.f;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
#define MAX_JOBS 8
// A launch's job table, passed by value (`const __grid_constant__ JobSet<J>`): the jobs are
// read from the constant bank, not in two dependent L2 round trips (every job's block0, then
// the block's job) before a block's first weight load. jobs point into the parameter space,
// so plain loads (no __ldg). The jobs' first blocks are kept together in b0 (not in the jobs):
// job_of_block reads them all, and spread over the jobs (184 bytes apart for mvq) they were
// one constant-cache miss each, every block's first stall (Nsight Compute on mvq: ~8 % of its
// warp samples).
template <typename J>
struct JobSet {
    J j[MAX_JOBS];
    int b0[MAX_JOBS];  // job k's first block in the launch
    int nlog;          // blocks of the jobs run (mvq: a smaller grid loops over them)
};
// n / d for 0 <= n < 2^21 and d >= 1 by one approximate float division: (n + 0.5) / d lies at
// least 0.5 / d from an integer, and __fdividef's relative error (2 ulp: 2^-22) moves it by less
// than (n + 0.5) / d * 2^-22 < 0.5 / d (token positions of a 1M context are < 2^20). An
// integer division is a ~20-instruction sequence with a reciprocal on a block's path to its
// first load.
__device__ __forceinline__ int div_small(int n, int d) { return (int)__fdividef((float)n + 0.5f, (float)d); }
// Global loads kept in program order among themselves (volatile asm): a kernel prologue's
// independent round trips issued back to back before the first of them is used (the compiler
// otherwise placed each load after the previous one's use).
__device__ __forceinline__ int ld_early(const int* p) {
    int v;
    asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ float ld_early(const float* p) {
    float v;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ u64 ld_early(const u64* p) {
    u64 v;
    asm volatile("ld.global.nc.b64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
}
// The job of block b in a grouped launch: the last of the first njobs (<= MAX_JOBS, checked by
// the host) whose first block b0 <= b.
__device__ __forceinline__ int job_of_block(const int* b0, int njobs, int b) {
    int ji = 0;
#pragma unroll
    for (int k = 1; k < MAX_JOBS; k++)
        if (k < njobs && b0[k] <= b) ji = k;
    return ji;
}
// Sum of p[q * stride] over q < n in q order, the loads of up to 8 terms issued before any
// add. A runtime-count loop, even under `#pragma unroll 8`, runs n < 8 terms in its remainder
// loop, one dependent load per iteration (SASS of hc_step: 7 L2 round trips in a row for
// decode's 6 routed experts + shared expert).
__device__ __forceinline__ float sum_strided(const float* __restrict__ p, i64 stride, int n) {
    float s = 0.f;
    for (int q0 = 0; q0 < n; q0 += 8) {
        float r[8];
#pragma unroll
        for (int u = 0; u < 8; u++) r[u] = q0 + u < n ? p[(i64)(q0 + u) * stride] : 0.f;
#pragma unroll
        for (int u = 0; u < 8; u++)
            if (q0 + u < n) s += r[u];
    }
    return s;
}
// Block-wide copy of n4 float4 from global memory: put(i, v) stores element i. Up to 8 loads
// per thread are issued before their stores (a plain strided loop is not unrolled and makes
// one dependent L2 round trip per iteration).
template <typename Put>
__device__ __forceinline__ void stage_f4(const float4* __restrict__ src, int n4, Put put) {
    for (int f0 = threadIdx.x; f0 < n4; f0 += 8 * blockDim.x) {
        float4 r[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            int f = f0 + u * blockDim.x;
            if (f < n4) r[u] = __ldg(src + f);
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            int f = f0 + u * blockDim.x;
            if (f < n4) put(f, r[u]);
        }
    }
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// int8 block b of 32 values, one value per lane (the quantized-activation layout of q8.cuh):
// q = rint(v / d) in [-127, 127] with d = max|v| / 127 (an all-zero block: d = 0, q = 0);
// qs[b*32 + lane] = q, xd[b] = {d, d * sum(q)}. q8_code / q8_store hold the formula for both
// q8_block and q8_block2 (s: the warp's sum of the codes), so the two quantize exactly alike.
__device__ __forceinline__ int q8_code(float v, float amax) {
    int q = amax > 0.f ? __float2int_rn(v * (127.f / amax)) : 0;
    return max(-127, min(127, q));
}
// A block's {d, d * sum(q)} from its max |v| and code sum s.
__device__ __forceinline__ float2 q8_scale(float amax, int s) {
    float d = amax / 127.f;
    return make_float2(d, d * (float)s);
}
__device__ __forceinline__ void q8_store(int q, int s, float amax, int lane, int b, signed char* qs, float2* xd) {
    qs[b * 32 + lane] = (signed char)q;
    if (lane == 0) xd[b] = q8_scale(amax, s);
}
__device__ __forceinline__ void q8_block(float v, int lane, int b, signed char* qs, float2* xd) {
    float amax = warp_max(fabsf(v));
    int q = q8_code(v, amax);
    int s = q;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    q8_store(q, s, amax, lane, b, qs, xd);
}

// q8_block for two blocks at once (b1 < 0: only b0), the same values: the two chains of
// shuffles and divisions interleave instead of running back to back.
__device__ __forceinline__ void q8_block2(float v0, float v1, int lane, int b0, int b1, signed char* qs, float2* xd) {
    float a0 = fabsf(v0), a1 = fabsf(v1);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a0 = fmaxf(a0, __shfl_xor_sync(0xffffffffu, a0, o));
        a1 = fmaxf(a1, __shfl_xor_sync(0xffffffffu, a1, o));
    }
    int q0 = q8_code(v0, a0), q1 = q8_code(v1, a1);
    int s0 = q0, s1 = q1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        s0 += __shfl_xor_sync(0xffffffffu, s0, o);
        s1 += __shfl_xor_sync(0xffffffffu, s1, o);
    }
    q8_store(q0, s0, a0, lane, b0, qs, xd);
    if (b1 >= 0) q8_store(q1, s1, a1, lane, b1, qs, xd);
}

// Inclusive prefix sum over the warp (lane i gets the sum of lanes 0 .. i of v; 1-D blocks,
// the whole warp calls it).
__device__ __forceinline__ int warp_scan_incl(int v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
    }
    return v;
}

// Deterministic block reductions (fixed tree through shared memory; blockDim.x a multiple of 32,
// at most 1024). Every thread gets the result.
__device__ double block_sum_d(double v, double* sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum_d(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    double t = 0.0;
    for (int i = 0; i < nw; i++) t += sh[i];
    __syncthreads();
    return t;
}
__device__ float block_max_f(float v, float* sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    float t = sh[0];
    for (int i = 1; i < nw; i++) t = fmaxf(t, sh[i]);
    __syncthreads();
    return t;
}

__device__ __forceinline__ float sigmoidf_(float x) {
    if (x >= 0.f) return 1.f / (1.f + expf(-x));
    float e = expf(x);
    return e / (1.f + e);
}
__device__ __forceinline__ float siluf_(float x) { return x * sigmoidf_(x); }
// The MoE mid of one value before the routing weight: silu(min(g, c)) * clamp(u, -c, c).
// FAST: silu from the approximate exp and divide (ex2.approx, rcp.approx: ~2 ulp of f32); for
// mids rounded to f16 (11 bits) it changes a value only next to a rounding boundary (~1 in
// 10^4-10^5 at 8K tokens). Why FAST: gemm_qs_gu's epilogue, where expf, its branch and the IEEE
// divide made the per-tile code 16 % of the kernel's warp samples against gemm_qs's 7 %
// (session 56, Nsight source counters); it took the fused IQ2_XXS gate + up from 4.18 to 3.74
// ms at 8K tokens (H100).
template <bool FAST>
__device__ __forceinline__ float moe_mid_gu_t(float g, float u, float clamp) {
    const float gg = fminf(g, clamp);
    const float uu = fminf(fmaxf(u, -clamp), clamp);
    return (FAST ? __fdividef(gg, 1.f + __expf(-gg)) : siluf_(gg)) * uu;
}
// the exact form: model.cuh moe_mid (and the reference precision)
__device__ __forceinline__ float moe_mid_gu(float g, float u, float clamp) { return moe_mid_gu_t<false>(g, u, clamp); }
// the fast form: gemm_qs_gu's epilogue (Fast precision only)
__device__ __forceinline__ float moe_mid_gu_fast(float g, float u, float clamp) { return moe_mid_gu_t<true>(g, u, clamp); }
__device__ __forceinline__ float softplusf_(float x) {
    if (x > 20.f) return x;
    if (x < -20.f) return expf(x);
    return log1pf(expf(x));
}

// Exact ceil(log2(y)) for y > 0 (MODEL.md §2.2).
__device__ __forceinline__ int ceil_log2_exact(float y) {
    u32 b = __float_as_uint(y);
    int e = (int)((b >> 23) & 0xff);
    u32 m = b & 0x7fffff;
    if (e == 0) {  // subnormal: y = m * 2^-149
        int hb = 31 - __clz(m);
        int fl = hb - 149;
        return (m & (m - 1)) == 0 ? fl : fl + 1;
    }
    int fl = e - 127;
    return m == 0 ? fl : fl + 1;
}
__device__ __forceinline__ float exp2i(int k) {  // 2^k for k in the normal/subnormal f32 range
    if (k >= -126) return __int_as_float((u32)(k + 127) << 23);
    return __int_as_float(1u << (k + 149));
}

// Round to the nearest E4M3FN value (|x| <= 448 assumed), ties to even code.
__device__ float e4m3_round(float x) {
    float a = fabsf(x);
    float r;
    if (a >= 448.f) r = 448.f;
    else if (a < 0.015625f) {  // subnormal range: step 2^-9
        float q = a * 512.f;
        r = rintf(q) * (1.f / 512.f);
    } else {
        int e = (int)((__float_as_uint(a) >> 23) & 0xff) - 127;  // -6..8
        float step = exp2i(e - 3);
        float q = a / step;  // exact (power-of-two division)
        r = rintf(q) * step;  // rint = ties to even on the mantissa = even code
        if (r > 448.f) r = 448.f;
    }
    return x < 0.f ? -r : r;
}
// Nearest of {0,.5,1,1.5,2,3,4,6}, ties to the even code, by search (the reference of
// model.cuh e2m1_check; e2m1_round below is the form the kernels use).
__device__ float e2m1_round_search(float x) {
    float a = fabsf(x);
    const float g[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
    int best = 0;
    float bd = a;
    for (int c = 1; c < 8; c++) {
        float d = fabsf(a - g[c]);
        if (d < bd || (d == bd && (c & 1) == 0 && (best & 1) == 1)) { bd = d; best = c; }
    }
    // g[best] without indexing the array at run time (that kept it in local memory)
    float r = best < 5 ? 0.5f * (float)best : (best == 5 ? 3.f : best == 6 ? 4.f : 6.f);
    return x < 0.f ? -r : r;
}
// The same by the grid's three spacings: below 2 the values are the multiples of 0.5 (codes 0-4,
// so code parity is the multiple's parity and rintf's ties-to-even is the even code), from 2
// to 4 the integers 2, 3, 4 (codes 4-6: even integer = even code), from 4 the even integers
// (codes 6, 7: 4 wins its tie with 6). The scalings by 2 and 0.5 are exact. Why: the search
// was ~30 instructions per value of the indexer's FP4 step (idx_q_prep: ~0.5 ms per ratio-4
// layer of an 8K prefill, issue-bound). The kernel bench (idx) checks every float in [-6, 6]
// against the search (e2m1_check).
__device__ __forceinline__ float e2m1_round(float x) {
    const float a = fabsf(x);
    const float r = a < 2.f ? rintf(a * 2.f) * 0.5f : (a < 4.f ? rintf(a) : 2.f * rintf(a * 0.5f));
    return x < 0.f ? -r : r;
}

// The shared-memory (CTA window) address of a generic pointer into shared memory.
__device__ __forceinline__ u32 smem_u32(const void* p) {
    u32 r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
// Thread-block cluster helpers (sm_90): rank in the cluster, a full cluster barrier
// (release/acquire: shared-memory writes before it are visible to the other blocks after it),
// and loads from another block's shared memory (distributed shared memory).
__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The two halves of cluster_sync_all: a block may do its own work between its arrival (its
// shared-memory writes before it released) and its wait.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ u32 dsmem_addr(const void* p, u32 rank) {
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_u32(p)), "r"(rank));
    return r;
}
__device__ __forceinline__ float2 ld_dsmem2(u32 a) {
    float2 v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(a));
    return v;
}
__device__ __forceinline__ float4 ld_dsmem4(u32 a) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a));
    return v;
}
__device__ __forceinline__ uint4 ld_dsmem_u4(u32 a) {
    uint4 v;
    asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
    return v;
}
__device__ __forceinline__ unsigned long long ld_dsmem_u64(u32 a) {
    unsigned long long v;
    asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(a));
    return v;
}
__device__ __forceinline__ u32 ld_dsmem_u32(u32 a) {
    u32 v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a));
    return v;
}
