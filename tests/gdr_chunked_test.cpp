// gdr_chunked_test.cpp — the chunked prefill kernel (kernels_chunked.cpp), forced with TXOPS_GDR_KERNEL=chunked,
// against the fp64 oracle: lengths around the chunk (64), ragged batches with empty sequences, head ratios, head dims
// from 5 to 256 (partial vectors, partial GEMM tiles), with/without g, every activation and state dtype, each ISA the
// CPU has (one test per ISA); bit-identical results for 1..4 threads; finite results for g = -20, beta = 1 and
// unnormalised keys; TXOPS_VERBOSE names the kernel. (gdr_prefill_test sweeps both kernels over its own cases.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/gdr_problem.h"

namespace gdrtest {
namespace {

using txops::DType;
using txops::Isa;

TXOPS_ISA_TEST_SUITE(GdrChunkedOnIsa);

constexpr int32_t kChunk = 64;

// Runs `config` with the chunked kernel under the active ISA (the test's, GdrChunkedOnIsa); out and finalState
// within tolerance_for("gdr_*").
void check_chunked(const PrefillConfig& config) {
  PrefillProblem problem(config);
  std::vector<double> out_ref, state_ref;
  problem.reference(&out_ref, &state_ref);
  PrefillKernelScope scope("chunked");
  SCOPED_TRACE(config.describe() + " isa=" + txops::isa_name(txops::active_isa()));
  const txops::Status st = problem.run();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "chunked out", nullptr));
  EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref, "chunked state", nullptr));
}

TEST_P(GdrChunkedOnIsa, LengthsAroundTheChunk) {
  for (int32_t length : {1, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 5}) {
    PrefillConfig c;
    c.lengths = {length};
    c.nk = 1, c.nv = 2, c.dk = 16, c.dv = 24;
    check_chunked(c);
  }
}

TEST_P(GdrChunkedOnIsa, RaggedBatchesWithEmptySequences) {
  PrefillConfig c;
  c.lengths = {5, 0, kChunk, kChunk + 6, 1, 0};
  c.nk = 2, c.nv = 4, c.dk = 32, c.dv = 24;
  check_chunked(c);
  c.lengths = {0, 130, 0};
  c.seed = 2;
  check_chunked(c);
}

TEST_P(GdrChunkedOnIsa, HeadRatiosAndOddHeads) {
  struct Heads { int64_t nk, nv; };
  for (Heads h : {Heads{2, 2}, Heads{2, 4}, Heads{1, 4}, Heads{3, 6}, Heads{5, 5}, Heads{3, 12}}) {
    PrefillConfig c;
    c.lengths = {70, 9};
    c.nk = h.nk, c.nv = h.nv, c.dk = 8, c.dv = 12;
    check_chunked(c);
  }
}

TEST_P(GdrChunkedOnIsa, HeadDims) {
  const int64_t dims[] = {5, 31, 50, 96, 128, 256};
  for (int64_t dk : dims)
    for (int64_t dv : dims) {
      if (dk * dv > 128 * 128 && dk != dv) continue;  // the large mixed pairs add time, not coverage
      PrefillConfig c;
      c.lengths = {dk >= 128 || dv >= 128 ? 67 : 81};
      c.dk = dk, c.dv = dv;
      c.seed = static_cast<uint32_t>(dk * 1000 + dv);
      check_chunked(c);
    }
}

TEST_P(GdrChunkedOnIsa, WithoutGAndScales) {
  PrefillConfig c;
  c.lengths = {kChunk + 11, 3};
  c.nk = 1, c.nv = 2, c.dk = 32, c.dv = 16;
  c.with_g = false;
  check_chunked(c);
  c.with_g = true;
  c.scale = 0.7f;
  check_chunked(c);
}

TEST_P(GdrChunkedOnIsa, ActivationAndStateDtypes) {
  for (DType act : {DType::kBF16, DType::kF16, DType::kF32})
    for (DType state : {DType::kBF16, DType::kF32}) {
      PrefillConfig c;
      c.lengths = {kChunk + 20, 7};
      c.nk = 1, c.nv = 2, c.dk = 48, c.dv = 40;
      c.act = act, c.state = state;
      check_chunked(c);
    }
}

TEST_P(GdrChunkedOnIsa, BitIdenticalForOneToFourThreads) {
  PrefillConfig c;
  c.lengths = {2 * kChunk + 3, 0, kChunk, 7, 1, 100};
  c.nk = 2, c.nv = 6, c.dk = 32, c.dv = 48;
  c.state = DType::kBF16;
  PrefillProblem problem(c);
  PrefillKernelScope scope("chunked");
  SCOPED_TRACE(c.describe() + " isa=" + txops::isa_name(isa()));
  expect_bit_identical_across_threads(problem);
}

// Items mode keeps the staged states of at most 320 KiB (four 128 x 128 heads) per thread at once and runs a
// sequence's heads in turns of that many, rounded down to whole key heads (GQA): six value heads of two sequences,
// on six key heads (turns of 4 and 2) and on two (3 value heads each: turns of 3), against the reference and
// bit-identical for 1-4 threads (the turns then fall elsewhere).
TEST_P(GdrChunkedOnIsa, HeadsInTurnsOfStagedStates) {
  struct Case { int64_t nk; const char* tag; };
  for (const Case& k : {Case{6, "mode=items(4 heads at a time)"}, Case{2, "mode=items(3 heads at a time)"}}) {
    PrefillConfig c;
    c.lengths = {kChunk + 66, 67};
    c.nk = k.nk, c.nv = 6, c.dk = 128, c.dv = 128;
    {
      ScopedThreads one(1);
      ScopedEnv split("TXOPS_GDR_SPLIT", "items");
      PrefillKernelScope scope("chunked");
      PrefillProblem problem(c);
      const std::string log = verbose_log(problem);
      EXPECT_NE(log.find(k.tag), std::string::npos) << log;
      check_chunked(c);
    }
    PrefillProblem problem(c);
    PrefillKernelScope scope("chunked");
    SCOPED_TRACE(c.describe());
    expect_bit_identical_across_threads(problem);
  }
}

// Outside the caller's guarantees: strong decay with beta = 1 (accurate), unnormalised keys (finite).
TEST_P(GdrChunkedOnIsa, StrongDecayBetaOne) {
  PrefillConfig c;
  c.lengths = {2 * kChunk + 5, 3};
  c.nk = 1, c.nv = 2, c.dk = 16, c.dv = 16;
  c.act = DType::kF32;
  PrefillProblem problem(c);
  for (int64_t i = 0; i < problem.g.numel(); ++i) problem.g.set(i, -20.0);
  for (int64_t i = 0; i < problem.beta.numel(); ++i) problem.beta.set(i, 1.0);
  std::vector<double> out_ref, state_ref;
  problem.reference(&out_ref, &state_ref);
  PrefillKernelScope scope("chunked");
  SCOPED_TRACE(std::string("g=-20 beta=1 isa=") + txops::isa_name(isa()));
  ASSERT_TRUE(problem.run().ok());
  EXPECT_TRUE(all_finite(problem.out));
  EXPECT_TRUE(all_finite(problem.final_state));
  EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "g=-20 out", nullptr));
  EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref, "g=-20 state", nullptr));
}

TEST_P(GdrChunkedOnIsa, UnnormalisedKeysBetaOneStayFinite) {
  PrefillConfig c;
  c.lengths = {20, 6};  // |k| = 2, beta = 1: S grows like 3^L, finite in fp32 for L = 20
  c.dk = 8, c.dv = 8;
  c.act = DType::kF32;
  c.with_g = false;
  PrefillProblem problem(c);
  InputGenerator gen(11);
  gen.rows_with_norm(&problem.k, 2.0);
  for (int64_t i = 0; i < problem.beta.numel(); ++i) problem.beta.set(i, 1.0);
  PrefillKernelScope scope("chunked");
  SCOPED_TRACE(std::string("|k|=2 beta=1 isa=") + txops::isa_name(isa()));
  ASSERT_TRUE(problem.run().ok());
  EXPECT_TRUE(all_finite(problem.out));
  EXPECT_TRUE(all_finite(problem.final_state));
}

TEST(GdrChunked, VerboseNamesTheKernel) {
  PrefillConfig c;
  c.lengths = {10};
  PrefillProblem problem(c);
  const bool was_verbose = txops::verbose();
  txops::set_verbose(true);
  for (const char* kernel : {"chunked", "recurrent"}) {
    PrefillKernelScope scope(kernel);
    ::testing::internal::CaptureStderr();
    const txops::Status st = problem.run();
    const std::string log = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(st.ok());
    const bool chunked_named = log.find("kernel=gdr_prefill_chunked") != std::string::npos;
    EXPECT_EQ(chunked_named, std::string(kernel) == "chunked") << log;
  }
  txops::set_verbose(was_verbose);
}

}  // namespace
}  // namespace gdrtest
