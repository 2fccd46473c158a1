// plan_record.h — introspection for tests: what the last plan made on this thread chose (the ISA of the kernels it
// runs, the threads it partitions the work over, the kernel name — the fields TXOPS_VERBOSE prints), and the widest
// OpenMP team a parallel_for started from this thread has run since the record was reset. Planners of both
// operator families call record_plan(); parallel_for calls record_parallel_team(). Thread-local: a test resets it,
// calls an op (plan and run happen on the calling thread), then reads it.
#ifndef TXOPS_CORE_PLAN_RECORD_H_
#define TXOPS_CORE_PLAN_RECORD_H_

#include "txops/txops.h"

namespace txops {

struct PlanRecord {
  int plans = 0;           // plans recorded on this thread since reset_plan_record()
  Isa isa = Isa::kScalar;  // the last plan's kernels: their ISA after select_kernel's fallback
  int threads = 0;         // the threads (parts) the last plan partitions its work over
  const char* kernel = ""; // the last plan's kernel family, as TXOPS_VERBOSE names it (a static string)
  int widest_team = 0;     // widest team a parallel_for from this thread ran since the reset (1: inline; 0: none)
  int pipeline_handover = -1;  // the last run in the GDR prefill's pipeline mode: 1 its units handed the records
                               // over, 0 they ran in column mode (cores far apart, or a smaller team); -1 none
};

void record_plan(Isa isa, int threads, const char* kernel);
void record_parallel_team(int team);
void record_pipeline_handover(bool handed_over);
PlanRecord last_plan_record();
void reset_plan_record();

// The ISA whose kernels TXOPS_SELECT_KERNEL(isa, ...) returns in this build (the Highway targets compiled in).
Isa compiled_isa(Isa isa);

}  // namespace txops

#endif  // TXOPS_CORE_PLAN_RECORD_H_
