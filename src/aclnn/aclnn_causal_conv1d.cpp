// aclnn_causal_conv1d.cpp — aclnnCausalConv1dFn (prefill) and aclnnCausalConv1dUpdate (decode): aclTensor ->
// TensorView (optional tensors may be null), the activation string, then the op's phase one. The prefix-caching
// block arguments (blockIdxFirst/LastScheduledToken, initialStateIdx, numComputedTokens, blockSizeToAlign) and
// maxQueryLen are accepted and not used, as CANN's own implementation does (docs/causal_conv1d.md).
#include <cstring>

#include "aclnnop/aclnn_causal_conv1d_fn.h"
#include "aclnnop/aclnn_causal_conv1d_update.h"
#include "core/executor.h"
#include "core/status.h"
#include "ops/causal_conv1d/prepare.h"
#include "runtime/acl_tensor.h"

using namespace txops;

namespace {

constexpr const char* kFn = "aclnnCausalConv1dFn";
constexpr const char* kUpdate = "aclnnCausalConv1dUpdate";

// "silu" (also null or "", CANN's default) or "none", exactly as spelled.
Status activation_from_string(const char* activation, ConvActivation* out) {
  if (activation == nullptr || activation[0] == '\0' || std::strcmp(activation, "silu") == 0) {
    *out = ConvActivation::kSilu;
  } else if (std::strcmp(activation, "none") == 0) {
    *out = ConvActivation::kNone;
  } else {
    return fail(StatusCode::kParamInvalid, "activation must be \"silu\" or \"none\", got \"%.32s\"", activation);
  }
  return Status();
}

struct ConvViews {
  TensorView x, weight, states, bias, qsl, indices, per_sequence, y;
  bool has_bias = false, has_qsl = false, has_indices = false, has_per_sequence = false;
};

Status import_views(const aclTensor* x, const aclTensor* weight, const aclTensor* states, const aclTensor* bias,
                    const aclTensor* qsl, const aclTensor* indices, const aclTensor* per_sequence,
                    const char* per_sequence_name, const aclTensor* y, ConvViews* v) {
  Status st = tensor_to_view(x, "x", &v->x);
  if (st.ok()) st = tensor_to_view(weight, "weight", &v->weight);
  if (st.ok()) st = tensor_to_view(states, "convStatesRef", &v->states);
  if (st.ok()) st = optional_tensor_to_view(bias, "biasOptional", &v->bias, &v->has_bias);
  if (st.ok()) st = optional_tensor_to_view(qsl, "queryStartLocOptional", &v->qsl, &v->has_qsl);
  if (st.ok()) st = optional_tensor_to_view(indices, "cacheIndicesOptional", &v->indices, &v->has_indices);
  if (st.ok()) st = optional_tensor_to_view(per_sequence, per_sequence_name, &v->per_sequence, &v->has_per_sequence);
  if (st.ok()) st = tensor_to_view(y, "y", &v->y);
  return st;
}

}  // namespace

aclnnStatus aclnnCausalConv1dFnGetWorkspaceSize(
    const aclTensor* x, const aclTensor* weight, aclTensor* convStatesRef, const aclTensor* biasOptional,
    const aclTensor* queryStartLocOptional, const aclTensor* cacheIndicesOptional,
    const aclTensor* initialStateModeOptional, const aclTensor* /*blockIdxFirstScheduledTokenOptional*/,
    const aclTensor* /*blockIdxLastScheduledTokenOptional*/, const aclTensor* /*initialStateIdxOptional*/,
    const aclTensor* /*numComputedTokensOptional*/, const char* activation, int64_t nullBlockId,
    int64_t /*blockSizeToAlign*/, aclTensor* y, uint64_t* workspaceSize, aclOpExecutor** executor) {
  ConvViews v;
  ConvActivation act = ConvActivation::kSilu;
  Status st = import_views(x, weight, convStatesRef, biasOptional, queryStartLocOptional, cacheIndicesOptional,
                           initialStateModeOptional, "initialStateModeOptional", y, &v);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  if (st.ok()) st = activation_from_string(activation, &act);
  PreparedOp op;
  if (st.ok()) {
    st = prepare_causal_conv1d_fn(v.x, v.weight, v.states, v.has_bias ? &v.bias : nullptr,
                                  v.has_qsl ? &v.qsl : nullptr, v.has_indices ? &v.indices : nullptr,
                                  v.has_per_sequence ? &v.per_sequence : nullptr, act, nullBlockId, v.y, &op);
  }
  if (!st.ok()) return report(kFn, st);
  return make_executor(kFn, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnCausalConv1dFn(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                aclrtStream /*stream*/) {
  return run_executor(kFn, workspace, workspaceSize, executor);
}

aclnnStatus aclnnCausalConv1dUpdateGetWorkspaceSize(
    const aclTensor* x, const aclTensor* weight, aclTensor* convStatesRef, const aclTensor* biasOptional,
    const aclTensor* queryStartLocOptional, const aclTensor* cacheIndicesOptional,
    const aclTensor* numAcceptedTokensOptional, const aclTensor* /*blockIdxLastScheduledTokenOptional*/,
    const aclTensor* /*initialStateIdxOptional*/, const char* activation, int64_t nullBlockId,
    int64_t /*maxQueryLen*/, aclTensor* y, uint64_t* workspaceSize, aclOpExecutor** executor) {
  ConvViews v;
  ConvActivation act = ConvActivation::kSilu;
  Status st = import_views(x, weight, convStatesRef, biasOptional, queryStartLocOptional, cacheIndicesOptional,
                           numAcceptedTokensOptional, "numAcceptedTokensOptional", y, &v);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  if (st.ok()) st = activation_from_string(activation, &act);
  PreparedOp op;
  if (st.ok()) {
    st = prepare_causal_conv1d_update(v.x, v.weight, v.states, v.has_bias ? &v.bias : nullptr,
                                      v.has_qsl ? &v.qsl : nullptr, v.has_indices ? &v.indices : nullptr,
                                      v.has_per_sequence ? &v.per_sequence : nullptr, act, nullBlockId, v.y, &op);
  }
  if (!st.ok()) return report(kUpdate, st);
  return make_executor(kUpdate, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnCausalConv1dUpdate(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                    aclrtStream /*stream*/) {
  return run_executor(kUpdate, workspace, workspaceSize, executor);
}
