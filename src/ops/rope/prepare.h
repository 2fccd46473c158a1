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
Status prepare_apply_rotary_pos_emb_grad(const TensorView& grad_query_embed, const TensorView& grad_key_embed,
                                         const TensorView& cos, const TensorView& sin, const TensorView* query,
                                         const TensorView* key, RotaryMode mode, int64_t layout,
                                         const TensorView& grad_query, const TensorView& grad_key,
                                         const TensorView* grad_cos, const TensorView* grad_sin, PreparedOp* op);

// "half" / "interleave" / "quarter" (null = "half") -> mode; anything else -> 161002 naming `param`.
Status parse_rotary_mode(const char* text, const char* param, RotaryMode* mode);

}  // namespace txops

#endif  // TXOPS_OPS_ROPE_PREPARE_H_
