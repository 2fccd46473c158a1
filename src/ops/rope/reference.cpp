// reference.cpp — TEMPORARY stub (outputs left empty) until the fp64 RoPE oracle lands.
#include "ops/rope/reference.h"

namespace txops {
namespace reference {
void interleave_rope(const TensorView&, const TensorView&, const TensorView&, std::vector<double>* out) {
  out->clear();
}
void inplace_partial_rotary_mul(const TensorView&, const TensorView&, const TensorView&, RotaryMode, int64_t, int64_t,
                                bool, std::vector<double>* out) { out->clear(); }
void apply_rotary_pos_emb(const TensorView&, const TensorView&, const TensorView&, const TensorView&, Layout,
                          RotaryMode, std::vector<double>* q_out, std::vector<double>* k_out) {
  q_out->clear();
  k_out->clear();
}
void apply_rotary_pos_emb_grad(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                               const TensorView*, const TensorView*, RotaryMode, Layout, std::vector<double>* dq,
                               std::vector<double>* dk, std::vector<double>* dc, std::vector<double>* ds) {
  dq->clear(); dk->clear(); dc->clear(); ds->clear();
}
}  // namespace reference
}  // namespace txops
