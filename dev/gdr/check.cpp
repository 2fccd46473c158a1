// dev/gdr/check.cpp — throwaway: random gated-delta-rule problems vs the fp64 reference, every ISA, 1..4
// threads (bit-identical), prefill and decode. Build: see dev/gdr/build.sh.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/tolerance.h"
#include "ops/gated_delta_rule/reference.h"
#include "txops/txops.h"

using namespace txops;

struct Buf {
  std::vector<uint8_t> bytes;
  TensorView view;
  Buf() = default;
  Buf(DType dt, std::initializer_list<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    bytes.assign(n * dtype_size(dt) + 64, 0);
    view = TensorView(bytes.data(), dt, shape);
  }
  void fill(std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    for (int64_t i = 0; i < view.numel(); ++i) store_f32(view.data, view.dtype, i, u(rng));
  }
};

static int failures = 0;

static void check(const char* what, const TensorView& y, const std::vector<double>& ref, const char* row) {
  const CompareReport r = compare_with_reference(y, ref, tolerance_for(row, y.dtype));
  if (!r.passed || getenv("SHOW")) {
    std::printf("  FAIL %s %s: %s\n", what, row, r.describe(y).c_str());
    ++failures;
  }
}

static void normalize_rows(Buf& b, int64_t d) {
  for (int64_t r = 0; r < b.view.numel() / d; ++r) {
    double s = 0;
    for (int64_t j = 0; j < d; ++j) s += std::pow(load_f32(b.view.data, b.view.dtype, r * d + j), 2);
    s = std::sqrt(s) + 1e-6;
    for (int64_t j = 0; j < d; ++j)
      store_f32(b.view.data, b.view.dtype, r * d + j, load_f32(b.view.data, b.view.dtype, r * d + j) / s);
  }
}

static void prefill_case(std::vector<int32_t> lens, int64_t nk, int64_t nv, int64_t dk, int64_t dv, DType dt,
                         DType st_dt, bool with_g, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t T = 0;
  for (int32_t l : lens) T += l;
  const int64_t B = lens.size();
  Buf q(dt, {T, nk, dk}), k(dt, {T, nk, dk}), v(dt, {T, nv, dv}), beta(dt, {T, nv}), g(DType::kF32, {T, nv});
  Buf s0(st_dt, {B, nv, dv, dk}), out(dt, {T, nv, dv}), s1(st_dt, {B, nv, dv, dk});
  Buf L(DType::kI32, {B});
  std::memcpy(L.view.data, lens.data(), B * 4);
  q.fill(rng, -1, 1), k.fill(rng, -1, 1), v.fill(rng, -1, 1), beta.fill(rng, 0.05f, 0.95f), g.fill(rng, -0.5f, 0);
  s0.fill(rng, -0.5f, 0.5f);
  normalize_rows(q, dk), normalize_rows(k, dk);
  const float scale = 1.0f / std::sqrt(float(dk));
  std::vector<double> ro, rs;
  reference::chunk_gated_delta_rule(q.view, k.view, v.view, beta.view, s0.view, L.view, with_g ? &g.view : nullptr,
                                    scale, &ro, &rs);
  std::vector<uint8_t> first_out, first_state;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar}) {
    set_max_isa(isa);
    for (int th : {1, 2, 3, 4}) {
      set_num_threads(th);
      Status st = chunk_gated_delta_rule(q.view, k.view, v.view, beta.view, s0.view, L.view,
                                         with_g ? &g.view : nullptr, scale, out.view, s1.view);
      if (!st.ok()) {
        std::printf("  FAIL status %s\n", st.message().c_str());
        ++failures;
        return;
      }
      if (th == 1) {
        check(isa_name(isa), out.view, ro, "gdr_out");
        check(isa_name(isa), s1.view, rs, "gdr_state");
        first_out = out.bytes, first_state = s1.bytes;
      } else if (first_out != out.bytes || first_state != s1.bytes) {
        std::printf("  FAIL threads=%d not bit-identical (%s)\n", th, isa_name(isa));
        ++failures;
      }
    }
  }
  std::printf("prefill T=%lld B=%lld nk=%lld nv=%lld dk=%lld dv=%lld %s/%s g=%d done\n", (long long)T, (long long)B,
              (long long)nk, (long long)nv, (long long)dk, (long long)dv, dtype_name(dt), dtype_name(st_dt), with_g);
}

static void decode_case(std::vector<int32_t> lens, std::vector<int32_t> idx, std::vector<int32_t> acc,
                        int64_t blocks, int64_t nk, int64_t nv, int64_t dk, int64_t dv, DType dt, DType st_dt,
                        bool with_g, bool with_gk, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t T = 0;
  for (int32_t l : lens) T += l;
  const int64_t B = lens.size();
  Buf q(dt, {T, nk, dk}), k(dt, {T, nk, dk}), v(dt, {T, nv, dv}), beta(dt, {T, nv}), g(DType::kF32, {T, nv});
  Buf gk(DType::kF32, {T, nv, dk}), pool(st_dt, {blocks, nv, dv, dk}), out(dt, {T, nv, dv});
  Buf L(DType::kI32, {B}), I(DType::kI32, {T}), A(DType::kI32, {B});
  std::memcpy(L.view.data, lens.data(), B * 4);
  std::memcpy(I.view.data, idx.data(), T * 4);
  if (!acc.empty()) std::memcpy(A.view.data, acc.data(), B * 4);
  q.fill(rng, -1, 1), k.fill(rng, -1, 1), v.fill(rng, -1, 1), beta.fill(rng, 0.05f, 0.95f), g.fill(rng, -0.5f, 0);
  gk.fill(rng, -0.3f, 0);
  pool.fill(rng, -0.5f, 0.5f);
  normalize_rows(q, dk), normalize_rows(k, dk);
  const std::vector<uint8_t> pool0 = pool.bytes;
  const float scale = 1.0f / std::sqrt(float(dk));
  std::vector<double> ro, rs;
  reference::recurrent_gated_delta_rule(q.view, k.view, v.view, beta.view, pool.view, L.view, I.view,
                                        with_g ? &g.view : nullptr, with_gk ? &gk.view : nullptr,
                                        acc.empty() ? nullptr : &A.view, scale, &ro, &rs);
  std::vector<uint8_t> first_out, first_state;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar}) {
    set_max_isa(isa);
    for (int th : {1, 2, 3, 4}) {
      set_num_threads(th);
      pool.bytes = pool0;
      Status st = recurrent_gated_delta_rule(q.view, k.view, v.view, beta.view, pool.view, L.view, I.view,
                                             with_g ? &g.view : nullptr, with_gk ? &gk.view : nullptr,
                                             acc.empty() ? nullptr : &A.view, scale, out.view);
      if (!st.ok()) {
        std::printf("  FAIL status %s\n", st.message().c_str());
        ++failures;
        return;
      }
      if (th == 1) {
        check(isa_name(isa), out.view, ro, "gdr_out");
        check(isa_name(isa), pool.view, rs, "gdr_state");
        first_out = out.bytes, first_state = pool.bytes;
      } else if (first_out != out.bytes || first_state != pool.bytes) {
        std::printf("  FAIL threads=%d not bit-identical (%s)\n", th, isa_name(isa));
        ++failures;
      }
    }
  }
  std::printf("decode T=%lld B=%lld nv=%lld dk=%lld dv=%lld %s/%s g=%d gk=%d done\n", (long long)T, (long long)B,
              (long long)nv, (long long)dk, (long long)dv, dtype_name(dt), dtype_name(st_dt), with_g, with_gk);
}

int main() {
  prefill_case({5, 0, 70, 1}, 2, 4, 32, 16, DType::kF32, DType::kF32, true, 1);
  prefill_case({130}, 1, 2, 128, 128, DType::kBF16, DType::kBF16, true, 2);
  prefill_case({67, 3}, 2, 2, 33, 17, DType::kF16, DType::kF32, false, 3);
  prefill_case({40}, 1, 3, 256, 64, DType::kBF16, DType::kF32, true, 4);
  prefill_case({20}, 1, 1, 7, 300 > 256 ? 200 : 1, DType::kF32, DType::kBF16, true, 5);
  // decode: one token each, distinct slots
  decode_case({1, 1, 1}, {4, 0, 7}, {}, 8, 2, 4, 128, 128, DType::kBF16, DType::kBF16, true, false, 10);
  decode_case({1, 1, 1}, {4, 0, 7}, {}, 8, 2, 4, 128, 128, DType::kF32, DType::kF32, true, true, 11);
  // speculative: 3 tokens, accepted 2
  decode_case({3, 2}, {1, 2, 3, 5, 6}, {2, 1}, 8, 1, 2, 64, 32, DType::kBF16, DType::kF32, true, false, 12);
  // conflicts: seq 1 reads slot 3 which seq 0 writes
  decode_case({2, 1}, {2, 3, 3}, {1, 1}, 5, 1, 2, 64, 32, DType::kF32, DType::kF32, true, true, 13);
  decode_case({1, 0, 2}, {0, 1, 2}, {1, 0, 2}, 3, 1, 1, 40, 24, DType::kF16, DType::kBF16, false, false, 14);
  decode_case({70}, std::vector<int32_t>(70, 0), {}, 1, 1, 1, 32, 8, DType::kF32, DType::kF32, true, false, 15);
  std::printf("%s (%d failures)\n", failures ? "FAILED" : "ALL PASSED", failures);
  return failures ? 1 : 0;
}
