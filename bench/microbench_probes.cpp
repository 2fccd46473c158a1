// microbench_probes.cpp — the machine-limit probes of `txops bench` (tools/probe_kernels.cpp) as Google
// Benchmark cases on one thread: copy with ordinary and with non-temporal stores over 256 MiB arrays, and
// the fp32 FMA / bf16 dot-product peaks. Compare an op's micro-benchmark with these on the same machine.
#include <benchmark/benchmark.h>

#include "bench_util.h"
#include "probes.h"
#include "txops/txops.h"

namespace {

using txops::bench::Buffer;

constexpr size_t kArrayBytes = size_t{256} << 20;

void BM_CopyStores(benchmark::State& state) {
  Buffer a(kArrayBytes), b(kArrayBytes);
  const auto isa = txops::bench::probe_isa();
  for (auto _ : state)
    txops::bench::copy_stores(static_cast<float*>(a.data()), static_cast<float*>(b.data()), 0, kArrayBytes / 4, isa);
  state.SetBytesProcessed(state.iterations() * 2 * kArrayBytes);
}
BENCHMARK(BM_CopyStores)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_CopyStreaming(benchmark::State& state) {
  Buffer a(kArrayBytes), b(kArrayBytes);
  const auto isa = txops::bench::probe_isa();
  for (auto _ : state)
    txops::bench::copy_streaming(static_cast<float*>(a.data()), static_cast<float*>(b.data()), 0, kArrayBytes / 4,
                                 isa);
  state.SetBytesProcessed(state.iterations() * 2 * kArrayBytes);
}
BENCHMARK(BM_CopyStreaming)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_FmaPeak(benchmark::State& state) {
  float sink = 0;
  double flops = 0;
  const auto isa = txops::bench::probe_isa();
  for (auto _ : state) flops += txops::bench::fma_loop(1 << 20, isa, &sink);
  benchmark::DoNotOptimize(sink);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FmaPeak)->UseRealTime();

void BM_Bf16DotPeak(benchmark::State& state) {
  if (txops::bench::probe_isa() != txops::bench::ProbeIsa::kAvx512 || !txops::cpu_has_avx512_bf16()) {
    state.SkipWithError("no AVX512_BF16 on this CPU (or capped by TXOPS_MAX_ISA)");
    return;
  }
  float sink = 0;
  double flops = 0;
  for (auto _ : state) flops += txops::bench::bf16_dot_loop(1 << 20, &sink);
  benchmark::DoNotOptimize(sink);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Bf16DotPeak)->UseRealTime();

}  // namespace
