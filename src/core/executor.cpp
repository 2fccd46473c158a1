// executor.cpp — the live-executor registry and the shared phase-one / phase-two plumbing of aclnn calls, and
// CANN's aclSetAclOpExecutorRepeatable / aclDestroyAclOpExecutor (threading rules: executor.h).
#include "core/executor.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "core/status.h"

namespace txops {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<aclOpExecutor*>& registry() {
  static auto* live = new std::unordered_set<aclOpExecutor*>();  // never destroyed: safe at exit
  return *live;
}

}  // namespace

aclnnStatus report(const char* api_name, const Status& status) {
  if (status.ok()) return ACLNN_SUCCESS;
  take_used_blocks();  // a failed phase one leaves nothing behind for the next one
  set_recent_error(std::string(api_name) + ": " + status.message());
  return static_cast<aclnnStatus>(status.code());
}

Status check_phase_one_outputs(uint64_t* workspace_size, aclOpExecutor** executor) {
  if (workspace_size == nullptr) return fail(StatusCode::kNullptr, "workspaceSize must not be null");
  if (executor == nullptr) return fail(StatusCode::kNullptr, "executor must not be null");
  return Status();
}

aclnnStatus publish_executor(aclOpExecutor* executor, const char* api_name, uint64_t workspace_size,
                             uint64_t* workspace_size_out, aclOpExecutor** executor_out) {
  executor->api_name = api_name;
  executor->workspace_size = workspace_size;
  executor->used_blocks = take_used_blocks();
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    registry().insert(executor);
  }
  *workspace_size_out = workspace_size;
  *executor_out = executor;
  return ACLNN_SUCCESS;
}

constexpr const char* kNotLive =
    "executor is not live (already run by a non-repeatable phase two, destroyed, or not made by a "
    "GetWorkspaceSize call)";

aclnnStatus run_executor(const char* api_name, void* workspace, uint64_t workspace_size, aclOpExecutor* executor) {
  if (executor == nullptr) return report(api_name, fail(StatusCode::kNullptr, "executor must not be null"));
  bool keep = false;  // repeatable: stays live after the run
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(executor);
    if (it == registry().end()) {
      return report(api_name, fail(StatusCode::kParamInvalid, "%s", kNotLive));
    }
    if (std::strcmp(executor->api_name, api_name) != 0) {
      return report(api_name, fail(StatusCode::kParamInvalid, "executor was made for %s, not %s",
                                   executor->api_name, api_name));
    }
    if (workspace_size < executor->workspace_size) {
      return report(api_name, fail(StatusCode::kParamInvalid, "workspaceSize must be >= %llu, got %llu",
                                   static_cast<unsigned long long>(executor->workspace_size),
                                   static_cast<unsigned long long>(workspace_size)));
    }
    if (executor->workspace_size > 0 && workspace == nullptr) {
      return report(api_name, fail(StatusCode::kNullptr, "workspace must not be null (workspaceSize %llu)",
                                   static_cast<unsigned long long>(executor->workspace_size)));
    }
    RuntimeBlock ws_block;
    if (executor->workspace_size > 0 && find_runtime_block(workspace, &ws_block) &&
        ws_block.bytes_from(workspace) < executor->workspace_size) {
      return report(api_name, fail(StatusCode::kParamInvalid,
                                   "workspace needs %llu bytes but its aclrtMalloc block has %llu bytes from it on",
                                   static_cast<unsigned long long>(executor->workspace_size),
                                   static_cast<unsigned long long>(ws_block.bytes_from(workspace))));
    }
    const std::string freed = check_used_blocks(executor->used_blocks);
    if (!freed.empty()) return report(api_name, fail(StatusCode::kParamInvalid, "%s", freed.c_str()));
    keep = executor->repeatable;
    if (keep) {
      if (executor->running) {
        return report(api_name, fail(StatusCode::kParamInvalid,
                                     "executor is already running (a repeatable executor runs on one stream at a "
                                     "time; wait for the other run to finish)"));
      }
      executor->running = true;
    } else {
      registry().erase(it);  // consumed: a second call is refused above
    }
    ++executor->runs;
  }
  const Status status = executor->run(workspace);
  if (keep) {
    std::lock_guard<std::mutex> lock(registry_mutex());
    executor->running = false;  // still live: destroy refuses a running executor
  } else {
    delete executor;
  }
  return report(api_name, status);
}

namespace {

aclnnStatus null_executor(const char* api) {
  set_recent_error(std::string(api) + ": executor must not be null");
  return ACLNN_ERR_INNER_NULLPTR;  // CANN's code for a null executor here (561103)
}

}  // namespace

void* scratch_workspace(uint64_t bytes) {
  struct Buffer {
    void* data = nullptr;
    uint64_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (bytes <= buffer.size) return buffer.data;
  std::free(buffer.data);
  const uint64_t rounded = (bytes + 63) / 64 * 64;
  buffer.data = std::aligned_alloc(64, rounded);
  buffer.size = buffer.data ? rounded : 0;
  return buffer.data;
}

}  // namespace txops

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  using namespace txops;
  static constexpr const char* kApi = "aclSetAclOpExecutorRepeatable";
  if (executor == nullptr) return null_executor(kApi);
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (registry().count(executor) == 0) return report(kApi, fail(StatusCode::kParamInvalid, "%s", kNotLive));
  if (executor->runs > 0) {
    return report(kApi, fail(StatusCode::kParamInvalid,
                             "executor has already run; set it repeatable right after its GetWorkspaceSize call"));
  }
  executor->repeatable = true;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  using namespace txops;
  static constexpr const char* kApi = "aclDestroyAclOpExecutor";
  if (executor == nullptr) return null_executor(kApi);
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(executor);
    if (it == registry().end()) return report(kApi, fail(StatusCode::kParamInvalid, "%s", kNotLive));
    if (executor->running) {
      return report(kApi, fail(StatusCode::kParamInvalid,
                               "executor is running on another thread; destroy it after the run returns"));
    }
    registry().erase(it);
  }
  delete executor;
  return ACLNN_SUCCESS;
}

}  // extern "C"

#include "core/prepared_op.h"

namespace txops {

Status run_prepared(const PreparedOp& op) {
  void* workspace = nullptr;
  if (op.workspace_bytes > 0) {
    workspace = scratch_workspace(op.workspace_bytes);
    if (workspace == nullptr) {
      return fail(StatusCode::kRuntimeError, "cannot allocate a workspace of %llu bytes",
                  static_cast<unsigned long long>(op.workspace_bytes));
    }
  }
  return op.run(workspace);
}

}  // namespace txops
