// api.cpp — the public txops:: gated-delta-rule functions: prepare + run in one call with the thread's
// scratch workspace; failures are prefixed "txops::<function>: ".
#include "core/status.h"
#include "ops/gated_delta_rule/prepare.h"

namespace txops {

Status chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                              const TensorView& beta, const TensorView& initial_state,
                              const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                              const TensorView& out, const TensorView& final_state) {
  return chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g, scale, out, final_state,
                                GdrPrefillOptions());
}

Status chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                              const TensorView& beta, const TensorView& initial_state,
                              const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                              const TensorView& out, const TensorView& final_state,
                              const GdrPrefillOptions& options) {
  PreparedOp op;
  Status st = prepare_chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g, scale, out,
                                             final_state, options, &op);
  if (st.ok()) st = run_prepared(op);
  return with_prefix("txops::chunk_gated_delta_rule", std::move(st));
}

Status recurrent_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                  const TensorView& beta, const TensorView& state,
                                  const TensorView& actual_seq_lengths, const TensorView& ssm_state_indices,
                                  const TensorView* g, const TensorView* gk, const TensorView* num_accepted_tokens,
                                  float scale, const TensorView& out) {
  PreparedOp op;
  Status st = prepare_recurrent_gated_delta_rule(query, key, value, beta, state, actual_seq_lengths,
                                                 ssm_state_indices, g, gk, num_accepted_tokens, scale, out, &op);
  if (st.ok()) st = run_prepared(op);
  return with_prefix("txops::recurrent_gated_delta_rule", std::move(st));
}

}  // namespace txops
