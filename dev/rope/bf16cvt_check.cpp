// bf16cvt_check.cpp — dev check (not built): the AVX512_BF16 store helpers of kernels.cpp (copied verbatim below)
// against the integer round-to-nearest-even of core/dtype.h (f32_to_bf16) for ALL 2^32 fp32 bit patterns,
// both the pair layout (PackPairsBF16: lane j = bf16(even_j) | bf16(odd_j) << 16) and the natural layout
// (PackBF16x16). vcvtne2ps2bf16 treats denormal inputs as zero; the helpers report such vectors (FP class test)
// and the caller falls back to the integer rounding — checked here too. Needs a CPU with AVX512_BF16.
// g++ -std=gnu++17 -O2 -mavx512f -mavx512dq -mavx512bw -mavx512vl -Iinclude -Isrc dev/rope/bf16cvt_check.cpp -o /tmp/bf16cvt_check
#include <immintrin.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include "core/dtype.h"
using namespace txops;

// ---- as in kernels.cpp ----
static inline bool AnyDenormal(__m512 a, __m512 b) {
  return (_mm512_fpclass_ps_mask(a, 0x20) | _mm512_fpclass_ps_mask(b, 0x20)) != 0;
}
static inline __m512i Cvt2BF16(__m512 hi, __m512 lo) {  // u16 lanes 0..15 = bf16(lo), 16..31 = bf16(hi)
  __m512i r;
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(hi), "v"(lo));
  return r;
}
static inline __m512i PairIndex() {
  alignas(64) static const uint16_t idx[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                               8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_load_si512(idx);
}
// ---------------------------

int main() {
  const __m512i pidx = PairIndex();
  uint64_t bad = 0, fallbacks = 0;
  alignas(64) uint32_t in[32];
  alignas(64) uint16_t out[32];
  for (uint64_t base = 0; base < (1ull << 32); base += 32) {
    for (int i = 0; i < 32; ++i) in[i] = static_cast<uint32_t>(base + i);
    // scramble lane order a bit so even/odd halves mix classes
    const __m512 a = _mm512_castsi512_ps(_mm512_load_si512(in)), b = _mm512_castsi512_ps(_mm512_load_si512(in + 16));
    if (AnyDenormal(a, b)) { ++fallbacks; continue; }  // kernels.cpp uses the integer rounding here
    _mm512_store_si512(out, Cvt2BF16(b, a));           // natural: out[i] = bf16(in[i])
    for (int i = 0; i < 32; ++i) {
      float f; memcpy(&f, &in[i], 4);
      if (out[i] != f32_to_bf16(f) && bad++ < 5) printf("natural %08x: %04x vs %04x\n", in[i], out[i], f32_to_bf16(f));
    }
    _mm512_store_si512(out, _mm512_permutexvar_epi16(pidx, Cvt2BF16(b, a)));  // pairs: even=a, odd=b
    for (int j = 0; j < 16; ++j) {
      float fe, fo; memcpy(&fe, &in[j], 4); memcpy(&fo, &in[16 + j], 4);
      if ((out[2 * j] != f32_to_bf16(fe) || out[2 * j + 1] != f32_to_bf16(fo)) && bad++ < 5) printf("pair %08x\n", in[j]);
    }
  }
  // the denormal test must flag exactly the vectors holding an fp32 denormal
  uint64_t denorm_vectors = 2 * ((0x007FFFFFull + 31) / 32);  // +0/-0 blocks start at 0 and 0x80000000
  printf("bf16cvt_check: 2^32 patterns, %llu mismatches, %llu vectors fell back (expected %llu)\n",
         (unsigned long long)bad, (unsigned long long)fallbacks, (unsigned long long)denorm_vectors);
  return bad != 0 || fallbacks != denorm_vectors;
}
