// probes.cpp — running the probe kernels (probe_kernels.cpp) on N threads with static, balanced ranges, and
// turning times into GB/s and GFLOP/s. Bytes are STREAM's: copy = 2 x array, triad = 3 x array (the
// write-allocate read of ordinary stores is not counted, which is why the non-temporal copy is usually faster).
#include "probes.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "bench_util.h"
#include "core/amx.h"
#include "core/parallel.h"
#include "txops/txops.h"

namespace txops {
namespace bench {

namespace {

// The last-level cache's size as the OS reports it, 32 MiB where it does not.
size_t last_level_cache_bytes() {
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return llc > 0 ? static_cast<size_t>(llc) : size_t{32} << 20;
}

}  // namespace

size_t default_probe_array_bytes() {
  size_t bytes = last_level_cache_bytes() * 8;
  bytes = std::max(bytes, static_cast<size_t>(64) << 20);
  bytes = std::min(bytes, static_cast<size_t>(512) << 20);
  return bytes / 4096 * 4096;
}

namespace {

// Runs fn(begin, end) on `threads` threads over balanced ranges of [0, n) (multiples of 64 floats) and
// returns the wall time of the slowest.
template <class Fn>
double timed_parallel(int threads, size_t n, Fn fn) {
  const int64_t blocks = static_cast<int64_t>((n + 63) / 64);
  const double t0 = now_seconds();
#pragma omp parallel num_threads(threads)
  {
    int64_t b, e;
    balanced_range(blocks, omp_get_num_threads(), omp_get_thread_num(), &b, &e);
    fn(std::min(n, static_cast<size_t>(b) * 64), std::min(n, static_cast<size_t>(e) * 64));
  }
  return now_seconds() - t0;
}

}  // namespace

BandwidthProbe probe_bandwidth(int threads, size_t array_bytes, int passes) {
  BandwidthProbe r;
  r.threads = threads;
  r.array_bytes = array_bytes;
  const size_t n = array_bytes / sizeof(float);
  Buffer a(array_bytes), b(array_bytes), c(array_bytes);
  float* pa = static_cast<float*>(a.data());
  float* pb = static_cast<float*>(b.data());
  float* pc = static_cast<float*>(c.data());
  timed_parallel(threads, n, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      pb[i] = 1.0f;
      pc[i] = 2.0f;
    }
  });
  const ProbeIsa isa = probe_isa();
  double best_copy = 1e30, best_nt = 1e30, best_triad = 1e30;
  for (int p = 0; p < passes; ++p) {
    best_copy = std::min(best_copy, timed_parallel(threads, n, [&](size_t lo, size_t hi) {
      copy_stores(pa, pb, lo, hi, isa);
    }));
    best_nt = std::min(best_nt, timed_parallel(threads, n, [&](size_t lo, size_t hi) {
      copy_streaming(pa, pb, lo, hi, isa);
    }));
    best_triad = std::min(best_triad, timed_parallel(threads, n, [&](size_t lo, size_t hi) {
      triad(pa, pb, pc, 3.0f, lo, hi, isa);
    }));
  }
  const double bytes = static_cast<double>(n) * sizeof(float);
  r.copy_gbps = 2 * bytes / best_copy * 1e-9;
  r.copy_nt_gbps = 2 * bytes / best_nt * 1e-9;
  r.triad_gbps = 3 * bytes / best_triad * 1e-9;
  return r;
}

// The buffer is written once (Buffer zero-fills it), so its pages are the process's own, not the shared zero page.
CacheEvictor::CacheEvictor()
    : buffer_(std::min(std::max(last_level_cache_bytes() / 2 * 3, size_t{16} << 20), size_t{1} << 30)) {}

void CacheEvictor::evict() {
  static volatile uint64_t sink = 0;
  const uint64_t* data = static_cast<const uint64_t*>(buffer_.data());
  uint64_t sum = 0;
  for (size_t i = 0; i < buffer_.bytes() / sizeof(uint64_t); i += 64 / sizeof(uint64_t)) sum += data[i];
  sink = sink + sum;
}

double probe_slice(int threads, size_t rows, size_t row_bytes, size_t lo, size_t hi, int passes,
                   CacheEvictor* evictor) {
  if (rows == 0 || hi <= lo) return 0;
  Buffer buf(rows * row_bytes);
  char* base = static_cast<char*>(buf.data());
  volatile uint64_t zero = 0;  // read at run time: the compiler cannot drop the stores
  const uint64_t key = zero;
  const ProbeIsa isa = probe_isa();
  timed_parallel(threads, rows, [&](size_t b, size_t e) {  // first touch by the thread that streams the rows
    std::fill(base + b * row_bytes, base + e * row_bytes, static_cast<char>(1));
  });
  // Four ways of streaming the pattern, the fastest counts: the hardware prefetchers alone, and each slice
  // prefetched into L2 as many rows ahead as make 2, 8 or 32 KiB of slices (at least 8 rows; the RoPE row loops take
  // 8 KiB), so the limit does not hang on one distance.
  const size_t slice = hi - lo;
  const size_t aheads[] = {0, std::max<size_t>(8, 2048 / slice), std::max<size_t>(8, 8192 / slice),
                           std::max<size_t>(8, 32768 / slice)};
  auto pass = [&](size_t prefetch_rows) {
    return timed_parallel(threads, rows, [&](size_t b, size_t e) {
      slice_rmw(base, row_bytes, lo, hi, b, e, key, isa, prefetch_rows);
    });
  };
  pass(0);
  double best = 1e30;
  for (int p = 0; p < passes; ++p) {
    for (size_t prefetch_rows : aheads) {
      if (evictor != nullptr) evictor->evict();
      best = std::min(best, pass(prefetch_rows));
    }
  }
  return 2.0 * static_cast<double>(rows) * static_cast<double>(hi - lo) / best * 1e-9;
}

double probe_parallel_region(int threads, int reps) {
  std::vector<double> times(static_cast<size_t>(reps));
  int sink = 0;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_seconds();
#pragma omp parallel num_threads(threads)
    {
#pragma omp atomic
      sink += 1;
    }
    times[i] = now_seconds() - t0;
  }
  std::sort(times.begin(), times.end());
  return sink > 0 ? times[times.size() / 2] : 0.0;
}

double probe_core_round_trip(int threads, int rounds) {
  if (threads < 2) return 0.0;
  constexpr int kBatches = 9;
  std::vector<CoreDistanceProbe> batches(kBatches);  // the measurement the GDR pipeline mode decides by
  std::vector<double> times;
  bool paired = false;
#pragma omp parallel num_threads(threads)
  {
    const int me = omp_get_thread_num();
    if (omp_get_num_threads() >= 2 && me < 2) {  // the same answer on every thread of the team
      for (CoreDistanceProbe& batch : batches) {
        const double ns = batch.round_trip_ns(me, rounds, std::numeric_limits<double>::infinity());
        if (me == 0) times.push_back(ns * 1e-9);
      }
      if (me == 0) paired = true;
    }
  }
  if (!paired) return 0.0;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

namespace {

// FLOP/s of `loop(iterations)` run on every thread at once: calibrates iterations to ~seconds, best of passes.
template <class Loop>
double peak_gflops(int threads, double seconds, int passes, Loop loop) {
  float sink = 0;
  long iterations = 1 << 14;
  for (;;) {  // calibrate on one thread
    const double t0 = now_seconds();
    loop(iterations, &sink);
    const double dt = now_seconds() - t0;
    if (dt > seconds * 0.25 || iterations > (1L << 34)) {
      iterations = static_cast<long>(iterations * (seconds / std::max(dt, 1e-6)));
      break;
    }
    iterations *= 4;
  }
  iterations = std::max(iterations, 1L << 12);
  double best = 0;
  for (int p = 0; p < passes; ++p) {
    double flops = 0;
    const double t0 = now_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
      float local = 0;
      flops += loop(iterations, &local);
#pragma omp atomic
      sink += local;
    }
    const double dt = now_seconds() - t0;
    best = std::max(best, flops / dt * 1e-9);
  }
  volatile float keep = sink;  // the loops' results reach memory, so no call is dead code
  (void)keep;
  return best;
}

}  // namespace

ComputeProbe probe_compute(int threads, double seconds_per_pass, int passes) {
  ComputeProbe r;
  r.threads = threads;
  const ProbeIsa isa = probe_isa();
  r.isa = isa == ProbeIsa::kAvx512 ? "avx512" : isa == ProbeIsa::kAvx2 ? "avx2" : "scalar";
  r.fma_gflops = peak_gflops(threads, seconds_per_pass, passes,
                             [isa](long it, float* sink) { return fma_loop(it, isa, sink); });
  if (isa == ProbeIsa::kAvx512 && cpu_has_avx512_bf16())
    r.bf16_dot_gflops = peak_gflops(threads, seconds_per_pass, passes,
                                    [](long it, float* sink) { return bf16_dot_loop(it, sink); });
  if (isa == ProbeIsa::kAvx512 && cpu_has_avx512_bf16() && amx_bf16_usable())
    r.amx_bf16_gflops = peak_gflops(threads, seconds_per_pass, passes,
                                    [](long it, float* sink) { return amx_bf16_loop(it, sink); });
  return r;
}

}  // namespace bench
}  // namespace txops
