// aclnn_interleave_rope.cpp — aclnnInterleaveRope: aclTensor -> TensorView, then the op's phase one.
#include "aclnnop/aclnn_interleave_rope.h"

#include "core/executor.h"
#include "ops/rope/prepare.h"
#include "runtime/acl_tensor.h"

using namespace txops;

static constexpr const char* kApi = "aclnnInterleaveRope";

aclnnStatus aclnnInterleaveRopeGetWorkspaceSize(const aclTensor* x, const aclTensor* cos, const aclTensor* sin,
                                                aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  TensorView xv, cv, sv, ov;
  Status st = tensor_to_view(x, "x", &xv);
  if (st.ok()) st = tensor_to_view(cos, "cos", &cv);
  if (st.ok()) st = tensor_to_view(sin, "sin", &sv);
  if (st.ok()) st = tensor_to_view(out, "out", &ov);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok()) st = prepare_interleave_rope(xv, cv, sv, ov, &op);
  if (!st.ok()) return report(kApi, st);
  return make_executor(kApi, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnInterleaveRope(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                aclrtStream /*stream*/) {
  return run_executor(kApi, workspace, workspaceSize, executor);
}
