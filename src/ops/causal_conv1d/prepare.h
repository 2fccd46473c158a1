// prepare.h — phase one of the causal-conv1d operators: validate (the docs' rules, compat mode, the host-visible
// int32 tensors) and plan, producing a PreparedOp. Messages carry no API prefix. Arguments are exactly those of
// the public functions in txops/txops.h.
#ifndef TXOPS_OPS_CAUSAL_CONV1D_PREPARE_H_
#define TXOPS_OPS_CAUSAL_CONV1D_PREPARE_H_

#include "core/prepared_op.h"
#include "txops/txops.h"

namespace txops {

Status prepare_causal_conv1d_fn(const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                                const TensorView* bias, const TensorView* query_start_loc,
                                const TensorView* cache_indices, const TensorView* initial_state_mode,
                                ConvActivation activation, int64_t null_block_id, const TensorView& y,
                                PreparedOp* op);

Status prepare_causal_conv1d_update(const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                                    const TensorView* bias, const TensorView* query_start_loc,
                                    const TensorView* cache_indices, const TensorView* num_accepted_tokens,
                                    ConvActivation activation, int64_t null_block_id, const TensorView& y,
                                    PreparedOp* op);

}  // namespace txops

#endif  // TXOPS_OPS_CAUSAL_CONV1D_PREPARE_H_
