// prepare.h — phase one of the RoPE operators: validate (spec rules, compat mode) and plan, producing a
// PreparedOp. Messages carry no API prefix (the callers add "aclnnXxx: " or "txops::xxx: ").
// Arguments are exactly those of the public functions in txops/txops.h.
#ifndef TXOPS_OPS_ROPE_PREPARE_H_
#define TXOPS_OPS_ROPE_PREPARE_H_

#include "core/prepared_op.h"
#include "txops/txops.h"

namespace txops {

Status prepare_interleave_rope(const TensorView& x, const TensorView& cos, const TensorView& sin,
                               const TensorView& out, PreparedOp* op);

// `slice` null means the whole last axis; otherwise slice[0..slice_len) must be {start, end}.
Status prepare_inplace_partial_rotary_mul(const TensorView& x, const TensorView& cos, const TensorView& sin,
                                          int64_t mode, const int64_t* slice, uint64_t slice_len,
                                          PreparedOp* op);
Status prepare_inplace_partial_rotary_mul_grad(const TensorView& dy, const TensorView& cos, const TensorView& sin,
                                               int64_t mode, const int64_t* slice, uint64_t slice_len,
                                               PreparedOp* op);

// `mode` is the parsed rotary mode; `layout` the raw layout code (validated here).
Status prepare_apply_rotary_pos_emb(const TensorView& query, const TensorView& key, const TensorView& cos,
                                    const TensorView& sin, int64_t layout, RotaryMode mode, PreparedOp* op);
// ApplyRotaryPosEmb (V1): V2 in half mode, with V1's own CANN limits under TXOPS_COMPAT=cann.
Status prepare_apply_rotary_pos_emb_v1(const TensorView& query, const TensorView& key, const TensorView& cos,
                                       const TensorView& sin, int64_t layout, PreparedOp* op);
Status prepare_apply_rotary_pos_emb_grad(const TensorView& grad_query_embed, const TensorView& grad_key_embed,
                                         const TensorView& cos, const TensorView& sin, const TensorView* query,
                                         const TensorView* key, RotaryMode mode, int64_t layout,
                                         const TensorView& grad_query, const TensorView& grad_key,
                                         const TensorView* grad_cos, const TensorView* grad_sin, PreparedOp* op);

// RotaryPositionEmbedding(V2): `mode` is the raw mode code (validated here); `rotate` null for the first version.
Status prepare_rotary_position_embedding(const TensorView& x, const TensorView& cos, const TensorView& sin,
                                         int64_t mode, const TensorView* rotate, const TensorView& out,
                                         PreparedOp* op);
// `x` null: dcos / dsin are ignored (may be null).
Status prepare_rotary_position_embedding_grad(const TensorView& dy, const TensorView& cos, const TensorView& sin,
                                              const TensorView* x, int64_t mode, const TensorView& dx,
                                              const TensorView* dcos, const TensorView* dsin, PreparedOp* op);

// RopeWithSinCosCache(V2): `mrope_section` null (count 0) for rope mode.
Status prepare_rope_with_sin_cos_cache(const TensorView& positions, const TensorView& query, const TensorView& key,
                                       const TensorView& cos_sin_cache, const int64_t* mrope_section,
                                       uint64_t mrope_section_count, int64_t head_size, bool is_neox_style,
                                       int64_t cache_mode, const TensorView& query_out, const TensorView& key_out,
                                       PreparedOp* op);

// "half" / "interleave" / "quarter" (null = "half") -> mode; anything else -> 161002 naming `param`.
Status parse_rotary_mode(const char* text, const char* param, RotaryMode* mode);

}  // namespace txops

#endif  // TXOPS_OPS_ROPE_PREPARE_H_
