// reference.h — the fp64 oracle of the RoPE operators, written for reading (docs/rope.md). Each
// function takes the public op's arguments (valid ones: it does not validate), reads the stored input values
// (widened exactly to double), computes in double, and writes each output as a contiguous row-major
// std::vector<double> in that output's logical shape. Nothing it is given is modified. Used by tests and by
// `txops bench` to measure the error of the fast kernels.
#ifndef TXOPS_OPS_ROPE_REFERENCE_H_
#define TXOPS_OPS_ROPE_REFERENCE_H_

#include <vector>

#include "txops/txops.h"

namespace txops {
namespace reference {

// out: x's shape (B, N, S, D).
void interleave_rope(const TensorView& x, const TensorView& cos, const TensorView& sin, std::vector<double>* out);

// out: x's full shape; elements outside [start, end) are x unchanged. `backward` selects the grad op.
void inplace_partial_rotary_mul(const TensorView& x, const TensorView& cos, const TensorView& sin, RotaryMode mode,
                                int64_t start, int64_t end, bool backward, std::vector<double>* out);

// q_out, k_out: query's and key's shapes.
void apply_rotary_pos_emb(const TensorView& query, const TensorView& key, const TensorView& cos,
                          const TensorView& sin, Layout layout, RotaryMode mode, std::vector<double>* q_out,
                          std::vector<double>* k_out);

// grad_query, grad_key: the embeds' shapes; grad_cos, grad_sin: cos's shape, filled only when query and key
// are both given (left empty otherwise).
void apply_rotary_pos_emb_grad(const TensorView& grad_query_embed, const TensorView& grad_key_embed,
                               const TensorView& cos, const TensorView& sin, const TensorView* query,
                               const TensorView* key, RotaryMode mode, Layout layout,
                               std::vector<double>* grad_query, std::vector<double>* grad_key,
                               std::vector<double>* grad_cos, std::vector<double>* grad_sin);

}  // namespace reference
}  // namespace txops

#endif  // TXOPS_OPS_ROPE_REFERENCE_H_
