// gdr_prefill_test.cpp — chunk_gated_delta_rule (prefill) against the fp64 oracle: sequence lengths around the chunk
// size, ragged batches, head ratios, odd head dims, with/without g, scale, every activation and state dtype, both
// prefill kernels on each ISA the CPU has (one test per ISA); splitting a sequence over two calls; bit-identical
// results for 1..4 threads; robustness outside the caller's guaranteed ranges. Prints the error table the closing
// note quotes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "support/gdr_problem.h"

namespace gdrtest {
namespace {

using txops::DType;
using txops::Isa;

TXOPS_ISA_TEST_SUITE(GdrPrefillOnIsa);



constexpr int32_t kChunk = 64;

ErrorTable& error_table() {
  static ErrorTable table;
  return table;
}

class PrintErrorTable : public ::testing::Environment {
 public:
  void TearDown() override { error_table().print("gdr_prefill_test: chunk_gated_delta_rule vs fp64 oracle"); }
};
::testing::Environment* const g_print_env = ::testing::AddGlobalTestEnvironment(new PrintErrorTable);

std::string dtype_label(const char* what, const PrefillConfig& c) {
  return std::string("prefill ") + what + " act=" + txops::dtype_name(c.act) + " state=" +
         txops::dtype_name(c.state);
}

// "kernel=chunked isa=avx2": the prefill kernel forced and the active ISA (the test's, GdrPrefillOnIsa).
std::string variant_name(const char* kernel) {
  return std::string("kernel=") + kernel + " isa=" + txops::isa_name(txops::active_isa());
}

// Runs `config` with each prefill kernel under the active ISA and checks out and final_state against the oracle.
void check_against_reference(const PrefillConfig& config) {
  PrefillProblem problem(config);
  std::vector<double> out_ref, state_ref;
  problem.reference(&out_ref, &state_ref);
  for (const char* kernel : prefill_kernels()) {
    PrefillKernelScope scope(kernel);
    SCOPED_TRACE(config.describe() + " " + variant_name(kernel));
    const txops::Status st = problem.run();
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, dtype_label("out", config) + " " + kernel,
                                  &error_table()));
    EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref,
                                  dtype_label("finalState", config) + " " + kernel, &error_table()));
  }
}

TEST_P(GdrPrefillOnIsa, SequenceLengthsAroundTheChunk) {
  for (int32_t length : {1, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 5}) {
    PrefillConfig c;
    c.lengths = {length};
    c.nk = 1, c.nv = 2, c.dk = 16, c.dv = 24;
    check_against_reference(c);
  }
}

TEST_P(GdrPrefillOnIsa, RaggedBatchWithZeroLengthSequence) {
  PrefillConfig c;
  c.lengths = {5, 0, kChunk, kChunk + 6, 1, 0};
  c.nk = 2, c.nv = 4, c.dk = 32, c.dv = 24;
  check_against_reference(c);
  c.lengths = {0, 17};  // zero-length first
  c.seed = 2;
  check_against_reference(c);
}

TEST_P(GdrPrefillOnIsa, HeadRatios) {
  struct Heads { int64_t nk, nv; };
  for (Heads h : {Heads{2, 2}, Heads{2, 4}, Heads{1, 4}, Heads{1, 8}, Heads{3, 6}, Heads{3, 3}, Heads{5, 5}}) {
    PrefillConfig c;
    c.lengths = {40, 29};
    c.nk = h.nk, c.nv = h.nv, c.dk = 8, c.dv = 12;
    check_against_reference(c);
  }
}

TEST_P(GdrPrefillOnIsa, OddHeadDims) {
  struct Dims { int64_t dk, dv; };
  // Odd sizes, and sizes around the vector widths (8 / 16 fp32 lanes, 32 bf16 lanes).
  for (Dims d : {Dims{5, 31}, Dims{31, 5}, Dims{50, 96}, Dims{96, 50}, Dims{1, 1}, Dims{15, 16}, Dims{16, 17},
                 Dims{17, 15}, Dims{7, 9}, Dims{33, 32}, Dims{32, 33}}) {
    PrefillConfig c;
    c.lengths = {70};
    c.dk = d.dk, c.dv = d.dv;
    check_against_reference(c);
  }
}

TEST_P(GdrPrefillOnIsa, LargeHeadDims) {
  PrefillConfig c;
  c.lengths = {kChunk + 9};
  c.dk = 128, c.dv = 128;
  check_against_reference(c);
  c.lengths = {kChunk + 3};
  c.dk = 256, c.dv = 256;
  c.act = DType::kF32;
  check_against_reference(c);
}

// Qwen3-Next-like heads (GQA 2, Dk = Dv = 128) over several chunks and a ragged batch.
TEST_P(GdrPrefillOnIsa, RealisticHeadsManyChunks) {
  PrefillConfig c;
  c.lengths = {3 * kChunk + 44, 0, 2 * kChunk + 1};
  c.nk = 2, c.nv = 4, c.dk = 128, c.dv = 128;
  check_against_reference(c);
}

TEST_P(GdrPrefillOnIsa, WithoutGAndOtherScales) {
  for (float scale : {0.0f, 1.0f, 0.3f}) {
    for (bool with_g : {false, true}) {
      PrefillConfig c;
      c.lengths = {kChunk + 10, 3};
      c.nk = 1, c.nv = 2, c.dk = 20, c.dv = 16;
      c.with_g = with_g;
      c.scale = scale;
      check_against_reference(c);
    }
  }
}

TEST_P(GdrPrefillOnIsa, ActivationAndStateDtypes) {
  for (DType act : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (DType state : {DType::kBF16, DType::kF32}) {
      PrefillConfig c;
      c.lengths = {2 * kChunk + 7, 0, 9};
      c.nk = 1, c.nv = 2, c.dk = 32, c.dv = 32;
      c.act = act, c.state = state;
      check_against_reference(c);
      c.lengths = {kChunk};  // realistic head dims, one chunk
      c.nk = 1, c.nv = 1, c.dk = 128, c.dv = 128;
      c.seed = 7;
      check_against_reference(c);
    }
  }
}

// A sequence split over two calls (finalState of the first -> initialState of the second) matches one call.
TEST(GdrPrefill, TwoCallsMatchOneCall) {
  for (DType state : {DType::kF32, DType::kBF16}) {
    for (int32_t first : {1, 37, kChunk}) {
      PrefillConfig whole;
      whole.lengths = {first + kChunk + 20};
      whole.nk = 1, whole.nv = 2, whole.dk = 24, whole.dv = 16;
      whole.state = state;
      whole.act = DType::kF32;
      PrefillProblem one(whole);
      std::vector<double> out_ref, state_ref;
      one.reference(&out_ref, &state_ref);

      PrefillConfig first_part = whole, second_part = whole;
      first_part.lengths = {first};
      second_part.lengths = {whole.lengths[0] - first};
      PrefillProblem a(first_part), b(second_part);
      // Copy the token rows of `one` into the two halves.
      auto copy_rows = [](const HostTensor& src, int64_t row0, HostTensor* dst) {
        const size_t row_bytes = dst->bytes.size() / static_cast<size_t>(dst->shape[0]);
        std::memcpy(dst->bytes.data(), src.bytes.data() + row0 * row_bytes, dst->bytes.size());
      };
      for (auto member : {&PrefillProblem::q, &PrefillProblem::k, &PrefillProblem::v, &PrefillProblem::beta,
                          &PrefillProblem::g}) {
        copy_rows(one.*member, 0, &(a.*member));
        copy_rows(one.*member, first, &(b.*member));
      }
      a.initial_state = one.initial_state;
      SCOPED_TRACE(whole.describe() + " split at " + std::to_string(first));
      ASSERT_TRUE(a.run().ok());
      b.initial_state = a.final_state;
      ASSERT_TRUE(b.run().ok());
      const std::vector<double> out_first(out_ref.begin(), out_ref.begin() + a.out.numel());
      const std::vector<double> out_second(out_ref.begin() + a.out.numel(), out_ref.end());
      EXPECT_TRUE(matches_reference("gdr_out", a.out.view(), out_first, "two calls: first out", nullptr));
      if (state == DType::kF32) {
        EXPECT_TRUE(matches_reference("gdr_out", b.out.view(), out_second, "two calls: second out", nullptr));
        EXPECT_TRUE(matches_reference("gdr_state", b.final_state.view(), state_ref, "two calls: finalState", nullptr));
        continue;
      }
      // A bf16 state is rounded once more at the hand-off, so the second call matches the one-call oracle
      // only to bf16 precision (one extra rounding of S: ~2^-8 relative on out) ...
      const txops::Tolerance bf16_bar = txops::tolerance_for("gdr_out", DType::kBF16);
      EXPECT_TRUE(txops::compare_with_reference(b.out.view(), out_second, bf16_bar).passed);
      EXPECT_TRUE(txops::compare_with_reference(b.final_state.view(), state_ref, bf16_bar).passed);
      // ... and its own oracle (from the rounded hand-off state) to the full fp32 tolerance.
      std::vector<double> out_b_ref, state_b_ref;
      b.reference(&out_b_ref, &state_b_ref);
      EXPECT_TRUE(matches_reference("gdr_out", b.out.view(), out_b_ref, "two calls: second out (own oracle)", nullptr));
      EXPECT_TRUE(matches_reference("gdr_state", b.final_state.view(), state_b_ref, "two calls: finalState (own)",
                                    nullptr));
    }
  }
}

// Every thread count gives the same bytes.
TEST_P(GdrPrefillOnIsa, BitIdenticalForAnyThreadCount) {
  std::vector<PrefillConfig> configs(3);
  configs[0].lengths = {2 * kChunk + 3, 0, kChunk, 7, 1};
  configs[0].nk = 2, configs[0].nv = 6, configs[0].dk = 32, configs[0].dv = 48;
  configs[1].lengths = {4 * kChunk + 1};
  configs[1].nk = 1, configs[1].nv = 2, configs[1].dk = 128, configs[1].dv = 128;
  configs[1].state = DType::kBF16;
  configs[2].lengths = {3, 100, 0, 64, 65, 1, 20, 130};  // many sequences and heads: every partition is used
  configs[2].nk = 4, configs[2].nv = 8, configs[2].dk = 64, configs[2].dv = 64;
  for (const PrefillConfig& c : configs) {
    PrefillProblem problem(c);
    for (const char* kernel : prefill_kernels()) {
      PrefillKernelScope kernel_scope(kernel);
      SCOPED_TRACE(c.describe() + " " + variant_name(kernel));
      expect_bit_identical_across_threads(problem);
    }
  }
}

// Outside the caller's guarantees: finite results where the maths is finite, never a crash.
TEST_P(GdrPrefillOnIsa, StrongDecayBetaOneStaysAccurate) {
  PrefillConfig c;
  c.lengths = {2 * kChunk + 5, 3};
  c.nk = 1, c.nv = 2, c.dk = 16, c.dv = 16;
  c.act = DType::kF32;
  PrefillProblem problem(c);
  for (int64_t i = 0; i < problem.g.numel(); ++i) problem.g.set(i, -20.0);
  for (int64_t i = 0; i < problem.beta.numel(); ++i) problem.beta.set(i, 1.0);
  std::vector<double> out_ref, state_ref;
  problem.reference(&out_ref, &state_ref);
  for (const char* kernel : prefill_kernels()) {
    PrefillKernelScope scope(kernel);
    SCOPED_TRACE(std::string("g=-20 beta=1 ") + variant_name(kernel));
    ASSERT_TRUE(problem.run().ok());
    EXPECT_TRUE(all_finite(problem.out));
    EXPECT_TRUE(all_finite(problem.final_state));
    EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "g=-20 beta=1 out", nullptr));
    EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref, "g=-20 beta=1 state", nullptr));
  }
}

// Decay that is gentle for long stretches and then drops sharply (g = -30 every 17th token, -60 at the end):
// any kernel that factors the decay out of the state (scaled states, cumulative sums) must renormalise.
TEST_P(GdrPrefillOnIsa, SpikyDecayMatchesReference) {
  for (DType act : {DType::kF32, DType::kBF16}) {
    PrefillConfig c;
    c.lengths = {3 * kChunk + 5, 300};
    c.nk = 1, c.nv = 2, c.dk = 32, c.dv = 16;
    c.act = act;
    PrefillProblem problem(c);
    for (int64_t t = 0; t < problem.tokens(); ++t)
      for (int64_t h = 0; h < c.nv; ++h) {
        double g = -0.02 * (1 + (t + h) % 3);           // gentle: cumulative decay reaches ~e^-12 over 300 tokens
        if (t % 17 == 16) g = -30.0;                      // sharp drops
        if (t == problem.tokens() - 1) g = -60.0;
        problem.g.set(t * c.nv + h, g);
      }
    std::vector<double> out_ref, state_ref;
    problem.reference(&out_ref, &state_ref);
    for (const char* kernel : prefill_kernels()) {
      PrefillKernelScope scope(kernel);
      SCOPED_TRACE(c.describe() + " spiky g " + variant_name(kernel));
      ASSERT_TRUE(problem.run().ok());
      EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "spiky g out", nullptr));
      EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref, "spiky g state", nullptr));
    }
  }
}

TEST_P(GdrPrefillOnIsa, VeryNegativeGStaysFinite) {
  PrefillConfig c;
  c.lengths = {kChunk + 30};
  c.dk = 16, c.dv = 8;
  PrefillProblem problem(c);
  for (int64_t i = 0; i < problem.g.numel(); ++i) problem.g.set(i, i % 3 == 0 ? -1e4 : -50.0);
  for (const char* kernel : prefill_kernels()) {
    PrefillKernelScope scope(kernel);
    SCOPED_TRACE(std::string("g in {-1e4, -50} ") + variant_name(kernel));
    ASSERT_TRUE(problem.run().ok());
    EXPECT_TRUE(all_finite(problem.out));
    EXPECT_TRUE(all_finite(problem.final_state));
  }
}

// g > 0 (growth instead of decay: e^(0.3 * 150) ~ 3.5e19 stays inside fp32) and beta = 0 on some tokens.
TEST_P(GdrPrefillOnIsa, PositiveGAndZeroBetaStayFinite) {
  PrefillConfig c;
  c.lengths = {150, 2};
  c.dk = 16, c.dv = 16;
  c.act = DType::kF32;
  PrefillProblem problem(c);
  for (int64_t i = 0; i < problem.g.numel(); ++i) problem.g.set(i, 0.3);
  for (int64_t i = 0; i < problem.beta.numel(); i += 3) problem.beta.set(i, 0.0);
  std::vector<double> out_ref, state_ref;
  problem.reference(&out_ref, &state_ref);
  for (const char* kernel : prefill_kernels()) {
    PrefillKernelScope scope(kernel);
    SCOPED_TRACE(std::string("g=+0.3 beta=0 every 3rd token ") + variant_name(kernel));
    ASSERT_TRUE(problem.run().ok());
    EXPECT_TRUE(all_finite(problem.out));
    EXPECT_TRUE(all_finite(problem.final_state));
    const txops::CompareReport r = txops::compare_with_reference(problem.out.view(), out_ref,
                                                                 txops::tolerance_for("gdr_out", DType::kF32));
    std::printf("  [info] g=+0.3 %s: out %s\n", variant_name(kernel).c_str(), r.describe(problem.out.view()).c_str());
  }
}

TEST_P(GdrPrefillOnIsa, UnnormalisedKeysStayFinite) {
  // |k| = 2 and beta = 1 make each step multiply S by (I - 4 k^ k^T): growth 3^L, finite in fp32 for L = 20.
  PrefillConfig c;
  c.lengths = {20, 6};
  c.dk = 8, c.dv = 8;
  c.act = DType::kF32;
  c.with_g = false;
  PrefillProblem problem(c);
  InputGenerator gen(11);
  gen.rows_with_norm(&problem.k, 2.0);
  gen.normal(&problem.q, 3.0);
  for (int64_t i = 0; i < problem.beta.numel(); ++i) problem.beta.set(i, 1.0);
  std::vector<double> out_ref, state_ref;
  problem.reference(&out_ref, &state_ref);
  for (const char* kernel : prefill_kernels()) {
    PrefillKernelScope scope(kernel);
    SCOPED_TRACE(std::string("|k|=2 beta=1 ") + variant_name(kernel));
    ASSERT_TRUE(problem.run().ok());
    EXPECT_TRUE(all_finite(problem.out));
    EXPECT_TRUE(all_finite(problem.final_state));
    const txops::CompareReport r = txops::compare_with_reference(problem.out.view(), out_ref,
                                                                 txops::tolerance_for("gdr_out", DType::kF32));
    std::printf("  [info] unnormalised k (|k|=2, beta=1) %s: out %s\n", variant_name(kernel).c_str(),
                r.describe(problem.out.view()).c_str());
  }
}

}  // namespace
}  // namespace gdrtest
