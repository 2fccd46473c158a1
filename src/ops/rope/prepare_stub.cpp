// prepare_stub.cpp — TEMPORARY: placeholders until the RoPE phase-one implementation lands (delete then).
#include "core/status.h"
#include "ops/rope/prepare.h"

namespace txops {
static Status not_yet() { return fail(StatusCode::kRuntimeError, "not implemented yet"); }
Status prepare_interleave_rope(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                               PreparedOp*) { return not_yet(); }
Status prepare_inplace_partial_rotary_mul(const TensorView&, const TensorView&, const TensorView&, int64_t,
                                          const int64_t*, uint64_t, PreparedOp*) { return not_yet(); }
Status prepare_inplace_partial_rotary_mul_grad(const TensorView&, const TensorView&, const TensorView&, int64_t,
                                               const int64_t*, uint64_t, PreparedOp*) { return not_yet(); }
Status prepare_apply_rotary_pos_emb(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                                    int64_t, RotaryMode, PreparedOp*) { return not_yet(); }
Status prepare_apply_rotary_pos_emb_grad(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                                         const TensorView*, const TensorView*, RotaryMode, int64_t,
                                         const TensorView&, const TensorView&, const TensorView*, const TensorView*,
                                         PreparedOp*) { return not_yet(); }
Status parse_rotary_mode(const char*, const char*, RotaryMode*) { return not_yet(); }
}  // namespace txops
