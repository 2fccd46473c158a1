// aclnn_rotary_position_embedding.cpp — aclnnRotaryPositionEmbedding, aclnnRotaryPositionEmbeddingV2 (optional
// rotate matrix) and aclnnRotaryPositionEmbeddingGrad: aclTensor -> TensorView, then phase one.
#include "aclnnop/aclnn_rotary_position_embedding.h"
#include "aclnnop/aclnn_rotary_position_embedding_grad.h"
#include "aclnnop/aclnn_rotary_position_embedding_v2.h"

#include "core/executor.h"
#include "ops/rope/prepare.h"
#include "runtime/acl_tensor.h"

using namespace txops;

static constexpr const char* kForward = "aclnnRotaryPositionEmbedding";
static constexpr const char* kForwardV2 = "aclnnRotaryPositionEmbeddingV2";
static constexpr const char* kBackward = "aclnnRotaryPositionEmbeddingGrad";

static aclnnStatus forward_phase_one(const char* api, const aclTensor* x, const aclTensor* cos, const aclTensor* sin,
                                     int64_t mode, const aclTensor* rotate, bool with_rotate, aclTensor* out,
                                     uint64_t* workspaceSize, aclOpExecutor** executor) {
  TensorView xv, cv, sv, rv, ov;
  bool has_rotate = false;
  Status st = tensor_to_view(x, "x", &xv);
  if (st.ok()) st = tensor_to_view(cos, "cos", &cv);
  if (st.ok()) st = tensor_to_view(sin, "sin", &sv);
  if (st.ok() && with_rotate) st = optional_tensor_to_view(rotate, "rotate", &rv, &has_rotate);
  if (st.ok()) st = tensor_to_view(out, "out", &ov);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok()) st = prepare_rotary_position_embedding(xv, cv, sv, mode, has_rotate ? &rv : nullptr, ov, &op);
  if (!st.ok()) return report(api, st);
  return make_executor(api, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnRotaryPositionEmbeddingGetWorkspaceSize(const aclTensor* x, const aclTensor* cos, const aclTensor* sin,
                                                         int64_t mode, aclTensor* out, uint64_t* workspaceSize,
                                                         aclOpExecutor** executor) {
  return forward_phase_one(kForward, x, cos, sin, mode, nullptr, false, out, workspaceSize, executor);
}

aclnnStatus aclnnRotaryPositionEmbedding(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                         aclrtStream /*stream*/) {
  return run_executor(kForward, workspace, workspaceSize, executor);
}

aclnnStatus aclnnRotaryPositionEmbeddingV2GetWorkspaceSize(const aclTensor* x, const aclTensor* cos,
                                                           const aclTensor* sin, int64_t mode, const aclTensor* rotate,
                                                           aclTensor* out, uint64_t* workspaceSize,
                                                           aclOpExecutor** executor) {
  return forward_phase_one(kForwardV2, x, cos, sin, mode, rotate, true, out, workspaceSize, executor);
}

aclnnStatus aclnnRotaryPositionEmbeddingV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream /*stream*/) {
  return run_executor(kForwardV2, workspace, workspaceSize, executor);
}

// dcosOut and dsinOut are required outputs (CANN's table: null is 161001) even when xOptional is null, which
// leaves them untouched.
aclnnStatus aclnnRotaryPositionEmbeddingGradGetWorkspaceSize(const aclTensor* dy, const aclTensor* cos,
                                                             const aclTensor* sin, const aclTensor* xOptional,
                                                             int64_t mode, const aclTensor* dxOut,
                                                             const aclTensor* dcosOut, const aclTensor* dsinOut,
                                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  TensorView dyv, cv, sv, xv, dxv, dcv, dsv;
  bool has_x = false;
  Status st = tensor_to_view(dy, "dy", &dyv);
  if (st.ok()) st = tensor_to_view(cos, "cos", &cv);
  if (st.ok()) st = tensor_to_view(sin, "sin", &sv);
  if (st.ok()) st = optional_tensor_to_view(xOptional, "xOptional", &xv, &has_x);
  if (st.ok()) st = tensor_to_view(dxOut, "dxOut", &dxv);
  if (st.ok()) st = tensor_to_view(dcosOut, "dcosOut", &dcv);
  if (st.ok()) st = tensor_to_view(dsinOut, "dsinOut", &dsv);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok()) {
    st = prepare_rotary_position_embedding_grad(dyv, cv, sv, has_x ? &xv : nullptr, mode, dxv, &dcv, &dsv, &op);
  }
  if (!st.ok()) return report(kBackward, st);
  return make_executor(kBackward, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnRotaryPositionEmbeddingGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                             aclrtStream /*stream*/) {
  return run_executor(kBackward, workspace, workspaceSize, executor);
}
