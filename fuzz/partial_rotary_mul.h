// partial_rotary_mul.h — the body the aclnnInplacePartialRotaryMul and ...Grad targets share (same arguments):
// x (B, S, N, D) rotated in place over partialSlice {start, end}; cos, sin (b, s, n, end - start), each of b, s, n
// 1 or x's size; rotaryMode 0-3 and invalid codes; partialSlice whole, a sub-range, empty, null, wrong length.
#ifndef TXOPS_FUZZ_PARTIAL_ROTARY_MUL_H_
#define TXOPS_FUZZ_PARTIAL_ROTARY_MUL_H_

#include "aclnnop/aclnn_inplace_partial_rotary_mul.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul_grad.h"
#include "fuzz_util.h"

namespace txfuzz {

inline void partial_rotary_mul_body(Input& in, bool backward) {
  Session s(in);
  s.settings();
  static const int64_t kD[] = {64, 128, 8, 2, 4, 16, 32, 72, 1024, 6, 0, 1, 1025, 2048};
  static const int64_t kModes[] = {1, 0, 2, 3, -1, 4, INT64_MAX, INT64_MIN};
  int64_t B = 1 + s.range(0, 3, "shape", "B"), S = 1 + s.range(0, 15, "shape", "S");
  int64_t N = 1 + s.range(0, 7, "shape", "N"), D = s.pick(kD, "shape", "D");
  fit_budget({&B, &S, &N}, kMaxElements / (D > 0 ? D : 1));
  const int64_t mode = s.pick(kModes, "attr", "rotaryMode");
  // partialSlice: 0 whole axis, 1 a sub-range, 2 null, 3 start == end
  int64_t start = 0, end = D;
  const int64_t slice_kind = s.range(0, 3, "slice", "kind");
  if (slice_kind == 1 && D > 0) {
    const int64_t multiple = mode == 2 ? 4 : 2;
    start = s.range(0, D, "slice", "start");
    end = start + multiple * s.range(0, (D - start) / multiple, "slice", "units");
  } else if (slice_kind == 3) {
    start = end = s.range(0, D > 0 ? D : 0, "slice", "start");
  }
  const int64_t L = end - start;
  const aclDataType xdt = float_dtype(s, "dtype", "x");
  const aclDataType cdt = s.flag("dtype", "cos_f32") ? ACL_FLOAT : xdt;
  const int64_t cb = s.flag("shape", "cos_B1") ? 1 : B, cs = s.flag("shape", "cos_S1") ? 1 : S;
  const int64_t cn = s.flag("shape", "cos_N1") ? 1 : N;
  aclTensor* x = s.tensor(backward ? "dy" : "x", {B, S, N, D}, xdt);
  aclTensor* cos = s.tensor("cos", {cb, cs, cn, L}, cdt);
  aclTensor* sin = s.tensor("sin", {cb, cs, cn, L}, cdt);
  aclIntArray* slice = slice_kind == 2 ? nullptr : s.int_array("slice", {start, end});
  if (!backward) {
    s.two_phases(
        "aclnnInplacePartialRotaryMul",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnInplacePartialRotaryMulGetWorkspaceSize(x, cos, sin, mode, slice, ws, ex);
        },
        [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnInplacePartialRotaryMul(w, n, ex, st); });
  } else {
    s.two_phases(
        "aclnnInplacePartialRotaryMulGrad",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnInplacePartialRotaryMulGradGetWorkspaceSize(x, cos, sin, mode, slice, ws, ex);
        },
        [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) {
          return aclnnInplacePartialRotaryMulGrad(w, n, ex, st);
        });
  }
}

}  // namespace txfuzz

#endif  // TXOPS_FUZZ_PARTIAL_ROTARY_MUL_H_
