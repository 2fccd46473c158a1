// dev/conv/silu_floor.cpp — throwaway: what the conv prefill's arithmetic costs with no memory traffic at all, on
// AVX-512 (raw intrinsics, one thread, a 16 KiB buffer in L1, best of 40 rounds). Prints
//   - the fp32 FMA rate (12 independent chains) and the clock it implies (16 lanes x 2 FLOPs x 2 pipes per cycle);
//   - cycles per 512-bit instruction of the operations the kernel could use (vdivps, vrcp14ps, vdpbf16ps,
//     vcvtne2ps2bf16, vpermw, vfpclassps), 12 independent chains each;
//   - ns per element of the SiLU alone, read from and written to L1: the kernel's (kernels_shared-inl.h: 2^f by the
//     degree-5 polynomial, vscalefps, one vdivps), the reciprocal estimate with a Newton step (the kernel before
//     session 34), and a cheap one (degree 3, bare reciprocal: 1.4e-4 relative, session 28); each with fp32 stores
//     and with the kernel's bf16 stores (vcvtne2ps2bf16 + vpermw + the FP-class test);
//   - how many of 3.2 million random lanes of vdpbf16ps differ from two fused multiply-adds in a row, odd element
//     first, and from even first (normal bf16 values; the instruction is documented to read denormals as zero);
//   - with a copy bandwidth in GB/s as the argument: the ns per element that 80 % of it allows for the conv's
//     4 bytes per element (2 read, 2 written, bf16).
// The kernel's own time in L1 (taps, SiLU, rounding): TXOPS_NUM_THREADS=1 build/dev_conv_speed 64 1024 4000.
// Usage: g++ -O2 -march=native dev/conv/silu_floor.cpp -o build/dev_silu_floor && build/dev_silu_floor [GB/s]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call of fn, best of 40 rounds of `calls` calls.
template <class F>
double Best(int calls, const F& fn) {
  double best = 1e30;
  for (int round = 0; round < 40; ++round) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / calls);
  }
  return best;
}

// Cycles per instruction of op over 12 independent chains (the clock from the FMA rate, `ghz`).
template <class Op>
double CyclesPerOp(double ghz, const Op& op) {
  const int steps = 20000;
  const double s = Best(1, [&] {
    // Twelve named chains (an array of them was kept in memory by GCC, every step a store and a load).
    __m512 v0 = _mm512_set1_ps(1.0f), v1 = _mm512_set1_ps(1.001f), v2 = _mm512_set1_ps(1.002f),
           v3 = _mm512_set1_ps(1.003f), v4 = _mm512_set1_ps(1.004f), v5 = _mm512_set1_ps(1.005f),
           v6 = _mm512_set1_ps(1.006f), v7 = _mm512_set1_ps(1.007f), v8 = _mm512_set1_ps(1.008f),
           v9 = _mm512_set1_ps(1.009f), v10 = _mm512_set1_ps(1.01f), v11 = _mm512_set1_ps(1.011f);
    for (int k = 0; k < steps; ++k) {
      v0 = op(v0), v1 = op(v1), v2 = op(v2), v3 = op(v3), v4 = op(v4), v5 = op(v5);
      v6 = op(v6), v7 = op(v7), v8 = op(v8), v9 = op(v9), v10 = op(v10), v11 = op(v11);
    }
    __asm__ volatile("" : : "v"(v0), "v"(v1), "v"(v2), "v"(v3), "v"(v4), "v"(v5), "v"(v6), "v"(v7), "v"(v8),
                     "v"(v9), "v"(v10), "v"(v11));
  });
  return s * ghz * 1e9 / (steps * 12.0);
}

inline __m512 Exp2Poly5(__m512 f) {  // the kernel's degree-5 polynomial for 2^f on [0, 1), as Poly5 evaluates it
  const __m512 f2 = _mm512_mul_ps(f, f);
  const __m512 p01 = _mm512_fmadd_ps(f, _mm512_set1_ps(0.6931530833f), _mm512_set1_ps(0.9999999404f));
  const __m512 p23 = _mm512_fmadd_ps(f, _mm512_set1_ps(0.05582631752f), _mm512_set1_ps(0.2401536107f));
  const __m512 p45 = _mm512_fmadd_ps(f, _mm512_set1_ps(0.001877576695f), _mm512_set1_ps(0.008989340626f));
  return _mm512_fmadd_ps(_mm512_fmadd_ps(p45, f2, p23), f2, p01);
}

// 1 + e^-v as the kernel makes it: z = -v log2 e, f = z - floor(z), 2^f scaled by 2^floor(z).
inline __m512 OnePlusExp(__m512 v) {
  const __m512 z = _mm512_mul_ps(v, _mm512_set1_ps(-1.44269504088896341f));
  return _mm512_add_ps(_mm512_scalef_ps(Exp2Poly5(_mm512_reduce_ps(z, 1)), z), _mm512_set1_ps(1.0f));
}

inline __m512 SiluDivide(__m512 v) { return _mm512_div_ps(v, OnePlusExp(v)); }

inline __m512 SiluNewton(__m512 v) {
  const __m512 d = OnePlusExp(v), r = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(v, _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r));
}

inline __m512 SiluCheap(__m512 v) {
  const __m512 z = _mm512_mul_ps(v, _mm512_set1_ps(-1.44269504088896341f));
  const __m512 f = _mm512_reduce_ps(z, 1);
  __m512 p = _mm512_fmadd_ps(f, _mm512_set1_ps(0.0790199f), _mm512_set1_ps(0.2243f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6964f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  const __m512 d = _mm512_add_ps(_mm512_scalef_ps(p, z), _mm512_set1_ps(1.0f));
  return _mm512_mul_ps(v, _mm512_rcp14_ps(d));
}

alignas(64) float g_in[4096];
alignas(64) float g_out[4096];

// ns per element of silu over the buffer: fp32 stores, or pairs rounded to bf16 as the kernel's stores do.
template <class Silu>
double NsPerElement(const Silu& silu, bool bf16) {
  const double s = Best(200, [&] {
    __mmask16 denormal = 0;
    for (int i = 0; i < 4096; i += 32) {
      const __m512 a = silu(_mm512_load_ps(g_in + i)), b = silu(_mm512_load_ps(g_in + i + 16));
      if (!bf16) {
        _mm512_store_ps(g_out + i, a);
        _mm512_store_ps(g_out + i + 16, b);
        continue;
      }
      denormal |= _mm512_fpclass_ps_mask(a, 0x20) | _mm512_fpclass_ps_mask(b, 0x20);
      const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                             22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
      const __m512i packed = _mm512_permutexvar_epi16(order, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
      _mm512_store_si512(reinterpret_cast<__m512i*>(g_out) + i / 32, packed);
    }
    __asm__ volatile("" : : "r"(denormal), "m"(g_out));
  });
  return s * 1e9 / 4096;
}

// Lanes of vdpbf16ps (srcdest + a.odd * b.odd + a.even * b.even) that differ from two fused multiply-adds in a row,
// odd element first ([0]) and even first ([1]), over random normal bf16 operands and fp32 sums.
void CountDotOrderMismatches(int64_t counts[2]) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> mantissa(-4.0f, 4.0f);
  std::uniform_int_distribution<int> exponent(-7, 7);
  auto bf16 = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);
  };
  auto widen = [](uint16_t b) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  counts[0] = counts[1] = 0;
  alignas(64) uint16_t a[32], b[32];
  alignas(64) float c[16], r[16];
  for (int round = 0; round < 200000; ++round) {
    for (int i = 0; i < 32; ++i) {
      a[i] = bf16(std::ldexp(mantissa(rng), exponent(rng)));
      b[i] = bf16(std::ldexp(mantissa(rng), exponent(rng)));
    }
    for (int i = 0; i < 16; ++i) c[i] = std::ldexp(mantissa(rng), exponent(rng));
    _mm512_store_ps(r, _mm512_dpbf16_ps(_mm512_load_ps(c), reinterpret_cast<__m512bh>(_mm512_load_si512(a)),
                                        reinterpret_cast<__m512bh>(_mm512_load_si512(b))));
    for (int i = 0; i < 16; ++i) {
      const float ae = widen(a[2 * i]), ao = widen(a[2 * i + 1]), be = widen(b[2 * i]), bo = widen(b[2 * i + 1]);
      counts[0] += r[i] != std::fma(ae, be, std::fma(ao, bo, c[i]));
      counts[1] += r[i] != std::fma(ao, bo, std::fma(ae, be, c[i]));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 0; i < 4096; ++i) g_in[i] = 0.05f * static_cast<float>(i % 200 - 100);
  const __m512 c = _mm512_set1_ps(0.999f), o = _mm512_set1_ps(1e-6f);
  const double fma_cycles_at_1ghz = CyclesPerOp(1.0, [&](__m512 x) { return _mm512_fmadd_ps(x, c, o); });
  const double ghz = 0.5 / fma_cycles_at_1ghz;  // two FMA pipes: 0.5 cycles per FMA
  std::printf("fp32 FMA: %.1f GFLOP/s on one thread -> %.2f GHz at two 512-bit FMAs per cycle\n", 64.0 * ghz, ghz);
  const __m512bh w = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3f803f80));
  const __m512i idx = _mm512_set1_epi16(3);
  std::printf("cycles per instruction: vdivps %.2f, vrcp14ps %.2f, vdpbf16ps %.2f, vcvtne2ps2bf16 %.2f, vpermw %.2f, "
              "vfpclassps %.2f, vfmadd %.2f\n",
              CyclesPerOp(ghz, [&](__m512 x) { return _mm512_div_ps(c, x); }),
              CyclesPerOp(ghz, [&](__m512 x) { return _mm512_rcp14_ps(x); }),
              CyclesPerOp(ghz, [&](__m512 x) { return _mm512_dpbf16_ps(x, w, w); }),
              CyclesPerOp(ghz, [&](__m512 x) { return reinterpret_cast<__m512>(_mm512_cvtne2ps_pbh(x, x)); }),
              CyclesPerOp(ghz, [&](__m512 x) {
                return _mm512_castsi512_ps(_mm512_permutexvar_epi16(idx, _mm512_castps_si512(x)));
              }),
              CyclesPerOp(ghz, [&](__m512 x) { return _mm512_mask_add_ps(x, _mm512_fpclass_ps_mask(x, 0x20), x, o); }),
              CyclesPerOp(ghz, [&](__m512 x) { return _mm512_fmadd_ps(x, c, o); }));
  struct Variant {
    const char* name;
    double fp32, bf16;
  } variants[] = {{"division (the kernel)", NsPerElement(SiluDivide, false), NsPerElement(SiluDivide, true)},
                  {"reciprocal + Newton", NsPerElement(SiluNewton, false), NsPerElement(SiluNewton, true)},
                  {"cheap (1.4e-4)", NsPerElement(SiluCheap, false), NsPerElement(SiluCheap, true)}};
  for (const Variant& v : variants)
    std::printf("SiLU %-22s in L1: %.4f ns/element (%.2f cycles per 16) with fp32 stores, %.4f (%.2f) with bf16 "
                "stores\n",
                v.name, v.fp32, v.fp32 * ghz * 16, v.bf16, v.bf16 * ghz * 16);
  int64_t mismatches[2];
  CountDotOrderMismatches(mismatches);
  std::printf("vdpbf16ps over 3200000 lanes: %lld differ from fma(even, fma(odd, c)), %lld from fma(odd, fma(even, c))\n",
              static_cast<long long>(mismatches[0]), static_cast<long long>(mismatches[1]));
  if (argc > 1) {
    const double gbs = std::atof(argv[1]);
    std::printf("80 %% of a %.2f GB/s copy allows %.4f ns per element of 4 bytes\n", gbs, 4.0 / (0.8 * gbs));
  }
  return 0;
}
