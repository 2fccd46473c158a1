// dev/conv/speed.cpp — throwaway: txops::causal_conv1d_fn on one (1, T, dim) bf16 sequence, K = 4, with SiLU and
// without, best wall time of `reps` (1 thread unless TXOPS_NUM_THREADS), and an FNV-1a hash of y, so a kernel change
// can be timed in cache (small T) and from memory (large T) and its bits compared. x and y are 2 MiB-aligned (4 KiB
// pages), as the bench's buffers are aligned: y is then written with streaming stores once it reaches 4 MiB.
// With a 4th argument `cf`, x and y are stored channel-first ((dim, T), transformers' layout, passed as the
// transposed view: the token-contiguous path). DEV_HUGE_PAGES=1 asks for 2 MiB pages for x and y (madvise), which
// dev/conv/copy_pages.cpp compares with 4 KiB pages on a plain copy.
// Usage: g++ -O2 -std=c++17 -march=native -fopenmp -Iinclude -Isrc dev/conv/speed.cpp build/libtxops_internal.a -lhwy
//        -o build/dev_conv_speed && build/dev_conv_speed [T] [dim] [reps] [cf]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "core/dtype.h"
#include "txops/txops.h"

using namespace txops;

int main(int argc, char** argv) {
  const int64_t T = argc > 1 ? std::atoll(argv[1]) : 8192, dim = argc > 2 ? std::atoll(argv[2]) : 8192;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 10;
  auto aligned = [](int64_t count) {
    const size_t unit = size_t{2} << 20, bytes = (static_cast<size_t>(count) * 2 + unit - 1) / unit * unit;
    uint16_t* p = static_cast<uint16_t*>(std::aligned_alloc(unit, bytes));
    if (std::getenv("DEV_HUGE_PAGES") != nullptr) madvise(p, bytes, MADV_HUGEPAGE);  // THP set to `madvise`
    std::memset(p, 0, bytes);
    return p;
  };
  uint16_t* x = aligned(T * dim);
  uint16_t* y = aligned(T * dim);
  std::vector<uint16_t> w(4 * dim), st(3 * dim);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int64_t i = 0; i < T * dim; ++i) store_f32(&x[i], DType::kBF16, 0, u(rng));
  for (auto& e : w) store_f32(&e, DType::kBF16, 0, u(rng) * 0.5f);
  const bool channel_first = argc > 4 && std::string(argv[4]) == "cf";
  TensorView xv{x, DType::kBF16, {1, T, dim}}, yv{y, DType::kBF16, {1, T, dim}};
  if (channel_first) {
    xv = TensorView{x, DType::kBF16, {1, T, dim}, {T * dim, 1, T}};
    yv = TensorView{y, DType::kBF16, {1, T, dim}, {T * dim, 1, T}};
  }
  TensorView wv{w.data(), DType::kBF16, {4, dim}}, sv{st.data(), DType::kBF16, {1, 3, dim}};
  for (ConvActivation act : {ConvActivation::kSilu, ConvActivation::kNone}) {
    double best = 1e30;
    for (int i = 0; i <= reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      Status s = causal_conv1d_fn(xv, wv, sv, nullptr, nullptr, nullptr, nullptr, act, -1, yv);
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!s.ok()) std::fprintf(stderr, "%s\n", s.message().c_str()), std::exit(1);
      if (i > 0) best = std::min(best, dt);
    }
    uint64_t hash = 1469598103934665603ull;
    for (int64_t i = 0; i < T * dim; ++i) hash = (hash ^ y[i]) * 1099511628211ull;
    std::printf("%s T=%lld dim=%lld: %.3f ms, %.3f ns/element, y hash %016llx\n",
                act == ConvActivation::kSilu ? "silu" : "none", static_cast<long long>(T),
                static_cast<long long>(dim), best * 1e3, best * 1e9 / static_cast<double>(T * dim),
                static_cast<unsigned long long>(hash));
  }
  std::free(x);
  std::free(y);
  return 0;
}
