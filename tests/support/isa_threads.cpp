// isa_threads.cpp — scoped settings, the runnable ISAs, the per-ISA fixture and the plan checks (isa_threads.h).
#include "support/isa_threads.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>

#include <hwy/targets.h>

namespace txops {
namespace testing {

// ---- ISAs -------------------------------------------------------------------------------------------------
std::vector<Isa> all_isas() { return {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}; }

const char* isa_label(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "AVX2";
    case Isa::kAvx512: return "AVX-512";
  }
  return "?";
}

bool cpu_has(Isa isa) {
  // Highway's own CPUID check for the target the kernels are compiled for (AVX3 = AVX-512 F/VL/DQ/BW), taken
  // directly rather than through txops' settings.
  const int64_t supported = hwy::SupportedTargets();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return (supported & HWY_AVX2) != 0;
    case Isa::kAvx512: return (supported & HWY_AVX3) != 0;
  }
  return false;
}

namespace {

// TXOPS_MAX_ISA as txops reads it (once, at start): unset or unknown means no cap.
Isa env_cap() {
  const char* env = std::getenv("TXOPS_MAX_ISA");
  if (env == nullptr) return Isa::kAvx512;
  if (std::strcmp(env, "scalar") == 0) return Isa::kScalar;
  if (std::strcmp(env, "avx2") == 0) return Isa::kAvx2;
  return Isa::kAvx512;
}

}  // namespace

std::string isa_unavailable(Isa isa) {
  if (!cpu_has(isa)) return std::string(isa_label(isa)) + " not available on this CPU";
  if (compiled_isa(isa) != isa) return std::string(isa_label(isa)) + " kernels not built";
  if (static_cast<int>(isa) > static_cast<int>(env_cap()))
    return std::string(isa_label(isa)) + " excluded by TXOPS_MAX_ISA=" + std::getenv("TXOPS_MAX_ISA");
  return "";
}

std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (Isa isa : all_isas())
    if (isa_unavailable(isa).empty()) out.push_back(isa);
  return out;
}

Isa expected_startup_isa() {
  Isa best = Isa::kScalar;
  for (Isa isa : all_isas())
    if (cpu_has(isa) && static_cast<int>(isa) <= static_cast<int>(env_cap())) best = isa;
  return best;
}

// ---- scoped settings ----------------------------------------------------------------------------------
ScopedIsa::ScopedIsa(Isa isa) : saved_(active_isa()) {
  set_max_isa(isa);
  if (active_isa() != isa) {
    ADD_FAILURE() << "set_max_isa(" << isa_name(isa) << ") left " << isa_name(active_isa())
                  << " active: the test would run another ISA's kernels under " << isa_name(isa) << "'s name";
  }
}
ScopedIsa::~ScopedIsa() { set_max_isa(saved_); }

ScopedThreads::ScopedThreads(int n) : saved_(num_threads()) { set_num_threads(n); }
ScopedThreads::~ScopedThreads() { set_num_threads(saved_); }

ScopedTeamOfOne::ScopedTeamOfOne() : saved_(omp_get_max_active_levels()) { omp_set_max_active_levels(0); }
ScopedTeamOfOne::~ScopedTeamOfOne() { omp_set_max_active_levels(saved_); }

ScopedCompat::ScopedCompat(Compat mode) : saved_(compat_mode()) { set_compat_mode(mode); }
ScopedCompat::~ScopedCompat() { set_compat_mode(saved_); }

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  const char* env = std::getenv(name);
  had_ = env != nullptr;
  if (had_) saved_ = env;
  if (value != nullptr) setenv(name, value, 1);
  else unsetenv(name);
}
ScopedEnv::~ScopedEnv() {
  if (had_) setenv(name_.c_str(), saved_.c_str(), 1);
  else unsetenv(name_.c_str());
}

// ---- one test per ISA -----------------------------------------------------------------------------------
void IsaTest::SetUp() {
  const std::string why = isa_unavailable(GetParam());
  if (!why.empty()) GTEST_SKIP() << isa_name(GetParam()) << ": " << why;
  scope_ = std::make_unique<ScopedIsa>(GetParam());
}

void IsaTest::TearDown() { scope_.reset(); }

std::string isa_test_name(const ::testing::TestParamInfo<Isa>& info) { return isa_name(info.param); }

int fp32_lanes(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return 16;
    case Isa::kAvx2: return 8;
    default: return 1;
  }
}

// ---- what the planner chose -------------------------------------------------------------------------------
void forget_plan() { reset_plan_record(); }
PlanRecord last_plan() { return last_plan_record(); }

std::string describe(const PlanRecord& r) {
  if (r.plans == 0) return "no plan recorded";
  return std::string("kernel=") + r.kernel + " isa=" + isa_name(r.isa) + " threads=" + std::to_string(r.threads) +
         " team=" + std::to_string(r.widest_team);
}

std::string plan_isa_error(Isa isa) {
  const PlanRecord r = last_plan();
  if (r.plans == 0) return "the op planned no kernel (expected " + std::string(isa_name(isa)) + " kernels)";
  if (r.isa != isa) return "ran " + describe(r) + " where " + isa_name(isa) + " kernels were expected";
  return "";
}

::testing::AssertionResult planned_on(Isa isa) {
  const std::string err = plan_isa_error(isa);
  if (err.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << err;
}

::testing::AssertionResult ran_on_threads(int threads) {
  const PlanRecord r = last_plan();
  if (r.plans > 0 && r.threads == threads && r.widest_team == threads) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected a " << threads << "-thread partition run by " << threads
                                       << " threads, got " << describe(r);
}

::testing::AssertionResult ran_multithreaded(int requested) {
  if (requested <= 1) return ran_on_threads(1);
  const PlanRecord r = last_plan();
  if (r.plans > 0 && r.threads > 1 && r.threads <= requested && r.widest_team == r.threads)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "with " << requested << " threads requested, expected a partition over"
                                       << " 2.." << requested << " threads run by as many, got " << describe(r)
                                       << (r.threads <= 1 ? " (this case tests no multi-thread partition)" : "");
}

}  // namespace testing
}  // namespace txops
