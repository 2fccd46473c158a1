// gdr_chunk_parallel_test.cpp — the chunked prefill kernel's chunk mode (parallel over chunks: phase one of a wave of
// chunks on all threads, then the state pass over (sequence, head, Dv column block)), pipeline mode (each (sequence,
// head, column block) on a thread of its own, phase one made in turns and handed over) and the token-weighted
// partition of items mode. Chunk and pipeline mode (forced with TXOPS_GDR_SPLIT) are checked against the fp64 oracle
// on each ISA the CPU has (one test per ISA), and for bit identity with items mode on 1 thread over 1..4 threads
// (several waves, column blocks that split a vector group, ragged batches with empty sequences, fewer items than
// threads); the planner's own choice is checked through TXOPS_VERBOSE.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/plan_record.h"
#include "support/gdr_problem.h"

namespace gdrtest {
namespace {

using txops::DType;
using txops::Isa;

TXOPS_ISA_TEST_SUITE(GdrChunkParallelOnIsa);

constexpr int32_t kChunk = 64;

std::vector<PrefillConfig> chunk_mode_configs() {
  std::vector<PrefillConfig> configs;
  PrefillConfig c;
  c.lengths = {20 * kChunk + 17};  // one item: many waves, every column block of one state
  c.dk = 32, c.dv = 50;            // Dv padded to 64: four 16-column groups, the last one partly padding
  configs.push_back(c);
  c.lengths = {3 * kChunk + 5, 0, kChunk, 1, 0, 2 * kChunk};  // ragged, empty sequences, items ending early
  c.nk = 1, c.nv = 2, c.dk = 24, c.dv = 40;
  c.state = DType::kBF16;
  c.seed = 2;
  configs.push_back(c);
  c.lengths = {kChunk - 1};  // a single partial chunk
  c.nk = 1, c.nv = 3, c.dk = 16, c.dv = 16;
  c.act = DType::kF32;
  c.state = DType::kF32;
  c.seed = 3;
  configs.push_back(c);
  c.lengths = {2 * kChunk + 9, 70};  // wide heads: Dv = 256 in sixteen column groups
  c.nk = 1, c.nv = 1, c.dk = 128, c.dv = 256;
  c.act = DType::kBF16;
  c.with_g = false;
  c.seed = 4;
  configs.push_back(c);
  return configs;
}

// Pipeline mode takes the configs whose (item, column block) units fit the three threads (the first: one item in
// three blocks; the third: three items of one block each) and falls back to chunk mode for the others.
TEST_P(GdrChunkParallelOnIsa, ChunkAndPipelineModeMatchTheOracle) {
  for (const char* mode : {"chunks", "pipeline"}) {
    ScopedEnv split("TXOPS_GDR_SPLIT", mode);
    for (const PrefillConfig& config : chunk_mode_configs()) {
      PrefillProblem problem(config);
      std::vector<double> out_ref, state_ref;
      problem.reference(&out_ref, &state_ref);
      PrefillKernelScope kernel("chunked");
      ScopedThreads threads(3);
      SCOPED_TRACE(config.describe() + " isa=" + txops::isa_name(isa()) + " mode=" + mode);
      const txops::Status st = problem.run();
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "chunk mode out", nullptr));
      EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref, "chunk mode state", nullptr));
    }
  }
}

// Chunk mode runs the functions items mode runs, on the same data, a column block with the arithmetic of the
// whole row: the bits equal items mode's on one thread, for any thread count.
TEST_P(GdrChunkParallelOnIsa, ChunkModeBitIdenticalToItemsMode) {
  for (const PrefillConfig& config : chunk_mode_configs()) {
    PrefillProblem problem(config);
    PrefillKernelScope kernel("chunked");
    SCOPED_TRACE(config.describe() + " isa=" + txops::isa_name(isa()));
    expect_chunk_mode_bit_identical_to_items_mode(problem);
  }
}

// The planner's choice (no TXOPS_GDR_SPLIT): bits never depend on the thread count, whichever mode it takes.
TEST_P(GdrChunkParallelOnIsa, AutoModeBitIdenticalForOneToFourThreads) {
  ScopedEnv split("TXOPS_GDR_SPLIT", nullptr);
  for (const PrefillConfig& config : chunk_mode_configs()) {
    PrefillProblem problem(config);
    PrefillKernelScope kernel("chunked");
    SCOPED_TRACE(config.describe() + " isa=" + txops::isa_name(isa()));
    expect_bit_identical_across_threads(problem);
  }
}

// Pipeline mode's blocks wait on each other, so they need a thread each: where OpenMP gives a smaller team than the
// plan asked for (here: parallel regions made inactive, a team of one), the units run in column mode instead, with
// the same bits, and the call returns.
TEST(GdrChunkParallel, PipelineModeOnAShortTeamRunsColumnMode) {
  PrefillKernelScope kernel("chunked");
  PrefillConfig c;
  c.lengths = {9 * kChunk + 3};
  c.dk = 32, c.dv = 64;
  PrefillProblem problem(c);
  std::vector<uint8_t> out_one, state_one;
  {
    ScopedEnv split("TXOPS_GDR_SPLIT", "items");
    ScopedThreads one(1);
    ASSERT_TRUE(problem.run().ok());
    out_one = problem.out.bytes, state_one = problem.final_state.bytes;
  }
  ScopedEnv split("TXOPS_GDR_SPLIT", "pipeline");
  ScopedThreads two(2);
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(0);
  std::fill(problem.out.bytes.begin(), problem.out.bytes.end(), 0xCD);
  const std::string log = verbose_log(problem);
  omp_set_max_active_levels(levels);
  EXPECT_NE(log.find("mode=pipeline(2 column blocks)"), std::string::npos) << log;
  EXPECT_TRUE(problem.out.bytes == out_one) << "out differs from items mode";
  EXPECT_TRUE(problem.final_state.bytes == state_one) << "finalState differs from items mode";
}

// The planner's pipeline mode measures at every call how far apart the threads of its units are (a cache line's
// round trip against TXOPS_GDR_NEAR_NS, 150 ns unless set): near, the blocks hand their records over; far, they run
// in column mode. Both ways give items mode's bits, and the plan record says which ran. fp32 activations: the
// planner takes pipeline mode on every CPU (column mode on the AMX path, which is bf16 only).
TEST(GdrChunkParallel, PlannerPipelineModeRunsColumnModeOnFarCores) {
  ScopedEnv split("TXOPS_GDR_SPLIT", nullptr);
  PrefillKernelScope kernel("chunked");
  PrefillConfig c;
  c.lengths = {9 * kChunk + 3};
  c.dk = 32, c.dv = 64;
  c.act = DType::kF32;
  PrefillProblem problem(c);
  std::vector<uint8_t> out_one, state_one;
  {
    ScopedThreads one(1);
    ASSERT_TRUE(problem.run().ok());
    out_one = problem.out.bytes, state_one = problem.final_state.bytes;
  }
  ScopedThreads two(2);
  for (const char* near_ns : {"1e9", "1e-9"}) {
    SCOPED_TRACE(std::string("TXOPS_GDR_NEAR_NS=") + near_ns);
    ScopedEnv near("TXOPS_GDR_NEAR_NS", near_ns);
    std::fill(problem.out.bytes.begin(), problem.out.bytes.end(), 0xCD);
    txops::reset_plan_record();
    const std::string log = verbose_log(problem);
    EXPECT_NE(log.find("mode=pipeline(2 column blocks)"), std::string::npos) << log;
    if (txops::last_plan_record().widest_team == 2)  // a whole team of two (it waits on nothing otherwise)
      EXPECT_EQ(txops::last_plan_record().pipeline_handover, std::string(near_ns) == "1e9" ? 1 : 0);
    EXPECT_TRUE(problem.out.bytes == out_one) << "out differs from 1 thread";
    EXPECT_TRUE(problem.final_state.bytes == state_one) << "finalState differs from 1 thread";
  }
}

// Few items spread over the threads: one sequence of one head by column blocks (pipeline mode; column mode on
// the AMX path), a head of one column group and two unequal sequences by chunks; many equal items stay in items
// mode; one thread never splits.
TEST(GdrChunkParallel, PlannerSplitsChunksWhenItemsCannotBalance) {
  ScopedEnv split("TXOPS_GDR_SPLIT", nullptr);
  PrefillKernelScope kernel("chunked");
  PrefillConfig few;
  few.lengths = {5 * kChunk};
  few.dv = 64;
  PrefillProblem one_item(few);
  {
    ScopedThreads threads(2);
    const std::string log = verbose_log(one_item);
    const bool amx = log.find("x=amx") != std::string::npos;
    EXPECT_NE(log.find(amx ? "mode=columns(2 column blocks)" : "mode=pipeline(2 column blocks)"), std::string::npos)
        << log;
  }
  {
    PrefillConfig narrow = few;
    narrow.dv = 16;  // one 16-column group: no second block for the other thread
    PrefillProblem one_group(narrow);
    ScopedThreads threads(2);
    const std::string log = verbose_log(one_group);
    EXPECT_NE(log.find("mode=chunks"), std::string::npos) << log;
  }
  {
    PrefillConfig unequal = few;
    unequal.lengths = {5 * kChunk, kChunk};
    PrefillProblem two_items(unequal);
    ScopedThreads threads(2);
    const std::string log = verbose_log(two_items);
    EXPECT_NE(log.find("mode=chunks"), std::string::npos) << log;
  }
  {
    ScopedThreads threads(1);
    const std::string log = verbose_log(one_item);
    EXPECT_NE(log.find("mode=items"), std::string::npos) << log;
  }
  PrefillConfig many = few;
  many.lengths = {2 * kChunk, 2 * kChunk};
  many.nk = 2, many.nv = 4;
  PrefillProblem eight_items(many);
  ScopedThreads threads(2);
  const std::string log = verbose_log(eight_items);
  EXPECT_NE(log.find("mode=items"), std::string::npos) << log;
}

// Ragged lengths: items mode splits by tokens, not by item count (one long sequence and seven short ones on two
// threads stay in items mode, each thread near half the tokens) — the result is checked, the mode is logged.
TEST(GdrChunkParallel, RaggedBatchMatchesTheOracleOnTwoThreads) {
  ScopedEnv split("TXOPS_GDR_SPLIT", nullptr);
  PrefillConfig c;
  c.lengths = {9 * kChunk, 3, 17, 64, 1, 0, 40, 90};
  c.nk = 2, c.nv = 4, c.dk = 16, c.dv = 24;
  PrefillProblem problem(c);
  std::vector<double> out_ref, state_ref;
  problem.reference(&out_ref, &state_ref);
  PrefillKernelScope kernel("chunked");
  ScopedThreads threads(2);
  ASSERT_TRUE(problem.run().ok());
  EXPECT_TRUE(matches_reference("gdr_out", problem.out.view(), out_ref, "ragged out", nullptr));
  EXPECT_TRUE(matches_reference("gdr_state", problem.final_state.view(), state_ref, "ragged state", nullptr));
}

}  // namespace
}  // namespace gdrtest
