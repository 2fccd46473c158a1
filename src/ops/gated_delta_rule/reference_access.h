// reference_access.h — how the fp64 oracles of the gated delta rule (reference.cpp, reference_backward.cpp) read
// their inputs: element (i0, i1, ...) of a view through its strides, widened to double.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_ACCESS_H_
#define TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_ACCESS_H_

#include <cstdint>

#include "core/dtype.h"
#include "txops/txops.h"

namespace txops {
namespace reference {

inline double at(const TensorView& v, int64_t i0, int64_t i1) {
  return load_f64(v.data, v.dtype, i0 * v.strides[0] + i1 * v.strides[1]);
}
inline double at(const TensorView& v, int64_t i0, int64_t i1, int64_t i2) {
  return load_f64(v.data, v.dtype, i0 * v.strides[0] + i1 * v.strides[1] + i2 * v.strides[2]);
}
inline double at(const TensorView& v, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return load_f64(v.data, v.dtype,
                  i0 * v.strides[0] + i1 * v.strides[1] + i2 * v.strides[2] + i3 * v.strides[3]);
}

}  // namespace reference
}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_REFERENCE_ACCESS_H_
