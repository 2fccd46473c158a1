// api.cpp — the public txops:: RoPE functions: phase one (prepare) and phase two (run) in one call, with the
// thread's scratch workspace; failures are prefixed "txops::<function>: ".
#include "core/status.h"
#include "ops/rope/prepare.h"

namespace txops {

static Status run_or_fail(const char* name, Status prepared, const PreparedOp& op) {
  if (!prepared.ok()) return with_prefix(name, std::move(prepared));
  return with_prefix(name, run_prepared(op));
}

Status interleave_rope(const TensorView& x, const TensorView& cos, const TensorView& sin, const TensorView& out) {
  PreparedOp op;
  Status st = prepare_interleave_rope(x, cos, sin, out, &op);
  return run_or_fail("txops::interleave_rope", std::move(st), op);
}

Status inplace_partial_rotary_mul(const TensorView& x, const TensorView& cos, const TensorView& sin,
                                  RotaryMode mode, int64_t slice_start, int64_t slice_end) {
  const int64_t slice[2] = {slice_start, slice_end};
  PreparedOp op;
  Status st = prepare_inplace_partial_rotary_mul(x, cos, sin, static_cast<int64_t>(mode), slice, 2, &op);
  return run_or_fail("txops::inplace_partial_rotary_mul", std::move(st), op);
}

Status inplace_partial_rotary_mul_grad(const TensorView& dy, const TensorView& cos, const TensorView& sin,
                                       RotaryMode mode, int64_t slice_start, int64_t slice_end) {
  const int64_t slice[2] = {slice_start, slice_end};
  PreparedOp op;
  Status st = prepare_inplace_partial_rotary_mul_grad(dy, cos, sin, static_cast<int64_t>(mode), slice, 2, &op);
  return run_or_fail("txops::inplace_partial_rotary_mul_grad", std::move(st), op);
}

Status apply_rotary_pos_emb(const TensorView& query, const TensorView& key, const TensorView& cos,
                            const TensorView& sin, Layout layout, RotaryMode mode) {
  PreparedOp op;
  Status st = prepare_apply_rotary_pos_emb(query, key, cos, sin, static_cast<int64_t>(layout), mode, &op);
  return run_or_fail("txops::apply_rotary_pos_emb", std::move(st), op);
}

Status apply_rotary_pos_emb_grad(const TensorView& grad_query_embed, const TensorView& grad_key_embed,
                                 const TensorView& cos, const TensorView& sin, const TensorView* query,
                                 const TensorView* key, RotaryMode mode, Layout layout, const TensorView& grad_query,
                                 const TensorView& grad_key, const TensorView* grad_cos, const TensorView* grad_sin) {
  PreparedOp op;
  Status st = prepare_apply_rotary_pos_emb_grad(grad_query_embed, grad_key_embed, cos, sin, query, key, mode,
                                                static_cast<int64_t>(layout), grad_query, grad_key, grad_cos,
                                                grad_sin, &op);
  return run_or_fail("txops::apply_rotary_pos_emb_grad", std::move(st), op);
}

const char* rotary_mode_name(RotaryMode mode) {
  switch (mode) {
    case RotaryMode::kHalf: return "half";
    case RotaryMode::kInterleave: return "interleave";
    case RotaryMode::kQuarter: return "quarter";
    case RotaryMode::kInterleaveHalf: return "interleave-half";
  }
  return "unknown";
}

}  // namespace txops
