// fuzz_apply_rotary_pos_emb_grad.cpp — aclnnApplyRotaryPosEmbGrad: gradQuery/gradKey from the embed grads, and
// gradCos/gradSin when queryOptional and keyOptional are given (one, both or neither; gradCos/gradSin present or
// null); outputs separate, in place on their embed grad or saved input, or over another tensor's memory.
#include "aclnnop/aclnn_apply_rotary_pos_emb_grad.h"
#include "apply_rotary.h"

TXFUZZ_TARGET(apply_rotary_pos_emb_grad) {
  using namespace txfuzz;
  Session s(in);
  s.settings();
  const ApplyShape a = decode_apply_shape(s, true);
  char mode_buf[128];
  char* mode = mode_string(s, mode_buf);
  const aclDataType xdt = float_dtype(s, "dtype", "q");
  const aclDataType cdt = s.flag("dtype", "cos_f32") ? ACL_FLOAT : xdt;
  const int64_t with = s.range(0, 3, "qk", "given");  // 0 query and key, 1 neither, 2 query only, 3 key only
  aclTensor* dqe = s.tensor("dqe", a.q(), xdt);
  aclTensor* dke = s.tensor("dke", a.k(), xdt);
  aclTensor* cos = s.tensor("cos", a.cos(), cdt);
  aclTensor* sin = s.tensor("sin", a.cos(), cdt);
  aclTensor* q = (with == 0 || with == 2) ? s.tensor("q", a.q(), xdt) : nullptr;
  aclTensor* k = (with == 0 || with == 3) ? s.tensor("k", a.k(), xdt) : nullptr;
  // gradQueryOut / gradKeyOut: 0 separate, 1 the embed grad's tensor, 2 a view of its memory, 3 the saved input's
  auto grad_out = [&](const char* name, aclTensor* embed, aclTensor* saved, const std::vector<int64_t>& shape) {
    const int64_t kind = s.range(0, 3, name, "alias");
    if (kind == 1 || kind == 2) return s.alias(name, embed, kind - 1);
    if (kind == 3 && saved != nullptr) return saved;
    return s.tensor(name, shape, xdt);
  };
  aclTensor* dq = grad_out("dq", dqe, q, a.q());
  aclTensor* dk = grad_out("dk", dke, k, a.k());
  const bool with_dcs = !s.flag("dcs", "absent");
  aclTensor* dcos = with_dcs ? s.tensor("dcos", a.cos(), cdt) : nullptr;
  aclTensor* dsin = with_dcs ? s.tensor("dsin", a.cos(), cdt) : nullptr;
  s.two_phases(
      "aclnnApplyRotaryPosEmbGrad",
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnApplyRotaryPosEmbGradGetWorkspaceSize(dqe, dke, cos, sin, q, k, mode, a.layout, dq, dk, dcos, dsin,
                                                         ws, ex);
      },
      [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnApplyRotaryPosEmbGrad(w, n, ex, st); });
}
