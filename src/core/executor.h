// executor.h — aclOpExecutor: the plan made by an aclnnXxxGetWorkspaceSize call, run once by aclnnXxx — or,
// after aclSetAclOpExecutorRepeatable, any number of times until aclDestroyAclOpExecutor (both in executor.cpp).
// Live executors sit in a registry (a set under a mutex) so that running one twice, running or destroying a
// pointer that never was one (or was destroyed), returns an error instead of touching freed memory.
// Threads: the registry and each executor's flags are guarded by the registry mutex. A repeatable executor runs
// on one stream at a time (CANN's rule): it carries a "running" flag, and a run (or a destroy) that starts while
// another thread is running it is refused with 161002 — never two runs at once on one executor's plan.
#ifndef TXOPS_CORE_EXECUTOR_H_
#define TXOPS_CORE_EXECUTOR_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "aclnn/acl_meta.h"
#include "runtime/acl_memory.h"
#include "txops/txops.h"

struct aclOpExecutor {
  virtual ~aclOpExecutor() = default;
  virtual txops::Status run(void* workspace) = 0;
  const char* api_name = "";     // "aclnnInterleaveRope"
  uint64_t workspace_size = 0;
  // Guarded by the registry mutex (executor.cpp).
  bool repeatable = false;  // aclSetAclOpExecutorRepeatable: phase two does not consume it
  bool running = false;     // a repeatable executor's run is under way
  uint64_t runs = 0;        // runs started
  // The aclrtMalloc'd blocks its tensors point into (phase one), checked to be still live before each run.
  std::vector<txops::UsedBlock> used_blocks;
};

namespace txops {

template <class RunFn>
class LambdaExecutor final : public aclOpExecutor {
 public:
  explicit LambdaExecutor(RunFn fn) : fn_(std::move(fn)) {}
  Status run(void* workspace) override { return fn_(workspace); }

 private:
  RunFn fn_;
};

// Phase one, success path: registers a new executor running `fn(workspace)` and fills the out-params.
// Phase one, failure path: call finish_phase_one(api, status, ...) with the failed status instead.
aclnnStatus publish_executor(aclOpExecutor* executor, const char* api_name, uint64_t workspace_size,
                             uint64_t* workspace_size_out, aclOpExecutor** executor_out);

template <class RunFn>
aclnnStatus make_executor(const char* api_name, uint64_t workspace_size, RunFn fn, uint64_t* workspace_size_out,
                          aclOpExecutor** executor_out) {
  return publish_executor(new LambdaExecutor<RunFn>(std::move(fn)), api_name, workspace_size, workspace_size_out,
                          executor_out);
}

// Records a failed status (prefixed with api_name) as the recent error and returns its code.
aclnnStatus report(const char* api_name, const Status& status);

// Checks the out-params of phase one (161001 when null).
Status check_phase_one_outputs(uint64_t* workspace_size, aclOpExecutor** executor);

// Phase two: checks the executor is live and the workspace big enough, runs it; a non-repeatable executor is
// destroyed after its run, a repeatable one stays live (a second concurrent run of it is refused).
aclnnStatus run_executor(const char* api_name, void* workspace, uint64_t workspace_size, aclOpExecutor* executor);

// Workspace for the plain C++ API: a per-thread buffer that grows as needed (64-byte aligned).
void* scratch_workspace(uint64_t bytes);

}  // namespace txops

#endif  // TXOPS_CORE_EXECUTOR_H_
