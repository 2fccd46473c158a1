// reference.h — the fp64 oracle of the RoPE operators, written for reading (docs/rope.md). Each
// function takes the public op's arguments (valid ones: it does not validate), reads the stored input values
// (widened exactly to double), computes in double, and writes each output as a contiguous row-major
// std::vector<double> in that output's logical shape. Nothing it is given is modified. Used by tests and by
// `txops bench` to measure the error of the fast kernels.
#ifndef TXOPS_OPS_ROPE_REFERENCE_H_
#define TXOPS_OPS_ROPE_REFERENCE_H_

#include <cstdint>
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

// RotaryPositionEmbedding(V2): out in x's shape; `rotate` (D, D) or null.
void rotary_position_embedding(const TensorView& x, const TensorView& cos, const TensorView& sin, RotaryMode mode,
                               const TensorView* rotate, std::vector<double>* out);

// RotaryPositionEmbeddingGrad: dx in dy's shape; dcos, dsin in cos's shape, filled only when x is given.
void rotary_position_embedding_grad(const TensorView& dy, const TensorView& cos, const TensorView& sin,
                                    const TensorView* x, RotaryMode mode, std::vector<double>* dx,
                                    std::vector<double>* dcos, std::vector<double>* dsin);

// RopeWithSinCosCache(V2): q_out, k_out in query's and key's shapes (pass-through channels included).
void rope_with_sin_cos_cache(const TensorView& positions, const TensorView& query, const TensorView& key,
                             const TensorView& cos_sin_cache, const int64_t* mrope_section,
                             int64_t mrope_section_count, int64_t head_size, bool is_neox_style, int64_t cache_mode,
                             std::vector<double>* q_out, std::vector<double>* k_out);

}  // namespace reference
}  // namespace txops

#endif  // TXOPS_OPS_ROPE_REFERENCE_H_
