// tolerance.h — the one tolerance table (tests and `txops bench` both judge results with it), and the
// comparison of a fast result with the fp64 reference.
//
// An element passes when |y - ref| <= atol + rtol * max(|ref|, rms_floor * RMS(ref)); the whole tensor
// passes when additionally RMS(y - ref) / RMS(ref) <= max_rel_rms. rms_floor = 1 gives the gated-delta-rule
// criterion max|y - ref| / max(|ref|, RMS(ref)) <= rtol from the issue; RoPE uses plain atol + rtol·|ref|.
#ifndef TXOPS_CORE_TOLERANCE_H_
#define TXOPS_CORE_TOLERANCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "txops/txops.h"

namespace txops {

struct Tolerance {
  double atol;
  double rtol;
  double rms_floor;    // 0 or 1, see above
  double max_rel_rms;  // whole-tensor bound
};

// Rows: "rope" (every RoPE output that is one rotation, forward or backward), "rope_grad_cos_sin"
// (gradCos / gradSin: reductions), "gdr_out", "gdr_state" (gated delta rule out and final state), "gdr_backward"
// (every gradient of the gated delta rule's backward), "causal_conv1d" (its y).
// `dtype` is the dtype of the output being checked. Unknown rows abort the test that asks (programming error).
Tolerance tolerance_for(const std::string& row, DType dtype);

struct CompareReport {
  int64_t count = 0;
  double max_abs_err = 0;      // max |y - ref|
  double max_norm_err = 0;     // max |y - ref| / (atol + rtol * max(|ref|, rms_floor*RMS(ref)))  (<= 1 passes)
  double max_rel_err = 0;      // max |y - ref| / max(|ref|, RMS(ref))  (what reports print)
  double rel_rms_err = 0;      // RMS(y - ref) / RMS(ref)
  int64_t worst_index = -1;    // flat index (row-major over the logical shape) of the worst element
  double worst_value = 0, worst_ref = 0;
  bool passed = true;
  std::string describe(const TensorView& shape_of) const;  // "max_rel=.. rel_rms=.. worst at (i, j, k): y=.. ref=.."
};

// Compares the logical elements of `y` (any strides, fp32/fp16/bf16/fp64) with `ref` (row-major, same
// logical shape) under `tol`.
CompareReport compare_with_reference(const TensorView& y, const std::vector<double>& ref, const Tolerance& tol);

// Flat row-major index -> coordinates, "(i, j, k)".
std::string coords_string(const TensorView& shape_of, int64_t flat_index);

}  // namespace txops

#endif  // TXOPS_CORE_TOLERANCE_H_
