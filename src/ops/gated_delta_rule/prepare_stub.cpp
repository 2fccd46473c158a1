// prepare_stub.cpp — TEMPORARY: placeholders until the gated-delta-rule phase one lands (delete then).
#include "core/status.h"
#include "ops/gated_delta_rule/prepare.h"

namespace txops {
static Status not_yet() { return fail(StatusCode::kRuntimeError, "not implemented yet"); }
Status prepare_chunk_gated_delta_rule(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                                      const TensorView&, const TensorView&, const TensorView*, float,
                                      const TensorView&, const TensorView&, PreparedOp*) { return not_yet(); }
Status prepare_recurrent_gated_delta_rule(const TensorView&, const TensorView&, const TensorView&,
                                          const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                                          const TensorView*, const TensorView*, const TensorView*, float,
                                          const TensorView&, PreparedOp*) { return not_yet(); }
}  // namespace txops
