// fuzz_interleave_rope.cpp — aclnnInterleaveRope: x, out (B, N, S, D); cos, sin (Bc, 1, Sc, D), Bc in {1, B},
// Sc in {1, S}; out separate, the same aclTensor as x, a second tensor over x's memory or partially overlapping it.
#include "aclnnop/aclnn_interleave_rope.h"
#include "fuzz_util.h"

TXFUZZ_TARGET(interleave_rope) {
  using namespace txfuzz;
  Session s(in);
  s.settings();
  static const int64_t kD[] = {64, 2, 4, 8, 16, 32, 128, 6, 10, 96, 1024, 3, 0, 1026};
  int64_t B = 1 + s.range(0, 3, "shape", "B"), N = 1 + s.range(0, 7, "shape", "N");
  int64_t S = 1 + s.range(0, 15, "shape", "S"), D = s.pick(kD, "shape", "D");
  fit_budget({&B, &N, &S}, kMaxElements / (D > 0 ? D : 1));
  const aclDataType xdt = float_dtype(s, "dtype", "x");
  const aclDataType cdt = s.flag("dtype", "cos_f32") ? ACL_FLOAT : xdt;
  const int64_t cb = s.flag("shape", "cos_B1") ? 1 : B, cs = s.flag("shape", "cos_S1") ? 1 : S;
  aclTensor* x = s.tensor("x", {B, N, S, D}, xdt);
  aclTensor* cos = s.tensor("cos", {cb, 1, cs, D}, cdt);
  aclTensor* sin = s.tensor("sin", {cb, 1, cs, D}, cdt);
  const int64_t out_kind = s.range(0, 3, "out", "alias");  // 0 separate, 1 same tensor, 2 same memory, 3 shifted
  aclTensor* out = out_kind == 0 ? s.tensor("out", {B, N, S, D}, xdt) : s.alias("out", x, out_kind - 1);
  s.two_phases(
      "aclnnInterleaveRope",
      [&](uint64_t* ws, aclOpExecutor** ex) { return aclnnInterleaveRopeGetWorkspaceSize(x, cos, sin, out, ws, ex); },
      [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnInterleaveRope(w, n, ex, st); });
}
