// reference.h — the fp64 oracle of both causal-conv1d operators, written from docs/causal_conv1d.md alone (it
// shares no code with validation or the kernels): per sequence, the window p = [K-1 history rows | x], y_t =
// act(bias + sum_j weight[j] p[t+j]) in double, and the state rows the operator's rule writes. Inputs are read
// element by element through their strides; arguments are valid (the operator's own validation accepted them).
#ifndef TXOPS_OPS_CAUSAL_CONV1D_REFERENCE_H_
#define TXOPS_OPS_CAUSAL_CONV1D_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "txops/txops.h"

namespace txops {
namespace reference {

// y: x's shape, row-major; states: conv_states' shape, row-major, starting from conv_states' values (lines the
// call does not write keep them). `update` selects causal_conv1d_update's rules (per_sequence is then
// num_accepted_tokens), else causal_conv1d_fn's (per_sequence: initial_state_mode).
void causal_conv1d(bool update, const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                   const TensorView* bias, const TensorView* query_start_loc, const TensorView* cache_indices,
                   const TensorView* per_sequence, ConvActivation activation, int64_t null_block_id,
                   std::vector<double>* y, std::vector<double>* states);

}  // namespace reference
}  // namespace txops

#endif  // TXOPS_OPS_CAUSAL_CONV1D_REFERENCE_H_
