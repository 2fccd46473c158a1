// rotate_dump.cpp — dev check (not built): writes every output of the rotation row kernels (kernels_rotate.cpp)
// over random cases to a file; link against two library builds and cmp the files to show a kernel change leaves
// the bits alone. Covers InplacePartialRotaryMul(Grad) and RotaryPositionEmbedding(Grad without x), modes 0-3,
// x bf16 / fp16 / fp32 with cos / sin of the same dtype or fp32, rotary widths around the vector width (8-256),
// slices at offsets, in place and out of place, (B, S, N, D) and (B, N, S, D) rows, InterleaveRope, values with
// denormal / huge / inf / NaN patterns, 1-2 threads,
// AVX-512, AVX2 and scalar where the CPU has them.
// g++ -std=gnu++17 -O2 -fopenmp -Iinclude -Isrc dev/rope/rotate_dump.cpp <lib>/libtxops_internal.a -lhwy -lpthread \
//   -o /tmp/rotate_dump && /tmp/rotate_dump out.bin
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "core/dtype.h"
#include "txops/txops.h"
using namespace txops;
int main(int argc, char** argv) {
  if (argc < 2) return 2;
  FILE* f = fopen(argv[1], "wb");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  auto value = [&]() -> float {
    const unsigned kind = rng() % 16;
    if (kind == 0) return 1e-39f * u(rng);   // fp32 denormal
    if (kind == 1) return 3e38f * u(rng);    // overflow in products
    if (kind == 2) return (rng() & 1) ? INFINITY : -INFINITY;
    if (kind == 3) return NAN;
    return u(rng);
  };
  auto fill = [&](std::vector<uint8_t>& v, DType t) {
    const size_t es = dtype_size(t);
    for (size_t i = 0; i < v.size() / es; ++i) {
      const float x = value();
      if (t == DType::kF32) memcpy(&v[4 * i], &x, 4);
      else { uint16_t b = t == DType::kBF16 ? f32_to_bf16(x) : f32_to_f16(x); memcpy(&v[2 * i], &b, 2); }
    }
  };
  int failures = 0;
  uint64_t calls = 0;
  const Isa isas[] = {Isa::kAvx512, Isa::kAvx2, Isa::kScalar};
  const int64_t widths[] = {8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  for (int it = 0; it < 66; ++it)
  for (DType xt : {DType::kBF16, DType::kF16, DType::kF32})
  for (DType ct : {DType::kBF16, DType::kF16, DType::kF32}) {
    if (ct != xt && ct != DType::kF32) continue;
    const int64_t L = widths[it % 11], pad = 4 * (it % 3), D = L + 2 * pad, lo = pad, hi = pad + L;
    const int64_t B = 1 + it % 2, S = 2 + it % 5, N = 1 + it % 7;
    const size_t xs = dtype_size(xt), cs = dtype_size(ct);
    std::vector<uint8_t> x(B * S * N * D * xs), c(S * L * cs), s(S * L * cs), full_c(S * D * cs), full_s(S * D * cs);
    fill(x, xt); fill(c, ct); fill(s, ct); fill(full_c, ct); fill(full_s, ct);
    for (int mode_i = 0; mode_i < 4; ++mode_i) {
      const RotaryMode mode = static_cast<RotaryMode>(mode_i);
      if (mode == RotaryMode::kQuarter && L % 4 != 0) continue;
      for (Isa isa : isas) {
        set_max_isa(isa);
        for (int threads = 1; threads <= 2; ++threads) {
          set_num_threads(threads);
          // partial, forward and backward, in place on a slice
          for (int bwd = 0; bwd < 2; ++bwd) {
            std::vector<uint8_t> r = x;
            TensorView xv(r.data(), xt, {B, S, N, D}), cv(c.data(), ct, {1, S, 1, L}), sv(s.data(), ct, {1, S, 1, L});
            Status st = bwd ? inplace_partial_rotary_mul_grad(xv, cv, sv, mode, lo, hi)
                            : inplace_partial_rotary_mul(xv, cv, sv, mode, lo, hi);
            if (!st.ok()) { if (failures++ < 5) printf("partial it %d mode %d: %s\n", it, mode_i, st.message().c_str()); continue; }
            fwrite(r.data(), 1, r.size(), f);
            ++calls;
          }
          // RotaryPositionEmbedding(Grad) on the whole D, out of place and in place, (B, S, N, D) and (B, N, S, D)
          // (the heads' rows in groups sharing each cos / sin row)
          if (ct == xt) {
            for (int bnsd = 0; bnsd < 2; ++bnsd)
            for (int bwd = 0; bwd < 2; ++bwd)
              for (int in_place = 0; in_place < 2; ++in_place) {
                if (mode == RotaryMode::kQuarter && D % 4 != 0) continue;
                std::vector<uint8_t> r = x, o(x.size());
                const std::vector<int64_t> xs_shape = bnsd ? std::vector<int64_t>{B, N, S, D} : std::vector<int64_t>{B, S, N, D};
                const std::vector<int64_t> cs_shape = bnsd ? std::vector<int64_t>{1, 1, S, D} : std::vector<int64_t>{1, S, 1, D};
                const TensorView xv = TensorView::make(r.data(), xt, 4, xs_shape.data(), nullptr),
                                 cv = TensorView::make(full_c.data(), ct, 4, cs_shape.data(), nullptr),
                                 sv = TensorView::make(full_s.data(), ct, 4, cs_shape.data(), nullptr),
                                 ov = TensorView::make(in_place ? r.data() : o.data(), xt, 4, xs_shape.data(), nullptr);
                Status st = bwd ? rotary_position_embedding_grad(xv, cv, sv, nullptr, mode, ov, nullptr, nullptr)
                                : rotary_position_embedding(xv, cv, sv, mode, ov);
                if (!st.ok()) { if (failures++ < 5) printf("rpe it %d mode %d: %s\n", it, mode_i, st.message().c_str()); continue; }
                fwrite(in_place ? r.data() : o.data(), 1, r.size(), f);
                ++calls;
              }
          }
          // InterleaveRope (B, N, S, D), cos / sin (1, 1, S, D), out of place and in place
          if (mode == RotaryMode::kHalf && ct != DType::kF16) {
            for (int in_place = 0; in_place < 2; ++in_place) {
              std::vector<uint8_t> r = x, o(x.size());
              TensorView xv(r.data(), xt, {B, N, S, D}), cv(full_c.data(), ct, {1, 1, S, D}),
                  sv(full_s.data(), ct, {1, 1, S, D}), ov(in_place ? r.data() : o.data(), xt, {B, N, S, D});
              Status st = interleave_rope(xv, cv, sv, ov);
              if (!st.ok()) { if (failures++ < 5) printf("interleave it %d: %s\n", it, st.message().c_str()); continue; }
              fwrite(in_place ? r.data() : o.data(), 1, r.size(), f);
              ++calls;
            }
          }
        }
      }
    }
  }
  fclose(f);
  printf("%llu calls, %d failures\n", (unsigned long long)calls, failures);
  return failures != 0;
}
