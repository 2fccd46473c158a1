// dev/gdr/prof.cpp — throwaway: runs chunk_gated_delta_rule (Nk, Nv, Dk=Dv=128, bf16) R times for perf / timing.
// Usage: build/dev_prof T B Nk Nv reps   (TXOPS_NUM_THREADS, TXOPS_GDR_KERNEL as usual). Prints ms per call
// (min) and % of 102.2 GFLOP/s x threads (the AVX2 machine's probe) at 6*Dk*Dv FLOPs per token per value head.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "txops/txops.h"

using namespace txops;
int main(int argc, char** argv) {
  const int64_t T = argc > 1 ? atol(argv[1]) : 2048, B = argc > 2 ? atol(argv[2]) : 1;
  const int64_t Nk = argc > 3 ? atol(argv[3]) : 16, Nv = argc > 4 ? atol(argv[4]) : 32, reps = argc > 5 ? atol(argv[5]) : 5;
  const int64_t D = 128;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto bf = [](float f) { uint32_t u; memcpy(&u, &f, 4); return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16); };
  std::vector<uint16_t> q(T * Nk * D), k(T * Nk * D), v(T * Nv * D), beta(T * Nv), out(T * Nv * D);
  std::vector<uint16_t> s0(B * Nv * D * D), s1(B * Nv * D * D);
  std::vector<float> g(T * Nv);
  for (int64_t t = 0; t < T * Nk; ++t) {
    float nk = 0, nq = 0, kk[128], qq[128];
    for (int d = 0; d < D; ++d) { kk[d] = nd(rng); qq[d] = nd(rng); nk += kk[d] * kk[d]; nq += qq[d] * qq[d]; }
    for (int d = 0; d < D; ++d) { k[t * D + d] = bf(kk[d] / std::sqrt(nk)); q[t * D + d] = bf(qq[d] / std::sqrt(nq)); }
  }
  for (auto& x : v) x = bf(nd(rng));
  for (auto& x : beta) x = bf(0.5f);
  for (auto& x : g) x = -0.05f;
  for (auto& x : s0) x = bf(0.01f * nd(rng));
  std::vector<int32_t> lens(B, int32_t(T / B));
  lens[B - 1] += int32_t(T - T / B * B);
  TensorView Q(q.data(), DType::kBF16, {T, Nk, D}), K(k.data(), DType::kBF16, {T, Nk, D}),
      V(v.data(), DType::kBF16, {T, Nv, D}), Bt(beta.data(), DType::kBF16, {T, Nv}),
      S0(s0.data(), DType::kBF16, {B, Nv, D, D}), S1(s1.data(), DType::kBF16, {B, Nv, D, D}),
      L(lens.data(), DType::kI32, {B}), G(g.data(), DType::kF32, {T, Nv}), O(out.data(), DType::kBF16, {T, Nv, D});
  double best = 1e30;
  for (int64_t r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    Status st = chunk_gated_delta_rule(Q, K, V, Bt, S0, L, &G, 1.0f / std::sqrt(128.0f), O, S1);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok()) { printf("error %s\n", st.message().c_str()); return 1; }
    best = ms < best ? ms : best;
  }
  const char* th = getenv("TXOPS_NUM_THREADS");
  const int threads = th ? atoi(th) : 1;
  const double gflops = 6.0 * D * D * T * Nv / (best * 1e6);
  printf("T=%ld B=%ld Nk=%ld Nv=%ld threads=%d: %.2f ms, %.1f GFLOP/s, %.1f%% of %.1f\n", (long)T, (long)B, (long)Nk,
         (long)Nv, threads, best, gflops, 100 * gflops / (102.2 * threads), 102.2 * threads);
  uint64_t h = 0;
  for (auto x : out) h = h * 1099511628211ull + x;
  for (auto x : s1) h = h * 1099511628211ull + x;
  printf("hash %016llx\n", (unsigned long long)h);
}
