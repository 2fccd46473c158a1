// dev/gdr/speed.cpp — throwaway: times prefill (Nk=16, Nv=32, Dk=Dv=128, bf16, T given) and decode (64 x 1
// token, pool 256) against an fp32 FMA-peak loop and a copy loop run in the same process.
// Usage: build-gdr/dev_speed prefill|decode [T or state dtype bf16|fp32] [threads]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <immintrin.h>

#include "core/dtype.h"
#include "txops/txops.h"

using namespace txops;
using Clock = std::chrono::steady_clock;

// Process CPU seconds per thread (the machine is shared: wall time counts other processes' slices).
static int g_threads = 1;
struct CpuClock {
  static double now() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  }
};
static double seconds_since(double t0) { return (CpuClock::now() - t0) / g_threads; }

// fp32 FMA peak: 12 independent zmm accumulators per thread.
static double fma_peak_gflops(int threads) {
  const long iters = 20000000;
  double t0 = CpuClock::now();
  float sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
    __m512 a[12];
    for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
    const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    __m512 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7], a8 = a[8],
           a9 = a[9], a10 = a[10], a11 = a[11];
    for (long it = 0; it < iters; ++it) {
#define TXOPS_FMA(x) x = _mm512_fmadd_ps(x, m, c)
      TXOPS_FMA(a0); TXOPS_FMA(a1); TXOPS_FMA(a2); TXOPS_FMA(a3); TXOPS_FMA(a4); TXOPS_FMA(a5);
      TXOPS_FMA(a6); TXOPS_FMA(a7); TXOPS_FMA(a8); TXOPS_FMA(a9); TXOPS_FMA(a10); TXOPS_FMA(a11);
#undef TXOPS_FMA
    }
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5, a[6] = a6, a[7] = a7, a[8] = a8, a[9] = a9,
    a[10] = a10, a[11] = a11;
    __m512 s = a[0];
    for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
    sink += _mm512_reduce_add_ps(s);
  }
  const double t = seconds_since(t0);
  if (sink == 12345) std::printf(" ");
  return 2.0 * 16 * 12 * iters * threads / t / 1e9;
}

// Copy bandwidth (read + write bytes) with ordinary stores, 256 MiB arrays.
static double copy_gbps(int threads) {
  const size_t n = 64 << 20;
  std::vector<float> a(n, 1.0f), b(n, 0.0f);
  const int reps = 8;  // CPU-time clocks tick every few ms here: time many reps together
  double t0 = CpuClock::now();
  for (int rep = 0; rep < reps; ++rep) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; ++i) b[i] = a[i];
  }
  return reps * 2.0 * n * 4 / seconds_since(t0) / 1e9;
}

// Copy bandwidth (read + write bytes) with non-temporal stores (no write-allocate read), 256 MiB arrays.
static double copy_nt_gbps(int threads) {
  const size_t n = 64 << 20;
  float* a = static_cast<float*>(std::aligned_alloc(64, n * 4));
  float* b = static_cast<float*>(std::aligned_alloc(64, n * 4));
  for (size_t i = 0; i < n; ++i) a[i] = 1.0f, b[i] = 0.0f;
  const int reps = 8;
  double t0 = CpuClock::now();
  for (int rep = 0; rep < reps; ++rep) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; i += 16) _mm512_stream_ps(b + i, _mm512_load_ps(a + i));
    _mm_sfence();
  }
  const double gbps = reps * 2.0 * n * 4 / seconds_since(t0) / 1e9;
  std::free(a), std::free(b);
  return gbps;
}

static std::vector<uint16_t> random_bf16(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = f32_to_bf16(u(rng));
  return v;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "prefill";
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  set_num_threads(threads);
  g_threads = threads;
  std::mt19937 rng(1);
  const int64_t Nk = 16, Nv = 32, D = 128;
  const double peak = fma_peak_gflops(threads);
  const double bw_plain = copy_gbps(threads);
  const double bw = copy_nt_gbps(threads);
  std::printf("threads=%d fma_peak=%.1f GFLOP/s copy=%.1f GB/s copy_nt=%.1f GB/s (CPU-time based)\n", threads, peak,
              bw_plain, bw);
  if (mode == "prefill") {
    const int64_t T = argc > 2 ? std::atoll(argv[2]) : 8192;
    auto q = random_bf16(T * Nk * D, rng, -0.09f, 0.09f), k = random_bf16(T * Nk * D, rng, -0.09f, 0.09f);
    auto v = random_bf16(T * Nv * D, rng, -1, 1), beta = random_bf16(T * Nv, rng, 0.1f, 0.9f);
    std::vector<float> g(T * Nv, -0.05f);
    auto s0 = random_bf16(Nv * D * D, rng, -0.1f, 0.1f);
    std::vector<uint16_t> out(T * Nv * D), s1(Nv * D * D);
    int32_t len = static_cast<int32_t>(T);
    TensorView vq(q.data(), DType::kBF16, {T, Nk, D}), vk(k.data(), DType::kBF16, {T, Nk, D});
    TensorView vv(v.data(), DType::kBF16, {T, Nv, D}), vb(beta.data(), DType::kBF16, {T, Nv});
    TensorView vg(g.data(), DType::kF32, {T, Nv}), vs0(s0.data(), DType::kBF16, {1, Nv, D, D});
    TensorView vo(out.data(), DType::kBF16, {T, Nv, D}), vs1(s1.data(), DType::kBF16, {1, Nv, D, D});
    TensorView vl(&len, DType::kI32, {1});
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      double t0 = CpuClock::now();
      Status st = chunk_gated_delta_rule(vq, vk, vv, vb, vs0, vl, &vg, 0.088f, vo, vs1);
      best = std::min(best, seconds_since(t0));
      if (!st.ok()) return std::printf("%s\n", st.message().c_str()), 1;
    }
    const double gflops = 6.0 * D * D * Nv * T / best / 1e9;
    std::printf("prefill T=%lld: %.2f ms, %.1f GFLOP/s = %.1f%% of peak\n", (long long)T, best * 1e3, gflops,
                100 * gflops / peak);
  } else {
    const bool bf16_state = !(argc > 2 && std::string(argv[2]) == "fp32");
    const DType sdt = bf16_state ? DType::kBF16 : DType::kF32;
    const int64_t B = 64, pool = 256, T = B;
    auto q = random_bf16(T * Nk * D, rng, -0.09f, 0.09f), k = random_bf16(T * Nk * D, rng, -0.09f, 0.09f);
    auto v = random_bf16(T * Nv * D, rng, -1, 1), beta = random_bf16(T * Nv, rng, 0.1f, 0.9f);
    std::vector<float> g(T * Nv, -0.05f);
    std::vector<uint8_t> state(pool * Nv * D * D * dtype_size(sdt), 0);
    std::vector<uint16_t> out(T * Nv * D);
    std::vector<int32_t> lens(B, 1), idx(T);
    for (int64_t i = 0; i < T; ++i) idx[i] = static_cast<int32_t>((i * 97) % pool);
    TensorView vq(q.data(), DType::kBF16, {T, Nk, D}), vk(k.data(), DType::kBF16, {T, Nk, D});
    TensorView vv(v.data(), DType::kBF16, {T, Nv, D}), vb(beta.data(), DType::kBF16, {T, Nv});
    TensorView vg(g.data(), DType::kF32, {T, Nv}), vs(state.data(), sdt, {pool, Nv, D, D});
    TensorView vo(out.data(), DType::kBF16, {T, Nv, D});
    TensorView vl(lens.data(), DType::kI32, {B}), vi(idx.data(), DType::kI32, {T});
    const int reps = 40;  // CPU-time clocks tick every few ms here: time many calls together
    double t0 = CpuClock::now();
    for (int rep = 0; rep < reps; ++rep) {
      Status st = recurrent_gated_delta_rule(vq, vk, vv, vb, vs, vl, vi, &vg, nullptr, nullptr, 0.088f, vo);
      if (!st.ok()) return std::printf("%s\n", st.message().c_str()), 1;
    }
    const double best = seconds_since(t0) / reps;
    const double bytes = 2.0 * B * Nv * D * D * dtype_size(sdt);
    std::printf("decode B=64 state=%s: mean %.3f ms, state traffic %.1f GB/s = %.1f%% of copy_nt\n", dtype_name(sdt),
                best * 1e3, bytes / best / 1e9, 100 * bytes / best / 1e9 / bw);
  }
  return 0;
}
