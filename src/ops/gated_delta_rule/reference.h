// reference.h — the fp64 oracle of the gated delta rule: the token-by-token recurrence of
// docs/gated_delta_rule.md in double, written for reading. Takes the public op's arguments (valid
// ones), writes outputs as contiguous row-major std::vector<double>. Nothing it is given is modified.
// Used by tests and by `txops bench`.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_H_
#define TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_H_

#include <vector>

#include "txops/txops.h"

namespace txops {
namespace reference {

// out: (T, Nv, Dv); final_state: (B, Nv, Dv, Dk).
void chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                            const TensorView& beta, const TensorView& initial_state,
                            const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                            std::vector<double>* out, std::vector<double>* final_state);

// `state` is the pool before the call (read only here). out: (T, Nv, Dv); state_after: the whole pool
// (BlockNum, Nv, Dv, Dk) as the op leaves it (slots no token writes keep their values).
void recurrent_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                const TensorView& beta, const TensorView& state,
                                const TensorView& actual_seq_lengths, const TensorView& ssm_state_indices,
                                const TensorView* g, const TensorView* gk, const TensorView* num_accepted_tokens,
                                float scale, std::vector<double>* out, std::vector<double>* state_after);

}  // namespace reference
}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_H_
