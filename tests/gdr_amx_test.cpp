// gdr_amx_test.cpp — the chunked prefill's AMX path (X = row_scale ⊙ ([K; Q] Sᵀ) on TDPBF16PS tiles with the state
// split into three bf16 parts; src/ops/gated_delta_rule/chunked_amx-inl.h). On a CPU and OS with AMX-BF16 every
// chunked bf16 test already runs it (the plan takes it by default); this file checks it against the fp64 oracle
// beside the fp32 path on the same problems (keys padded inside the 32-key tile, partial chunks and tiles, GQA,
// both state dtypes, with and without g, a scale that is not 1/√Dk), that it really ran (the verbose log, and bits
// that differ from the fp32 GEMM's), and that switching it off takes the fp32 path. Skipped, by name, elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/amx.h"
#include "support/gdr_problem.h"

namespace gdrtest {
namespace {

using txops::DType;

constexpr int32_t kChunk = 64;

struct AmxSwitch {  // restores the default (allowed) on exit
  explicit AmxSwitch(bool on) { txops::set_amx_allowed(on); }
  ~AmxSwitch() { txops::set_amx_allowed(true); }
};

double state_rel_rms(const PrefillProblem& p, const std::vector<uint8_t>& other) {
  if (p.config.state != DType::kF32) return 0;
  const float* a = reinterpret_cast<const float*>(p.final_state.bytes.data());
  const float* b = reinterpret_cast<const float*>(other.data());
  double num = 0, den = 0;
  for (size_t i = 0; i < other.size() / 4; ++i) num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), den += double(a[i]) * a[i];
  return std::sqrt(num / den);
}

std::vector<PrefillConfig> amx_configs() {
  std::vector<PrefillConfig> configs;
  PrefillConfig c;
  c.lengths = {3 * kChunk + 5};  // Qwen3-Next's head: 128 keys = four tiles deep, 128 columns
  c.dk = 128, c.dv = 128;
  configs.push_back(c);
  c.lengths = {1, kChunk - 1, kChunk, kChunk + 1, 0};  // partial chunks: X rows 2n not a multiple of 32
  c.nk = 1, c.nv = 2, c.dk = 24, c.dv = 40;               // keys 24..31 are padding; 48 columns: one 16-column tile
  c.state = DType::kBF16;
  c.scale = 0.37f;
  c.seed = 2;
  configs.push_back(c);
  c.lengths = {2 * kChunk + 9};
  c.nk = 2, c.nv = 4, c.dk = 120, c.dv = 16;  // GQA; Dk 120 in 128
  c.state = DType::kF32;
  c.with_g = false;
  c.scale = 0;
  c.seed = 3;
  configs.push_back(c);
  c.lengths = {kChunk + 30};
  c.nk = 1, c.nv = 1, c.dk = 256, c.dv = 256;  // the widest heads
  c.with_g = true;
  c.seed = 4;
  configs.push_back(c);
  return configs;
}

TEST(GdrAmx, TilesMatchTheOracleAndTheFp32PathDoesToo) {
  if (!txops::amx_bf16_usable()) GTEST_SKIP() << "no AMX-BF16 on this CPU or OS: the AMX path cannot run here";
  if (!txops::cpu_has_avx512_bf16()) GTEST_SKIP() << "the AMX path rides on the AVX-512 BF16 kernels";
  PrefillKernelScope kernel("chunked");
  int differing = 0;
  for (const PrefillConfig& config : amx_configs()) {
    SCOPED_TRACE(config.describe());
    PrefillProblem problem(config);
    std::vector<double> out_ref, state_ref;
    problem.reference(&out_ref, &state_ref);
    std::vector<uint8_t> out_amx, state_amx;
    {
      AmxSwitch on(true);
      const std::string log = verbose_log(problem);
      EXPECT_NE(log.find("x=amx"), std::string::npos) << log;
      EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "AMX out", nullptr));
      EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref, "AMX state", nullptr));
      out_amx = problem.out.bytes;
      state_amx = problem.final_state.bytes;
    }
    AmxSwitch off(false);
    const std::string log = verbose_log(problem);
    EXPECT_EQ(log.find("x=amx"), std::string::npos) << log;
    EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "fp32 out", nullptr));
    EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref, "fp32 state", nullptr));
    differing += problem.out.bytes != out_amx;
    if (config.state == DType::kF32) {  // fp32 states: the two paths agree to fp32 rounding (not bf16 parts)
      const double diff = state_rel_rms(problem, state_amx);
      EXPECT_LE(diff, 1e-6) << "final states of the AMX and fp32 paths, relative RMS difference";
    }
  }
  EXPECT_GT(differing, 0) << "the AMX path gave the fp32 GEMM's bits on every problem: did it run?";
}

// Thread counts, chunk mode and column mode never change the AMX path's bits.
TEST(GdrAmx, BitIdenticalForOneToFourThreadsAndEveryMode) {
  if (!txops::amx_bf16_usable() || !txops::cpu_has_avx512_bf16()) GTEST_SKIP() << "no AMX-BF16 on this CPU or OS";
  PrefillKernelScope kernel("chunked");
  AmxSwitch on(true);
  for (const PrefillConfig& config : amx_configs()) {
    SCOPED_TRACE(config.describe());
    PrefillProblem problem(config);
    expect_chunk_mode_bit_identical_to_items_mode(problem);
  }
}

// The planner's split of one long sequence of one head on two threads: column mode on the AMX path (phase one is
// cheap there beside the state pass), pipeline mode on the fp32 path; a ragged batch stays out of both.
TEST(GdrAmx, PlannerTakesColumnModeForOneHeadOnTheAmxPath) {
  if (!txops::amx_bf16_usable() || !txops::cpu_has_avx512_bf16()) GTEST_SKIP() << "no AMX-BF16 on this CPU or OS";
  ScopedEnv split("TXOPS_GDR_SPLIT", nullptr);
  PrefillKernelScope kernel("chunked");
  ScopedThreads threads(2);
  PrefillConfig c;
  c.lengths = {4 * kChunk + 3};
  c.dk = 128, c.dv = 64;
  PrefillProblem one_head(c);
  {
    AmxSwitch on(true);
    const std::string log = verbose_log(one_head);
    EXPECT_NE(log.find("mode=columns(2 column blocks)"), std::string::npos) << log;
  }
  {
    AmxSwitch off(false);
    const std::string log = verbose_log(one_head);
    EXPECT_NE(log.find("mode=pipeline(2 column blocks)"), std::string::npos) << log;
  }
  c.lengths = {4 * kChunk + 3, kChunk};  // unequal: chunk mode's waves balance it
  PrefillProblem ragged(c);
  AmxSwitch on(true);
  const std::string log = verbose_log(ragged);
  EXPECT_NE(log.find("mode=chunks"), std::string::npos) << log;
}

}  // namespace
}  // namespace gdrtest
