// dev/gdr/decode_prof.cpp — throwaway: recurrent_gated_delta_rule decode (B sequences x 1 token, Nk=16, Nv=32,
// Dk=Dv=128, bf16, pool 256) called repeatedly in place; min ms and state GB/s (one read + one write per state).
// Usage: build/dev_decode_prof [reps] [state bf16|fp32] [B] [pool]   (TXOPS_NUM_THREADS as usual)
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "txops/txops.h"

using namespace txops;
int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 50;
  const bool fp32 = argc > 2 && std::string(argv[2]) == "fp32";
  const int64_t B = argc > 3 ? atol(argv[3]) : 64, Nk = 16, Nv = 32, D = 128, pool = argc > 4 ? atol(argv[4]) : 256;
  const DType sd = fp32 ? DType::kF32 : DType::kBF16;
  const size_t ss = fp32 ? 4 : 2;
  std::vector<uint16_t> q(B * Nk * D, 0x3c00), k(B * Nk * D, 0x3c00), v(B * Nv * D, 0x3f00), beta(B * Nv, 0x3f00),
      out(B * Nv * D);
  std::vector<float> g(B * Nv, -0.01f);
  std::vector<uint8_t> state(pool * Nv * D * D * ss, 0);
  std::vector<int32_t> lens(B, 1), slots(B);
  for (int64_t t = 0; t < B; ++t) slots[t] = int32_t((t * 97 + 5) % pool);
  TensorView Q(q.data(), DType::kBF16, {B, Nk, D}), K(k.data(), DType::kBF16, {B, Nk, D}),
      V(v.data(), DType::kBF16, {B, Nv, D}), Bt(beta.data(), DType::kBF16, {B, Nv}),
      S(state.data(), sd, {pool, Nv, D, D}), L(lens.data(), DType::kI32, {B}), I(slots.data(), DType::kI32, {B}),
      G(g.data(), DType::kF32, {B, Nv}), O(out.data(), DType::kBF16, {B, Nv, D});
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    Status st = recurrent_gated_delta_rule(Q, K, V, Bt, S, L, I, &G, nullptr, nullptr, 0.088f, O);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok()) { printf("%s\n", st.message().c_str()); return 1; }
    best = ms < best ? ms : best;
  }
  const double bytes = 2.0 * B * Nv * D * D * ss;
  printf("decode %s: %.3f ms, %.1f GB/s state traffic\n", fp32 ? "fp32" : "bf16", best, bytes / (best * 1e6));
}
