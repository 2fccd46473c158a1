// backward_api.cpp — txops::chunk_gated_delta_rule_grad: prepare + run in one call with the thread's scratch
// workspace; failures are prefixed "txops::chunk_gated_delta_rule_grad: ".
#include "core/status.h"
#include "ops/gated_delta_rule/backward.h"

namespace txops {

Status chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                   const TensorView& beta, const TensorView& initial_state,
                                   const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                   const TensorView& grad_out, const TensorView* grad_final_state,
                                   const TensorView& grad_query, const TensorView& grad_key,
                                   const TensorView& grad_value, const TensorView& grad_beta, const TensorView* grad_g,
                                   const TensorView& grad_initial_state, const TensorView* forward_checkpoints,
                                   const TensorView* forward_corrected_values) {
  PreparedOp op;
  Status st = prepare_chunk_gated_delta_rule_grad(query, key, value, beta, initial_state, actual_seq_lengths, g,
                                                  scale, grad_out, grad_final_state, grad_query, grad_key, grad_value,
                                                  grad_beta, grad_g, grad_initial_state, forward_checkpoints,
                                                  forward_corrected_values, &op);
  if (st.ok()) st = run_prepared(op);
  return with_prefix("txops::chunk_gated_delta_rule_grad", std::move(st));
}

}  // namespace txops
