// reference_backward.h — the fp64 oracle of the gated delta rule's backward: reverse-mode differentiation of the
// token-by-token recurrence of docs/gated_delta_rule.md, in double, written for reading (as reference.cpp is for
// the forward). Takes the forward's arguments plus the incoming gradients (valid ones), writes the gradients as
// contiguous row-major std::vector<double>. Nothing it is given is modified. Used by tests.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_BACKWARD_H_
#define TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_BACKWARD_H_

#include <vector>

#include "txops/txops.h"

namespace txops {
namespace reference {

struct GdrGradients {
  std::vector<double> query;          // (T, Nk, Dk): summed over the value heads of each key head
  std::vector<double> key;            // (T, Nk, Dk): the same
  std::vector<double> value;          // (T, Nv, Dv)
  std::vector<double> beta;           // (T, Nv)
  std::vector<double> g;              // (T, Nv); empty when g is null
  std::vector<double> initial_state;  // (B, Nv, Dv, Dk)
};

// The gradients of L = Σ gradOut ⊙ out + Σ gradFinalState ⊙ finalState, where (out, finalState) is
// chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g, scale).
// grad_out (T, Nv, Dv); grad_final_state (B, Nv, Dv, Dk) or null (zero).
void chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                 const TensorView& beta, const TensorView& initial_state,
                                 const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                 const TensorView& grad_out, const TensorView* grad_final_state,
                                 GdrGradients* grads);

}  // namespace reference
}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_BACKWARD_H_
