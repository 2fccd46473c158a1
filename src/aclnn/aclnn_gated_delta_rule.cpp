// aclnn_gated_delta_rule.cpp — aclnnChunkGatedDeltaRule (prefill) and aclnnRecurrentGatedDeltaRule (decode):
// aclTensor -> TensorView (optional tensors may be null), then the op's phase one.
#include "aclnnop/aclnn_chunk_gated_delta_rule.h"
#include "aclnnop/aclnn_recurrent_gated_delta_rule.h"

#include "aclnn/gdr_prefill_inputs.h"
#include "core/executor.h"
#include "ops/gated_delta_rule/prepare.h"
#include "runtime/acl_tensor.h"

using namespace txops;

static constexpr const char* kChunk = "aclnnChunkGatedDeltaRule";
static constexpr const char* kRecurrent = "aclnnRecurrentGatedDeltaRule";

aclnnStatus aclnnChunkGatedDeltaRuleGetWorkspaceSize(const aclTensor* query, const aclTensor* key,
                                                     const aclTensor* value, const aclTensor* beta,
                                                     const aclTensor* initialState, const aclTensor* actualSeqLengths,
                                                     const aclTensor* gOptional, float scaleValue, aclTensor* out,
                                                     aclTensor* finalState, uint64_t* workspaceSize,
                                                     aclOpExecutor** executor) {
  GdrPrefillInputs in;
  TensorView o, s1;
  Status st = gdr_prefill_inputs(query, key, value, beta, initialState, actualSeqLengths, gOptional, &in);
  if (st.ok()) st = tensor_to_view(out, "out", &o);
  if (st.ok()) st = tensor_to_view(finalState, "finalState", &s1);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok())
    st = prepare_chunk_gated_delta_rule(in.query, in.key, in.value, in.beta, in.initial_state, in.actual_seq_lengths,
                                        in.g_or_null(), scaleValue, o, s1, GdrPrefillOptions(), &op);
  if (!st.ok()) return report(kChunk, st);
  return make_executor(kChunk, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnChunkGatedDeltaRule(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     aclrtStream /*stream*/) {
  return run_executor(kChunk, workspace, workspaceSize, executor);
}

aclnnStatus aclnnRecurrentGatedDeltaRuleGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta, aclTensor* stateRef,
    const aclTensor* actualSeqLengths, const aclTensor* ssmStateIndices, const aclTensor* g, const aclTensor* gk,
    const aclTensor* numAcceptedTokens, float scaleValue, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  TensorView q, k, v, b, state, lens, idx, gv, gkv, acc, o;
  bool has_g = false, has_gk = false, has_acc = false;
  Status st = tensor_to_view(query, "query", &q);
  if (st.ok()) st = tensor_to_view(key, "key", &k);
  if (st.ok()) st = tensor_to_view(value, "value", &v);
  if (st.ok()) st = tensor_to_view(beta, "beta", &b);
  if (st.ok()) st = tensor_to_view(stateRef, "stateRef", &state);
  if (st.ok()) st = tensor_to_view(actualSeqLengths, "actualSeqLengths", &lens);
  if (st.ok()) st = tensor_to_view(ssmStateIndices, "ssmStateIndices", &idx);
  if (st.ok()) st = optional_tensor_to_view(g, "g", &gv, &has_g);
  if (st.ok()) st = optional_tensor_to_view(gk, "gk", &gkv, &has_gk);
  if (st.ok()) st = optional_tensor_to_view(numAcceptedTokens, "numAcceptedTokens", &acc, &has_acc);
  if (st.ok()) st = tensor_to_view(out, "out", &o);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok()) {
    st = prepare_recurrent_gated_delta_rule(q, k, v, b, state, lens, idx, has_g ? &gv : nullptr,
                                            has_gk ? &gkv : nullptr, has_acc ? &acc : nullptr, scaleValue, o, &op);
  }
  if (!st.ok()) return report(kRecurrent, st);
  return make_executor(kRecurrent, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnRecurrentGatedDeltaRule(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                         aclrtStream /*stream*/) {
  return run_executor(kRecurrent, workspace, workspaceSize, executor);
}
