// aclnn_chunk_gated_delta_rule_grad.cpp — aclnnChunkGatedDeltaRuleGrad and aclnnChunkGatedDeltaRuleGradEx (txops
// extensions, the backward of aclnnChunkGatedDeltaRule; Ex also takes the forward's snapshots): aclTensor ->
// TensorView (optional tensors may be null), then the backward's phase one.
#include "aclnnop/aclnn_chunk_gated_delta_rule_grad.h"

#include "aclnn/gdr_prefill_inputs.h"
#include "core/executor.h"
#include "ops/gated_delta_rule/backward.h"
#include "runtime/acl_tensor.h"

using namespace txops;

static constexpr const char* kChunkGrad = "aclnnChunkGatedDeltaRuleGrad";
static constexpr const char* kChunkGradEx = "aclnnChunkGatedDeltaRuleGradEx";

namespace {

aclnnStatus grad_workspace_size(const char* name, const aclTensor* query, const aclTensor* key,
                                const aclTensor* value, const aclTensor* beta, const aclTensor* initialState,
                                const aclTensor* actualSeqLengths, const aclTensor* gOptional, float scaleValue,
                                const aclTensor* gradOut, const aclTensor* gradFinalStateOptional,
                                const aclTensor* forwardCheckpointsOptional,
                                const aclTensor* forwardCorrectedValuesOptional, aclTensor* gradQuery,
                                aclTensor* gradKey, aclTensor* gradValue, aclTensor* gradBeta,
                                aclTensor* gradGOptional, aclTensor* gradInitialState, uint64_t* workspaceSize,
                                aclOpExecutor** executor) {
  GdrPrefillInputs in;
  TensorView d_out, d_final, checkpoints, corrected, dq, dk, dv, db, dg, ds0;
  bool has_final = false, has_checkpoints = false, has_corrected = false, has_dg = false;
  Status st = gdr_prefill_inputs(query, key, value, beta, initialState, actualSeqLengths, gOptional, &in);
  if (st.ok()) st = tensor_to_view(gradOut, "gradOut", &d_out);
  if (st.ok()) st = optional_tensor_to_view(gradFinalStateOptional, "gradFinalStateOptional", &d_final, &has_final);
  if (st.ok())
    st = optional_tensor_to_view(forwardCheckpointsOptional, "forwardCheckpointsOptional", &checkpoints,
                                 &has_checkpoints);
  if (st.ok())
    st = optional_tensor_to_view(forwardCorrectedValuesOptional, "forwardCorrectedValuesOptional", &corrected,
                                 &has_corrected);
  if (st.ok()) st = tensor_to_view(gradQuery, "gradQuery", &dq);
  if (st.ok()) st = tensor_to_view(gradKey, "gradKey", &dk);
  if (st.ok()) st = tensor_to_view(gradValue, "gradValue", &dv);
  if (st.ok()) st = tensor_to_view(gradBeta, "gradBeta", &db);
  if (st.ok()) st = optional_tensor_to_view(gradGOptional, "gradGOptional", &dg, &has_dg);
  if (st.ok()) st = tensor_to_view(gradInitialState, "gradInitialState", &ds0);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok()) {
    st = prepare_chunk_gated_delta_rule_grad(in.query, in.key, in.value, in.beta, in.initial_state,
                                             in.actual_seq_lengths, in.g_or_null(), scaleValue, d_out,
                                             has_final ? &d_final : nullptr, dq, dk, dv, db,
                                             has_dg ? &dg : nullptr, ds0, has_checkpoints ? &checkpoints : nullptr,
                                             has_corrected ? &corrected : nullptr, &op);
  }
  if (!st.ok()) return report(name, st);
  return make_executor(name, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

}  // namespace

aclnnStatus aclnnChunkGatedDeltaRuleGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta,
    const aclTensor* initialState, const aclTensor* actualSeqLengths, const aclTensor* gOptional, float scaleValue,
    const aclTensor* gradOut, const aclTensor* gradFinalStateOptional, aclTensor* gradQuery, aclTensor* gradKey,
    aclTensor* gradValue, aclTensor* gradBeta, aclTensor* gradGOptional, aclTensor* gradInitialState,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return grad_workspace_size(kChunkGrad, query, key, value, beta, initialState, actualSeqLengths, gOptional,
                             scaleValue, gradOut, gradFinalStateOptional, nullptr, nullptr, gradQuery, gradKey,
                             gradValue, gradBeta, gradGOptional, gradInitialState, workspaceSize, executor);
}

aclnnStatus aclnnChunkGatedDeltaRuleGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                         aclrtStream /*stream*/) {
  return run_executor(kChunkGrad, workspace, workspaceSize, executor);
}

aclnnStatus aclnnChunkGatedDeltaRuleGradExGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta,
    const aclTensor* initialState, const aclTensor* actualSeqLengths, const aclTensor* gOptional, float scaleValue,
    const aclTensor* gradOut, const aclTensor* gradFinalStateOptional, const aclTensor* forwardCheckpointsOptional,
    const aclTensor* forwardCorrectedValuesOptional, aclTensor* gradQuery, aclTensor* gradKey, aclTensor* gradValue,
    aclTensor* gradBeta, aclTensor* gradGOptional, aclTensor* gradInitialState, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  return grad_workspace_size(kChunkGradEx, query, key, value, beta, initialState, actualSeqLengths, gOptional,
                             scaleValue, gradOut, gradFinalStateOptional, forwardCheckpointsOptional,
                             forwardCorrectedValuesOptional, gradQuery, gradKey, gradValue, gradBeta, gradGOptional,
                             gradInitialState, workspaceSize, executor);
}

aclnnStatus aclnnChunkGatedDeltaRuleGradEx(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream /*stream*/) {
  return run_executor(kChunkGradEx, workspace, workspaceSize, executor);
}
