// core_parallel_test.cpp — parallel_for and parallel_parts cover every index exactly once in contiguous balanced
// ranges, for any thread count, and a thread count above the core count is still planned and run that wide;
// CoreDistanceProbe gives every thread of a team the same verdict; work stealing runs every grain once, its owner's
// in order, and moves the grains of a slow part to the others; settings (threads, ISA cap, compat, verbose)
// can be changed and restored at run time, and the ISA txops starts with is the CPU's best under TXOPS_MAX_ISA
// (ctest runs the Settings tests under each cap).
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/parallel.h"
#include "core/work_stealing.h"
#include "core/plan_record.h"
#include "support/isa_threads.h"
#include "txops/txops.h"

namespace txops {
namespace {

TEST(Parallel, EveryIndexOnceForAnyThreadCount) {
  for (int threads = 1; threads <= 5; ++threads) {
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      parallel_for(threads, n, [&](int64_t b, int64_t e) {
        ASSERT_LE(b, e);
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n;
    }
  }
}

TEST(Parallel, PartsCoverEveryIndexOnceWithFixedRanges) {
  for (int parts = 1; parts <= 5; ++parts) {
    for (int64_t n : {0, 1, 3, 7, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      std::vector<std::atomic<int>> part_calls(parts);
      parallel_parts(parts, n, [&](int64_t part, int64_t b, int64_t e) {
        int64_t want_b, want_e;
        balanced_range(n, parts, static_cast<int>(part), &want_b, &want_e);
        ASSERT_EQ(b, want_b);
        ASSERT_EQ(e, want_e);
        ASSERT_LT(b, e);  // empty parts are skipped
        part_calls[part]++;
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "parts " << parts << " n " << n;
      for (int k = 0; k < parts; ++k) ASSERT_LE(part_calls[k].load(), 1);
    }
  }
}

// plan_threads caps at num_threads(), not at the cores, and OpenMP gives parallel_for the team it asks for: on a
// 2-core machine 4 threads still mean a 4-way partition on 4 threads (what the bit-identity tests rely on).
TEST(Parallel, MoreThreadsThanCoresArePlannedAndRunThatWide) {
  const unsigned hw = std::thread::hardware_concurrency();
  const int want = 2 * static_cast<int>(hw == 0 ? 1 : hw) + 1;
  txops::testing::ScopedThreads threads(want);
  EXPECT_EQ(plan_threads(int64_t{1} << 20, 1), want);
  reset_plan_record();
  std::atomic<int> ranges{0};
  parallel_for(want, 1000, [&](int64_t, int64_t) { ranges++; });
  EXPECT_EQ(ranges.load(), want);
  EXPECT_EQ(last_plan_record().widest_team, want);
  reset_plan_record();
  parallel_for(want, 1, [&](int64_t, int64_t) {});  // one item: inline, a team of one
  EXPECT_EQ(last_plan_record().widest_team, 1);
}

// Every thread of a team gets role 0's verdict on the distance between the threads of roles 0 and 1: near under a
// threshold no round trip exceeds, far under one none meets; in a team of three, role 2 only waits for it.
TEST(Parallel, CoreDistanceProbeGivesEveryThreadOneVerdict) {
  for (int threads : {2, 3}) {
    for (double near_ns : {1e12, 1e-9}) {
      CoreDistanceProbe probe;
      std::vector<std::atomic<int>> verdicts(static_cast<size_t>(threads));
      for (std::atomic<int>& v : verdicts) v = -1;
      std::atomic<bool> whole{true};
      parallel_parts(threads, threads, [&](int64_t part, int64_t, int64_t) {
        if (parallel_team_size() < threads) {  // parts on a shared thread would wait on each other for ever
          whole = false;
          return;
        }
        verdicts[part] = probe.near(static_cast<int>(part), 16, near_ns) ? 1 : 0;
      });
      if (!whole) GTEST_SKIP() << "OpenMP gave a team smaller than " << threads;
      for (const std::atomic<int>& v : verdicts)
        EXPECT_EQ(v.load(), near_ns > 1 ? 1 : 0) << threads << " threads, near_ns " << near_ns;
    }
  }
}

TEST(Parallel, BalancedRanges) {
  int64_t b, e, total = 0;
  for (int p = 0; p < 3; ++p) {
    balanced_range(10, 3, p, &b, &e);
    EXPECT_GE(e - b, 3);
    EXPECT_LE(e - b, 4);
    total += e - b;
  }
  EXPECT_EQ(total, 10);
}

// Grains cut each part at about 1/grains of its cost, only where allowed, and never across a part's bound.
TEST(WorkStealing, GrainsFollowCostsCutsAndParts) {
  const std::vector<int64_t> costs = {1, 1, 1, 1, 5, 1, 1, 1, 1, 1, 1, 1};
  std::vector<int64_t> part_start;
  partition_by_cost(costs, 2, &part_start);  // 16 in all: [0, 5) costs 9, [5, 12) 7
  ASSERT_EQ(part_start, (std::vector<int64_t>{0, 5, 12}));
  // Grains of at least 3 and of 3, cut before even items only.
  GrainSplit split = split_into_grains(part_start, costs, 3, [](int64_t item) { return item % 2 == 0; });
  EXPECT_EQ(split.part_grain, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(split.grain_start, (std::vector<int64_t>{0, 4, 5, 8, 12}));
  split = split_into_grains(part_start, costs, 1, [](int64_t) { return true; });
  EXPECT_EQ(split.grain_start, (std::vector<int64_t>{0, 5, 12}));
  split = split_into_grains({0, 12}, costs, 4, [](int64_t) { return true; });  // one part: not cut
  EXPECT_EQ(split.grain_start, (std::vector<int64_t>{0, 12}));
  split = split_into_grains({0, 0, 3}, {1, 1, 1}, 8, [](int64_t) { return true; });  // an empty part owns none
  EXPECT_EQ(split.part_grain, (std::vector<int64_t>{0, 0, 3}));
  EXPECT_EQ(split.grain_start, (std::vector<int64_t>{0, 1, 2, 3}));
}

// One thread alone: its own grains from the front in order, then the next part's from the back, and so on.
TEST(WorkStealing, OwnGrainsFirstThenTheOthersFromTheBack) {
  GrainSplit split;
  split.part_grain = {0, 2, 5, 6};
  split.grain_start = {0, 1, 2, 3, 4, 5, 6};
  GrainQueue queue(split);
  std::vector<int64_t> order;
  for (int64_t g; (g = queue.next(1)) >= 0;) order.push_back(g);
  EXPECT_EQ(order, (std::vector<int64_t>{2, 3, 4, 5, 1, 0}));
  EXPECT_EQ(queue.next(0), -1);
}

// Every grain runs once for 1-5 parts, on full teams and on a team of one (which takes every part's grains), and
// a part that runs slowly has its last grains taken by the others.
TEST(WorkStealing, EveryItemOnceAndSlowPartsLoseGrains) {
  for (int parts = 1; parts <= 5; ++parts) {
    for (bool short_team : {false, true}) {
      const int64_t n = 40 * parts;
      std::vector<int64_t> part_start;
      partition_by_cost(std::vector<int64_t>(n, 1), parts, &part_start);
      const GrainSplit split =
          split_into_grains(part_start, std::vector<int64_t>(n, 1), 8, [](int64_t) { return true; });
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int64_t> taken_from_part0{0};
      const int levels = omp_get_max_active_levels();
      if (short_team) omp_set_max_active_levels(0);
      run_grains(split, [&](int64_t part, int64_t b, int64_t e) {
        if (part == 0 && !short_team) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a slow thread
        if (part != 0 && b < part_start[1]) taken_from_part0 += e - b;
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      omp_set_max_active_levels(levels);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "parts " << parts << " item " << i;
      if (parts > 1 && !short_team) EXPECT_GT(taken_from_part0.load(), 0) << "parts " << parts;
    }
  }
}

// Equal-cost items (the RoPE ops' rows): parallel_for's parts, each cut into balanced grains; run, every item runs
// once for 1-5 parts, on full teams and on a team of one.
TEST(WorkStealing, EvenSplitsRunEveryItemOnce) {
  GrainSplit split = split_evenly(21, 2, 4);  // parts [0, 11) and [11, 21)
  EXPECT_EQ(split.part_grain, (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(split.grain_start, (std::vector<int64_t>{0, 3, 6, 9, 11, 14, 17, 19, 21}));
  split = split_evenly(3, 4, 8);  // fewer items than parts: one grain per item, the last part owns none
  EXPECT_EQ(split.part_grain, (std::vector<int64_t>{0, 1, 2, 3, 3}));
  EXPECT_EQ(split.grain_start, (std::vector<int64_t>{0, 1, 2, 3}));
  split = split_evenly(10, 1, 8);  // one part: not cut
  EXPECT_EQ(split.grain_start, (std::vector<int64_t>{0, 10}));
  for (int threads = 1; threads <= 5; ++threads) {
    for (bool short_team : {false, true}) {
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        const int levels = omp_get_max_active_levels();
        if (short_team) omp_set_max_active_levels(0);
        run_grains(split_evenly(n, threads, 8), [&](int64_t, int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i]++;
        });
        omp_set_max_active_levels(levels);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " item " << i;
      }
    }
  }
}

TEST(Settings, OverridableAtRunTime) {
  const int threads = num_threads();
  set_num_threads(3);
  EXPECT_EQ(num_threads(), 3);
  EXPECT_EQ(plan_threads(1000, 10), 3);
  EXPECT_EQ(plan_threads(5, 10), 1);
  set_num_threads(threads);
  const Isa isa = active_isa();
  set_max_isa(Isa::kScalar);
  EXPECT_EQ(active_isa(), Isa::kScalar);
  EXPECT_FALSE(cpu_has_avx512_bf16());
  set_max_isa(isa);
  EXPECT_EQ(active_isa(), isa);
  set_compat_mode(Compat::kCann);
  EXPECT_EQ(compat_mode(), Compat::kCann);
  set_compat_mode(Compat::kTxops);
  EXPECT_STREQ(isa_name(Isa::kAvx512), "avx512");
}

// Every scope restores the cap, so active_isa() is still the one txops started with: the CPU's best ISA capped by
// TXOPS_MAX_ISA, with CPU support decided independently of txops (support/isa_threads.cpp).
TEST(Settings, StartsOnTheCpuBestIsaUnderTxopsMaxIsa) {
  const char* env = std::getenv("TXOPS_MAX_ISA");
  EXPECT_EQ(active_isa(), txops::testing::expected_startup_isa())
      << "TXOPS_MAX_ISA=" << (env ? env : "(unset)") << ", active " << isa_name(active_isa());
  for (Isa isa : txops::testing::runnable_isas()) {
    txops::testing::ScopedIsa scoped(isa);  // fails if set_max_isa cannot reach it
  }
}

}  // namespace
}  // namespace txops
