// gdr_prefill_inputs.h — the forward inputs the prefill's aclnn wrappers (aclnnChunkGatedDeltaRule, its Ex and its
// Grad) take first, converted in their order and with their parameter names: one place for the seven conversions.
#ifndef TXOPS_ACLNN_GDR_PREFILL_INPUTS_H_
#define TXOPS_ACLNN_GDR_PREFILL_INPUTS_H_

#include "runtime/acl_tensor.h"

namespace txops {

struct GdrPrefillInputs {
  TensorView query, key, value, beta, initial_state, actual_seq_lengths, g;
  bool has_g = false;
  const TensorView* g_or_null() const { return has_g ? &g : nullptr; }
};

inline Status gdr_prefill_inputs(const aclTensor* query, const aclTensor* key, const aclTensor* value,
                                 const aclTensor* beta, const aclTensor* initialState,
                                 const aclTensor* actualSeqLengths, const aclTensor* gOptional,
                                 GdrPrefillInputs* in) {
  Status st = tensor_to_view(query, "query", &in->query);
  if (st.ok()) st = tensor_to_view(key, "key", &in->key);
  if (st.ok()) st = tensor_to_view(value, "value", &in->value);
  if (st.ok()) st = tensor_to_view(beta, "beta", &in->beta);
  if (st.ok()) st = tensor_to_view(initialState, "initialState", &in->initial_state);
  if (st.ok()) st = tensor_to_view(actualSeqLengths, "actualSeqLengths", &in->actual_seq_lengths);
  if (st.ok()) st = optional_tensor_to_view(gOptional, "gOptional", &in->g, &in->has_g);
  return st;
}

}  // namespace txops

#endif  // TXOPS_ACLNN_GDR_PREFILL_INPUTS_H_
