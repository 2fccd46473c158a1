// core_parallel_test.cpp — parallel_for and parallel_parts cover every index exactly once in contiguous balanced
// ranges, for any thread count; settings (threads, ISA cap, compat, verbose) can be changed and restored at run time.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/parallel.h"
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

}  // namespace
}  // namespace txops
