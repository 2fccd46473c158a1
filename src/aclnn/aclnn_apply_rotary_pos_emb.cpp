// aclnn_apply_rotary_pos_emb.cpp — aclnnApplyRotaryPosEmb and aclnnApplyRotaryPosEmbV2 (forward, in place on
// query and key; V1 is half mode) and aclnnApplyRotaryPosEmbGrad (fused backward): aclTensor -> TensorView, mode string -> RotaryMode, phase one.
#include "aclnnop/aclnn_apply_rotary_pos_emb.h"
#include "aclnnop/aclnn_apply_rotary_pos_emb_grad.h"
#include "aclnnop/aclnn_apply_rotary_pos_emb_v2.h"

#include "core/executor.h"
#include "ops/rope/prepare.h"
#include "runtime/acl_tensor.h"

using namespace txops;

static constexpr const char* kForwardV1 = "aclnnApplyRotaryPosEmb";
static constexpr const char* kForward = "aclnnApplyRotaryPosEmbV2";
static constexpr const char* kBackward = "aclnnApplyRotaryPosEmbGrad";

aclnnStatus aclnnApplyRotaryPosEmbGetWorkspaceSize(aclTensor* queryRef, aclTensor* keyRef, const aclTensor* cos,
                                                   const aclTensor* sin, int64_t layout, uint64_t* workspaceSize,
                                                   aclOpExecutor** executor) {
  TensorView qv, kv, cv, sv;
  Status st = tensor_to_view(queryRef, "queryRef", &qv);
  if (st.ok()) st = tensor_to_view(keyRef, "keyRef", &kv);
  if (st.ok()) st = tensor_to_view(cos, "cos", &cv);
  if (st.ok()) st = tensor_to_view(sin, "sin", &sv);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok()) st = prepare_apply_rotary_pos_emb_v1(qv, kv, cv, sv, layout, &op);
  if (!st.ok()) return report(kForwardV1, st);
  return make_executor(kForwardV1, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnApplyRotaryPosEmb(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                   aclrtStream /*stream*/) {
  return run_executor(kForwardV1, workspace, workspaceSize, executor);
}

aclnnStatus aclnnApplyRotaryPosEmbV2GetWorkspaceSize(aclTensor* queryRef, aclTensor* keyRef, const aclTensor* cos,
                                                     const aclTensor* sin, int64_t layout, char* rotaryMode,
                                                     uint64_t* workspaceSize, aclOpExecutor** executor) {
  TensorView qv, kv, cv, sv;
  RotaryMode mode = RotaryMode::kHalf;
  Status st = tensor_to_view(queryRef, "queryRef", &qv);
  if (st.ok()) st = tensor_to_view(keyRef, "keyRef", &kv);
  if (st.ok()) st = tensor_to_view(cos, "cos", &cv);
  if (st.ok()) st = tensor_to_view(sin, "sin", &sv);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  if (st.ok()) st = parse_rotary_mode(rotaryMode, "rotaryMode", &mode);
  PreparedOp op;
  if (st.ok()) st = prepare_apply_rotary_pos_emb(qv, kv, cv, sv, layout, mode, &op);
  if (!st.ok()) return report(kForward, st);
  return make_executor(kForward, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnApplyRotaryPosEmbV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     aclrtStream /*stream*/) {
  return run_executor(kForward, workspace, workspaceSize, executor);
}

aclnnStatus aclnnApplyRotaryPosEmbGradGetWorkspaceSize(
    const aclTensor* gradQueryEmbed, const aclTensor* gradKeyEmbed, const aclTensor* cos, const aclTensor* sin,
    const aclTensor* queryOptional, const aclTensor* keyOptional, char* rotaryModeOptional, int64_t layout,
    const aclTensor* gradQueryOut, const aclTensor* gradKeyOut, const aclTensor* gradCosOut,
    const aclTensor* gradSinOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  TensorView dqe, dke, cv, sv, qv, kv, dq, dk, dc, ds;
  bool has_q = false, has_k = false, has_dc = false, has_ds = false;
  RotaryMode mode = RotaryMode::kHalf;
  Status st = tensor_to_view(gradQueryEmbed, "gradQueryEmbed", &dqe);
  if (st.ok()) st = tensor_to_view(gradKeyEmbed, "gradKeyEmbed", &dke);
  if (st.ok()) st = tensor_to_view(cos, "cos", &cv);
  if (st.ok()) st = tensor_to_view(sin, "sin", &sv);
  if (st.ok()) st = optional_tensor_to_view(queryOptional, "queryOptional", &qv, &has_q);
  if (st.ok()) st = optional_tensor_to_view(keyOptional, "keyOptional", &kv, &has_k);
  if (st.ok()) st = tensor_to_view(gradQueryOut, "gradQueryOut", &dq);
  if (st.ok()) st = tensor_to_view(gradKeyOut, "gradKeyOut", &dk);
  if (st.ok()) st = optional_tensor_to_view(gradCosOut, "gradCosOut", &dc, &has_dc);
  if (st.ok()) st = optional_tensor_to_view(gradSinOut, "gradSinOut", &ds, &has_ds);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  if (st.ok()) st = parse_rotary_mode(rotaryModeOptional, "rotaryModeOptional", &mode);
  PreparedOp op;
  if (st.ok()) {
    st = prepare_apply_rotary_pos_emb_grad(dqe, dke, cv, sv, has_q ? &qv : nullptr, has_k ? &kv : nullptr, mode,
                                           layout, dq, dk, has_dc ? &dc : nullptr, has_ds ? &ds : nullptr, &op);
  }
  if (!st.ok()) return report(kBackward, st);
  return make_executor(kBackward, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnApplyRotaryPosEmbGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream /*stream*/) {
  return run_executor(kBackward, workspace, workspaceSize, executor);
}
