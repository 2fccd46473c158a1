// bf16wire_check.cpp — dev check (not built): the bf16 stores of the AVX-512 kernels (AVX512_BF16 rounding with
// the denormal fallback) give the bits of the AVX2 kernels (integer rounding) through the real ops.
//  1. every fp32 bit pattern v: InterleaveRope, x bf16 = 1, cos fp32 = v, sin fp32 = 0 -> y = bf16(v) (generic
//     16-lane stores); compared AVX-512 vs AVX2 and vs f32_to_bf16.
//  2. bf16 x and bf16 cos/sin ("pair" stores), random bit patterns biased to tiny/huge exponents (denormal
//     products, overflow, NaN, inf), all five bf16 row kernels via interleave_rope and inplace_partial_rotary_mul
//     modes 0-3 forward/backward; AVX-512 vs AVX2.
// g++ -std=gnu++17 -O2 -fopenmp -Iinclude -Isrc dev/rope/bf16wire_check.cpp build-ropespeed/libtxops_internal.a -lhwy -lpthread -o /tmp/bf16wire_check
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <random>
#include <vector>
#include "core/dtype.h"
#include "txops/txops.h"
using namespace txops;
int main() {
  set_num_threads(1);
  uint64_t bad = 0;
  if (!getenv("SKIP1")) {
  // 1. exhaustive through the 16-lane store
  const int64_t D = 64, rows = 1 << 18, n = rows * D;  // 2^24 elements per call: 256 calls
  std::vector<uint16_t> x(n, 0x3F80), o512(n), o2(n);
  std::vector<uint32_t> c(n), s(n, 0);
  for (uint64_t base = 0; base < (1ull << 32); base += n) {
    for (int64_t i = 0; i < n; ++i) c[i] = static_cast<uint32_t>(base + i);
    TensorView xv(x.data(), DType::kBF16, {1, 1, rows, D}), cv(c.data(), DType::kF32, {1, 1, rows, D}),
        sv(s.data(), DType::kF32, {1, 1, rows, D});
    set_max_isa(Isa::kAvx512);
    interleave_rope(xv, cv, sv, TensorView(o512.data(), DType::kBF16, {1, 1, rows, D}));
    set_max_isa(Isa::kAvx2);
    interleave_rope(xv, cv, sv, TensorView(o2.data(), DType::kBF16, {1, 1, rows, D}));
    if (memcmp(o512.data(), o2.data(), 2 * n)) { if (bad++ < 5) printf("exhaustive: AVX-512 != AVX2 near %llx\n", (unsigned long long)base); }
    for (int64_t i = 0; i < n; i += 997) {  // spot check against the scalar rule
      const int64_t k = i % D;
      float v; memcpy(&v, &c[i], 4);
      const float y = k < D / 2 ? std::fma(1.0f, v, -(1.0f * 0.0f)) : std::fma(1.0f, v, 1.0f * 0.0f);
      if (o512[i] != f32_to_bf16(y) && bad++ < 5) printf("exhaustive: %08x -> %04x want %04x\n", c[i], o512[i], f32_to_bf16(y));
    }
  }
  printf("part 1 (all 2^32 fp32 patterns): %llu mismatches\n", (unsigned long long)bad);
  }
  // 2. pair stores, random patterns
  std::mt19937 rng(11);
  auto pat = [&] {
    uint16_t sign = rng() & 0x8000, e;
    switch (rng() % 6) {
      case 0: e = 1 + rng() % 20; break;           // tiny: products are fp32 denormals
      case 1: e = 0; break;                          // bf16 denormal / zero
      case 2: e = 235 + rng() % 21; break;           // huge: overflow
      case 3: e = 255; break;                        // inf / NaN
      default: e = 100 + rng() % 56; break;          // ordinary
    }
    return static_cast<uint16_t>(sign | (e << 7) | (rng() & 0x7F));
  };
  uint64_t cases = 0, bad2 = 0;
  FILE* dump = getenv("DUMP") ? fopen(getenv("DUMP"), "wb") : nullptr;  // AVX-512 outputs, to compare builds
  for (int it = 0; it < 400; ++it) {
    const int64_t B = 1, S = 3 + it % 5, N = 2 + it % 3, Dw = (it % 2 ? 64 : 128) + 4 * (it % 3);
    const int64_t m = B * S * N * Dw;
    std::vector<uint16_t> xx(m), cc(S * Dw), ss(S * Dw), a(m), b(m);
    for (auto& v : xx) v = pat();
    for (auto& v : cc) v = pat();
    for (auto& v : ss) v = pat();
    for (int op = 0; op < 9; ++op) {
      for (int isa = 0; isa < 2; ++isa) {
        set_max_isa(isa ? Isa::kAvx2 : Isa::kAvx512);
        std::vector<uint16_t>& r = isa ? b : a;
        r = xx;
        if (op == 8) {
          TensorView xv(xx.data(), DType::kBF16, {B, N, S, Dw}), cv(cc.data(), DType::kBF16, {1, 1, S, Dw}),
              sv(ss.data(), DType::kBF16, {1, 1, S, Dw});
          interleave_rope(xv, cv, sv, TensorView(r.data(), DType::kBF16, {B, N, S, Dw}));
        } else {
          TensorView xv(r.data(), DType::kBF16, {B, S, N, Dw}), cv(cc.data(), DType::kBF16, {1, S, 1, Dw - 4 * (op % 4 == 2)}),
              sv(ss.data(), DType::kBF16, {1, S, 1, Dw - 4 * (op % 4 == 2)});
          const RotaryMode mode = static_cast<RotaryMode>(op % 4);
          const int64_t lo = op % 4 == 2 ? 4 : 0;
          Status st = op < 4 ? inplace_partial_rotary_mul(xv, cv, sv, mode, lo, Dw)
                             : inplace_partial_rotary_mul_grad(xv, cv, sv, mode, lo, Dw);
          if (!st.ok()) { printf("op %d failed\n", op); return 1; }
        }
      }
      ++cases;
      if (dump) fwrite(a.data(), 2, m, dump);
      for (int64_t i = 0; i < m; ++i)
        if (a[i] != b[i] && !(getenv("NAN_EQUAL") && (a[i] & 0x7FFF) > 0x7F80 && (b[i] & 0x7FFF) > 0x7F80)) {
          if (bad2++ < 8) printf("pairs: op %d it %d D %ld elem %ld (ch %ld): AVX-512 %04x AVX2 %04x\n", op, it, (long)Dw, (long)i, (long)(i % Dw), a[i], b[i]);
          break;
        }
    }
  }
  if (dump) fclose(dump);
  printf("part 2 (pair stores, %llu random calls): %llu mismatches\n", (unsigned long long)cases, (unsigned long long)bad2);
  return bad || bad2;
}
