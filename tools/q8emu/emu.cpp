// Host emulation of the decode matvec group-dot functions: mv2_gdot (trusted f32) vs mvq_gdot (int8).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <random>
#define __device__
#define __forceinline__ inline
#define __restrict__
typedef unsigned char u8; typedef unsigned short u16; typedef unsigned int u32; typedef unsigned long long u64; typedef long long i64;
struct uint4 { u32 x, y, z, w; }; struct uint2 { u32 x, y; }; struct float4 { float x, y, z, w; };
template <class T> T __ldg(const T* p) { return *p; }
static float h2f(u16 h) { _Float16 f; memcpy(&f, &h, 2); return (float)f; }
static u16 f2h(float x) { _Float16 f = (_Float16)x; u16 h; memcpy(&h, &f, 2); return h; }
static float ubyte_f(u32 w, int k) { return (float)((w >> (8 * k)) & 255); }
static float sbyte_f(u32 w, int k) { return (float)(signed char)((w >> (8 * k)) & 255); }
static int __popc(u32 v) { return __builtin_popcount(v); }
static int __dp4a(int a, int b, int c) { for (int i = 0; i < 4; i++) c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i)); return c; }
static u32 __vsub4(u32 a, u32 b) { u32 r = 0; for (int i = 0; i < 4; i++) r |= (((a >> (8 * i)) - (b >> (8 * i))) & 255u) << (8 * i); return r; }
#include "p1.h"
#include "p2.h"
#include "p3.h"
#include "p4.h"
int main() {
    std::mt19937_64 rng(5);
    const int cols = 1024, rows = 8;
    int types[4] = {T_Q8_0, T_IQ2_XXS, T_Q2_K, T_Q4_K};
    const char* names[4] = {"Q8_0", "IQ2_XXS", "Q2_K", "Q4_K"};
    int bad = 0;
    for (int ti = 0; ti < 4; ti++) {
        int ty = types[ti];
        int BL = ty == T_Q8_0 ? 32 : 256, PB = ty == T_Q8_0 ? 32 : ty == T_IQ2_XXS ? 64 : ty == T_Q2_K ? 80 : 128;
        int HB = ty == T_Q8_0 || ty == T_IQ2_XXS ? 2 : ty == T_Q2_K ? 4 : 16;
        int nb = rows * cols / BL;
        std::vector<u8> pay(nb * PB + 64), hdr(nb * HB + 64);
        for (auto& b : pay) b = rng();
        for (auto& b : hdr) b = rng();
        for (int b = 0; b < nb; b++) {  // sane f16 scales
            u16 d = f2h(0.01f + 0.01f * (rng() % 100) / 100.f), dm = f2h(0.005f + 0.01f * (rng() % 100) / 100.f);
            memcpy(&hdr[b * HB], &d, 2);
            if (HB >= 4) memcpy(&hdr[b * HB + 2], &dm, 2);
        }
        // x: smooth + outliers, and one all-zero block
        std::vector<float> x(cols);
        for (int c = 0; c < cols; c++) x[c] = ((c * 7919) % 1000) / 1000.f - 0.5f + ((rng() % 50) == 0 ? 3.f : 0.f);
        for (int c = 64; c < 96; c++) x[c] = 0.f;
        // quant_q8 (same formula as the kernel)
        std::vector<signed char> q(cols); std::vector<float> xd(cols / 32 * 2);
        for (int b = 0; b < cols / 32; b++) {
            float amax = 0; for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
            float d = amax / 127.f; int s = 0;
            for (int i = 0; i < 32; i++) { int v = amax > 0 ? (int)lrintf(x[b * 32 + i] * (127.f / amax)) : 0; v = v < -127 ? -127 : v > 127 ? 127 : v; q[b * 32 + i] = v; s += v; }
            xd[2 * b] = d; xd[2 * b + 1] = d * s;
        }
        double e32 = 0, eq = 0, n32 = 0, nq = 0, rel_x = 0, den_x = 0;
        for (int r = 0; r < rows; r++) {
            // f64 references from the trusted dequantizer
            double ref = 0, refq = 0;
            for (int c = 0; c < cols; c += 8) {
                float v[8];
                switch (ty) {
                    case T_Q8_0: deq8<T_Q8_0>(pay.data(), hdr.data(), cols, r, c, v, IQ2XXS_GRID); break;
                    case T_IQ2_XXS: deq8<T_IQ2_XXS>(pay.data(), hdr.data(), cols, r, c, v, IQ2XXS_GRID); break;
                    case T_Q2_K: deq8<T_Q2_K>(pay.data(), hdr.data(), cols, r, c, v, IQ2XXS_GRID); break;
                    default: deq8<T_Q4_K>(pay.data(), hdr.data(), cols, r, c, v, IQ2XXS_GRID); break;
                }
                for (int i = 0; i < 8; i++) { ref += (double)v[i] * x[c + i]; refq += (double)v[i] * ((double)xd[2 * ((c + i) / 32)] * q[c + i]); }
            }
            double a32 = 0, aq = 0;
            int G = ty == T_Q8_0 ? 16 : 32;
            for (int g = 0; g < cols / G; g++) {
                switch (ty) {
                    case T_Q8_0: a32 += mv2_gdot<T_Q8_0>(pay.data(), hdr.data(), cols, r, g, &x[g * G], IQ2XXS_GRID); break;
                    case T_IQ2_XXS: a32 += mv2_gdot<T_IQ2_XXS>(pay.data(), hdr.data(), cols, r, g, &x[g * G], IQ2XXS_GRID); break;
                    case T_Q2_K: a32 += mv2_gdot<T_Q2_K>(pay.data(), hdr.data(), cols, r, g, &x[g * G], IQ2XXS_GRID); break;
                    default: a32 += mv2_gdot<T_Q4_K>(pay.data(), hdr.data(), cols, r, g, &x[g * G], IQ2XXS_GRID); break;
                }
            }
            for (int g = 0; g < cols / 32; g++) {
                int xv[8]; memcpy(xv, &q[g * 32], 32);
                float dx = xd[2 * g], sx = xd[2 * g + 1];
                switch (ty) {
                    case T_Q8_0: aq += mvq_gdot<T_Q8_0>(pay.data(), hdr.data(), cols, r, g, xv, dx, sx, IQ2XXS_GRID); break;
                    case T_IQ2_XXS: aq += mvq_gdot<T_IQ2_XXS>(pay.data(), hdr.data(), cols, r, g, xv, dx, sx, IQ2XXS_GRID); break;
                    case T_Q2_K: aq += mvq_gdot<T_Q2_K>(pay.data(), hdr.data(), cols, r, g, xv, dx, sx, IQ2XXS_GRID); break;
                    default: aq += mvq_gdot<T_Q4_K>(pay.data(), hdr.data(), cols, r, g, xv, dx, sx, IQ2XXS_GRID); break;
                }
            }
            e32 += (a32 - ref) * (a32 - ref); n32 += ref * ref;
            eq += (aq - refq) * (aq - refq); nq += refq * refq;
            rel_x += (aq - ref) * (aq - ref); den_x += ref * ref;
        }
        double r32 = sqrt(e32 / n32), rq = sqrt(eq / nq), rx = sqrt(rel_x / den_x);
        printf("%-8s mv2 vs f64(x): %.2e   mvq vs f64(quantized x): %.2e   mvq vs f64(x): %.2e\n", names[ti], r32, rq, rx);
        if (r32 > 1e-5 || rq > 1e-5 || rx > 3e-2) bad++;
    }
    printf(bad ? "FAIL\n" : "OK\n");
    return bad;
}
