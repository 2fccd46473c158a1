// isa_threads.h — the one test-support layer for the global settings the tests of both operator families sweep:
// RAII scopes that restore them (ISA cap, thread count, compat mode, environment variables); the ISAs this run
// can really execute (decided here from the CPU's feature bits, the Highway targets built, and TXOPS_MAX_ISA — not
// from txops' own cap, which set_max_isa lowers silently); a gtest fixture that runs a test once per ISA and
// skips, naming the ISA, the ones this run cannot execute; and checks of what the planner really chose, read from
// the thread-local plan record (core/plan_record.h): the ISA of the kernels, the threads of the partition, and the
// OpenMP team that ran it.
//
// Threads: plan_threads() caps at num_threads(), not at the core count, and parallel_for asks OpenMP for that
// many threads (libgomp gives them unless OMP_DYNAMIC / OMP_THREAD_LIMIT say otherwise), so on a 2-core machine
// set_num_threads(4) still partitions the work 4 ways on 4 (time-shared) threads. A bit-identity test compares
// partitions, not physical parallelism: the checks below assert the partition and the team, which is what such a
// test depends on, whatever the core count.
#ifndef TXOPS_TESTS_SUPPORT_ISA_THREADS_H_
#define TXOPS_TESTS_SUPPORT_ISA_THREADS_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/plan_record.h"
#include "txops/txops.h"

namespace txops {
namespace testing {

// ---- ISAs -------------------------------------------------------------------------------------------------
// Scalar, AVX2, AVX-512: what ISA-parameterised tests are instantiated over (each one runs or is skipped).
std::vector<Isa> all_isas();
const char* isa_label(Isa isa);  // "scalar", "AVX2", "AVX-512"
// Whether this CPU has what Highway's target for `isa` needs (CPUID feature bits, read here).
bool cpu_has(Isa isa);
// Why `isa` cannot run in this process ("AVX-512 not available on this CPU", "AVX2 kernels not built",
// "excluded by TXOPS_MAX_ISA=scalar"), or "" when it can.
std::string isa_unavailable(Isa isa);
std::vector<Isa> runnable_isas();  // those with no reason, scalar first
// The ISA txops should start with: the best this CPU has, capped by TXOPS_MAX_ISA.
Isa expected_startup_isa();

// ---- scoped settings ----------------------------------------------------------------------------------
// Caps the ISA at `isa` and records a failure unless active_isa() then is `isa` (set_max_isa caps silently at
// what the CPU has); restores the previous cap.
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa);
  ~ScopedIsa();
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;

 private:
  Isa saved_;
};
// set_num_threads(n), restoring the previous count.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int saved_;
};
// Parallel regions inactive (omp_set_max_active_levels(0)): every region runs on a team of one, so the thread of
// part 0 of a work-stealing run takes every other part's grains (core/work_stealing.h). Restores the setting.
class ScopedTeamOfOne {
 public:
  ScopedTeamOfOne();
  ~ScopedTeamOfOne();
  ScopedTeamOfOne(const ScopedTeamOfOne&) = delete;
  ScopedTeamOfOne& operator=(const ScopedTeamOfOne&) = delete;

 private:
  int saved_;
};
class ScopedCompat {
 public:
  explicit ScopedCompat(Compat mode);
  ~ScopedCompat();
  ScopedCompat(const ScopedCompat&) = delete;
  ScopedCompat& operator=(const ScopedCompat&) = delete;

 private:
  Compat saved_;
};
// Sets an environment variable (value null: unsets it) for its lifetime, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, saved_;
  bool had_ = false;
};

// ---- one test per ISA -----------------------------------------------------------------------------------
// The fixture of an ISA-parameterised suite: SetUp skips the test, naming the ISA and the reason, when this run
// cannot execute GetParam(); otherwise the ISA cap is GetParam() (checked) for the test's body.
class IsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override;
  void TearDown() override;
  Isa isa() const { return GetParam(); }

 private:
  std::unique_ptr<ScopedIsa> scope_;
};
std::string isa_test_name(const ::testing::TestParamInfo<Isa>& info);  // "scalar", "avx2", "avx512"
int fp32_lanes(Isa isa);  // 1, 8, 16: the fp32 lanes of the ISA's vectors

// Declares fixture `Suite` (an IsaTest) and instantiates its TEST_Ps once per ISA: Suite.Name/scalar, /avx2, /avx512.
#define TXOPS_ISA_TEST_SUITE(Suite)                                                               \
  class Suite : public ::txops::testing::IsaTest {};                                              \
  INSTANTIATE_TEST_SUITE_P(, Suite, ::testing::ValuesIn(::txops::testing::all_isas()),            \
                           ::txops::testing::isa_test_name)

// ---- what the planner chose (core/plan_record.h) ----------------------------------------------------------
// Clears this thread's plan record; call before an op so that its check is not answered by an older plan.
void forget_plan();
PlanRecord last_plan();
std::string describe(const PlanRecord& record);  // "kernel=rope_rows_simd isa=avx2 threads=4 team=4"
// "" when an op planned since forget_plan() and its kernels are `isa`'s; else what ran instead.
std::string plan_isa_error(Isa isa);
::testing::AssertionResult planned_on(Isa isa);
// The last plan partitioned its work over exactly `threads` threads and parallel_for ran a team that wide.
::testing::AssertionResult ran_on_threads(int threads);
// For a bit-identity test run with `requested` > 1 threads: the plan used more than one thread (at most
// `requested`) and the OpenMP team was as wide as the plan; with requested == 1, exactly one thread.
::testing::AssertionResult ran_multithreaded(int requested);

}  // namespace testing
}  // namespace txops

#endif  // TXOPS_TESTS_SUPPORT_ISA_THREADS_H_
