// gdr_decode_test.cpp — recurrent_gated_delta_rule (decode on a state pool) against the fp64 oracle: ssmStateIndices
// mapping, numAcceptedTokens (speculative decoding), gk per-key decay, untouched slots keep their bytes, several
// tokens per sequence, dtypes, each test once per ISA (those this CPU lacks are SKIPPED, named); prefill of L tokens
// then decode of one equals prefill of L + 1; bit-identical results for 1..4 threads; a NaN input stays NaN in a
// bf16 pool. Prints the error table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "support/gdr_problem.h"

namespace gdrtest {
namespace {

using txops::DType;
using txops::Isa;

TXOPS_ISA_TEST_SUITE(GdrDecodeOnIsa);

ErrorTable& error_table() {
  static ErrorTable table;
  return table;
}

class PrintErrorTable : public ::testing::Environment {
 public:
  void TearDown() override { error_table().print("gdr_decode_test: recurrent_gated_delta_rule vs fp64 oracle"); }
};
::testing::Environment* const g_print_env = ::testing::AddGlobalTestEnvironment(new PrintErrorTable);

std::string dtype_label(const char* what, const DecodeConfig& c) {
  return std::string("decode ") + what + " act=" + txops::dtype_name(c.act) + " state=" + txops::dtype_name(c.state);
}

// Bytes of slot `slot` of a (BlockNum, Nv, Dv, Dk) pool.
std::vector<uint8_t> slot_bytes(const HostTensor& pool, int64_t slot) {
  const size_t slot_size = pool.bytes.size() / static_cast<size_t>(pool.shape[0]);
  return std::vector<uint8_t>(pool.bytes.begin() + slot * slot_size, pool.bytes.begin() + (slot + 1) * slot_size);
}

// Runs `config` under the active ISA (the test's, GdrDecodeOnIsa): out and the whole pool against the oracle,
// unwritten slots byte-identical.
void check_against_reference(const DecodeConfig& config) {
  DecodeProblem problem(config);
  std::vector<double> out_ref, pool_ref;
  problem.reference(&out_ref, &pool_ref);
  const std::set<int32_t> written(config.state_indices.begin(), config.state_indices.end());
  SCOPED_TRACE(config.describe() + " isa=" + txops::isa_name(txops::active_isa()));
  const txops::Status st = problem.run();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, dtype_label("out", config),
                                &error_table()));
  EXPECT_TRUE(matches_reference("gdr_state", problem.pool.view(), pool_ref, dtype_label("stateRef", config),
                                &error_table()));
  for (int64_t slot = 0; slot < config.num_slots; ++slot) {
    if (written.count(static_cast<int32_t>(slot))) continue;
    EXPECT_TRUE(slot_bytes(problem.pool, slot) == slot_bytes(problem.pool_before, slot))
        << "slot " << slot << " is written by no token but changed";
  }
}

TEST_P(GdrDecodeOnIsa, OneTokenPerSequenceWithScatteredSlots) {
  DecodeConfig c;
  c.lengths = {1, 1, 1};
  c.state_indices = {7, 2, 9};
  c.num_slots = 10;
  c.nk = 2, c.nv = 4, c.dk = 16, c.dv = 24;
  check_against_reference(c);
}

// The common serving step: many sequences, one token each, Qwen3-Next-like heads; both pool dtypes, with and
// without gk, and the same bytes for 1..4 threads.
TEST_P(GdrDecodeOnIsa, OneTokenBatchRealisticHeads) {
  for (DType state : {DType::kBF16, DType::kF32}) {
    for (bool with_gk : {false, true}) {
      DecodeConfig c;
      c.lengths.assign(12, 1);
      c.state_indices = {17, 3, 9, 0, 11, 5, 14, 2, 8, 16, 1, 6};
      c.num_slots = 18;
      c.nk = 2, c.nv = 4, c.dk = 128, c.dv = 128;
      c.state = state;
      c.with_gk = with_gk;
      check_against_reference(c);
      DecodeProblem problem(c);
      std::vector<uint8_t> out_one, pool_one;
      for (int threads : {1, 2, 3, 4}) {
        ScopedThreads threads_scope(threads);
        ASSERT_TRUE(problem.run().ok());
        EXPECT_TRUE(ran_multithreaded(threads)) << c.describe();
        if (threads == 1) {
          out_one = problem.out.bytes, pool_one = problem.pool.bytes;
          continue;
        }
        EXPECT_TRUE(problem.out.bytes == out_one) << c.describe() << ": out differs with " << threads << " threads";
        EXPECT_TRUE(problem.pool.bytes == pool_one) << c.describe() << ": pool differs with " << threads << " threads";
      }
    }
  }
}

TEST_P(GdrDecodeOnIsa, SeveralTokensPerSequence) {
  DecodeConfig c;
  c.lengths = {3, 1, 8, 2};
  c.state_indices = {0, 1, 2, 11, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13};
  c.num_slots = 16;
  c.nk = 1, c.nv = 2, c.dk = 32, c.dv = 16;
  check_against_reference(c);
}

TEST_P(GdrDecodeOnIsa, EmptySequencesReadAndWriteNothing) {
  DecodeConfig c;  // txops allows L = 0 (CANN does not): no slot read or written for it
  c.lengths = {0, 2, 0, 1, 0};
  c.state_indices = {3, 1, 0};
  c.num_slots = 5;
  c.nk = 1, c.nv = 2, c.dk = 8, c.dv = 8;
  check_against_reference(c);
}

TEST_P(GdrDecodeOnIsa, NumAcceptedTokensResumesFromLastAcceptedSlot) {
  DecodeConfig c;
  c.lengths = {3, 4, 2, 1};
  c.state_indices = {4, 5, 6, 0, 1, 2, 3, 9, 8, 7};
  c.accepted = {2, 4, 1, 1};
  c.num_slots = 12;
  c.nk = 1, c.nv = 2, c.dk = 16, c.dv = 16;
  check_against_reference(c);
  c.accepted = {3, 1, 2, 1};
  c.seed = 3;
  check_against_reference(c);
}

TEST_P(GdrDecodeOnIsa, PerKeyDecayGk) {
  for (bool with_g : {false, true}) {
    DecodeConfig c;
    c.lengths = {2, 3};
    c.state_indices = {1, 0, 4, 3, 2};
    c.num_slots = 6;
    c.nk = 2, c.nv = 4, c.dk = 24, c.dv = 8;
    c.with_g = with_g;
    c.with_gk = true;
    check_against_reference(c);
  }
}

// One token per sequence on the register kernels (Dk a power-of-two number of vectors): AVX-512 runs the rows
// in pairs (one joint reduction per pair) and the last row of an odd Dv alone; both must agree with the reference
// for both pool dtypes (the bf16 pool on CPUs with AVX512_BF16 has its own loop), with and without a per-key decay.
TEST_P(GdrDecodeOnIsa, OneTokenRowPairsAndOddRowCounts) {
  struct Shape { int64_t dk, dv; };
  for (Shape s : {Shape{16, 1}, Shape{64, 3}, Shape{128, 17}, Shape{128, 2}}) {
    for (DType state : {DType::kBF16, DType::kF32}) {
      for (bool with_gk : {false, true}) {
        DecodeConfig c;
        c.lengths = {1, 1};
        c.state_indices = {2, 0};
        c.num_slots = 3;
        c.nk = 1, c.nv = 2, c.dk = s.dk, c.dv = s.dv;
        c.state = state;
        c.with_gk = with_gk;
        check_against_reference(c);
      }
    }
  }
}

// One token per sequence with rows wider than the register kernels (AVX2: Dk > 64; SCALAR: any): the two-pass
// wide-row kernel, with an odd number of vectors per row and a row count that leaves a partial block of rows.
TEST_P(GdrDecodeOnIsa, OneTokenWideRowsOddShapes) {
  struct Shape { int64_t dk, dv; };
  for (Shape s : {Shape{72, 13}, Shape{136, 6}, Shape{256, 1}}) {
    for (bool with_gk : {false, true}) {
      DecodeConfig c;
      c.lengths = {1, 1, 1};
      c.state_indices = {4, 0, 2};
      c.num_slots = 5;
      c.nk = 1, c.nv = 2, c.dk = s.dk, c.dv = s.dv;
      c.state = with_gk ? DType::kF32 : DType::kBF16;
      c.with_gk = with_gk;
      check_against_reference(c);
    }
  }
}

TEST_P(GdrDecodeOnIsa, HeadRatiosAndOddDims) {
  struct Shape { int64_t nk, nv, dk, dv; };
  for (Shape s : {Shape{1, 8, 5, 31}, Shape{3, 6, 31, 5}, Shape{4, 4, 50, 96}, Shape{1, 2, 96, 50},
                  Shape{2, 4, 128, 128}, Shape{1, 1, 256, 256}}) {
    DecodeConfig c;
    c.lengths = {1, 2};
    c.state_indices = {2, 0, 1};
    c.num_slots = 4;
    c.nk = s.nk, c.nv = s.nv, c.dk = s.dk, c.dv = s.dv;
    c.with_gk = s.dk % 2 == 1;
    check_against_reference(c);
  }
}

TEST_P(GdrDecodeOnIsa, DtypesScalesAndNoG) {
  for (DType act : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (DType state : {DType::kBF16, DType::kF32}) {
      DecodeConfig c;
      c.lengths = {2, 1, 3};
      c.state_indices = {5, 4, 0, 1, 2, 3};
      c.accepted = {1, 1, 2};
      c.num_slots = 7;
      c.nk = 1, c.nv = 2, c.dk = 64, c.dv = 32;
      c.act = act, c.state = state;
      check_against_reference(c);
      c.with_g = false;
      c.scale = 0.7f;
      c.seed = 5;
      check_against_reference(c);
    }
  }
}

// Prefill of L tokens, then one decode step on its final state, equals prefill of L + 1 tokens.
TEST(GdrDecode, PrefillThenDecodeMatchesLongerPrefill) {
  for (DType act : {DType::kBF16, DType::kF32}) {
    const int32_t length = 70;
    PrefillConfig pc;
    pc.lengths = {length + 1};
    pc.nk = 1, pc.nv = 2, pc.dk = 32, pc.dv = 16;
    pc.act = act;
    PrefillProblem longer(pc);
    std::vector<double> out_ref, state_ref;
    longer.reference(&out_ref, &state_ref);

    pc.lengths = {length};
    PrefillProblem shorter(pc);
    auto copy_prefix = [](const HostTensor& src, HostTensor* dst) {
      std::memcpy(dst->bytes.data(), src.bytes.data(), dst->bytes.size());
    };
    copy_prefix(longer.q, &shorter.q);
    copy_prefix(longer.k, &shorter.k);
    copy_prefix(longer.v, &shorter.v);
    copy_prefix(longer.beta, &shorter.beta);
    copy_prefix(longer.g, &shorter.g);
    shorter.initial_state = longer.initial_state;
    SCOPED_TRACE(pc.describe());
    ASSERT_TRUE(shorter.run().ok());

    DecodeConfig dc;
    dc.lengths = {1};
    dc.state_indices = {1};
    dc.num_slots = 3;
    dc.nk = pc.nk, dc.nv = pc.nv, dc.dk = pc.dk, dc.dv = pc.dv;
    dc.act = act;
    dc.state = pc.state;
    DecodeProblem step(dc);
    // Last token of `longer` and the prefill's final state in slot 1.
    auto copy_last_row = [](const HostTensor& src, HostTensor* dst) {
      std::memcpy(dst->bytes.data(), src.bytes.data() + src.bytes.size() - dst->bytes.size(), dst->bytes.size());
    };
    copy_last_row(longer.q, &step.q);
    copy_last_row(longer.k, &step.k);
    copy_last_row(longer.v, &step.v);
    copy_last_row(longer.beta, &step.beta);
    copy_last_row(longer.g, &step.g);
    const size_t slot_size = step.pool_before.bytes.size() / 3;
    std::memcpy(step.pool_before.bytes.data() + slot_size, shorter.final_state.bytes.data(), slot_size);
    ASSERT_TRUE(step.run().ok());

    const int64_t last_row = pc.nv * pc.dv;
    const std::vector<double> last_out(out_ref.end() - last_row, out_ref.end());
    EXPECT_TRUE(matches_reference("gdr_out", step.out.view(), last_out, "prefill+decode: last out", nullptr));
    const TensorView written_slot = TensorView::make(step.pool.bytes.data() + slot_size, step.pool.dtype, 4,
                                                     longer.final_state.shape.data(), nullptr);
    EXPECT_TRUE(matches_reference("gdr_state", written_slot, state_ref, "prefill+decode: state", nullptr));
  }
}

TEST_P(GdrDecodeOnIsa, BitIdenticalForAnyThreadCount) {
  DecodeConfig c;
  c.lengths = {2, 1, 3, 1, 1};
  c.state_indices = {0, 1, 2, 3, 4, 5, 6, 7};
  c.accepted = {2, 1, 1, 1, 1};
  c.num_slots = 9;
  c.nk = 2, c.nv = 8, c.dk = 128, c.dv = 128;
  c.with_gk = true;
  c.state = DType::kBF16;
  DecodeProblem problem(c);
  SCOPED_TRACE(c.describe() + " isa=" + txops::isa_name(isa()));
  std::vector<uint8_t> out_one, pool_one;
  for (int threads : {1, 2, 3, 4}) {
    ScopedThreads threads_scope(threads);
    std::fill(problem.out.bytes.begin(), problem.out.bytes.end(), 0xCD);
    ASSERT_TRUE(problem.run().ok());
    EXPECT_TRUE(ran_multithreaded(threads));
    if (threads == 1) {
      out_one = problem.out.bytes;
      pool_one = problem.pool.bytes;
      continue;
    }
    EXPECT_TRUE(problem.out.bytes == out_one) << "out differs with " << threads << " threads";
    EXPECT_TRUE(problem.pool.bytes == pool_one) << "stateRef differs with " << threads << " threads";
  }
  // Three parts of three grains each run by a team of one: part 0's thread takes the others' grains from their back.
  ScopedThreads three(3);
  ScopedEnv grains("TXOPS_GRAINS_PER_PART", "3");
  txops::testing::ScopedTeamOfOne team;
  std::fill(problem.out.bytes.begin(), problem.out.bytes.end(), 0xCD);
  ASSERT_TRUE(problem.run().ok());
  EXPECT_TRUE(problem.out.bytes == out_one) << "out differs with stolen grains";
  EXPECT_TRUE(problem.pool.bytes == pool_one) << "stateRef differs with stolen grains";
}

// A NaN among one token's fp32 inputs whose payload reaches into its low 16 bits (0x7FFFFFFF: rounded as a number it
// would carry into the sign and become -0) reaches a bf16 pool as NaN: both heads of that token's slot are NaN
// throughout, the other sequence's slot stays finite. Dk = 32 takes the register kernels, Dk = 128 on AVX2 the wide
// pair rows, whose rounding leaves out its NaN test only for tokens without NaN inputs (kernels_one_token-inl.h,
// UpdateInputsHaveNoNaN).
TEST_P(GdrDecodeOnIsa, NaNInputWithLowPayloadStaysNaNInABf16Pool) {
  for (int64_t dk : {32, 128}) {
    DecodeConfig c;
    c.lengths = {1, 1};
    c.state_indices = {0, 1};
    c.num_slots = 2;
    c.nk = 1, c.nv = 2, c.dk = dk, c.dv = 16;
    c.act = DType::kF32;
    c.state = DType::kBF16;
    DecodeProblem problem(c);
    const uint32_t nan_bits = 0x7FFFFFFFu;
    std::memcpy(problem.k.bytes.data() + 5 * sizeof(float), &nan_bits, sizeof(nan_bits));  // token 0, key 5
    SCOPED_TRACE("dk=" + std::to_string(dk) + " isa=" + txops::isa_name(isa()));
    ASSERT_TRUE(problem.run().ok());
    const int64_t per_slot = problem.pool.numel() / c.num_slots;
    int64_t nan_in_slot0 = 0, finite_in_slot1 = 0;
    for (int64_t i = 0; i < per_slot; ++i) {
      nan_in_slot0 += std::isnan(problem.pool.get(i)) ? 1 : 0;
      finite_in_slot1 += std::isfinite(problem.pool.get(per_slot + i)) ? 1 : 0;
    }
    EXPECT_EQ(nan_in_slot0, per_slot) << "the NaN token's slot holds numbers";
    EXPECT_EQ(finite_in_slot1, per_slot) << "the other sequence's slot is not finite";
  }
}

TEST_P(GdrDecodeOnIsa, OutsideGuaranteesStaysFinite) {
  DecodeConfig c;
  c.lengths = {4, 2};
  c.state_indices = {0, 1, 2, 3, 4, 5};
  c.num_slots = 6;
  c.dk = 16, c.dv = 16;
  c.with_gk = true;
  c.act = DType::kF32;
  DecodeProblem problem(c);
  for (int64_t i = 0; i < problem.g.numel(); ++i) problem.g.set(i, -20.0);
  for (int64_t i = 0; i < problem.gk.numel(); ++i) problem.gk.set(i, i % 2 ? -20.0 : 0.0);
  for (int64_t i = 0; i < problem.beta.numel(); ++i) problem.beta.set(i, 1.0);
  InputGenerator gen(4);
  gen.rows_with_norm(&problem.k, 2.0);
  std::vector<double> out_ref, pool_ref;
  problem.reference(&out_ref, &pool_ref);
  SCOPED_TRACE(std::string("g=-20 gk in {0,-20} beta=1 |k|=2 isa=") + txops::isa_name(isa()));
  ASSERT_TRUE(problem.run().ok());
  EXPECT_TRUE(all_finite(problem.out));
  EXPECT_TRUE(all_finite(problem.pool));
  // Few tokens: the recurrent form stays accurate even outside the guaranteed ranges.
  EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "decode outside guarantees: out", nullptr));
  EXPECT_TRUE(matches_reference("gdr_state", problem.pool.view(), pool_ref, "decode outside guarantees: stateRef",
                                nullptr));
}

}  // namespace
}  // namespace gdrtest
