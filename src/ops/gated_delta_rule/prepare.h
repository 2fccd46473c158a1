// prepare.h — phase one of the gated-delta-rule operators: validate (spec rules, compat mode, host-visible
// lengths and indices) and plan, producing a PreparedOp. Messages carry no API prefix.
// Arguments are exactly those of the public functions in txops/txops.h.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_PREPARE_H_
#define TXOPS_OPS_GATED_DELTA_RULE_PREPARE_H_

#include "core/prepared_op.h"
#include "txops/txops.h"

namespace txops {

Status prepare_chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                      const TensorView& beta, const TensorView& initial_state,
                                      const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                      const TensorView& out, const TensorView& final_state,
                                      const GdrPrefillOptions& options, PreparedOp* op);

Status prepare_recurrent_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                          const TensorView& beta, const TensorView& state,
                                          const TensorView& actual_seq_lengths,
                                          const TensorView& ssm_state_indices, const TensorView* g,
                                          const TensorView* gk, const TensorView* num_accepted_tokens, float scale,
                                          const TensorView& out, PreparedOp* op);

}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_PREPARE_H_
