// tilecheck.cpp — dev check (not built): InterleaveRope bit-exact against a scalar transcription of the formula
// over shapes whose S exceeds the S tile (run with TXOPS_ROPE_TILE_BYTES=64..4096 to force small tiles), every
// ISA, 1-3 threads, cos B in {1, B}, bf16/fp32 activations with bf16/fp32 cos, in place and out of place.
// g++ -std=gnu++17 -O1 -fopenmp -Iinclude -Isrc dev/rope/tilecheck.cpp build-ropespeed/libtxops_internal.a -lhwy -lpthread -o /tmp/tilecheck
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include "core/dtype.h"
#include "txops/txops.h"
using namespace txops;
static float ld(const std::vector<uint8_t>& v, DType t, size_t i) {
  if (t == DType::kF32) { float f; memcpy(&f, &v[4 * i], 4); return f; }
  uint16_t b; memcpy(&b, &v[2 * i], 2);
  return t == DType::kBF16 ? bf16_to_f32(b) : f16_to_f32(b);
}
static void st(std::vector<uint8_t>& v, DType t, size_t i, float f) {
  if (t == DType::kF32) { memcpy(&v[4 * i], &f, 4); return; }
  uint16_t b = t == DType::kBF16 ? f32_to_bf16(f) : f32_to_f16(f);
  memcpy(&v[2 * i], &b, 2);
}
int main() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  int cases = 0, bad = 0;
  const int64_t shapes[][4] = {{1, 3, 70, 64}, {2, 5, 37, 8}, {3, 4, 129, 2}, {1, 7, 300, 16}, {2, 2, 65, 64}, {1, 128, 33, 64}};
  for (auto& sh : shapes)
  for (DType xt : {DType::kBF16, DType::kF16, DType::kF32})
  for (DType ct : {DType::kBF16, DType::kF32})
  for (int cb = 0; cb < 2; ++cb)
  for (int inplace = 0; inplace < 2; ++inplace)
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar})
  for (int th = 1; th <= 3; ++th) {
    if (ct != DType::kF32 && ct != xt) continue;
    const int64_t B = sh[0], N = sh[1], S = sh[2], D = sh[3], Bc = cb ? B : 1;
    const size_t n = B * N * S * D, nc = Bc * S * D;
    std::vector<uint8_t> x(n * dtype_size(xt)), o(x.size()), c(nc * dtype_size(ct)), s(c.size()), want(x.size());
    for (size_t i = 0; i < n; ++i) st(x, xt, i, u(rng));
    for (size_t i = 0; i < nc; ++i) { st(c, ct, i, u(rng)); st(s, ct, i, u(rng)); }
    for (int64_t b = 0; b < B; ++b) for (int64_t m = 0; m < N; ++m) for (int64_t q = 0; q < S; ++q) {
      const size_t r = ((b * N + m) * S + q) * D, rc = ((Bc > 1 ? b : 0) * S + q) * D;
      const int64_t h = D / 2;
      for (int64_t k = 0; k < h; ++k) {
        const float xe = ld(x, xt, r + 2 * k), xo = ld(x, xt, r + 2 * k + 1);
        st(want, xt, r + k, std::fma(xe, ld(c, ct, rc + k), -(xo * ld(s, ct, rc + k))));
        st(want, xt, r + h + k, std::fma(xo, ld(c, ct, rc + h + k), xe * ld(s, ct, rc + h + k)));
      }
    }
    set_max_isa(isa); set_num_threads(th);
    uint8_t* op = inplace ? x.data() : o.data();
    TensorView xv(x.data(), xt, {B, N, S, D}), ov(op, xt, {B, N, S, D}), cv(c.data(), ct, {Bc, 1, S, D}), sv(s.data(), ct, {Bc, 1, S, D});
    Status stt = interleave_rope(xv, cv, sv, ov);
    ++cases;
    if (!stt.ok() || memcmp(op, want.data(), want.size())) {
      if (++bad < 10) printf("MISMATCH B%ld N%ld S%ld D%ld x=%s c=%s Bc=%ld inplace=%d isa=%s th=%d ok=%d\n", (long)B, (long)N, (long)S, (long)D, dtype_name(xt), dtype_name(ct), (long)Bc, inplace, isa_name(isa), th, stt.ok());
    }
  }
  printf("tilecheck: %d cases, %d mismatches\n", cases, bad);
  return bad != 0;
}
