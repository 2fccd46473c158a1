// dev/gdr/gemm_bench.cpp — throwaway: the chunked kernel's GEMM micro-kernel (chunked_gemm-inl.h, static
// dispatch at -march=native) on the state-pass shapes, in cache, as GFLOP/s (min over rounds).
// Build: g++ -O2 -std=c++17 -march=native -Isrc -Iinclude dev/gdr/gemm_bench.cpp -o build/dev_gemm_bench
#include <hwy/highway.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "ops/gated_delta_rule/chunked_gemm-inl.h"

namespace hn = hwy::HWY_NAMESPACE;
using namespace txops::HWY_NAMESPACE::gdr_gemm;

int main() {
  printf("target %s\n", hwy::TargetName(HWY_TARGET));
  std::vector<float> a(256 * 256, 0.001f), b(256 * 256, 0.002f), c(256 * 256, 0.0f);
  struct Shape { const char* name; int64_t m, cols, kd, lda, ldb, ldc; bool acc; };
  const Shape shapes[] = {{"X  2n x Dk x Dv", 128, 128, 128, 128, 128, 128, false},
                          {"St Dk x n x Dv ", 128, 128, 64, 64, 128, 128, true},
                          {"gram n x n x Dk", 64, 64, 128, 128, 64, 64, false}};
  for (const Shape& s : shapes) {
    double best = 1e30;
    for (int round = 0; round < 20; ++round) {
      const int reps = 200;
      auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r)
        Gemm(s.m, s.cols, s.kd, a.data(), s.lda, b.data(), s.ldb, c.data(), s.ldc, s.acc, 0.5f);
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
      best = us < best ? us : best;
    }
    printf("%s: %.2f us, %.1f GFLOP/s\n", s.name, best, 2.0 * s.m * s.cols * s.kd / (best * 1e3));
  }
  return c[5] == 12345.0f;
}
