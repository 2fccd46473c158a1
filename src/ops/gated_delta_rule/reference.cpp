// reference.cpp — TEMPORARY stub (outputs left empty) until the fp64 gated-delta-rule oracle lands.
#include "ops/gated_delta_rule/reference.h"

namespace txops {
namespace reference {
void chunk_gated_delta_rule(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                            const TensorView&, const TensorView&, const TensorView*, float, std::vector<double>* out,
                            std::vector<double>* final_state) { out->clear(); final_state->clear(); }
void recurrent_gated_delta_rule(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                                const TensorView&, const TensorView&, const TensorView&, const TensorView*,
                                const TensorView*, const TensorView*, float, std::vector<double>* out,
                                std::vector<double>* state_after) { out->clear(); state_after->clear(); }
}  // namespace reference
}  // namespace txops
