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

Status rotary_position_embedding(const TensorView& x, const TensorView& cos, const TensorView& sin, RotaryMode mode,
                                 const TensorView& out, const TensorView* rotate) {
  PreparedOp op;
  Status st = prepare_rotary_position_embedding(x, cos, sin, static_cast<int64_t>(mode), rotate, out, &op);
  return run_or_fail("txops::rotary_position_embedding", std::move(st), op);
}

Status rotary_position_embedding_grad(const TensorView& dy, const TensorView& cos, const TensorView& sin,
                                      const TensorView* x, RotaryMode mode, const TensorView& dx,
                                      const TensorView* dcos, const TensorView* dsin) {
  PreparedOp op;
  Status st = prepare_rotary_position_embedding_grad(dy, cos, sin, x, static_cast<int64_t>(mode), dx, dcos, dsin, &op);
  return run_or_fail("txops::rotary_position_embedding_grad", std::move(st), op);
}

Status rope_with_sin_cos_cache(const TensorView& positions, const TensorView& query, const TensorView& key,
                               const TensorView& cos_sin_cache, const int64_t* mrope_section,
                               int64_t mrope_section_count, int64_t head_size, bool is_neox_style, int64_t cache_mode,
                               const TensorView& query_out, const TensorView& key_out) {
  PreparedOp op;
  Status st = mrope_section_count < 0
                  ? fail(StatusCode::kParamInvalid, "mrope_section_count must be >= 0, got %lld",
                         static_cast<long long>(mrope_section_count))
                  : prepare_rope_with_sin_cos_cache(positions, query, key, cos_sin_cache, mrope_section,
                                                    static_cast<uint64_t>(mrope_section_count), head_size,
                                                    is_neox_style, cache_mode, query_out, key_out, &op);
  return run_or_fail("txops::rope_with_sin_cos_cache", std::move(st), op);
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
