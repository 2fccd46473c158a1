// aclnn_chunk_gated_delta_rule_ex.cpp — aclnnChunkGatedDeltaRuleEx (txops extension: the prefill with state
// indices, zero starts, snapshots and the corrected values): aclTensor -> TensorView (optional tensors may be
// null), then the prefill's phase one with GdrPrefillOptions.
#include "aclnnop/aclnn_chunk_gated_delta_rule_ex.h"

#include "aclnn/gdr_prefill_inputs.h"
#include "core/executor.h"
#include "core/status.h"
#include "ops/gated_delta_rule/prepare.h"
#include "runtime/acl_tensor.h"

using namespace txops;

static constexpr const char* kChunkEx = "aclnnChunkGatedDeltaRuleEx";

aclnnStatus aclnnChunkGatedDeltaRuleExGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta,
    const aclTensor* initialState, const aclTensor* actualSeqLengths, const aclTensor* gOptional,
    const aclTensor* stateIndicesOptional, const aclTensor* hasInitialStateOptional,
    const aclTensor* checkpointStartsOptional, float scaleValue, int64_t checkpointEvery, int64_t kernelMode,
    aclTensor* out, aclTensor* finalState, aclTensor* checkpointsOptional, aclTensor* correctedValuesOptional,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  GdrPrefillInputs in;
  TensorView idx, has0, starts, o, s1, cps, cvs;
  bool has_idx = false, has_has0 = false, has_starts = false, has_cps = false, has_cvs = false;
  Status st = gdr_prefill_inputs(query, key, value, beta, initialState, actualSeqLengths, gOptional, &in);
  if (st.ok()) st = optional_tensor_to_view(stateIndicesOptional, "stateIndicesOptional", &idx, &has_idx);
  if (st.ok()) st = optional_tensor_to_view(hasInitialStateOptional, "hasInitialStateOptional", &has0, &has_has0);
  if (st.ok()) st = optional_tensor_to_view(checkpointStartsOptional, "checkpointStartsOptional", &starts, &has_starts);
  if (st.ok()) st = tensor_to_view(out, "out", &o);
  if (st.ok()) st = tensor_to_view(finalState, "finalState", &s1);
  if (st.ok()) st = optional_tensor_to_view(checkpointsOptional, "checkpointsOptional", &cps, &has_cps);
  if (st.ok()) st = optional_tensor_to_view(correctedValuesOptional, "correctedValuesOptional", &cvs, &has_cvs);
  if (st.ok() && (kernelMode < 0 || kernelMode > 2))
    st = fail(StatusCode::kParamInvalid, "kernelMode must be 0 (auto), 1 (chunked) or 2 (recurrent), got %lld",
              static_cast<long long>(kernelMode));
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok()) {
    GdrPrefillOptions options;
    options.state_indices = has_idx ? &idx : nullptr;
    options.has_initial_state = has_has0 ? &has0 : nullptr;
    options.checkpoint_starts = has_starts ? &starts : nullptr;
    options.checkpoints = has_cps ? &cps : nullptr;
    options.corrected_values = has_cvs ? &cvs : nullptr;
    options.checkpoint_every = checkpointEvery;
    options.kernel = static_cast<GdrKernel>(kernelMode);
    st = prepare_chunk_gated_delta_rule(in.query, in.key, in.value, in.beta, in.initial_state, in.actual_seq_lengths,
                                        in.g_or_null(), scaleValue, o, s1, options, &op);
  }
  if (!st.ok()) return report(kChunkEx, st);
  return make_executor(kChunkEx, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnChunkGatedDeltaRuleEx(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream /*stream*/) {
  return run_executor(kChunkEx, workspace, workspaceSize, executor);
}
