// dev/gdr/decode_prof.cpp — throwaway: recurrent_gated_delta_rule decode (B sequences x 1 token, Nk=16, Nv=32,
// Dk=Dv=128, bf16, pool 256) called repeatedly in place; min ms and state GB/s (one read + one write per state),
// and an FNV-1a hash of the pool and outputs after the last call (pseudo-random inputs), to compare builds' bits.
// Usage: build/dev_decode_prof [reps] [state bf16|fp32] [B] [pool]   (TXOPS_NUM_THREADS as usual)
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
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
  // Pseudo-random values in (-1, 1) for q, k, v and the pool, so the hash below covers every code path's bits.
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(seed >> 8) / 8388608.0f - 1.0f;
  };
  for (auto* vec : {&q, &k, &v})
    for (auto& e : *vec) store_f32(&e, DType::kBF16, 0, next() * 0.1f);
  for (size_t i = 0; i < state.size() / ss; ++i) store_f32(state.data(), sd, static_cast<int64_t>(i), next() * 0.5f);
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
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of the pool and the outputs after the last call
  for (uint8_t byte : state) hash = (hash ^ byte) * 1099511628211ull;
  for (uint16_t e : out) hash = (hash ^ e) * 1099511628211ull;
  printf("decode %s: %.3f ms, %.1f GB/s state traffic, hash %016llx\n", fp32 ? "fp32" : "bf16", best,
         bytes / (best * 1e6), static_cast<unsigned long long>(hash));
}
