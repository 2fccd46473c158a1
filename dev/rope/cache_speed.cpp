// dev/rope/cache_speed.cpp — throwaway: txops::rope_with_sin_cos_cache (bf16, NeoX, in place unless `oop`) on T tokens
// of Nq + Nk heads of D channels from a cache of P positions, random (seq 0) or sequential (seq 1) positions, mrope 1:
// three position rows with Qwen2-VL's sections; best wall time of `reps` (1 thread unless TXOPS_NUM_THREADS) and an
// FNV-1a hash of the query, so a kernel change can be timed and its bits compared.
// Usage: g++ -O2 -std=c++17 -march=native -fopenmp -Iinclude -Isrc dev/rope/cache_speed.cpp build/libtxops_internal.a
//        -lhwy -o build/dev_cache_speed && build/dev_cache_speed T Nq Nk D P seq mrope reps [oop]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "core/dtype.h"
#include "txops/txops.h"
using namespace txops;
int main(int argc, char** argv) {
  const int64_t T = atoll(argv[1]), Nq = atoll(argv[2]), Nk = atoll(argv[3]), D = atoll(argv[4]), P = atoll(argv[5]);
  const int seq = atoi(argv[6]), mrope = atoi(argv[7]), reps = atoi(argv[8]), oop = argc > 9 ? atoi(argv[9]) : 0;
  std::vector<uint16_t> q(T * Nq * D), k(T * Nk * D), cache(P * D), qo(T * Nq * D), ko(T * Nk * D);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& e : q) store_f32(&e, DType::kBF16, 0, u(rng));
  for (auto& e : k) store_f32(&e, DType::kBF16, 0, u(rng));
  for (auto& e : cache) store_f32(&e, DType::kBF16, 0, u(rng));
  const int64_t rows = mrope ? 3 : 1;
  std::vector<int64_t> pos(rows * T);
  for (int64_t i = 0; i < rows * T; ++i) pos[i] = seq ? (i % T) % P : rng() % P;
  TensorView pv = mrope ? TensorView{pos.data(), DType::kI64, {rows, T}} : TensorView{pos.data(), DType::kI64, {T}};
  TensorView qv{q.data(), DType::kBF16, {T, Nq * D}}, kv{k.data(), DType::kBF16, {T, Nk * D}}, cv{cache.data(), DType::kBF16, {P, D}};
  int64_t sec[3] = {16, 24, 24}; TensorView qov{qo.data(), DType::kBF16, {T, Nq * D}}, kov{ko.data(), DType::kBF16, {T, Nk * D}};
  double best = 1e30;
  for (int i = 0; i <= reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s = rope_with_sin_cos_cache(pv, qv, kv, cv, mrope ? sec : nullptr, mrope ? 3 : 0, D, true, 0, oop ? qov : qv, oop ? kov : kv);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) { fprintf(stderr, "%s\n", s.message().c_str()); return 1; }
    if (i > 0) best = std::min(best, dt);
  }
  uint64_t h = 1469598103934665603ull;
  for (uint16_t e : q) h = (h ^ e) * 1099511628211ull;
  const double bytes = 2.0 * (q.size() + k.size()) * 2 + rows * T * D * 2.0;
  printf("T=%lld seq=%d mrope=%d: %.3f ms %.2f GB/s hash %016llx\n", (long long)T, seq, mrope, best * 1e3, bytes / best / 1e9, (unsigned long long)h);
}
