// microbench_ops.cpp — Google Benchmark micro-benchmarks of each operator on one mid-size shape (bf16,
// the library's default thread count), for quick A/B comparisons while tuning a kernel. Bytes processed are
// counted like `txops bench` (bench/README.md); the full suites and same-run limits live in `txops bench`.
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench_util.h"
#include "txops/txops.h"

namespace {

using txops::DType;
using txops::bench::fill_cos_sin;
using txops::bench::fill_uniform;
using txops::bench::fill_unit_rows;
using txops::bench::HostTensor;

void report_failure(benchmark::State& state, const txops::Status& st) {
  if (!st.ok()) state.SkipWithError(st.message().c_str());
}

// InterleaveRope, x (1, 32, 1024, 64) bf16, out of place.
void BM_InterleaveRope(benchmark::State& state) {
  HostTensor x(DType::kBF16, {1, 32, 1024, 64}), out(DType::kBF16, {1, 32, 1024, 64});
  HostTensor cos(DType::kBF16, {1, 1, 1024, 64}), sin(DType::kBF16, {1, 1, 1024, 64});
  fill_uniform(&x, 1, -1, 1);
  fill_cos_sin(&cos, &sin, 2);
  for (auto _ : state) report_failure(state, txops::interleave_rope(x.view, cos.view, sin.view, out.view));
  state.SetBytesProcessed(state.iterations() * (x.bytes() + out.bytes() + cos.bytes() + sin.bytes()));
}
BENCHMARK(BM_InterleaveRope)->UseRealTime();

// ApplyRotaryPosEmbV2 in place, q (1, 2048, 32, 128), k (1, 2048, 8, 128) bf16, half mode.
void BM_ApplyRotaryPosEmb(benchmark::State& state) {
  HostTensor q(DType::kBF16, {1, 2048, 32, 128}), k(DType::kBF16, {1, 2048, 8, 128});
  HostTensor cos(DType::kBF16, {1, 2048, 1, 128}), sin(DType::kBF16, {1, 2048, 1, 128});
  fill_uniform(&q, 3, -1, 1);
  fill_uniform(&k, 4, -1, 1);
  fill_cos_sin(&cos, &sin, 5);
  for (auto _ : state)
    report_failure(state, txops::apply_rotary_pos_emb(q.view, k.view, cos.view, sin.view, txops::Layout::kBSND,
                                                      txops::RotaryMode::kHalf));
  state.SetBytesProcessed(state.iterations() * (2 * q.bytes() + 2 * k.bytes() + cos.bytes() + sin.bytes()));
}
BENCHMARK(BM_ApplyRotaryPosEmb)->UseRealTime();

// InplacePartialRotaryMul, x (1, 2048, 16, 192) bf16, slice [128, 192), interleave mode.
void BM_InplacePartialRotaryMul(benchmark::State& state) {
  HostTensor x(DType::kBF16, {1, 2048, 16, 192});
  HostTensor cos(DType::kBF16, {1, 2048, 1, 64}), sin(DType::kBF16, {1, 2048, 1, 64});
  fill_uniform(&x, 6, -1, 1);
  fill_cos_sin(&cos, &sin, 7);
  for (auto _ : state)
    report_failure(state, txops::inplace_partial_rotary_mul(x.view, cos.view, sin.view,
                                                            txops::RotaryMode::kInterleave, 128, 192));
  state.SetBytesProcessed(state.iterations() * (2 * x.bytes() / 3 + cos.bytes() + sin.bytes()));
}
BENCHMARK(BM_InplacePartialRotaryMul)->UseRealTime();

// ChunkGatedDeltaRule, one sequence T=1024, Nk=4, Nv=8, Dk=Dv=128, bf16. Counter: GFLOP/s at 6*Dk*Dv.
void BM_ChunkGatedDeltaRule(benchmark::State& state) {
  const int64_t T = 1024, Nk = 4, Nv = 8, D = 128;
  HostTensor q(DType::kBF16, {T, Nk, D}), k(DType::kBF16, {T, Nk, D}), v(DType::kBF16, {T, Nv, D});
  HostTensor beta(DType::kBF16, {T, Nv}), g(DType::kF32, {T, Nv}), out(DType::kBF16, {T, Nv, D});
  HostTensor init(DType::kBF16, {1, Nv, D, D}), fin(DType::kBF16, {1, Nv, D, D}), lens(DType::kI32, {1});
  static_cast<int32_t*>(lens.view.data)[0] = static_cast<int32_t>(T);
  fill_unit_rows(&q, 8);
  fill_unit_rows(&k, 9);
  fill_uniform(&v, 10, -1, 1);
  fill_uniform(&beta, 11, 0.05f, 0.95f);
  fill_uniform(&g, 12, -0.2f, -0.001f);
  fill_uniform(&init, 13, -0.1f, 0.1f);
  for (auto _ : state)
    report_failure(state, txops::chunk_gated_delta_rule(q.view, k.view, v.view, beta.view, init.view, lens.view,
                                                        &g.view, 1.0f / std::sqrt(128.0f), out.view, fin.view));
  state.counters["GFLOP/s"] = benchmark::Counter(6.0 * D * D * T * Nv * 1e-9 * state.iterations(),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ChunkGatedDeltaRule)->UseRealTime()->Unit(benchmark::kMillisecond);

// RecurrentGatedDeltaRule, 16 sequences x 1 token, Nk=16, Nv=32, Dk=Dv=128, pool 64, bf16. Bytes: state r+w.
void BM_RecurrentGatedDeltaRule(benchmark::State& state) {
  const int64_t B = 16, Nk = 16, Nv = 32, D = 128, pool = 64;
  HostTensor q(DType::kBF16, {B, Nk, D}), k(DType::kBF16, {B, Nk, D}), v(DType::kBF16, {B, Nv, D});
  HostTensor beta(DType::kBF16, {B, Nv}), g(DType::kF32, {B, Nv}), out(DType::kBF16, {B, Nv, D});
  HostTensor pool_state(DType::kBF16, {pool, Nv, D, D}), lens(DType::kI32, {B}), slots(DType::kI32, {B});
  for (int64_t b = 0; b < B; ++b) {
    static_cast<int32_t*>(lens.view.data)[b] = 1;
    static_cast<int32_t*>(slots.view.data)[b] = static_cast<int32_t>((b * 5 + 3) % pool);
  }
  fill_unit_rows(&q, 14);
  fill_unit_rows(&k, 15);
  fill_uniform(&v, 16, -1, 1);
  fill_uniform(&beta, 17, 0.05f, 0.95f);
  fill_uniform(&g, 18, -0.2f, -0.001f);
  fill_uniform(&pool_state, 19, -0.1f, 0.1f);
  for (auto _ : state)
    report_failure(state, txops::recurrent_gated_delta_rule(q.view, k.view, v.view, beta.view, pool_state.view,
                                                            lens.view, slots.view, &g.view, nullptr, nullptr,
                                                            1.0f / std::sqrt(128.0f), out.view));
  state.SetBytesProcessed(state.iterations() * 2 * B * Nv * D * D * 2);
}
BENCHMARK(BM_RecurrentGatedDeltaRule)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
