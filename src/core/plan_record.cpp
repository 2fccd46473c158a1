// plan_record.cpp — the thread-local "last plan" record (plan_record.h).
#include "core/plan_record.h"

#include <hwy/highway.h>

#include "core/isa_dispatch.h"

namespace txops {
namespace {
thread_local PlanRecord t_record;
}  // namespace

void record_plan(Isa isa, int threads, const char* kernel) {
  t_record.plans++;
  t_record.isa = isa;
  t_record.threads = threads;
  t_record.kernel = kernel;
}

void record_parallel_team(int team) {
  if (team > t_record.widest_team) t_record.widest_team = team;
}

void record_pipeline_handover(bool handed_over) { t_record.pipeline_handover = handed_over ? 1 : 0; }

PlanRecord last_plan_record() { return t_record; }
void reset_plan_record() { t_record = PlanRecord(); }

Isa compiled_isa(Isa isa) {
  // Non-null stand-ins where this build (the same HWY_DISABLED_TARGETS as the kernels) compiles the target.
  static int built;
  return selected_isa<int>(isa, (HWY_TARGETS & HWY_AVX3) ? &built : nullptr,
                           (HWY_TARGETS & HWY_AVX2) ? &built : nullptr);
}

}  // namespace txops
