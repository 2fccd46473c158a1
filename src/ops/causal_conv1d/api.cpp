// api.cpp — the public txops:: causal-conv1d functions: prepare + run in one call; failures are prefixed
// "txops::<function>: ".
#include "core/status.h"
#include "ops/causal_conv1d/prepare.h"

namespace txops {

Status causal_conv1d_fn(const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                        const TensorView* bias, const TensorView* query_start_loc, const TensorView* cache_indices,
                        const TensorView* initial_state_mode, ConvActivation activation, int64_t null_block_id,
                        const TensorView& y) {
  PreparedOp op;
  Status st = prepare_causal_conv1d_fn(x, weight, conv_states, bias, query_start_loc, cache_indices,
                                       initial_state_mode, activation, null_block_id, y, &op);
  if (st.ok()) st = run_prepared(op);
  return with_prefix("txops::causal_conv1d_fn", std::move(st));
}

Status causal_conv1d_update(const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                            const TensorView* bias, const TensorView* query_start_loc, const TensorView* cache_indices,
                            const TensorView* num_accepted_tokens, ConvActivation activation, int64_t null_block_id,
                            const TensorView& y) {
  PreparedOp op;
  Status st = prepare_causal_conv1d_update(x, weight, conv_states, bias, query_start_loc, cache_indices,
                                           num_accepted_tokens, activation, null_block_id, y, &op);
  if (st.ok()) st = run_prepared(op);
  return with_prefix("txops::causal_conv1d_update", std::move(st));
}

}  // namespace txops
