// fuzz_apply_rotary_pos_emb_v2.cpp — aclnnApplyRotaryPosEmbV2: query and key rotated in place (layouts BSND,
// SBND, BNSD, TND and invalid codes; modes "half", "interleave", "quarter", null and invalid strings), cos D up
// to query D, key sharing query's memory (the same tensor, the same view, shifted).
#include "aclnnop/aclnn_apply_rotary_pos_emb_v2.h"
#include "apply_rotary.h"

TXFUZZ_TARGET(apply_rotary_pos_emb_v2) {
  using namespace txfuzz;
  Session s(in);
  s.settings();
  const ApplyShape a = decode_apply_shape(s, false);
  char mode_buf[128];
  char* mode = mode_string(s, mode_buf);
  const aclDataType xdt = float_dtype(s, "dtype", "q");
  const aclDataType cdt = s.flag("dtype", "cos_f32") ? ACL_FLOAT : xdt;
  aclTensor* q = s.tensor("q", a.q(), xdt);
  const int64_t k_kind = s.range(0, 3, "k", "alias");  // 0 separate, else over q's memory
  aclTensor* k = k_kind == 0 ? s.tensor("k", a.k(), xdt) : s.alias("k", q, k_kind - 1);
  aclTensor* cos = s.tensor("cos", a.cos(), cdt);
  aclTensor* sin = s.tensor("sin", a.cos(), cdt);
  s.two_phases(
      "aclnnApplyRotaryPosEmbV2",
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnApplyRotaryPosEmbV2GetWorkspaceSize(q, k, cos, sin, a.layout, mode, ws, ex);
      },
      [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnApplyRotaryPosEmbV2(w, n, ex, st); });
}
