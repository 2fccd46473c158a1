// isa_threads_test.cpp — the checks of support/isa_threads.h can fail: a cap the CPU cannot honour is reported
// (the silent set_max_isa cap that once ran AVX2 kernels under the AVX-512 name), a plan on another ISA, no plan at
// all, and a "multi-thread" run that planned a single thread are each caught.
#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>

#include "support/rope_cases.h"

namespace txops {
namespace {

using namespace txops::testing;

TEST(IsaThreads, ScopedIsaReportsACapTheCpuCannotHonour) {
  Isa missing = Isa::kScalar;
  for (Isa isa : all_isas())
    if (!cpu_has(isa)) missing = isa;
  if (missing == Isa::kScalar) GTEST_SKIP() << "this CPU has every ISA: no cap to refuse";
  const Isa before = active_isa();
  EXPECT_NONFATAL_FAILURE({ ScopedIsa scoped(missing); }, "active: the test would run another ISA's kernels");
  EXPECT_EQ(active_isa(), before);
  EXPECT_NE(isa_unavailable(missing).find("not available on this CPU"), std::string::npos);
}

TEST(IsaThreads, PlanChecksCatchAnotherIsaAndNoPlan) {
  InterleaveRopeCase c;
  for (Isa isa : runnable_isas()) {
    ScopedIsa scoped(isa);
    ASSERT_EQ(run_case(c), "");
    EXPECT_TRUE(planned_on(isa)) << describe(last_plan());
    for (Isa other : all_isas())
      if (other != isa) EXPECT_FALSE(planned_on(other)) << describe(last_plan());
  }
  forget_plan();
  EXPECT_FALSE(planned_on(active_isa()));
  EXPECT_NE(plan_isa_error(active_isa()).find("planned no kernel"), std::string::npos);
}

TEST(IsaThreads, ThreadChecksCatchASingleThreadPartition) {
  InterleaveRopeCase small;  // 2 x 3 x 5 x 64 channels: far below 32K per thread, always one thread
  ScopedThreads four(4);
  ASSERT_EQ(run_case(small), "");
  EXPECT_FALSE(ran_multithreaded(4));
  EXPECT_FALSE(ran_on_threads(4));
  EXPECT_TRUE(ran_on_threads(1));
  InterleaveRopeCase big = small;  // 131072 channels: 4 threads
  big.B = 2, big.N = 16, big.S = 32, big.D = 128, big.Bc = 2, big.Sc = 32;
  ASSERT_EQ(run_case(big), "");
  EXPECT_TRUE(ran_multithreaded(4)) << describe(last_plan());
  EXPECT_TRUE(ran_on_threads(4)) << describe(last_plan());
  EXPECT_FALSE(ran_on_threads(3));
}

}  // namespace
}  // namespace txops
